// Who may do what (docs/operations.md#team-use): the route table's rules, authentication with
// users' tokens (401), refusals that change nothing (403), what does not exist (404), and the
// audit of changes and refusals.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "fake_dataset_service.h"
#include "fake_experiment_service.h"
#include "fake_job_service.h"
#include "fake_user_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

constexpr const char* kAdminToken = "configured-admin-token-0123456789";

// Every route and the rule it must have: the router's table is checked against this list both
// ways, so a new route without a rule here fails (as MLflow's test_authorization_coverage.py),
// and so does a rule that changed without this list saying so.
const std::map<std::pair<std::string, std::string>, Access>& ExpectedRules() {
  using enum Access;
  static const std::map<std::pair<std::string, std::string>, Access> rules = {
      {{"POST", "/api/v1/jobs"}, kCreate},
      {{"GET", "/api/v1/jobs"}, kRead},
      {{"GET", "/api/v1/jobs/{id}"}, kRead},
      {{"DELETE", "/api/v1/jobs/{id}"}, kOwnJob},
      {{"PATCH", "/api/v1/jobs/{id}"}, kOwnJob},
      {{"POST", "/api/v1/jobs/{id}/stop"}, kOwnJob},
      {{"POST", "/api/v1/jobs/{id}/resume"}, kOwnJob},
      {{"GET", "/api/v1/jobs/{id}/scalars"}, kRead},
      {{"GET", "/api/v1/jobs/{id}/scalars/tags"}, kRead},
      {{"GET", "/api/v1/jobs/{id}/checkpoints"}, kRead},
      {{"GET", "/api/v1/jobs/{id}/evaluation"}, kRead},
      {{"GET", "/api/v1/jobs/{id}/logs"}, kRead},
      {{"GET", "/api/v1/jobs/{id}/events"}, kRead},
      {{"GET", "/api/v1/events"}, kRead},
      {{"POST", "/api/v1/datasets"}, kCreate},
      {{"GET", "/api/v1/datasets"}, kRead},
      {{"GET", "/api/v1/datasets/{name}"}, kRead},
      {{"DELETE", "/api/v1/datasets/{name}"}, kOwnDataset},
      {{"GET", "/api/v1/datasets/{name}/examples"}, kRead},
      {{"GET", "/api/v1/jobs/{id}/model"}, kRead},
      {{"POST", "/api/v1/experiments"}, kCreate},
      {{"GET", "/api/v1/experiments"}, kRead},
      {{"POST", "/api/v1/experiments/preview"}, kRead},
      {{"GET", "/api/v1/experiments/{id}"}, kRead},
      {{"DELETE", "/api/v1/experiments/{id}"}, kOwnExperiment},
      {{"GET", "/api/v1/experiments/{id}/trials"}, kRead},
      {{"POST", "/api/v1/experiments/{id}/stop"}, kOwnExperiment},
      {{"POST", "/api/v1/experiments/{id}/resume"}, kOwnExperiment},
      {{"GET", "/v2"}, kPublic},
      {{"GET", "/v2/health/live"}, kPublic},
      {{"GET", "/v2/health/ready"}, kPublic},
      {{"GET", "/v2/models/{id}"}, kRead},
      {{"GET", "/v2/models/{id}/versions/{version}"}, kRead},
      {{"GET", "/v2/models/{id}/ready"}, kRead},
      {{"GET", "/v2/models/{id}/versions/{version}/ready"}, kRead},
      {{"POST", "/v2/models/{id}/infer"}, kRead},
      {{"POST", "/v2/models/{id}/versions/{version}/infer"}, kRead},
      {{"POST", "/v1/models/{id}:predict"}, kRead},
      {{"POST", "/api/v1/users"}, kAdmin},
      {{"GET", "/api/v1/users"}, kAdmin},
      {{"GET", "/api/v1/users/{name}"}, kAdmin},
      {{"PATCH", "/api/v1/users/{name}"}, kAdmin},
      {{"DELETE", "/api/v1/users/{name}"}, kAdmin},
      {{"POST", "/api/v1/users/{name}/tokens"}, kAdmin},
      {{"GET", "/api/v1/users/{name}/tokens"}, kAdmin},
      {{"DELETE", "/api/v1/tokens/{id}"}, kAdmin},
      {{"GET", "/api/v1/whoami"}, kRead},
      {{"GET", "/api/v1/audit"}, kAdmin},
      {{"GET", "/healthz"}, kPublic},
      {{"GET", "/metrics"}, kRead},
      {{"GET", "/"}, kPublic},
      {{"GET", "/{file}"}, kPublic},
  };
  return rules;
}

