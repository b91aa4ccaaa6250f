// HttpServer over real sockets on 127.0.0.1, port 0, with a raw-socket client: keep-alive, limits,
// timeouts, server-sent events (order, resumption, slow clients), robustness and Stop().
#include "trainingd/api/http_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "fake_dataset_service.h"
#include "fake_job_service.h"
#include "fake_model_service.h"
#include "router_bad_requests.h"
#include "router_test_util.h"
#include "test_http_client.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}, RouterOptions router_options = {}) {
    options.port = 0;
    router_ = std::make_unique<Router>(service_, router_options, &datasets_, &models_);
    server_ = std::make_unique<HttpServer>(*router_, options);
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_NE(server_->port(), 0);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // Waits until `done` holds, up to `wait`.
  template <typename F>
  static bool Eventually(F done, milliseconds wait = milliseconds(5000)) {
    auto deadline = Clock::now() + wait;
    while (Clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return done();
  }

  FakeJobService service_;
  FakeDatasetService datasets_;
  FakeModelService models_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  StartServer();
  TestClient client(server_->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  auto first = client.ReadResponse();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, R"({"status":"ok"})");
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), JsonPost("/api/v1/jobs", kMinimalSpec))));
  auto second = client.ReadResponse();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 201);
  EXPECT_EQ(second->headers["location"], "/api/v1/jobs/job-1");
  EXPECT_EQ(server_->connection_count(), 1u);
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), JsonPost("/api/v1/jobs/job-1/stop", ""))));
  auto stopped = client.ReadResponse();
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->status, 202);
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), Req("DELETE", "/api/v1/jobs/job-1"))));
  auto deleted = client.ReadResponse();
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 204);
  EXPECT_TRUE(deleted->body.empty());
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), JsonPost("/api/v1/jobs", kMinimalSpec))));
  ASSERT_TRUE(client.ReadResponse());  // job-2
  // Two pipelined requests in one write, answered in order.
  ASSERT_TRUE(
      client.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/jobs/job-2")) +
                  FormatRequest(server_->port(), Req("GET", "/api/v1/nope"), /*close=*/true)));
  auto third = client.ReadResponse();
  auto fourth = client.ReadResponse();
  ASSERT_TRUE(third && fourth);
  EXPECT_EQ(third->status, 200);
  EXPECT_EQ(fourth->status, 404);
  EXPECT_TRUE(client.WaitClosed());  // Connection: close honoured
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413) {
  HttpServerOptions options;
  options.body_limit = 1024;
  StartServer(options);
  {  // Announced by Content-Length: refused before the body is sent.
    TestClient client(server_->port());
    ASSERT_TRUE(
        client.Send("POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    "application/json\r\nContent-Length: 2000000\r\n\r\n"));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_NE(r->body.find("\"code\":\"payload_too_large\""), std::string::npos) << r->body;
    EXPECT_TRUE(client.WaitClosed());
  }
  {  // Sent anyway, chunked: cut off at the limit, the answer still readable.
    TestClient client(server_->port());
    std::string chunk(1000, 'x');
    std::string chunked =
        "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: "
        "application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 8; ++i) chunked += "3e8\r\n" + chunk + "\r\n";
    client.Send(chunked);
    auto r = client.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// An upload's body is streamed to the DatasetService a buffer at a time, whatever the server's
// body limit, and arrives whole and in order.
TEST_F(HttpServerTest, UploadsAreStreamedPastTheBodyLimit) {
  HttpServerOptions options;
  options.body_limit = 1024;
  StartServer(options);
  const std::string host = "127.0.0.1:" + std::to_string(server_->port());
  std::string body = "ok";
  for (int64_t i = 0; body.size() < (size_t{5} << 20); ++i) body += std::to_string(i * 7919) + ",";
  for (const bool chunked : {false, true}) {
    const std::string name = chunked ? "chunked" : "plain";
    TestClient client(server_->port());
    std::string head = "POST /api/v1/datasets?name=" + name +
                       "&format=npz HTTP/1.1\r\nHost: " + host + "\r\n" +
                       "Content-Type: application/octet-stream\r\n";
    if (!chunked) {
      ASSERT_TRUE(
          client.Send(head + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    } else {
      std::string out = head + "Transfer-Encoding: chunked\r\n\r\n";
      char size[32];
      for (size_t at = 0; at < body.size(); at += 100000) {
        const std::string piece = body.substr(at, 100000);
        std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
        out += size + piece + "\r\n";
      }
      ASSERT_TRUE(client.Send(out + "0\r\n\r\n"));
    }
    auto r = client.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 201) << r->body;
    EXPECT_EQ(r->headers["location"], "/api/v1/datasets/" + name);
    EXPECT_TRUE(datasets_.Body(name) == body) << datasets_.Body(name).size() << " bytes arrived";
  }
  EXPECT_LE(datasets_.largest_append.load(), int64_t{1} << 20);
  EXPECT_TRUE(Eventually([&] { return datasets_.uploads_alive == 0; }));
}

// A multipart body (a CSV and its test file) is decoded as it streams: each part arrives whole in
// its own file, however the server's buffers cut the parts and the delimiters.
TEST_F(HttpServerTest, MultipartUploadsAreDecodedAsTheyStream) {
  StartServer();
  const std::string host = "127.0.0.1:" + std::to_string(server_->port());
  std::string train = "ok", test;
  for (int64_t i = 0; train.size() < (size_t{3} << 20); ++i) train += std::to_string(i) + "\r\n-";
  for (int64_t i = 0; test.size() < (size_t{2} << 20); ++i) test += std::to_string(i * 3) + "\n--";
  const std::string boundary = "----boundary7MA4YWxkTrZu0gW";
  const std::string body =
      "--" + boundary +
      "\r\nContent-Disposition: form-data; name=\"train\"; filename=\"t.csv\"\r\n" +
      "Content-Type: text/csv\r\n\r\n" + train + "\r\n--" + boundary +
      "\r\nContent-Disposition: form-data; name=\"test\"; filename=\"u.csv\"\r\n\r\n" + test +
      "\r\n--" + boundary + "--\r\n";
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send("POST /api/v1/datasets?name=split&format=csv HTTP/1.1\r\nHost: " + host +
                          "\r\nContent-Type: multipart/form-data; boundary=" + boundary +
                          "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                          body));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_TRUE(datasets_.Body("split") == train) << datasets_.Body("split").size();
  EXPECT_TRUE(datasets_.TestBody("split") == test) << datasets_.TestBody("split").size();
  EXPECT_LE(datasets_.largest_append.load(), int64_t{1} << 20);

  // A part the service refuses (an npz has no test file): 400 naming it, nothing kept. (A small
  // body: the server answers at the part's header and closes without reading the rest.)
  const std::string refused = "--" + boundary + "\r\nContent-Disposition: form-data; name=test" +
                              "\r\n\r\nx\r\n--" + boundary + "--\r\n";
  TestClient second(server_->port());
  ASSERT_TRUE(second.Send("POST /api/v1/datasets?name=arrays&format=npz HTTP/1.1\r\nHost: " + host +
                          "\r\nContent-Type: multipart/form-data; boundary=" + boundary +
                          "\r\nContent-Length: " + std::to_string(refused.size()) + "\r\n\r\n" +
                          refused));
  r = second.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("\"field\":\"test\""), std::string::npos) << r->body;
  EXPECT_TRUE(Eventually([&] { return datasets_.uploads_alive == 0; }));
  EXPECT_EQ(datasets_.GetDataset("arrays").status().code(), engine::StatusCode::kNotFound);
}

// An inference is answered when its batch has run, on another thread, while the connection
// waits; the next request on the connection is answered after it, in order.
TEST_F(HttpServerTest, InferencesAreAnsweredWhenTheirBatchHasRun) {
  models_.hold = true;
  StartServer();
  const std::string host = "127.0.0.1:" + std::to_string(server_->port());
  const std::string body =
      R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]})";
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send("POST /v2/models/job-1/infer HTTP/1.1\r\nHost: " + host +
                          "\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body));
  std::vector<std::function<void()>> held;
  ASSERT_TRUE(Eventually([&] {
    auto more = models_.TakeHeld();
    held.insert(held.end(), more.begin(), more.end());
    return !held.empty();
  }));
  std::thread batch([&] { held[0](); });  // the model server's thread
  batch.join();
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("\"model_name\":\"job-1\""), std::string::npos) << r->body;
  // The connection goes on.
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), Req("GET", "/v2/health/ready"))));
  r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// What the header already shows is refused before a byte of the body is read, and the
