#include "trainingd/api/run_report.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainingd::api {
namespace {

namespace eng = trainingd::engine;

eng::RunEvent RoundTrip(const eng::RunEvent& event) {
  const std::string line = FormatRunReport(event);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
  auto parsed = ParseRunReport(line);
  EXPECT_TRUE(parsed.has_value()) << line;
  return parsed ? *parsed : eng::RunEvent{};
}

TEST(RunReportTest, EveryEventRoundTrips) {
  auto s = RoundTrip(eng::SessionCreated{1234});
  EXPECT_EQ(std::get<eng::SessionCreated>(s).global_step, 1234);

  auto v = std::get<eng::ScalarRecorded>(RoundTrip(eng::ScalarRecorded{"loss", 7, 0.1, 1.5e9}));
  EXPECT_EQ(v.tag, "loss");
  EXPECT_EQ(v.step, 7);
  EXPECT_EQ(v.value, 0.1);  // doubles are written to round-trip
  EXPECT_EQ(v.wall_time, 1.5e9);

  auto nan =
      std::get<eng::ScalarRecorded>(RoundTrip(eng::ScalarRecorded{"loss", 8, std::nan(""), 1}));
  EXPECT_TRUE(std::isnan(nan.value));
  auto inf = std::get<eng::ScalarRecorded>(RoundTrip(eng::ScalarRecorded{"l", 8, -INFINITY, 1}));
  EXPECT_EQ(inf.value, -INFINITY);

  auto l = std::get<eng::LogWritten>(
      RoundTrip(eng::LogWritten{eng::LogSeverity::kWarning, "two\nlines \"quoted\""}));
  EXPECT_EQ(l.severity, eng::LogSeverity::kWarning);
  EXPECT_EQ(l.text, "two\nlines \"quoted\"");

  eng::JobResult r;
  r.outcome = eng::JobResult::Outcome::kStopped;
  r.stop_cause = eng::JobResult::StopCause::kTimeLimit;
  r.global_step = 71;
  r.reason = "stop requested";
  r.final_values = {{"test/accuracy", 0.83}, {"test/loss", NAN}};
  r.error = eng::Status::ResourceExhausted("disk full");
  auto e = std::get<eng::RunEnded>(RoundTrip(eng::RunEnded{r}));
  ASSERT_TRUE(e.result.ok());
  EXPECT_EQ(e.result->outcome, eng::JobResult::Outcome::kStopped);
  EXPECT_EQ(e.result->stop_cause, eng::JobResult::StopCause::kTimeLimit);
  EXPECT_EQ(e.result->global_step, 71);
  EXPECT_EQ(e.result->reason, "stop requested");
  EXPECT_EQ(e.result->final_values.at("test/accuracy"), 0.83);
  EXPECT_TRUE(std::isnan(e.result->final_values.at("test/loss")));
  EXPECT_EQ(e.result->error.code(), eng::StatusCode::kResourceExhausted);
  EXPECT_EQ(e.result->error.message(), "disk full");

  for (auto cause : {eng::JobResult::StopCause::kRequest, eng::JobResult::StopCause::kDiskFull}) {
    r.stop_cause = cause;
    EXPECT_EQ(std::get<eng::RunEnded>(RoundTrip(eng::RunEnded{r})).result->stop_cause, cause);
  }
  r.outcome = eng::JobResult::Outcome::kCompleted;
  r.stop_cause = eng::JobResult::StopCause::kNone;
  const std::string completed = FormatRunReport(eng::RunEnded{r});
  EXPECT_EQ(completed.find("stop_cause"), std::string::npos) << completed;

  auto failed = std::get<eng::RunEnded>(
      RoundTrip(eng::RunEnded{eng::Status::InvalidArgument("dataset.name: no dataset 'x'")}));
  ASSERT_FALSE(failed.result.ok());
  EXPECT_EQ(failed.result.status().code(), eng::StatusCode::kInvalidArgument);
  EXPECT_EQ(failed.result.status().message(), "dataset.name: no dataset 'x'");
}

TEST(RunReportTest, BadBytesInTextAreReplacedNotThrown) {
  auto l = std::get<eng::LogWritten>(
      RoundTrip(eng::LogWritten{eng::LogSeverity::kInfo, std::string("a\xff\xfe b")}));
  EXPECT_EQ(l.text, "a\xEF\xBF\xBD\xEF\xBF\xBD b");
}

TEST(RunReportTest, LinesThatAreNotReportsAreSkipped) {
  for (const char* line :
       {"", "\n", "INFO:trainingd:hello", "--------------------------------------------", "{",
        "{\"event\": \"scalar\"}",
        "{\"event\": \"scalar\", \"tag\": 1, \"step\": 1, "
        "\"value\": 1, \"wall_time\": 1}",
        "{\"event\": \"nope\"}", "[1, 2]",
        "{\"event\": \"log\", \"severity\": \"LOUD\", \"text\": \"x\"}",
        "{\"event\": \"end\", \"outcome\": \"exploded\", \"global_step\": 1, \"reason\": \"\"}",
        "{\"event\": \"end\", \"outcome\": \"stopped\", \"global_step\": 1, \"reason\": \"\", "
        "\"stop_cause\": \"boredom\"}",
        "{\"event\": \"end\", \"outcome\": \"completed\", \"global_step\": 1, \"reason\": \"\", "
        "\"stop_cause\": \"request\"}",
        "{\"event\": \"end\", \"error\": {\"code\": \"OK\", \"message\": \"\"}}",
        "{\"event\": \"session\", \"global_step\": 1.5}"}) {
    EXPECT_FALSE(ParseRunReport(line).has_value()) << line;
  }
}

TEST(RunReportTest, ProgressAndAttemptsRoundTrip) {
  eng::RankTimings t{1200, {{0.0271, 0.003}, {0.0265, 0.0031}}};
  const std::string line = FormatRunReport(t);
  EXPECT_NE(line.find("\"event\":\"progress\""), std::string::npos) << line;
  auto back = std::get<eng::RankTimings>(RoundTrip(t));
  EXPECT_EQ(back.global_step, 1200);
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_NEAR(back.ranks[1].compute_seconds, 0.0265, 1e-12);
  EXPECT_NEAR(back.ranks[1].allreduce_seconds, 0.0031, 1e-12);
  EXPECT_EQ(std::get<eng::RankTimings>(*ParseRunReport("{\"event\":\"progress\","
                                                       "\"global_step\":5}"))
                .ranks.size(),
            0u);

  auto a = std::get<eng::AttemptStarted>(RoundTrip(eng::AttemptStarted{2, 4, 3, 400, 17.5}));
  EXPECT_EQ(a.attempt, 2);
  EXPECT_EQ(a.max_attempts, 4);
  EXPECT_EQ(a.workers, 3);
  EXPECT_EQ(a.from_step, 400);
  auto e = std::get<eng::AttemptEnded>(RoundTrip(eng::AttemptEnded{2, "killed", 18.5}));
  EXPECT_EQ(e.reason, "killed");
  EXPECT_FALSE(ParseRunReport("{\"event\":\"progress\",\"global_step\":5,\"ranks\":[1]}"));
}

TEST(RunReportTest, SchedulerStatusRoundTrips) {
  auto s = std::get<eng::SchedulerStatus>(
      RoundTrip(eng::SchedulerStatus{42, "PENDING", "Priority", "", 1}));
  EXPECT_EQ(s.job_id, 42);
  EXPECT_EQ(s.state, "PENDING");
  EXPECT_EQ(s.reason, "Priority");
  EXPECT_EQ(s.nodes, "");
  EXPECT_EQ(s.restarts, 1);
  EXPECT_FALSE(ParseRunReport("{\"event\":\"scheduler\",\"job_id\":1,\"state\":\"RUNNING\","
                              "\"reason\":\"None\",\"nodes\":\"n1\",\"restarts\":-1}")
                   .has_value());
}

}  // namespace
}  // namespace trainingd::api
