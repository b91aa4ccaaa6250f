// The experiment routes through the Router, without sockets, against FakeExperimentService:
// every status, the Location header, 404 without a service, 415, the trials' query checked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "fake_experiment_service.h"
#include "fake_job_service.h"
#include "router_test_util.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

using nlohmann::json;

constexpr const char* kSpec = R"({
  "name": "search",
  "base_job": {"name": "b", "model": "softmax", "max_steps": 1600, "hooks": {"evaluation": true}},
  "space": {"optimizer.learning_rate": {"type": "log", "min": 1e-4, "max": 1e-1}},
  "searcher": {"max_trials": 8}})";

class ExperimentRoutesTest : public ::testing::Test {
 protected:
  ExperimentRoutesTest() : router_(jobs_, RouterOptions{}, nullptr, nullptr, &experiments_) {}

  FakeJobService jobs_;
  FakeExperimentService experiments_;
  Router router_;
};

TEST_F(ExperimentRoutesTest, SubmitAnswers201WithLocationAndTheCanonicalSpec) {
  HttpResponse r = router_.Handle(JsonPost("/api/v1/experiments", kSpec));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.Header("Location"), "/api/v1/experiments/exp-2");
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  json body = BodyJson(r);
  EXPECT_EQ(body["id"], "exp-2");
  EXPECT_EQ(body["state"], "running");
  // The service got the parsed spec and its canonical text, which the answer shows.
  ASSERT_TRUE(experiments_.last_spec.has_value());
  EXPECT_EQ(experiments_.last_spec->searcher.max_trials, 8);
  EXPECT_EQ(experiments_.last_spec_json, DumpJson(ExperimentSpecToJson(*experiments_.last_spec)));
  EXPECT_EQ(body["spec"]["searcher"]["max_trials"], 8);
  EXPECT_EQ(body["spec"]["searcher"]["min_steps"], 25);
  EXPECT_TRUE(body["spec"]["base_job"]["model"]["layers"].is_array());
}

TEST_F(ExperimentRoutesTest, SubmitRefusals) {
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments", "")), 400, "invalid_argument");
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments", "{")), 400, "invalid_argument");
  json spec = json::parse(kSpec);
  spec["searcher"]["max_trials"] = 0;
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments", spec.dump())), 400, "invalid_argument",
              "searcher.max_trials");
  spec = json::parse(kSpec);
  spec["base_job"]["batch_size"] = 0;
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments", spec.dump())), 400, "invalid_argument",
              "base_job.batch_size");
  spec = json::parse(kSpec);
  spec["space"]["optimizer.lr"] = {{"type", "log"}, {"min", 1}, {"max", 2}};
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments", spec.dump())), 400, "invalid_argument",
              "space[\"optimizer.lr\"]");
  ExpectError(router_.Handle(Req("POST", "/api/v1/experiments", kSpec)), 415,
              "unsupported_media_type", "Content-Type");
  ExpectError(
      router_.Handle(Req("POST", "/api/v1/experiments", kSpec, {{"Content-Type", "text/plain"}})),
      415, "unsupported_media_type", "Content-Type");
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments", std::string(2 << 20, ' '))), 413,
              "payload_too_large");
  ExpectError(router_.Handle(Req("PUT", "/api/v1/experiments", kSpec)), 405, "method_not_allowed");
}

TEST_F(ExperimentRoutesTest, PreviewAnswersThePlan) {
  HttpResponse r = router_.Handle(JsonPost("/api/v1/experiments/preview", kSpec));
  ASSERT_EQ(r.status, 200) << r.body;
  json body = BodyJson(r);
  EXPECT_EQ(body["trials"], 8);
  EXPECT_EQ(body["max_total_steps"], 1234);
  EXPECT_EQ(body["rungs"][0]["steps"], 25);
  EXPECT_EQ(body["rungs"][1]["steps"], 1600);
  EXPECT_EQ(body["rungs"][1]["cut"], nullptr);
  EXPECT_EQ(body["first_trials"][0]["batch_size"], 64);
  EXPECT_TRUE(PlanFromJson(body).ok());
  // The service's own refusal names its field.
  json spec = json::parse(kSpec);
  spec["searcher"]["max_trials"] = 99;
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments/preview", spec.dump())), 400,
              "invalid_argument", "searcher.max_trials");
  ExpectError(router_.Handle(Req("POST", "/api/v1/experiments/preview", kSpec)), 415,
              "unsupported_media_type", "Content-Type");
  // GET on it is an experiment called "preview", which there is not.
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments/preview")), 404, "not_found");
}