// connection closes (the body would follow); the upload is never begun or is dropped.
TEST_F(HttpServerTest, UploadsRefusedByTheirHeaderAreAnsweredAtOnce) {
  StartServer();
  const std::string host = "127.0.0.1:" + std::to_string(server_->port());
  datasets_.max_bytes = 1000;
  const std::string post =
      "POST /api/v1/datasets?name=a&format=npz HTTP/1.1\r\nHost: " + host + "\r\n";
  struct Case {
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {post + "Content-Type: application/octet-stream\r\nContent-Length: 5000000\r\n", 413},
      {post + "Content-Type: application/json\r\nContent-Length: 10\r\n", 415},
      {"POST /api/v1/datasets?format=npz HTTP/1.1\r\nHost: " + host +
           "\r\nContent-Type: "
           "application/octet-stream\r\nContent-Length: 10\r\n",
       400},
      {post + "Content-Type: application/octet-stream\r\nOrigin: http://evil.example\r\n"
              "Content-Length: 10\r\n",
       403},
  };
  for (const Case& c : cases) {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(c.head + "\r\n"));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r) << c.head;
    EXPECT_EQ(r->status, c.status) << c.head << r->body;
    EXPECT_TRUE(client.WaitClosed()) << c.head;
  }
  {  // Over the limit only as it arrives (chunked): 413 once it passes (checked a buffer at a
     // time, so send more than one).
    TestClient client(server_->port());
    std::string out = post +
                      "Content-Type: application/octet-stream\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 2000; ++i) out += "3e8\r\n" + std::string(1000, 'x') + "\r\n";
    client.Send(out);  // may fail part way: the server stops reading at the limit
    auto r = client.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413) << r->body;
  }
  EXPECT_TRUE(Eventually([&] { return datasets_.uploads_alive == 0; }));
  EXPECT_TRUE(datasets_.ListDatasets()->empty());
}

