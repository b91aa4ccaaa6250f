// GET /api/v1/datasets/{name}/examples through the Router, without sockets: the JSON of a page of
// test examples, the parameters' defaults and limits, and the refusals naming the parameter.
#include <gtest/gtest.h>

#include <string>

#include "fake_dataset_service.h"
#include "fake_job_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

using nlohmann::json;

class DatasetExamplesRouteTest : public ::testing::Test {
 protected:
  DatasetExamplesRouteTest() : router_(jobs_, RouterOptions{}, &datasets_) {
    DatasetUploadOptions options;
    options.name = "tiny";
    options.format = "npz";
    auto upload = datasets_.BeginUpload(options, 2);
    EXPECT_TRUE(upload.ok());
    EXPECT_TRUE((*upload)->Append("ok").ok());
    EXPECT_TRUE((*upload)->Commit().ok());
  }

  FakeJobService jobs_;
  FakeDatasetService datasets_;
  Router router_;
};

TEST_F(DatasetExamplesRouteTest, APageOfExamplesInRawUnits) {
  HttpResponse r = router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=1&limit=2"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  json body = BodyJson(r);
  EXPECT_EQ(body["dataset"], "tiny");
  EXPECT_EQ(body["split"], "test");
  EXPECT_EQ(body["offset"], 1);
  EXPECT_EQ(body["total"], 5);
  ASSERT_EQ(body["examples"].size(), 2u);
  const json& first = body["examples"][0];
  EXPECT_EQ(first["index"], 1);
  EXPECT_EQ(first["label"], 1);
  EXPECT_EQ(first["class_name"], "b");
  EXPECT_EQ(first["shape"], json::parse("[2, 2, 1]"));
  EXPECT_EQ(first["data"], json::parse("[1, 2, 3, 4]"));
  EXPECT_TRUE(first["data"][0].is_number_integer());  // uint8 data as whole numbers
  EXPECT_EQ(body["examples"][1]["index"], 2);
  EXPECT_EQ(body["examples"][1]["class_name"], "c");
}

TEST_F(DatasetExamplesRouteTest, FloatsAreWrittenAsTheirShortestDecimal) {
  datasets_.fraction = 0.07f;
  HttpResponse r = router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=1&limit=1"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"data\":[1.07,2.07,3.07,4.07]"), std::string::npos) << r.body;
  const json data = BodyJson(r)["examples"][0]["data"];
  EXPECT_EQ(data[0].get<float>(), 1.07f);  // reads back to the same float
  EXPECT_EQ(data[3].get<float>(), 4.07f);
}

TEST_F(DatasetExamplesRouteTest, DefaultsAndTheSplitsEnd) {
  json body = BodyJson(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples")));
  EXPECT_EQ(body["offset"], 0);
  EXPECT_EQ(body["examples"].size(), 5u);  // the default limit (10) is past the split's end
  body = BodyJson(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=4&limit=100")));
  EXPECT_EQ(body["examples"].size(), 1u);
  body = BodyJson(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=5")));
  EXPECT_EQ(body["examples"].size(), 0u);
  EXPECT_EQ(body["total"], 5);
}

TEST_F(DatasetExamplesRouteTest, BadParametersAreRefusedByName) {
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?split=train")), 400,
              "invalid_argument", "split");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=-1")), 400,
              "invalid_argument", "offset");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=x")), 400,
              "invalid_argument", "offset");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?offset=6")), 400,
              "invalid_argument", "offset");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?limit=0")), 400,
              "invalid_argument", "limit");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/tiny/examples?limit=101")), 400,
              "invalid_argument", "limit");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/nope/examples")), 404, "not_found");
  ExpectError(router_.Handle(Req("GET", "/api/v1/datasets/a!b/examples")), 400, "invalid_argument",
              "name");
  HttpResponse r = router_.Handle(Req("DELETE", "/api/v1/datasets/tiny/examples"));
  EXPECT_EQ(r.status, 405) << r.body;
}

TEST(DatasetExamplesRouteNoStoreTest, AServerWithoutDatasetsHasNoExamples) {
  FakeJobService jobs;
  Router router(jobs, RouterOptions{});
  ExpectError(router.Handle(Req("GET", "/api/v1/datasets/tiny/examples")), 404, "not_found");
}

}  // namespace
}  // namespace trainingd::api