TEST_F(ExperimentRoutesTest, ListPassesTheQuery) {
  HttpResponse r =
      router_.Handle(Req("GET", "/api/v1/experiments?state=running&limit=5&cursor=c1"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(experiments_.last_list_state, ExperimentState::kRunning);
  EXPECT_EQ(experiments_.last_list_limit, 5);
  EXPECT_EQ(experiments_.last_cursor, "c1");
  json body = BodyJson(r);
  EXPECT_EQ(body["next_cursor"], "c2");
  ASSERT_EQ(body["experiments"].size(), 1u);
  EXPECT_FALSE(body["experiments"][0].contains("spec"));
  EXPECT_TRUE(ExperimentPageFromJson(body).ok());
  ASSERT_EQ(router_.Handle(Req("GET", "/api/v1/experiments")).status, 200);
  EXPECT_EQ(experiments_.last_list_limit, 50);
  EXPECT_FALSE(experiments_.last_list_state.has_value());
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments?state=queued")), 400,
              "invalid_argument", "state");
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments?limit=0")), 400, "invalid_argument",
              "limit");
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments?limit=1001")), 400, "invalid_argument",
              "limit");
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments?cursor=" + std::string(600, 'c'))),
              400, "invalid_argument", "cursor");
}

TEST_F(ExperimentRoutesTest, GetAnswersTheDetail) {
  HttpResponse r = router_.Handle(Req("GET", "/api/v1/experiments/exp-1"));
  ASSERT_EQ(r.status, 200) << r.body;
  json body = BodyJson(r);
  EXPECT_EQ(body["id"], "exp-1");
  EXPECT_TRUE(body["spec"]["space"].contains("batch_size"));
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments/nope")), 404, "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments/bad%2Fid")), 400, "invalid_argument",
              "id");
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments/" + std::string(65, 'a'))), 400,
              "invalid_argument", "id");
}

TEST_F(ExperimentRoutesTest, TrialsValidateTheirQuery) {
  HttpResponse r = router_.Handle(Req(
      "GET",
      "/api/v1/experiments/exp-1/trials?sort=metric&order=desc&state=waiting&offset=10&limit=5"));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(experiments_.last_query.has_value());
  EXPECT_EQ(experiments_.last_query->sort, "metric");
  EXPECT_TRUE(experiments_.last_query->descending);
  EXPECT_EQ(experiments_.last_query->state, TrialState::kWaiting);
  EXPECT_EQ(experiments_.last_query->offset, 10);
  EXPECT_EQ(experiments_.last_query->limit, 5);
  json body = BodyJson(r);
  EXPECT_EQ(body["experiment_id"], "exp-1");
  EXPECT_EQ(body["total"], 7);
  EXPECT_EQ(body["offset"], 10);
  EXPECT_EQ(body["limit"], 5);
  EXPECT_EQ(body["trials"][0]["hyperparameters"]["optimizer.learning_rate"], 0.001);
  EXPECT_TRUE(TrialPageFromJson(body).ok());

  // Defaults; a hyperparameter's path sorts too.
  ASSERT_EQ(router_.Handle(Req("GET", "/api/v1/experiments/exp-1/trials")).status, 200);
  EXPECT_EQ(experiments_.last_query->sort, "index");
  EXPECT_FALSE(experiments_.last_query->descending);
  EXPECT_EQ(experiments_.last_query->offset, 0);
  EXPECT_EQ(experiments_.last_query->limit, 100);
  ASSERT_EQ(
      router_.Handle(Req("GET", "/api/v1/experiments/exp-1/trials?sort=optimizer.learning_rate"))
          .status,
      200);
  EXPECT_EQ(experiments_.last_query->sort, "optimizer.learning_rate");

  const std::string base = "/api/v1/experiments/exp-1/trials?";
  for (const auto& [query, field] : std::vector<std::pair<std::string, std::string>>{
           {"sort=loss", "sort"},
           {"sort=", "sort"},
           {"sort=model.layers", "sort"},
           {"order=up", "order"},
           {"state=queued", "state"},
           {"offset=-1", "offset"},
           {"offset=x", "offset"},
           {"limit=0", "limit"},
           {"limit=1001", "limit"},
       }) {
    ExpectError(router_.Handle(Req("GET", base + query)), 400, "invalid_argument", field);
  }
  HttpResponse sort = router_.Handle(Req("GET", base + "sort=loss"));
  EXPECT_NE(BodyJson(sort)["error"]["message"].get<std::string>().find(
                "batch_size, optimizer.learning_rate"),
            std::string::npos)
      << sort.body;
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments/nope/trials")), 404, "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v1/experiments/nope/trials?sort=batch_size")), 404,
              "not_found");
}