// A body the service finds wrong is 400 naming the field; a client that goes away mid-upload
// leaves nothing, and the server serves on.
TEST_F(HttpServerTest, BadOrAbandonedUploadsLeaveNothing) {
  StartServer();
  const std::string host = "127.0.0.1:" + std::to_string(server_->port());
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(
        "POST /api/v1/datasets?name=bad&format=npz HTTP/1.1\r\nHost: " + host +
        "\r\nContent-Type: "
        "application/octet-stream\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
    auto cont = client.ReadUntil("\r\n\r\n");
    ASSERT_TRUE(cont);
    EXPECT_NE(cont->find("100 Continue"), std::string::npos) << *cont;
    ASSERT_TRUE(client.Send("wrong"));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(r->body.find("\"field\":\"y_train\""), std::string::npos) << r->body;
  }
  {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send("POST /api/v1/datasets?name=gone&format=npz HTTP/1.1\r\nHost: " + host +
                            "\r\nContent-Type: "
                            "application/octet-stream\r\nContent-Length: 3000000\r\n\r\n" +
                            std::string(1500000, 'o')));
    EXPECT_TRUE(Eventually([&] { return datasets_.uploads_alive == 1; }));
    client.Close();
  }
  EXPECT_TRUE(Eventually([&] { return datasets_.uploads_alive == 0; }));
  EXPECT_TRUE(datasets_.ListDatasets()->empty());
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/datasets"))));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{\"datasets\":[]}");
}

TEST_F(HttpServerTest, HeadersOverTheLimitAre431) {
  StartServer();  // 8 KiB
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') +
                          "\r\n\r\n"));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_NE(r->body.find("request_header_fields_too_large"), std::string::npos);
  EXPECT_TRUE(client.WaitClosed());
  // Just under the limit is fine.
  TestClient ok(server_->port());
  ASSERT_TRUE(
      ok.Send("GET /healthz HTTP/1.1\r\nHost: localhost:" + std::to_string(server_->port()) +
              "\r\nX-Big: " + std::string(7000, 'a') + "\r\n\r\n"));
  auto r2 = ok.ReadResponse();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 200);
}

