// A table of bad requests, each answered with the right 4xx and a JSON error body naming the
// offending field or parameter where there is one. The same table is replayed over a socket in
// http_server_test.cpp.
#include "router_bad_requests.h"

#include <gtest/gtest.h>

#include "fake_job_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

TEST(RouterBadRequestsTest, EveryBadRequestGetsItsStatusAndJsonError) {
  FakeJobService service;
  TempDir dir;
  dir.Write("root/index.html", "<h1>dash</h1>");
  dir.Write("secret.txt", "secret");
  RouterOptions options;
  options.api_token = kBadRequestToken;
  options.web_root = (dir.path() / "root").string();
  options.max_body_bytes = 4096;
  Router router(service, options);
  std::string running = service.AddJob("running", JobState::kRunning);  // job-1
  std::string queued = service.AddJob("queued", JobState::kQueued);     // job-2
  std::string stopped = service.AddJob("stopped", JobState::kStopped);  // job-3

  const std::vector<BadRequest> cases = BadRequests();
  ASSERT_GE(cases.size(), 40u);
  for (const BadRequest& c : cases) {
    SCOPED_TRACE(c.name);
    HttpResponse r = router.Handle(c.ToRequest());
    ExpectError(r, c.status, c.code, c.field);
    EXPECT_FALSE(r.event_stream);
  }
  // Nothing was created, and the service still answers.
  EXPECT_EQ(router.Handle(BadRequest::Authorized("GET", "/api/v1/jobs/job-4")).status, 404);
  EXPECT_EQ(router.Handle(BadRequest::Authorized("GET", "/api/v1/jobs/" + running)).status, 200);
}

}  // namespace
}  // namespace trainingd::api