TEST(RouteAccessCoverage, EveryRouteHasTheExpectedRule) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const RouteInfo& r : Router::Routes()) {
    const std::pair<std::string, std::string> key{std::string(r.method), std::string(r.path)};
    auto it = ExpectedRules().find(key);
    ASSERT_NE(it, ExpectedRules().end())
        << r.method << " " << r.path << " has no rule in this test: decide who may use it";
    EXPECT_EQ(AccessName(r.access), std::string(AccessName(it->second)))
        << r.method << " " << r.path;
    seen.insert(key);
  }
  for (const auto& [key, access] : ExpectedRules()) {
    EXPECT_TRUE(seen.count(key)) << key.first << " " << key.second << " is no route (stale rule)";
  }
}

TEST(RouteAccessCoverage, ChangesAreNeverReadOrPublic) {
  // A POST, PATCH or DELETE that changes something must name who may; the POSTs that only read
  // (preview, inference) are listed.
  for (const RouteInfo& r : Router::Routes()) {
    if (r.method == "GET") continue;
    const bool reads = r.path == "/api/v1/experiments/preview" ||
                       r.path.find("infer") != std::string_view::npos ||
                       r.path.find(":predict") != std::string_view::npos;
    if (reads) continue;
    EXPECT_NE(r.access, Access::kRead) << r.method << " " << r.path;
    EXPECT_NE(r.access, Access::kPublic) << r.method << " " << r.path;
  }
}

class RouterAccessTest : public ::testing::Test {
 protected:
  RouterAccessTest() {
    RouterOptions o;
    o.api_token = kAdminToken;
    router_ = std::make_unique<Router>(jobs_, o, &datasets_, nullptr, &experiments_);
    router_->SetUsers(&users_, &audit_);
    viewer_ = users_.Add("vera", Role::kViewer);
    alice_ = users_.Add("alice", Role::kUser);
    bob_ = users_.Add("bob", Role::kUser);
    root_ = users_.Add("root", Role::kAdmin);
    bobs_job_ = jobs_.AddJob("b", JobState::kRunning);
    jobs_.SetOwner(bobs_job_, "bob");
  }

  HttpResponse As(const std::string& token, HttpRequest request) {
    if (!token.empty()) request.headers.push_back({"Authorization", "Bearer " + token});
    request.remote = "192.0.2.7";
    return router_->Handle(request);
  }
  JobState StateOf(const std::string& id) { return jobs_.Get(id)->state; }

  FakeJobService jobs_;
  FakeDatasetService datasets_;
  FakeExperimentService experiments_;
  FakeUserService users_;
  FakeAuditService audit_;
  std::unique_ptr<Router> router_;
  std::string viewer_, alice_, bob_, root_, bobs_job_;
};