TEST_F(HttpServerTest, ReadTimeoutClosesIdleAndTricklingConnections) {
  HttpServerOptions options;
  options.read_timeout = milliseconds(300);
  StartServer(options);
  auto start = Clock::now();
  TestClient idle(server_->port());
  EXPECT_TRUE(idle.WaitClosed(milliseconds(3000)));
  EXPECT_LT(Clock::now() - start, milliseconds(2000));

  // A slowloris client: one header byte every 50 ms never completes a request in time.
  start = Clock::now();
  TestClient slow(server_->port());
  std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(100, 'a');
  bool closed = false;
  for (char c : request) {
    if (!slow.Send(std::string_view(&c, 1))) break;
    if (slow.WaitClosed(milliseconds(50))) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed || slow.WaitClosed(milliseconds(2000)));
  EXPECT_LT(Clock::now() - start, milliseconds(2500));

  // A kept-alive connection is closed after read_timeout without a next request.
  TestClient kept(server_->port());
  ASSERT_TRUE(kept.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  ASSERT_TRUE(kept.ReadResponse());
  EXPECT_TRUE(kept.WaitClosed(milliseconds(3000)));
  EXPECT_TRUE(Eventually([&] { return server_->connection_count() == 0; }));
}

TEST_F(HttpServerTest, EventsArriveInOrderAndResumeAfterLastEventId) {
  HttpServerOptions options;
  options.sse_keepalive = milliseconds(100);
  StartServer(options);
  std::string id = service_.AddJob("a", JobState::kRunning);
  for (int i = 1; i <= 5; ++i) service_.Publish(id, EventKind::kScalar, ScalarEvent{"loss", i});

  TestClient client(server_->port());
  ASSERT_TRUE(
      client.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/jobs/" + id + "/events", "",
                                                     {{"Last-Event-ID", "2"}}))));
  auto head = client.ReadUntil("\r\n\r\n");
  ASSERT_TRUE(head);
  RawResponse r;
  TestClient::ParseHead(*head, &r);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  EXPECT_EQ(r.headers["cache-control"], "no-cache");
  EXPECT_EQ(r.headers.count("content-length"), 0u);

  std::thread publisher([&] {
    for (int i = 6; i <= 40; ++i) {
      if (i % 10 == 0) {
        service_.Publish(id, EventKind::kState, JobStateEvent{id, "a", JobState::kRunning});
      } else if (i == 25) {
        service_.Publish(id, EventKind::kLog, LogEvent{"line one\nline two"});
      } else {
        service_.Publish(id, EventKind::kScalar, ScalarEvent{"loss", i});
      }
    }
  });
  publisher.join();
  std::string stream;
  ASSERT_TRUE(Eventually([&] {
    client.ReadMore(Clock::now() + milliseconds(50));
    return SseIds(client.buffer()).size() >= 38u;
  }));
  std::vector<int64_t> ids = SseIds(client.buffer());
  std::vector<int64_t> expected;
  for (int64_t i = 3; i <= 40; ++i) expected.push_back(i);
  EXPECT_EQ(ids, expected);
  EXPECT_NE(
      client.buffer().find("id: 25\nevent: log\ndata: {\"text\":\"line one\\nline two\"}\n\n"),
      std::string::npos);
  EXPECT_NE(client.buffer().find("id: 10\nevent: state\n"), std::string::npos);
  EXPECT_EQ(client.buffer().find("retry: 3000\n\n"), 0u);
  // Idle: keep-alive comments.
  ASSERT_TRUE(client.ReadUntil(": keep-alive\n\n", milliseconds(2000)));
  client.Close();
  ASSERT_TRUE(Eventually([&] { return service_.SubscriberCount(id) == 0; }));

  // Events published while disconnected arrive after a reconnect, none twice.
  for (int i = 41; i <= 45; ++i) service_.Publish(id, EventKind::kScalar, ScalarEvent{});
  TestClient again(server_->port());
  ASSERT_TRUE(again.Send(FormatRequest(
      server_->port(), Req("GET", "/api/v1/jobs/" + id + "/events?last_event_id=40"))));
  ASSERT_TRUE(Eventually([&] {
    again.ReadMore(Clock::now() + milliseconds(50));
    return SseIds(again.buffer()).size() >= 5u;
  }));
  EXPECT_EQ(SseIds(again.buffer()), (std::vector<int64_t>{41, 42, 43, 44, 45}));
}

