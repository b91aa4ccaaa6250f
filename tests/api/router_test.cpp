// Router tests without sockets: every route's success answer and every status code the router
// produces, each with its body checked, against the in-memory FakeJobService.
#include "trainingd/api/router.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "fake_job_service.h"
#include "router_test_util.h"

namespace trainingd::api {
namespace {

using nlohmann::json;

class RouterTest : public ::testing::Test {
 protected:
  RouterTest() : router_(service_, Options()) {}
  RouterOptions Options() {
    RouterOptions options;
    options.log = [this](std::string_view line) { logged_.emplace_back(line); };
    return options;
  }

  std::vector<std::string> logged_;  // the router's log lines (one thread here)
  FakeJobService service_;
  Router router_;
};

TEST_F(RouterTest, SubmitAnswers201WithTheJobAndLocation) {
  HttpResponse r = router_.Handle(JsonPost("/api/v1/jobs", kMinimalSpec));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.Header("Location"), "/api/v1/jobs/job-1");
  json body = BodyJson(r);
  EXPECT_EQ(body["id"], "job-1");
  EXPECT_EQ(body["name"], "t");
  EXPECT_EQ(body["state"], "queued");
  EXPECT_EQ(body["max_steps"], 100);
  EXPECT_EQ(body["started_at"], nullptr);
  EXPECT_EQ(body["error"], nullptr);
  // The canonical spec comes back expanded: the preset's layers and every hook.
  EXPECT_EQ(body["spec"]["model"]["preset"], "softmax");
  EXPECT_TRUE(body["spec"]["hooks"].contains("checkpoint"));
  // A charset parameter on the media type is fine.
  HttpRequest with_charset = JsonPost("/api/v1/jobs", kMinimalSpec);
  with_charset.headers = {{"content-type", "Application/JSON; charset=utf-8"}};
  EXPECT_EQ(router_.Handle(with_charset).status, 201);
}

TEST_F(RouterTest, SubmitErrorsNameTheField) {
  HttpResponse r =
      router_.Handle(JsonPost("/api/v1/jobs", R"({"name": "t", "model": "softmax", "batch_size": 0,
                                   "max_steps": 10})"));
  ExpectError(r, 400, "invalid_argument", "batch_size");
  EXPECT_EQ(BodyJson(r)["error"]["message"], "batch_size: must be >= 1, got 0");
  ExpectError(router_.Handle(JsonPost("/api/v1/jobs", "{not json")), 400, "invalid_argument");
  ExpectError(router_.Handle(Req("POST", "/api/v1/jobs", kMinimalSpec)), 415,
              "unsupported_media_type", "Content-Type");
  RouterOptions small;
  small.max_body_bytes = 16;
  Router limited(service_, small);
  ExpectError(limited.Handle(JsonPost("/api/v1/jobs", kMinimalSpec)), 413, "payload_too_large");
}

TEST_F(RouterTest, ServiceStatusesMapToHttp) {
  service_.FailNext(engine::Status::Unavailable("shutting down"));
  HttpResponse r = router_.Handle(JsonPost("/api/v1/jobs", kMinimalSpec));
  ExpectError(r, 503, "unavailable");
  EXPECT_EQ(r.Header("Retry-After"), "1");
  EXPECT_EQ(BodyJson(r)["error"]["message"], "shutting down");

  // Anything else is a 500 that tells the client only an error id; the details (here a path)
  // go to the log under that id.
  service_.FailNext(engine::Status::IoError("/srv/trainingd/jobs/j1/log.txt: disk on fire"));
  r = router_.Handle(Req("GET", "/api/v1/jobs"));
  ExpectError(r, 500, "internal");
  const std::string id = BodyJson(r)["error"].value("id", "");
  ASSERT_FALSE(id.empty()) << r.body;
  EXPECT_EQ(r.body.find("/srv"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("disk on fire"), std::string::npos) << r.body;
  EXPECT_NE(BodyJson(r)["error"]["message"].get<std::string>().find(id), std::string::npos);
  ASSERT_EQ(logged_.size(), 1u);
  EXPECT_NE(logged_[0].find(id), std::string::npos) << logged_[0];
  EXPECT_NE(logged_[0].find("/srv/trainingd/jobs/j1/log.txt: disk on fire"), std::string::npos)
      << logged_[0];
  EXPECT_NE(logged_[0].find("GET /api/v1/jobs"), std::string::npos) << logged_[0];

  // InvalidArgument from the service: the field is the message's prefix.
  service_.FailNext(engine::Status::InvalidArgument("cursor: expired"));
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs?cursor=x")), 400, "invalid_argument",
              "cursor");
  service_.FailNext(engine::Status::InvalidArgument("something is off"));
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs")), 400, "invalid_argument");

  // An exception inside the service becomes a 500, not a crash.
  service_.ThrowNext();
  r = router_.Handle(Req("GET", "/api/v1/jobs/job-1"));
  ExpectError(r, 500, "internal");
  EXPECT_EQ(r.body.find("injected failure"), std::string::npos) << r.body;
  const std::string second_id = BodyJson(r)["error"].value("id", "");
  EXPECT_FALSE(second_id.empty());
  EXPECT_NE(second_id, id);
  ASSERT_EQ(logged_.size(), 2u);
  EXPECT_NE(logged_[1].find(second_id), std::string::npos) << logged_[1];
  EXPECT_NE(logged_[1].find("injected failure"), std::string::npos) << logged_[1];
  // Errors that are the client's own are not logged.
  router_.Handle(Req("GET", "/api/v1/jobs/nope"));
  EXPECT_EQ(logged_.size(), 2u);
}

TEST_F(RouterTest, ListPassesValidatedParametersAndPages) {
  for (int i = 0; i < 3; ++i) service_.AddJob("j" + std::to_string(i), JobState::kRunning);
  service_.AddJob("done", JobState::kCompleted);
  HttpResponse r = router_.Handle(Req("GET", "/api/v1/jobs?state=running&limit=2"));
  ASSERT_EQ(r.status, 200) << r.body;
  json body = BodyJson(r);
  ASSERT_EQ(body["jobs"].size(), 2u);
  EXPECT_EQ(body["jobs"][0]["id"], "job-3");  // newest first
  EXPECT_EQ(body["jobs"][1]["id"], "job-2");
  EXPECT_FALSE(body["jobs"][0].contains("spec"));  // summaries only
  EXPECT_EQ(body["next_cursor"], "job-2");
  EXPECT_EQ(service_.calls().list_state, JobState::kRunning);
  EXPECT_EQ(service_.calls().list_limit, 2);

  r = router_.Handle(Req("GET", "/api/v1/jobs?state=running&limit=2&cursor=job-2"));
  body = BodyJson(r);
  ASSERT_EQ(body["jobs"].size(), 1u);
  EXPECT_EQ(body["jobs"][0]["id"], "job-1");
  EXPECT_EQ(body["next_cursor"], nullptr);
  EXPECT_EQ(service_.calls().list_cursor, "job-2");

  r = router_.Handle(Req("GET", "/api/v1/jobs"));
  EXPECT_EQ(BodyJson(r)["jobs"].size(), 4u);
  EXPECT_EQ(service_.calls().list_limit, 50);  // the default
  EXPECT_EQ(service_.calls().list_state, std::nullopt);
}

TEST_F(RouterTest, GetStopResumeDelete) {
  std::string id = service_.AddJob("a", JobState::kRunning);
  HttpResponse r = router_.Handle(Req("GET", "/api/v1/jobs/" + id));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(BodyJson(r)["state"], "running");
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs/nope")), 404, "not_found");

  // Running jobs cannot be deleted or resumed: 409 naming the state.
  r = router_.Handle(Req("DELETE", "/api/v1/jobs/" + id));
  ExpectError(r, 409, "failed_precondition");
  EXPECT_NE(BodyJson(r)["error"]["message"].get<std::string>().find("running"), std::string::npos);
  r = router_.Handle(JsonPost("/api/v1/jobs/" + id + "/resume", ""));
  ExpectError(r, 409, "failed_precondition");

  r = router_.Handle(JsonPost("/api/v1/jobs/" + id + "/stop", ""));  // an empty JSON body
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(BodyJson(r)["state"], "stopping");
  r = router_.Handle(JsonPost("/api/v1/jobs/" + id + "/stop", " {} "));
  ExpectError(r, 409, "failed_precondition");
  EXPECT_NE(r.body.find("is stopping"), std::string::npos);

  service_.SetState(id, JobState::kStopped);
  r = router_.Handle(JsonPost("/api/v1/jobs/" + id + "/resume", R"({"max_steps": 5000})"));
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(BodyJson(r)["state"], "queued");
  EXPECT_EQ(BodyJson(r)["max_steps"], 5000);
  EXPECT_EQ(service_.calls().resume_max_steps, 5000);
  service_.SetState(id, JobState::kStopped);
  r = router_.Handle(JsonPost("/api/v1/jobs/" + id + "/resume", ""));  // no body: keep max_steps
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(service_.calls().resume_max_steps, std::nullopt);
  service_.SetState(id, JobState::kStopped);
  r = router_.Handle(JsonPost("/api/v1/jobs/" + id + "/resume", "{}"));  // nor does {}
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(service_.calls().resume_max_steps, std::nullopt);

  r = router_.Handle(Req("DELETE", "/api/v1/jobs/" + id));
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(r.body.empty());
  ExpectError(router_.Handle(Req("DELETE", "/api/v1/jobs/" + id)), 404, "not_found");
}

TEST_F(RouterTest, ScalarsTagsCheckpointsLogs) {
  std::string id = service_.AddJob("a", JobState::kRunning);
  HttpResponse r = router_.Handle(
      Req("GET", "/api/v1/jobs/" + id + "/scalars?tag=loss&from_step=100&to_step=130"));
  ASSERT_EQ(r.status, 200) << r.body;
  json body = BodyJson(r);
  EXPECT_EQ(body["tag"], "loss");
  ASSERT_EQ(body["points"].size(), 4u);
  EXPECT_EQ(body["points"][0]["step"], 100);
  EXPECT_EQ(body["points"][3]["value"], 13.0);
  ScalarQuery q = service_.calls().scalar_query;
  EXPECT_EQ(q.tag, "loss");
  EXPECT_EQ(q.from_step, 100);
  EXPECT_EQ(q.to_step, 130);
  EXPECT_EQ(q.max_points, 1000);

  router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/scalars?tag=validation%2Floss&max_points=7"));
  EXPECT_EQ(service_.calls().scalar_query.tag, "validation/loss");
  EXPECT_EQ(service_.calls().scalar_query.max_points, 7);
  EXPECT_EQ(service_.calls().scalar_query.from_step, std::nullopt);

  r = router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/scalars/tags"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(BodyJson(r)["tags"], json({"accuracy", "loss"}));

  r = router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/checkpoints"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(BodyJson(r)["checkpoints"][1]["name"], "model.ckpt-1000");
  EXPECT_EQ(BodyJson(r)["checkpoints"][1]["global_step"], 1000);

  r = router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/logs?from=4&limit=3"));
  ASSERT_EQ(r.status, 200);
  body = BodyJson(r);
  ASSERT_EQ(body["lines"].size(), 3u);
  EXPECT_EQ(body["lines"][0]["text"], "line 4");
  EXPECT_EQ(body["next_from"], 7);
  r = router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/logs"));
  EXPECT_EQ(BodyJson(r)["lines"].size(), 10u);
  EXPECT_EQ(service_.calls().logs_from, 1);
  EXPECT_EQ(service_.calls().logs_limit, 1000);

  for (std::string sub :
       {"/scalars?tag=loss", "/scalars/tags", "/checkpoints", "/logs", "/evaluation"}) {
    ExpectError(router_.Handle(Req("GET", "/api/v1/jobs/ghost" + sub)), 404, "not_found");
  }
}

TEST_F(RouterTest, EvaluationServesTheConfusionMatrixOfASplit) {
  const std::string id = service_.AddJob("job-e", JobState::kRunning);
  HttpResponse r = router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/evaluation"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(service_.calls().evaluation_split, "");  // the latest of any split
  json body = BodyJson(r);
  EXPECT_EQ(body["job_id"], id);
  EXPECT_EQ(body["split"], "validation");
  EXPECT_EQ(body["step"], 1000);
  EXPECT_EQ(body["examples"], 5);
  EXPECT_EQ(body["accuracy"], 0.6);
  EXPECT_EQ(body["classes"][1]["name"], "dog");
  EXPECT_EQ(body["classes"][1]["support"], 3);
  // Rows: the true class; columns: the predicted one. Whole counts are integers.
  EXPECT_EQ(body["confusion_matrix"], json::parse("[[1, 1], [1, 2]]"));
  r = router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/evaluation?split=validation"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(service_.calls().evaluation_split, "validation");
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/evaluation?split=test")), 404,
              "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs/" + id + "/evaluation?split=dev")), 400,
              "invalid_argument", "split");
}

