// The pure helpers: SSE framing, URL decoding and query strings, the HTTP metrics exposition.
#include <gtest/gtest.h>

#include "trainingd/api/http_metrics.h"
#include "trainingd/api/sse.h"
#include "trainingd/api/url.h"

namespace trainingd::api {
namespace {

TEST(SseTest, FramesOneEvent) {
  EXPECT_EQ(FormatSseFrame(7, "scalars", "{\"loss\":0.5}"),
            "id: 7\nevent: scalars\ndata: {\"loss\":0.5}\n\n");
}

TEST(SseTest, EventsAreWrittenByKind) {
  EXPECT_EQ(FormatSseEvent({7, EventKind::kScalar, ScalarEvent{"loss", 10, 0.5, 1.25}}),
            "id: 7\nevent: scalar\ndata: {\"step\":10,\"tag\":\"loss\",\"value\":0.5,"
            "\"wall_time\":1.25}\n\n");
  EXPECT_EQ(FormatSseEvent({8, EventKind::kLog, LogEvent{"INFO:trainingd:a\nb"}}),
            "id: 8\nevent: log\ndata: {\"text\":\"INFO:trainingd:a\\nb\"}\n\n");
  JobStateEvent state{"j1", "n", JobState::kRunning, 5, 100, "", "", false};
  EXPECT_EQ(FormatSseEvent({9, EventKind::kState, state}),
            "id: 9\nevent: state\ndata: {\"error\":null,\"global_step\":5,\"id\":\"j1\","
            "\"max_steps\":100,\"name\":\"n\",\"reason\":null,\"state\":\"running\"}\n\n");
  state.deleted = true;
  EXPECT_EQ(FormatSseEvent({10, EventKind::kJob, state}),
            "id: 10\nevent: job\ndata: {\"id\":\"j1\",\"state\":\"deleted\"}\n\n");
  // Text that is not UTF-8 is replaced, never thrown on.
  EXPECT_EQ(FormatSseEvent({11, EventKind::kLog, LogEvent{"\xff"}}),
            "id: 11\nevent: log\ndata: {\"text\":\"\xef\xbf\xbd\"}\n\n");
}

TEST(SseTest, SplitsMultiLineDataAndCleansTheName) {
  EXPECT_EQ(FormatSseFrame(1, "log", "a\nb\r\nc\rd"),
            "id: 1\nevent: log\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(FormatSseFrame(2, "x\ny", "z\n"), "id: 2\nevent: xy\ndata: z\ndata: \n\n");
  EXPECT_EQ(FormatSseFrame(3, "", ""), "id: 3\ndata: \n\n");
  EXPECT_EQ(FormatSseComment("keep\nalive"), ": keep alive\n\n");
  EXPECT_EQ(FormatSseRetry(3000), "retry: 3000\n\n");
}

TEST(UrlTest, SplitsAndDecodes) {
  auto t = SplitRequestTarget("/a/b?x=1&y=2");
  EXPECT_EQ(t.path, "/a/b");
  EXPECT_EQ(t.query, "x=1&y=2");
  EXPECT_EQ(SplitRequestTarget("/a").query, "");
  EXPECT_EQ(PercentDecode("a%2Fb+c", false), "a/b+c");
  EXPECT_EQ(PercentDecode("a%2fb+c", true), "a/b c");
  EXPECT_EQ(PercentDecode("%", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%4", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%zz", false), std::nullopt);
  EXPECT_EQ(PercentDecode("%00", false), std::nullopt);
}

TEST(UrlTest, ParsesQueries) {
  auto q = ParseQuery("a=1&b&c=&&a=2&tag=validation%2Floss");
  ASSERT_TRUE(q);
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[1], (std::pair<std::string, std::string>{"b", ""}));
  EXPECT_EQ(QueryValue(*q, "a"), "2");  // the last one wins
  EXPECT_EQ(QueryValue(*q, "tag"), "validation/loss");
  EXPECT_EQ(QueryValue(*q, "zz"), std::nullopt);
  EXPECT_EQ(ParseQuery("a=%g1"), std::nullopt);
  EXPECT_TRUE(ParseQuery("")->empty());
}

TEST(HttpMetricsTest, CountsAndHistograms) {
  HttpMetrics m;
  m.RecordRequest("/healthz", "GET", 200, 0.0002);
  m.RecordRequest("/healthz", "GET", 200, 3.0);
  m.RecordRequest("/healthz", "GET", 503, 0.01);
  m.EventStreamOpened();
  m.EventStreamOpened();
  m.EventStreamClosed(true);
  EXPECT_EQ(m.RequestCount("/healthz", "GET", 200), 2u);
  EXPECT_EQ(m.EventStreamsDropped(), 1u);
  std::string text = m.Exposition();
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(
      has("trainingd_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 2"))
      << text;
  EXPECT_TRUE(
      has("trainingd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.0001\"} 0"));
  EXPECT_TRUE(
      has("trainingd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.00025\"} 1"));
  EXPECT_TRUE(
      has("trainingd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"2.5\"} 2"));
  EXPECT_TRUE(
      has("trainingd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 3"));
  EXPECT_TRUE(has("trainingd_http_request_duration_seconds_count{route=\"/healthz\"} 3"));
  EXPECT_TRUE(has("trainingd_http_event_streams 1"));
  EXPECT_TRUE(has("trainingd_http_event_streams_dropped_total 1"));
}

}  // namespace
}  // namespace trainingd::api