// The replay of a long history on (re)connect is not a slow client: the queue limits apply only
// to live events.
TEST_F(HttpServerTest, ReplayLongerThanTheEventQueueArrivesWhole) {
  HttpServerOptions options;
  options.sse_queue_events = 8;
  StartServer(options);
  std::string id = service_.AddJob("a", JobState::kRunning);
  for (int i = 1; i <= 100; ++i) {
    service_.Publish(id, EventKind::kScalar, ScalarEvent{"loss", i});
  }
  TestClient client(server_->port());
  ASSERT_TRUE(
      client.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/jobs/" + id + "/events", "",
                                                     {{"Last-Event-ID", "0"}}))));
  ASSERT_TRUE(Eventually([&] {
    client.ReadMore(Clock::now() + milliseconds(50));
    return SseIds(client.buffer()).size() >= 100u;
  }));
  std::vector<int64_t> expected;
  for (int64_t i = 1; i <= 100; ++i) expected.push_back(i);
  EXPECT_EQ(SseIds(client.buffer()), expected);
  EXPECT_EQ(router_->metrics().EventStreamsDropped(), 0u);
  // Live events after the replay still arrive.
  const int64_t next = service_.Publish(id, EventKind::kScalar, ScalarEvent{});
  ASSERT_TRUE(client.ReadUntil("id: " + std::to_string(next) + "\n"));
}

TEST_F(HttpServerTest, SlowEventClientIsDroppedWhileOthersKeepReceiving) {
  HttpServerOptions options;
  options.sse_queue_events = 8;
  options.sse_queue_bytes = 256 * 1024;
  StartServer(options);
  const std::string request = FormatRequest(server_->port(), Req("GET", "/api/v1/events"));
  TestClient slow(server_->port(), /*receive_buffer=*/4096);
  TestClient fast(server_->port());
  ASSERT_TRUE(slow.Send(request));
  ASSERT_TRUE(fast.Send(request));
  ASSERT_TRUE(slow.ReadUntil("\r\n\r\n"));
  ASSERT_TRUE(fast.ReadUntil("\r\n\r\n"));
  ASSERT_TRUE(Eventually([&] { return service_.SubscriberCount("") == 2; }));

  // The fast client reads every event before the next is published; the slow one reads nothing.
  const std::string data(16 * 1024, 'd');
  int64_t last = 0;
  size_t seen = 0;
  while (router_->metrics().EventStreamsDropped() == 0 && last < 4000) {
    last = service_.Publish("", EventKind::kLog, LogEvent{data});
    ASSERT_TRUE(Eventually([&] {
      fast.ReadMore(Clock::now() + milliseconds(20));
      return fast.buffer().find("id: " + std::to_string(last) + "\n", seen) != std::string::npos;
    })) << "fast client stalled at event "
        << last;
    seen = fast.buffer().size() > 100000 ? fast.buffer().size() - 100000 : 0;
  }
  EXPECT_EQ(router_->metrics().EventStreamsDropped(), 1u);
  EXPECT_GT(last, 8);  // more than the queue holds: the socket buffers filled first
  EXPECT_TRUE(Eventually([&] { return service_.SubscriberCount("") == 1; }));
  // The slow client finds its stream ended once it reads what was already sent.
  EXPECT_TRUE(slow.WaitClosed(milliseconds(10000)));
  std::vector<int64_t> slow_ids = SseIds(slow.buffer());
  ASSERT_FALSE(slow_ids.empty());
  EXPECT_LT(slow_ids.back(), last);

  // The fast client keeps receiving, in order, nothing lost.
  int64_t next = service_.Publish("", EventKind::kLog, LogEvent{"after the drop"});
  ASSERT_TRUE(fast.ReadUntil("id: " + std::to_string(next) + "\n"));
  std::vector<int64_t> fast_ids = SseIds(fast.buffer());
  for (size_t i = 0; i < fast_ids.size(); ++i) ASSERT_EQ(fast_ids[i], static_cast<int64_t>(i + 1));
}