TEST_F(RouterTest, WrongMethodIs405WithAllowAndUnknownPathIs404) {
  HttpResponse r = router_.Handle(Req("PUT", "/api/v1/jobs/job-1"));
  ExpectError(r, 405, "method_not_allowed");
  EXPECT_EQ(r.Header("Allow"), "GET, DELETE, PATCH");
  r = router_.Handle(Req("DELETE", "/api/v1/jobs"));
  EXPECT_EQ(r.Header("Allow"), "POST, GET");
  r = router_.Handle(Req("GET", "/api/v1/jobs/job-1/stop"));
  ExpectError(r, 405, "method_not_allowed");
  EXPECT_EQ(r.Header("Allow"), "POST");
  r = router_.Handle(Req("POST", "/healthz"));
  EXPECT_EQ(r.Header("Allow"), "GET");
  ExpectError(router_.Handle(Req("GET", "/api/v1/nothing")), 404, "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v2/jobs")), 404, "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs/")), 404, "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v1/jobs/a/b/c")), 404, "not_found");
}

TEST_F(RouterTest, HealthzSaysDegradedWithItsProblems) {
  service_.SetHealth({true, {"the database cannot be written: ResourceExhausted: disk full"}});
  HttpResponse r = router_.Handle(Req("GET", "/healthz"));
  ASSERT_EQ(r.status, 200);  // still serving
  const auto body = BodyJson(r);
  EXPECT_EQ(body["status"], "degraded");
  ASSERT_EQ(body["problems"].size(), 1u);
  EXPECT_NE(body["problems"][0].get<std::string>().find("disk full"), std::string::npos);
}