TEST_F(ExperimentRoutesTest, StopResumeDelete) {
  HttpResponse r = router_.Handle(JsonPost("/api/v1/experiments/exp-1/stop", ""));
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(BodyJson(r)["state"], "stopping");
  EXPECT_EQ(router_.Handle(JsonPost("/api/v1/experiments/exp-1/stop", "{}")).status, 202);
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments/exp-1/stop", "{\"now\": true}")), 400,
              "invalid_argument");
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments/done/stop", "")), 409,
              "failed_precondition");
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments/nope/stop", "")), 404, "not_found");
  ExpectError(router_.Handle(Req("POST", "/api/v1/experiments/exp-1/stop")), 415,
              "unsupported_media_type", "Content-Type");

  r = router_.Handle(JsonPost("/api/v1/experiments/done/resume", "{}"));
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(BodyJson(r)["state"], "running");
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments/exp-1/resume", "")), 409,
              "failed_precondition");
  ExpectError(router_.Handle(JsonPost("/api/v1/experiments/done/resume", "[]")), 400,
              "invalid_argument");

  r = router_.Handle(Req("DELETE", "/api/v1/experiments/done"));
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(r.body.empty());
  ExpectError(router_.Handle(Req("DELETE", "/api/v1/experiments/exp-1")), 409,
              "failed_precondition");
  ExpectError(router_.Handle(Req("DELETE", "/api/v1/experiments/nope")), 404, "not_found");
  ExpectError(router_.Handle(Req("DELETE", "/api/v1/experiments/done", "",
                                 {{"Origin", "https://evil.example"}})),
              403, "forbidden", "Origin");
}

TEST(ExperimentRoutesWithoutServiceTest, Answer404) {
  FakeJobService jobs;
  Router router(jobs, RouterOptions{});
  for (const HttpRequest& request :
       {JsonPost("/api/v1/experiments", kSpec), JsonPost("/api/v1/experiments/preview", kSpec),
        Req("GET", "/api/v1/experiments"), Req("GET", "/api/v1/experiments/exp-1"),
        Req("GET", "/api/v1/experiments/exp-1/trials"),
        JsonPost("/api/v1/experiments/exp-1/stop", ""),
        JsonPost("/api/v1/experiments/exp-1/resume", ""),
        Req("DELETE", "/api/v1/experiments/exp-1")}) {
    ExpectError(router.Handle(request), 404, "not_found");
  }
}

TEST(ExperimentRoutesAuthTest, NeedTheToken) {
  FakeJobService jobs;
  FakeExperimentService experiments;
  RouterOptions options;
  options.api_token = "secret";
  Router router(jobs, options, nullptr, nullptr, &experiments);
  ExpectError(router.Handle(Req("GET", "/api/v1/experiments")), 401, "unauthenticated");
  ExpectError(router.Handle(Req("GET", "/api/v1/experiments?access_token=secret")), 401,
              "unauthenticated");
  EXPECT_EQ(
      router.Handle(Req("GET", "/api/v1/experiments", "", {{"Authorization", "Bearer secret"}}))
          .status,
      200);
}

}  // namespace
}  // namespace trainingd::api