TEST_F(HttpServerTest, KeepsServingAfterBadRequests) {
  TempDir dir;
  dir.Write("root/index.html", "<h1>dash</h1>");
  dir.Write("secret.txt", "secret");
  RouterOptions router_options;
  router_options.api_token = kBadRequestToken;
  router_options.web_root = (dir.path() / "root").string();
  router_options.max_body_bytes = 4096;
  StartServer({}, router_options);
  service_.AddJob("running", JobState::kRunning);
  service_.AddJob("queued", JobState::kQueued);
  service_.AddJob("stopped", JobState::kStopped);

  for (const BadRequest& c : BadRequests()) {
    SCOPED_TRACE(c.name);
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(FormatRequest(server_->port(), c.ToRequest())));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, c.status) << r->body;
    EXPECT_EQ(r->headers["content-type"], "application/json");
    EXPECT_NE(r->body.find("\"code\":\"" + c.code + "\""), std::string::npos) << r->body;
  }
  // Not HTTP at all, a bad method token, a bad version: 400 and the connection closes.
  for (const char* garbage :
       {"NOT HTTP\r\n\r\n", "G@T / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost x\r\n\r\n",
        "POST /api/v1/jobs HTTP/1.1\r\nContent-Length: -5\r\n\r\n"}) {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(garbage));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r) << garbage;
    EXPECT_EQ(r->status, 400) << garbage;
    EXPECT_NE(r->body.find("\"code\":\"bad_request\""), std::string::npos);
    EXPECT_TRUE(client.WaitClosed());
  }
  TestClient client(server_->port());
  ASSERT_TRUE(client.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, ExpectContinueIsAnswered) {
  StartServer();
  TestClient client(server_->port());
  std::string body = kMinimalSpec;
  ASSERT_TRUE(client.Send(
      "POST /api/v1/jobs HTTP/1.1\r\nHost: localhost:" + std::to_string(server_->port()) +
      "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n"));
  ASSERT_TRUE(client.ReadUntil("HTTP/1.1 100 Continue\r\n\r\n"));
  ASSERT_TRUE(client.Send(body));
  auto r = client.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201);
}