TEST_F(RouterTest, ResourceExhaustedIs507) {
  HttpResponse r = StatusResponse(engine::Status::ResourceExhausted("no space left on device"));
  EXPECT_EQ(r.status, 507);
  EXPECT_EQ(BodyJson(r)["error"]["code"], "resource_exhausted");
}

// A user's quota (daemon scheduler.h: "quotas.<key>: ..."): 429 for the queue, which frees up,
// 403 for the priority, which does not; the body names the quota.
TEST_F(RouterTest, QuotasAre429Or403NamingTheQuota) {
  HttpResponse r = StatusResponse(engine::Status::ResourceExhausted(
      "quotas.queued_jobs: user 'alice' has 2 jobs waiting, the most its quota (2) allows"));
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.Header("Retry-After"), "10");
  auto body = BodyJson(r);
  EXPECT_EQ(body["error"]["code"], "quota_exceeded");
  EXPECT_EQ(body["error"]["field"], "quotas.queued_jobs");
  EXPECT_EQ(body["error"]["quota"], "queued_jobs");
  r = StatusResponse(engine::Status::ResourceExhausted(
      "quotas.max_priority: user 'alice' may give its jobs a priority of at most 3, asked for 4"));
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.Header("Retry-After"), "");
  body = BodyJson(r);
  EXPECT_EQ(body["error"]["code"], "quota_exceeded");
  EXPECT_EQ(body["error"]["quota"], "max_priority");
}

