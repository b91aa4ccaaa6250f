// The client's side of the wire (http_client.h, SseParser, the FromJson inverses): what the
// server writes reads back equal, so `trainingd jobs ...` and the daemon cannot drift apart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "trainingd/api/http_client.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/sse.h"

namespace trainingd::api {
namespace {

TEST(SseParserTest, ReadsBackWhatTheServerFramesInAnySplit) {
  const std::string stream = FormatSseRetry(3000) + FormatSseComment("keep-alive") +
                             FormatSseFrame(7, "log", "{\"text\":\"a\"}") +
                             FormatSseFrame(8, "state", "line one\r\nline two\nthree") +
                             FormatSseFrame(9, "", "x");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser p;
    std::vector<SseFrame> frames = p.Feed(stream.substr(0, cut));
    for (SseFrame& f : p.Feed(stream.substr(cut))) frames.push_back(std::move(f));
    ASSERT_EQ(frames.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(frames[0].id, 7);
    EXPECT_EQ(frames[0].event, "log");
    EXPECT_EQ(frames[0].data, "{\"text\":\"a\"}");
    EXPECT_EQ(frames[1].data, "line one\nline two\nthree");
    EXPECT_EQ(frames[2].event, "message");
    EXPECT_EQ(p.retry_ms(), 3000);
  }
}

TEST(SseParserTest, CarriageReturnLineEndsAndFramesWithoutData) {
  SseParser p;
  auto frames = p.Feed("id: 1\r\r: c\r\rid: 2\revent: log\rdata: z\r");
  EXPECT_TRUE(frames.empty());  // the first has no data; the second is not closed yet
  frames = p.Feed("\n\r\n");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].id, 2);
  EXPECT_EQ(frames[0].data, "z");
}

TEST(ClientWireTest, EventsReadBack) {
  JobStateEvent s{"j1", "name", JobState::kStopped, 10, 20, "", "stopped by request", false};
  for (const ServiceEvent& e :
       {ServiceEvent{5, EventKind::kState, s},
        ServiceEvent{6, EventKind::kScalar, ScalarEvent{"loss", 3, 0.5, 1.25}},
        ServiceEvent{7, EventKind::kLog, LogEvent{"INFO:trainingd:x"}},
        ServiceEvent{8, EventKind::kJob, JobStateEvent{"j2", "", {}, 0, 0, "", "", true}}}) {
    const std::string frame = FormatSseEvent(e);
    SseParser p;
    const auto frames = p.Feed(frame);
    ASSERT_EQ(frames.size(), 1u);
    auto back = EventFromJson(*frames[0].id, frames[0].event, frames[0].data);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->id, e.id);
    EXPECT_EQ(back->kind, e.kind);
    EXPECT_EQ(DumpJson(EventToJson(*back)), DumpJson(EventToJson(e)));
  }
  EXPECT_FALSE(EventFromJson(1, "state", "{\"state\":\"sleeping\"}").ok());
  EXPECT_FALSE(EventFromJson(1, "bogus", "{}").ok());
}

TEST(ClientWireTest, JobsReadBack) {
  JobInfo job;
  job.id = "abc";
  job.name = "n";
  job.state = JobState::kFailed;
  job.global_step = 7;
  job.max_steps = 9;
  job.created_at = 100.5;
  job.started_at = 101;
  job.error = "boom";
  job.reason = "diverged";
  job.examples_per_sec = 12.5;
  job.latest_scalars = {{"loss", 0.25}, {"accuracy", 0.5}};
  job.spec_json = "{\"name\":\"n\"}";
  job.best_checkpoint = BestCheckpointInfo{5, "validation/loss", "min", 0.125};
  auto back = JobFromJson(JobToJson(job, true));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(JobToJson(*back, true), JobToJson(job, true));
  EXPECT_EQ(back->finished_at, 0);
  ASSERT_TRUE(back->best_checkpoint.has_value());
  EXPECT_EQ(back->best_checkpoint->step, 5);
  EXPECT_EQ(back->best_checkpoint->value, 0.125);
  EXPECT_TRUE(JobToJson(job, true)["best_checkpoint"].is_object());
  EXPECT_FALSE(JobToJson(job, false).contains("best_checkpoint"));  // details only

  JobPage page{{job, job}, "cursor"};
  auto pb = JobPageFromJson(JobPageToJson(page));
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(JobPageToJson(*pb), JobPageToJson(page));

  std::vector<ScalarPoint> points = {{1, 2.5, 0.5, 0.25, 0.75}};
  auto sp = ScalarsFromJson(ScalarsToJson("abc", "loss", points));
  ASSERT_TRUE(sp.ok());
  EXPECT_EQ(ScalarsToJson("abc", "loss", *sp), ScalarsToJson("abc", "loss", points));
  std::vector<CheckpointInfo> cps = {{100, "model.ckpt-100", 4096, 1.5}};
  auto cb = CheckpointsFromJson(CheckpointsToJson(cps));
  ASSERT_TRUE(cb.ok());
  EXPECT_EQ(CheckpointsToJson(*cb), CheckpointsToJson(cps));
  int64_t next = 0;
  auto lb = LogLinesFromJson(LogLinesToJson({{3, "x"}, {4, "y"}}, 3), &next);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ(next, 5);
  EXPECT_EQ(lb->size(), 2u);

  auto bad = JobFromJson(nlohmann::json{{"id", "x"}, {"state", "running"}, {"global_step", "7"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("global_step: ", 0), 0u) << bad.status().message();
  std::string code, message, field;
  EXPECT_TRUE(ErrorFromJson(ErrorToJson("invalid_argument", "m", "f"), &code, &message, &field));
  EXPECT_EQ(code + message + field, "invalid_argumentmf");
}

TEST(ServerUrlTest, Parses) {
  auto u = ParseServerUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, "8080");
  EXPECT_EQ(u->base_path, "");
  EXPECT_EQ(u->host_header, "127.0.0.1:8080");
  u = ParseServerUrl("http://[::1]:9/prefix/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, "9");
  EXPECT_EQ(u->base_path, "/prefix");
  u = ParseServerUrl("http://example");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, "80");
  for (const char* bad : {"https://x", "x:80", "http://", "http://u:p@x", "http://x:8a",
                          "http://x/?q", "http://[::1"}) {
    EXPECT_FALSE(ParseServerUrl(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace trainingd::api