// A route that waits (here: a scalars query held up like a slow SQLite read) runs on the handler
// pool, so the single I/O thread keeps answering other connections meanwhile.
TEST_F(HttpServerTest, ASlowHandlerDoesNotBlockTheIoThread) {
  StartServer({.io_threads = 1, .handler_threads = 2});
  TestClient setup(server_->port());
  ASSERT_TRUE(setup.Send(FormatRequest(server_->port(), JsonPost("/api/v1/jobs", kMinimalSpec))));
  ASSERT_TRUE(setup.ReadResponse());  // job-1
  service_.CloseScalarsGate();
  TestClient slow(server_->port());
  ASSERT_TRUE(
      slow.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/jobs/job-1/scalars?tag=loss"))));
  ASSERT_TRUE(Eventually([&] { return service_.scalars_waiting() == 1; }));
  TestClient quick(server_->port());
  ASSERT_TRUE(quick.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  auto health = quick.ReadResponse();
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  ASSERT_TRUE(quick.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/jobs/job-1"))));
  auto job = quick.ReadResponse();
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 200);
  service_.OpenScalarsGate();
  auto scalars = slow.ReadResponse();
  ASSERT_TRUE(scalars);
  EXPECT_EQ(scalars->status, 200);
}

TEST_F(HttpServerTest, StopReturnsPromptlyAndClosesEveryConnection) {
  StartServer();
  TestClient idle(server_->port());
  TestClient stream(server_->port());
  ASSERT_TRUE(stream.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/events"))));
  ASSERT_TRUE(stream.ReadUntil("\r\n\r\n"));
  ASSERT_TRUE(idle.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  ASSERT_TRUE(idle.ReadResponse());
  auto start = Clock::now();
  server_->Stop();
  EXPECT_LT(Clock::now() - start, milliseconds(1500));
  EXPECT_TRUE(idle.WaitClosed(milliseconds(1000)));
  EXPECT_TRUE(stream.WaitClosed(milliseconds(1000)));
  EXPECT_EQ(service_.SubscriberCount(""), 0u);
  EXPECT_EQ(server_->connection_count(), 0u);
  TestClient refused(server_->port());
  EXPECT_FALSE(refused.connected() && refused.Send("GET / HTTP/1.1\r\n\r\n") &&
               refused.ReadResponse(milliseconds(500)));
  server_->Stop();  // idempotent
}

TEST_F(HttpServerTest, StartErrors) {
  StartServer();
  EXPECT_EQ(server_->Start().code(), engine::StatusCode::kFailedPrecondition);
  Router router(service_, {});
  HttpServerOptions bad;
  bad.address = "not-an-address";
  EXPECT_EQ(HttpServer(router, bad).Start().code(), engine::StatusCode::kInvalidArgument);
  HttpServerOptions no_handlers;
  no_handlers.port = 0;
  no_handlers.handler_threads = 0;
  EXPECT_EQ(HttpServer(router, no_handlers).Start().code(), engine::StatusCode::kInvalidArgument);
  HttpServerOptions taken;
  taken.port = server_->port();
  HttpServer second(router, taken);
  EXPECT_EQ(second.Start().code(), engine::StatusCode::kUnavailable);
}

// The Host check over real sockets, against the port the OS chose: the names of this machine's
// loopback with that port pass (any case), anything else is 421 with the JSON error.
TEST_F(HttpServerTest, HostMustNameThisServerWithTheBoundPort) {
  StartServer();
  const std::string port = std::to_string(server_->port());
  for (const std::string& host :
       {"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port}) {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(
        FormatRequest(server_->port(), Req("GET", "/api/v1/jobs", "", {{"Host", host}}))));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 200) << host << " " << r->body;
  }
  for (const std::string& host :
       {std::string("127.0.0.1"), "localhost:" + std::to_string(server_->port() + 1),
        "evil.example:" + port, std::string("evil.example")}) {
    TestClient client(server_->port());
    ASSERT_TRUE(client.Send(
        FormatRequest(server_->port(), Req("GET", "/api/v1/jobs", "", {{"Host", host}}))));
    auto r = client.ReadResponse();
    ASSERT_TRUE(r) << host;
    EXPECT_EQ(r->status, 421) << host;
    EXPECT_EQ(r->headers["content-type"], "application/json");
    EXPECT_NE(r->body.find("\"field\":\"Host\""), std::string::npos) << r->body;
  }
}

// The security headers also on the answers the session writes itself (431) and on an event
// stream's head.
TEST_F(HttpServerTest, SecurityHeadersOnSessionErrorsAndStreams) {
  StartServer();
  TestClient big(server_->port());
  ASSERT_TRUE(big.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') +
                       "\r\n\r\n"));
  auto r = big.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_EQ(r->headers["x-frame-options"], "DENY");
  EXPECT_EQ(r->headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
  EXPECT_EQ(r->headers["referrer-policy"], "no-referrer");
  TestClient stream(server_->port());
  ASSERT_TRUE(stream.Send(FormatRequest(server_->port(), Req("GET", "/api/v1/events"))));
  auto head = stream.ReadUntil("\r\n\r\n");
  ASSERT_TRUE(head);
  RawResponse h;
  TestClient::ParseHead(*head, &h);
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.headers["x-frame-options"], "DENY");
  EXPECT_EQ(h.headers["referrer-policy"], "no-referrer");
  EXPECT_NE(h.headers["content-security-policy"].find("frame-ancestors 'none'"), std::string::npos);
}

TEST_F(HttpServerTest, ConnectionsOverTheCapAreClosedAndCounted) {
  HttpServerOptions options;
  options.max_connections = 2;
  StartServer(options);
  TestClient a(server_->port());
  TestClient b(server_->port());
  ASSERT_TRUE(a.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  ASSERT_TRUE(a.ReadResponse());
  ASSERT_TRUE(b.Send(FormatRequest(server_->port(), Req("GET", "/healthz"))));
  ASSERT_TRUE(b.ReadResponse());
  TestClient c(server_->port());
  EXPECT_TRUE(c.WaitClosed(milliseconds(2000)));
  EXPECT_NE(router_->metrics().Exposition().find("trainingd_http_connections_refused_total 1\n"),
            std::string::npos);
}

// CPU time (user + system) of process `pid` so far, in seconds, from /proc/<pid>/stat.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Runs an HttpServer in a child process whose descriptor limit leaves room for a few dozen
// connections. Opening connections until one is not answered puts the server's accept at
// EMFILE with a connection waiting, which used to make it retry at once, forever (a core at
// 100%). Now: little CPU while it waits, one log line, the failures counted; and once some
// connections close, the waiting one is accepted and answered.
TEST(HttpServerDescriptorTest, OutOfDescriptorsBacksOffAndRecovers) {
  int port_pipe[2], stop_pipe[2], log_pipe[2];
  ASSERT_EQ(pipe(port_pipe), 0);
  ASSERT_EQ(pipe(stop_pipe), 0);
  ASSERT_EQ(pipe2(log_pipe, O_NONBLOCK), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(port_pipe[0]);
    close(stop_pipe[1]);
    close(log_pipe[0]);
    FakeJobService service;
    Router router(service, {});
    HttpServerOptions options;
    options.port = 0;
    options.io_threads = 1;
    options.handler_threads = 1;
    options.max_connections = 100000;  // the descriptor limit is what stops it
    options.read_timeout = std::chrono::seconds(60);
    const int log_fd = log_pipe[1];
    options.log = [log_fd](std::string_view line) {
      std::string l = std::string(line) + "\n";
      if (write(log_fd, l.data(), l.size()) < 0) _exit(3);
    };
    HttpServer server(router, options);
    if (!server.Start().ok()) _exit(2);
    // New descriptors take the lowest free numbers, which must be below the limit: set it so
    // that 24 numbers are free below it.
    std::set<int> open;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      open.insert(std::stoi(entry.path().filename().string()));
    }
    int free_below = 0, limit_fds = 0;
    while (free_below < 24) free_below += open.count(limit_fds++) ? 0 : 1;
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = static_cast<rlim_t>(limit_fds);
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(4);
    const uint16_t port = server.port();
    if (write(port_pipe[1], &port, sizeof port) != sizeof port) _exit(5);
    char byte;
    while (read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    server.Stop();
    _exit(0);
  }
  close(port_pipe[1]);
  close(stop_pipe[0]);
  close(log_pipe[1]);
  struct Child {
    pid_t pid;
    int stop_fd;
    ~Child() {
      if (stop_fd >= 0) close(stop_fd);
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } child{pid, stop_pipe[1]};
  uint16_t port = 0;
  pollfd ready{port_pipe[0], POLLIN, 0};
  ASSERT_EQ(poll(&ready, 1, 10000), 1);
  ASSERT_EQ(read(port_pipe[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  close(port_pipe[0]);

  std::vector<std::unique_ptr<TestClient>> clients;
  TestClient* waiting = nullptr;
  for (int i = 0; i < 200 && waiting == nullptr; ++i) {
    auto client = std::make_unique<TestClient>(port);
    ASSERT_TRUE(client->connected());  // the kernel completes it; accepting is the server's part
    ASSERT_TRUE(client->Send(FormatRequest(port, Req("GET", "/healthz"))));
    if (!client->ReadResponse(milliseconds(1000))) waiting = client.get();
    clients.push_back(std::move(client));
  }
  ASSERT_NE(waiting, nullptr) << "the server accepted 200 connections under its limit";
  const size_t answered = clients.size() - 1;
  EXPECT_GE(answered, 5u);

  // Out of descriptors with a connection waiting: about 1.2 s, while a busy loop would use a
  // whole core. The accept failures counted below tell the same on a loaded machine.
  const double cpu_before = ProcessCpuSeconds(pid);
  std::this_thread::sleep_for(milliseconds(1200));
  const double cpu_used = ProcessCpuSeconds(pid) - cpu_before;
  EXPECT_LT(cpu_used, 0.25) << "the server spins while out of descriptors";

  // Free a few descriptors: the waiting connection is accepted and answered.
  for (size_t i = 0; i < 4; ++i) clients[i]->Close();
  auto late = waiting->ReadResponse(milliseconds(5000));
  ASSERT_TRUE(late) << "not accepted after descriptors were freed";
  EXPECT_EQ(late->status, 200);
  TestClient fresh(port);
  ASSERT_TRUE(fresh.Send(FormatRequest(port, Req("GET", "/metrics"))));
  auto metrics = fresh.ReadResponse();
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("trainingd_http_accept_paused 0\n"), std::string::npos);
  const std::string counter = "\ntrainingd_http_accept_errors_total ";
  size_t at = metrics->body.find(counter);
  ASSERT_NE(at, std::string::npos) << metrics->body;
  const int failures = std::stoi(metrics->body.substr(at + counter.size()));
  // 50 ms doubling to 1 s: a handful of retries in a few seconds, where a spin makes thousands.
  EXPECT_GE(failures, 1);
  EXPECT_LE(failures, 12);

  clients.clear();
  close(child.stop_fd);
  child.stop_fd = -1;
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  child.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::string log;
  char buf[4096];
  ssize_t n;
  while ((n = read(log_pipe[0], buf, sizeof buf)) > 0) log.append(buf, static_cast<size_t>(n));
  close(log_pipe[0]);
  auto count = [&](std::string_view needle) {
    size_t k = 0;
    for (size_t pos = log.find(needle); pos != std::string::npos; pos = log.find(needle, pos + 1))
      ++k;
    return k;
  };
  EXPECT_EQ(count("cannot accept connections: "), 1u) << log;
  EXPECT_EQ(count("accepting connections again after " + std::to_string(failures)), 1u) << log;
}

}  // namespace
}  // namespace trainingd::api