TEST_F(RouterTest, HealthzAndMetrics) {
  HttpResponse r = router_.Handle(Req("GET", "/healthz"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(BodyJson(r)["status"], "ok");
  router_.Handle(Req("GET", "/api/v1/jobs/nope"));
  r = router_.Handle(Req("GET", "/metrics"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(r.body.find("trainingd_jobs 0\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("trainingd_http_requests_total{route=\"/api/v1/jobs/{id}\","
                        "method=\"GET\",status=\"404\"} 1\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("trainingd_http_request_duration_seconds_count{route=\"/healthz\"} 1\n"),
            std::string::npos);
  EXPECT_NE(r.body.find("le=\"+Inf\""), std::string::npos);
  EXPECT_EQ(router_.metrics().RequestCount("/healthz", "GET", 200), 1u);
  // Odd methods do not create new label values.
  router_.Handle(Req("BREW", "/healthz"));
  EXPECT_EQ(router_.metrics().RequestCount("/healthz", "other", 405), 1u);
}

TEST_F(RouterTest, TokenIsRequiredExceptForHealthzAndStaticFiles) {
  RouterOptions options;
  options.api_token = "s3cret";
  Router guarded(service_, options);
  HttpResponse r = guarded.Handle(Req("GET", "/api/v1/jobs"));
  ExpectError(r, 401, "unauthenticated");
  EXPECT_EQ(r.Header("WWW-Authenticate"), "Bearer realm=\"trainingd\"");
  ExpectError(guarded.Handle(Req("GET", "/api/v1/jobs", "", {{"Authorization", "Bearer nope"}})),
              401, "unauthenticated");
  ExpectError(guarded.Handle(Req("GET", "/api/v1/jobs", "", {{"Authorization", "s3cret"}})), 401,
              "unauthenticated");
  ExpectError(guarded.Handle(Req("GET", "/metrics")), 401, "unauthenticated");
  // Unknown API paths do not reveal whether they exist.
  ExpectError(guarded.Handle(Req("GET", "/api/v1/secret")), 401, "unauthenticated");
  EXPECT_EQ(
      guarded.Handle(Req("GET", "/api/v1/jobs", "", {{"authorization", "bearer s3cret"}})).status,
      200);
  EXPECT_EQ(guarded.Handle(Req("GET", "/healthz")).status, 200);
  EXPECT_EQ(guarded.Handle(Req("GET", "/index.html")).status, 404);  // public, just absent
  // Event streams also take ?access_token= (EventSource cannot send headers); others do not.
  r = guarded.Handle(Req("GET", "/api/v1/events?access_token=s3cret"));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.event_stream);
  ExpectError(guarded.Handle(Req("GET", "/api/v1/events?access_token=wrong")), 401,
              "unauthenticated");
  r = guarded.Handle(Req("GET", "/api/v1/jobs?access_token=s3cret"));
  ExpectError(r, 401, "unauthenticated");
  EXPECT_NE(BodyJson(r)["error"]["message"].get<std::string>().find("Authorization"),
            std::string::npos)
      << r.body;
  // A log that follows is an event stream; one read page by page is not.
  std::string job = service_.AddJob("a", JobState::kRunning);
  r = guarded.Handle(Req("GET", "/api/v1/jobs/" + job + "/logs?follow=true&access_token=s3cret"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.event_stream);
  r = guarded.Handle(Req("GET", "/api/v1/jobs/" + job + "/events?access_token=s3cret"));
  EXPECT_EQ(r.status, 200) << r.body;
  ExpectError(guarded.Handle(Req("GET", "/api/v1/jobs/" + job + "/logs?access_token=s3cret")), 401,
              "unauthenticated");
  ExpectError(
      guarded.Handle(Req("GET", "/api/v1/jobs/" + job + "/logs?follow=false&access_token=s3cret")),
      401, "unauthenticated");
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abcd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "abc"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals(std::string("abc\0", 4), "abc"));
}

TEST(JobIdTest, Validation) {
  EXPECT_TRUE(IsValidJobId("job-1"));
  EXPECT_TRUE(IsValidJobId("A_b-9"));
  EXPECT_TRUE(IsValidJobId(std::string(64, 'x')));
  EXPECT_FALSE(IsValidJobId(std::string(65, 'x')));
  EXPECT_FALSE(IsValidJobId(""));
  EXPECT_FALSE(IsValidJobId("a.b"));
  EXPECT_FALSE(IsValidJobId("a%20b"));
  EXPECT_FALSE(IsValidJobId(".."));
}

TEST(RouterTableTest, RoutesAreUniqueAndCoverTheApi) {
  std::set<std::pair<std::string_view, std::string_view>> seen;
  for (const RouteInfo& route : Router::Routes()) {
    EXPECT_TRUE(seen.insert({route.method, route.path}).second) << route.path;
  }
  EXPECT_EQ(seen.size(), 52u);
  EXPECT_TRUE(seen.count({"GET", "/api/v1/jobs/{id}/evaluation"}));
  EXPECT_TRUE(seen.count({"POST", "/api/v1/users/{name}/tokens"}));
  EXPECT_TRUE(seen.count({"DELETE", "/api/v1/tokens/{id}"}));
  EXPECT_TRUE(seen.count({"GET", "/api/v1/whoami"}));
  EXPECT_TRUE(seen.count({"POST", "/api/v1/datasets"}));
  EXPECT_TRUE(seen.count({"GET", "/api/v1/datasets/{name}/examples"}));
  EXPECT_TRUE(seen.count({"DELETE", "/api/v1/datasets/{name}"}));
  EXPECT_TRUE(seen.count({"POST", "/api/v1/jobs/{id}/resume"}));
  EXPECT_TRUE(seen.count({"GET", "/api/v1/events"}));
  EXPECT_TRUE(seen.count({"POST", "/v2/models/{id}/infer"}));
  EXPECT_TRUE(seen.count({"POST", "/v1/models/{id}:predict"}));
  EXPECT_TRUE(seen.count({"POST", "/api/v1/experiments/preview"}));
  EXPECT_TRUE(seen.count({"GET", "/api/v1/experiments/{id}/trials"}));
}

}  // namespace
}  // namespace trainingd::api