TEST_F(RouterAccessTest, WhoamiNamesThePrincipal) {
  auto r = As(alice_, Req("GET", "/api/v1/whoami"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(BodyJson(r)["name"], "alice");
  EXPECT_EQ(BodyJson(r)["role"], "user");
  r = As(kAdminToken, Req("GET", "/api/v1/whoami"));
  EXPECT_EQ(BodyJson(r)["name"], "admin");
  EXPECT_EQ(BodyJson(r)["role"], "admin");
}

TEST_F(RouterAccessTest, InvalidTokensAre401) {
  ExpectError(As("", Req("GET", "/api/v1/jobs")), 401, "unauthenticated");
  ExpectError(As("wrong", Req("GET", "/api/v1/jobs")), 401, "unauthenticated");
  users_.token(alice_).revoked = true;
  auto r = As(alice_, Req("GET", "/api/v1/jobs"));
  ExpectError(r, 401, "unauthenticated");
  EXPECT_NE(r.body.find("revoked"), std::string::npos) << r.body;
  users_.token(bob_).expired = true;
  r = As(bob_, Req("GET", "/api/v1/jobs"));
  ExpectError(r, 401, "unauthenticated");
  EXPECT_NE(r.body.find("expired"), std::string::npos) << r.body;
  users_.Disable("vera");
  r = As(viewer_, Req("GET", "/api/v1/whoami"));
  ExpectError(r, 401, "unauthenticated");
  EXPECT_NE(r.body.find("disabled"), std::string::npos) << r.body;
  // Public routes need none.
  EXPECT_EQ(As("", Req("GET", "/healthz")).status, 200);
}

TEST_F(RouterAccessTest, ViewerReadsAndChangesNothing) {
  EXPECT_EQ(As(viewer_, Req("GET", "/api/v1/jobs")).status, 200);
  EXPECT_EQ(As(viewer_, Req("GET", "/api/v1/jobs/" + bobs_job_)).status, 200);
  ExpectError(As(viewer_, JsonPost("/api/v1/jobs/" + bobs_job_ + "/stop", "")), 403, "forbidden");
  EXPECT_EQ(StateOf(bobs_job_), JobState::kRunning);
  ExpectError(As(viewer_, Req("DELETE", "/api/v1/jobs/" + bobs_job_)), 403, "forbidden");
  EXPECT_TRUE(jobs_.Get(bobs_job_).ok());
  const size_t before = jobs_.List(std::nullopt, 1000, "")->jobs.size();
  ExpectError(As(viewer_, JsonPost("/api/v1/jobs", kMinimalSpec)), 403, "forbidden");
  EXPECT_EQ(jobs_.List(std::nullopt, 1000, "")->jobs.size(), before);
  ExpectError(As(viewer_, Req("DELETE", "/api/v1/experiments/exp-1")), 403, "forbidden");
}

TEST_F(RouterAccessTest, UserChangesOnlyItsOwn) {
  auto r = As(alice_, JsonPost("/api/v1/jobs/" + bobs_job_ + "/stop", ""));
  ExpectError(r, 403, "forbidden");
  EXPECT_NE(r.body.find("bob"), std::string::npos) << r.body;
  EXPECT_EQ(StateOf(bobs_job_), JobState::kRunning);
  ExpectError(As(alice_, Req("DELETE", "/api/v1/jobs/" + bobs_job_)), 403, "forbidden");
  EXPECT_TRUE(jobs_.Get(bobs_job_).ok());

  r = As(alice_, JsonPost("/api/v1/jobs", kMinimalSpec));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(BodyJson(r)["owner"], "alice");
  const std::string own = BodyJson(r)["id"];
  EXPECT_EQ(As(alice_, JsonPost("/api/v1/jobs/" + own + "/stop", "")).status, 202);
  EXPECT_EQ(StateOf(own), JobState::kStopped);

  // The owner of the job stops it.
  EXPECT_EQ(As(bob_, JsonPost("/api/v1/jobs/" + bobs_job_ + "/stop", "")).status, 202);
}

TEST_F(RouterAccessTest, PriorityIsTheOwnersOrAnAdminsToChange) {
  const auto patch = [](const std::string& id, const std::string& body) {
    return Req("PATCH", "/api/v1/jobs/" + id, body, {{"Content-Type", "application/json"}});
  };
  ExpectError(As(alice_, patch(bobs_job_, R"({"priority":5})")), 403, "forbidden");
  ExpectError(As(viewer_, patch(bobs_job_, R"({"priority":5})")), 403, "forbidden");
  EXPECT_EQ(jobs_.Get(bobs_job_)->priority, 0);
  auto r = As(bob_, patch(bobs_job_, R"({"priority":5})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(BodyJson(r)["priority"], 5);
  r = As(root_, patch(bobs_job_, R"({"priority":-7})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(jobs_.Get(bobs_job_)->priority, -7);
  ExpectError(As(bob_, patch("jnothere", R"({"priority":1})")), 404, "not_found");
}

TEST_F(RouterAccessTest, PriorityBodiesAreCheckedNamingTheField) {
  const auto patch = [this](const std::string& body) {
    return As(bob_, Req("PATCH", "/api/v1/jobs/" + bobs_job_, body,
                        {{"Content-Type", "application/json"}}));
  };
  for (const char* body : {R"({"priority":1001})", R"({"priority":-1001})", R"({"priority":1.5})",
                           R"({"priority":"high"})", R"({})", R"([1])"}) {
    ExpectError(patch(body), 400, "invalid_argument", "priority");
  }
  ExpectError(patch(R"({"priority":1,"nice":2})"), 400, "invalid_argument", "nice");
  EXPECT_EQ(jobs_.Get(bobs_job_)->priority, 0);
  ExpectError(As(bob_, Req("PATCH", "/api/v1/jobs/" + bobs_job_, R"({"priority":1})",
                           {{"Content-Type", "text/plain"}})),
              415, "unsupported_media_type", "Content-Type");
  EXPECT_EQ(patch(R"({"priority":1000})").status, 200);
  EXPECT_EQ(jobs_.Get(bobs_job_)->priority, 1000);
}

TEST_F(RouterAccessTest, AdminChangesAnything) {
  EXPECT_EQ(As(root_, JsonPost("/api/v1/jobs/" + bobs_job_ + "/stop", "")).status, 202);
  EXPECT_EQ(StateOf(bobs_job_), JobState::kStopping);
  EXPECT_EQ(As(kAdminToken, Req("DELETE", "/api/v1/jobs/" + bobs_job_)).status, 409);
}

TEST_F(RouterAccessTest, WhatDoesNotExistIs404) {
  ExpectError(As(alice_, JsonPost("/api/v1/jobs/jnothere/stop", "")), 404, "not_found");
  ExpectError(As(alice_, Req("DELETE", "/api/v1/experiments/nothere")), 404, "not_found");
  ExpectError(As(alice_, Req("DELETE", "/api/v1/datasets/nothere")), 404, "not_found");
  ExpectError(As(root_, Req("GET", "/api/v1/users/nobody")), 404, "not_found");
}

TEST_F(RouterAccessTest, ExperimentsAndDatasetsHaveOwners) {
  experiments_.owners["exp-1"] = "bob";
  ExpectError(As(alice_, JsonPost("/api/v1/experiments/exp-1/stop", "")), 403, "forbidden");
  EXPECT_EQ(experiments_.Get("exp-1")->state, ExperimentState::kRunning);
  EXPECT_EQ(As(bob_, JsonPost("/api/v1/experiments/exp-1/stop", "")).status, 202);

  DatasetUploadOptions o;
  o.name = "bobs";
  o.format = "npz";
  o.owner = "bob";
  auto upload = datasets_.BeginUpload(o, 2);
  ASSERT_TRUE(upload.ok());
  ASSERT_TRUE((*upload)->Append("ok").ok());
  ASSERT_TRUE((*upload)->Commit().ok());
  ExpectError(As(alice_, Req("DELETE", "/api/v1/datasets/bobs")), 403, "forbidden");
  EXPECT_TRUE(datasets_.GetDataset("bobs").ok());
  EXPECT_EQ(As(bob_, Req("DELETE", "/api/v1/datasets/bobs")).status, 204);
}

TEST_F(RouterAccessTest, OnlyAdminsManageUsers) {
  ExpectError(As(alice_, JsonPost("/api/v1/users", R"({"name":"eve","role":"admin"})")), 403,
              "forbidden");
  EXPECT_FALSE(users_.GetUser("eve").ok());
  ExpectError(As(alice_, JsonPost("/api/v1/users/alice/tokens", "{}")), 403, "forbidden");
  ExpectError(As(viewer_, Req("GET", "/api/v1/audit")), 403, "forbidden");

  auto r = As(root_, JsonPost("/api/v1/users", R"({"name":"eve","role":"viewer"})"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(BodyJson(r)["role"], "viewer");
  r = As(kAdminToken, JsonPost("/api/v1/users/eve/tokens", R"({"expires_in_secs":60})"));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string secret = BodyJson(r)["token"];
  const int64_t id = BodyJson(r)["id"];
  EXPECT_EQ(As(secret, Req("GET", "/api/v1/whoami")).status, 200);
  EXPECT_EQ(As(kAdminToken, Req("DELETE", "/api/v1/tokens/" + std::to_string(id))).status, 204);
  ExpectError(As(secret, Req("GET", "/api/v1/whoami")), 401, "unauthenticated");
  r = As(kAdminToken, Req("GET", "/api/v1/users/eve/tokens"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(BodyJson(r)["tokens"][0]["revoked"], true);
}

TEST_F(RouterAccessTest, BadUserInputNamesTheField) {
  ExpectError(As(root_, JsonPost("/api/v1/users", R"({"name":"Eve!","role":"user"})")), 400,
              "invalid_argument", "name");
  ExpectError(As(root_, JsonPost("/api/v1/users", R"({"name":"eve","role":"boss"})")), 400,
              "invalid_argument", "role");
  ExpectError(As(root_, JsonPost("/api/v1/users", R"({"name":"eve"})")), 400, "invalid_argument",
              "role");
  ExpectError(As(root_, JsonPost("/api/v1/users", R"({"name":"eve","role":"user","x":1})")), 400,
              "invalid_argument", "x");
  ExpectError(As(root_, JsonPost("/api/v1/users/alice/tokens", R"({"expires_in_secs":0})")), 400,
              "invalid_argument", "expires_in_secs");
  ExpectError(As(root_, JsonPost("/api/v1/users/alice/tokens", R"({"expires_in_secs":"1h"})")), 400,
              "invalid_argument", "expires_in_secs");
  ExpectError(As(root_, Req("DELETE", "/api/v1/tokens/abc")), 400, "invalid_argument", "id");
  ExpectError(As(root_, Req("PATCH", "/api/v1/users/alice", R"({"disabled":"yes"})",
                            {{"Content-Type", "application/json"}})),
              400, "invalid_argument", "disabled");
  ExpectError(As(root_, Req("GET", "/api/v1/users/Bad%20Name")), 400, "invalid_argument", "name");
  ExpectError(As(root_, Req("DELETE", "/api/v1/tokens/a.b")), 400, "invalid_argument", "id");
  ExpectError(
      As(root_, Req("PATCH", "/api/v1/users/alice", "{}", {{"Content-Type", "application/json"}})),
      400, "invalid_argument", "role");
  ExpectError(As(root_, JsonPost("/api/v1/users", "[1]")), 400, "invalid_argument");
  ExpectError(As(root_, Req("PATCH", "/api/v1/users/alice", R"({"role":"user"})")), 415,
              "unsupported_media_type", "Content-Type");
}

TEST_F(RouterAccessTest, EventStreamsTakeUsersTokensInTheQuery) {
  auto r = As("", Req("GET", "/api/v1/events?access_token=" + viewer_));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.event_stream);
  users_.token(viewer_).revoked = true;
  ExpectError(As("", Req("GET", "/api/v1/events?access_token=" + viewer_)), 401, "unauthenticated");
  // Elsewhere a token in the URL is refused, a user's as the configured one.
  ExpectError(As("", Req("GET", "/api/v1/jobs?access_token=" + alice_)), 401, "unauthenticated");
}

TEST_F(RouterAccessTest, AuditRecordsChangesAndRefusalsNotReads) {
  As(alice_, Req("GET", "/api/v1/jobs"));
  EXPECT_TRUE(audit_.entries().empty());
  As(alice_, JsonPost("/api/v1/jobs/" + bobs_job_ + "/stop", ""));
  As("wrong", Req("GET", "/api/v1/jobs"));
  As(bob_, JsonPost("/api/v1/jobs/" + bobs_job_ + "/stop", ""));
  auto entries = audit_.entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].user, "alice");
  EXPECT_EQ(entries[0].token_id, users_.token(alice_).id);
  EXPECT_EQ(entries[0].status, 403);
  EXPECT_EQ(entries[0].method, "POST");
  EXPECT_EQ(entries[0].route, "/api/v1/jobs/{id}/stop");
  EXPECT_EQ(entries[0].resource, bobs_job_);
  EXPECT_EQ(entries[0].remote, "192.0.2.7");
  EXPECT_EQ(entries[1].user, "");
  EXPECT_EQ(entries[1].status, 401);
  EXPECT_EQ(entries[2].user, "bob");
  EXPECT_EQ(entries[2].status, 202);

  auto r = As(root_, Req("GET", "/api/v1/audit?limit=2"));
  ASSERT_EQ(r.status, 200) << r.body;
  auto body = BodyJson(r);
  ASSERT_EQ(body["entries"].size(), 2u);
  EXPECT_EQ(body["entries"][0]["user"], "bob");
  EXPECT_EQ(body["next_before"], 2);
  ExpectError(As(root_, Req("GET", "/api/v1/audit?limit=0")), 400, "invalid_argument", "limit");
}

TEST(RouterNoToken, LoopbackWithoutATokenIsTheAdmin) {
  // As documented before users: without a configured token nothing is authenticated, and a
  // request is the admin's.
  FakeJobService jobs;
  FakeUserService users;
  const std::string viewer = users.Add("vera", Role::kViewer);
  Router router(jobs, RouterOptions{});
  router.SetUsers(&users, nullptr);
  auto r = router.Handle(Req("GET", "/api/v1/whoami"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(BodyJson(r)["role"], "admin");
  // A user's token still says who it is.
  r = router.Handle(Req("GET", "/api/v1/whoami", "", {{"Authorization", "Bearer " + viewer}}));
  EXPECT_EQ(BodyJson(r)["name"], "vera");
  r = router.Handle(Req("GET", "/api/v1/whoami", "", {{"Authorization", "Bearer stale"}}));
  EXPECT_EQ(BodyJson(r)["name"], "admin");
}

}  // namespace
}  // namespace trainingd::api
