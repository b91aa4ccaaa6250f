// The model routes through the Router, without sockets: the ONNX download, KServe v2's health,
// metadata, readiness and infer (answered later, once the model service runs the batch), TF
// Serving's predict, and every refusal in the protocols' own error body.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fake_job_service.h"
#include "fake_model_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

using nlohmann::json;

class ModelRoutesTest : public ::testing::Test {
 protected:
  ModelRoutesTest() : router_(jobs_, RouterOptions{}, nullptr, &models_) {}

  // Handle, then the deferred answer if the route gave one.
  HttpResponse Call(const HttpRequest& request) {
    HttpResponse r = router_.Handle(request);
    if (!r.answer_later) return r;
    std::optional<HttpResponse> answer;
    r.answer_later([&](HttpResponse a) { answer = std::move(a); });
    for (auto& run : models_.TakeHeld()) run();
    EXPECT_TRUE(answer.has_value());
    return answer ? std::move(*answer) : HttpResponse{};
  }
  // A protocol error: the status and {"error": message}, the message starting with `start`.
  void ExpectProtocolError(const HttpResponse& r, int status, const std::string& start) {
    EXPECT_EQ(r.status, status) << r.body;
    json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body["error"].is_string()) << r.body;
    EXPECT_EQ(body["error"].get<std::string>().rfind(start, 0), 0u) << r.body;
  }

  FakeJobService jobs_;
  FakeModelService models_;
  Router router_;
};

TEST_F(ModelRoutesTest, ExportDownloadsTheOnnxFile) {
  HttpResponse r = Call(Req("GET", "/api/v1/jobs/job-1/model?format=onnx&step=100"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "ONNX-BYTES");
  EXPECT_EQ(r.Header("Content-Type"), "application/octet-stream");
  EXPECT_EQ(r.Header("Content-Disposition"), "attachment; filename=\"job-1-step100.onnx\"");
  EXPECT_EQ(Call(Req("GET", "/api/v1/jobs/job-1/model")).status, 200);  // onnx, the latest
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?format=pb")), 400, "invalid_argument",
              "format");
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?step=x")), 400, "invalid_argument", "step");
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?step=")), 400, "invalid_argument", "step");
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?step=7")), 404, "not_found");
  ExpectError(Call(Req("GET", "/api/v1/jobs/empty/model")), 409, "failed_precondition");
  ExpectError(Call(Req("GET", "/api/v1/jobs/nope/model")), 404, "not_found");
}

// ?checkpoint=best|latest|N chooses the checkpoint; the answer's headers say which it is.
TEST_F(ModelRoutesTest, ExportTakesTheCheckpointByName) {
  HttpResponse best = Call(Req("GET", "/api/v1/jobs/job-1/model?format=onnx&checkpoint=best"));
  ASSERT_EQ(best.status, 200) << best.body;
  EXPECT_EQ(best.Header("Content-Disposition"), "attachment; filename=\"job-1-step100.onnx\"");
  EXPECT_EQ(best.Header("X-Trainingd-Checkpoint-Step"), "100");
  EXPECT_EQ(best.Header("X-Trainingd-Checkpoint"), "best");
  HttpResponse latest = Call(Req("GET", "/api/v1/jobs/job-1/model?checkpoint=latest"));
  ASSERT_EQ(latest.status, 200) << latest.body;
  EXPECT_EQ(latest.Header("X-Trainingd-Checkpoint-Step"), "200");
  EXPECT_EQ(latest.Header("X-Trainingd-Checkpoint"), "latest");
  EXPECT_EQ(Call(Req("GET", "/api/v1/jobs/job-1/model?checkpoint=100"))
                .Header("X-Trainingd-Checkpoint-Step"),
            "100");
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?checkpoint=first")), 400,
              "invalid_argument", "checkpoint");
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?checkpoint=")), 400, "invalid_argument",
              "checkpoint");
  ExpectError(Call(Req("GET", "/api/v1/jobs/job-1/model?checkpoint=best&step=100")), 400,
              "invalid_argument", "checkpoint");
  // The serving routes take latest and best as versions.
  EXPECT_EQ(
      json::parse(
          Call(Req("GET", "/v2/models/job-1/versions/best")).body)["parameters"]["checkpoint"],
      "best");
  json meta = json::parse(Call(Req("GET", "/v2/models/job-1/versions/latest")).body);
  EXPECT_EQ(meta["parameters"]["version"], "200");
  EXPECT_EQ(meta["parameters"]["best_version"], "100");
}

TEST_F(ModelRoutesTest, HealthAndMetadata) {
  EXPECT_EQ(Call(Req("GET", "/v2/health/live")).status, 200);
  EXPECT_EQ(Call(Req("GET", "/v2/health/ready")).status, 200);
  EXPECT_EQ(json::parse(Call(Req("GET", "/v2")).body)["name"], "trainingd");
  models_.ready = false;
  HttpResponse down = Call(Req("GET", "/v2/health/ready"));
  EXPECT_EQ(down.status, 503);
  EXPECT_EQ(down.Header("Retry-After"), "1");
  EXPECT_EQ(Call(Req("GET", "/v2/health/live")).status, 200);
  models_.ready = true;

  HttpResponse r = Call(Req("GET", "/v2/models/job-1"));
  ASSERT_EQ(r.status, 200) << r.body;
  json m = json::parse(r.body);
  EXPECT_EQ(m["name"], "job-1");
  EXPECT_EQ(m["versions"], json({"100", "200"}));
  EXPECT_EQ(m["platform"], "trainingd");
  EXPECT_EQ(m["inputs"][0], json({{"name", "input"}, {"datatype", "FP32"}, {"shape", {-1, 2}}}));
  EXPECT_EQ(m["outputs"][1]["name"], "probabilities");
  EXPECT_EQ(m["parameters"]["class_names"], json({"a", "b", "c"}));
  EXPECT_EQ(m["parameters"]["version"], "200");
  EXPECT_EQ(
      json::parse(Call(Req("GET", "/v2/models/job-1/versions/100")).body)["parameters"]["version"],
      "100");
  EXPECT_EQ(Call(Req("GET", "/v2/models/job-1/ready")).status, 200);
  EXPECT_EQ(Call(Req("GET", "/v2/models/job-1/versions/100/ready")).status, 200);
  ExpectProtocolError(Call(Req("GET", "/v2/models/job-1/versions/7/ready")), 404, "version 7");
  ExpectProtocolError(Call(Req("GET", "/v2/models/job-1/versions/-1")), 400, "version: ");
  ExpectProtocolError(Call(Req("GET", "/v2/models/nope")), 404, "job 'nope'");
  ExpectProtocolError(Call(Req("GET", "/v2/models/empty/ready")), 409, "model 'empty'");
}

TEST_F(ModelRoutesTest, InferAnswersOnceTheBatchHasRun) {
  models_.hold = true;
  const std::string body = R"({"id": "r1", "inputs": [{"name": "input", "shape": [2, 2],
      "datatype": "FP32", "data": [[1, 2], [3, 4.5]]}], "outputs": [{"name": "logits"}]})";
  HttpResponse first = router_.Handle(JsonPost("/v2/models/job-1/infer", body));
  ASSERT_TRUE(first.answer_later) << first.status << " " << first.body;
  std::optional<HttpResponse> answer;
  first.answer_later([&](HttpResponse a) { answer = std::move(a); });
  EXPECT_FALSE(answer.has_value());  // not before the model service answers
  auto held = models_.TakeHeld();
  ASSERT_EQ(held.size(), 1u);
  held[0]();
  ASSERT_TRUE(answer.has_value());
  ASSERT_EQ(answer->status, 200) << answer->body;
  EXPECT_FALSE(answer->Header("Content-Security-Policy").empty());  // finished like any answer
  json r = json::parse(answer->body);
  EXPECT_EQ(r["model_name"], "job-1");
  EXPECT_EQ(r["model_version"], "200");
  EXPECT_EQ(r["id"], "r1");
  ASSERT_EQ(r["outputs"].size(), 1u);  // only the logits asked for
  EXPECT_EQ(r["outputs"][0]["name"], "logits");
  EXPECT_EQ(r["outputs"][0]["shape"], json({2, 3}));
  EXPECT_EQ(r["outputs"][0]["data"], json({1, 2, 3, 3, 4.5, 7.5}));
  const InferRequest& seen = models_.seen.back();
  EXPECT_EQ(seen.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(seen.version.has_value());
  models_.hold = false;

  // A version in the path, and UINT8 data.
  HttpResponse v = Call(JsonPost("/v2/models/job-1/versions/100/infer",
                                 R"({"inputs": [{"name": "input", "shape": [1, 2],
                                     "datatype": "UINT8", "data": [0, 255]}]})"));
  ASSERT_EQ(v.status, 200) << v.body;
  EXPECT_EQ(json::parse(v.body)["model_version"], "100");
  EXPECT_EQ(json::parse(v.body)["outputs"].size(), 2u);
  EXPECT_EQ(models_.seen.back().data, (std::vector<float>{0, 255}));
}

TEST_F(ModelRoutesTest, TfServingPredict) {
  HttpResponse r = Call(JsonPost("/v1/models/job-1:predict", R"({"instances": [[1, 2], [3, 4]]})"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body),
            json::parse(R"({"predictions": [[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]]})"));
  ExpectProtocolError(Call(JsonPost("/v1/models/job-1:predict", R"({"instances": [[1, 2], [3]]})")),
                      400, "instances: ragged");
  ExpectProtocolError(Call(JsonPost("/v1/models/nope:predict", R"({"instances": [[1, 2]]})")), 404,
                      "job 'nope'");
  EXPECT_EQ(Call(JsonPost("/v1/models/job-1:classify", "{}")).status, 404);
}

TEST_F(ModelRoutesTest, BadInferRequestsNameTheField) {
  const auto infer = [&](const std::string& body) {
    return Call(JsonPost("/v2/models/job-1/infer", body));
  };
  const auto input = [](const std::string& fields) {
    return R"({"inputs": [{"name": "input", )" + fields + "}]}";
  };
  ExpectProtocolError(infer("{not json"), 400, "invalid JSON");
  ExpectProtocolError(infer(R"({"inputs": []})"), 400, "inputs: ");
  ExpectProtocolError(infer(R"({"inputs": [{"name": "input"}], "extra": 1})"), 400, "extra: ");
  ExpectProtocolError(infer(input(R"("shape": [1, 2], "datatype": "FP64", "data": [1, 2])")), 400,
                      "inputs[0].datatype: ");
  ExpectProtocolError(infer(input(R"("shape": [1, 2], "datatype": "FP32", "data": [1])")), 400,
                      "inputs[0].data: 1 values for shape [1, 2], which holds 2");
  ExpectProtocolError(infer(input(R"("shape": [1, 2], "datatype": "FP32", "data": [1, 2, 3])")),
                      400, "inputs[0].data: more values");
  ExpectProtocolError(infer(input(R"("shape": [1, 2], "datatype": "FP32", "data": [1, "x"])")), 400,
                      "inputs[0].data[1]: ");
  ExpectProtocolError(infer(input(R"("shape": [1, 2], "datatype": "FP32", "data": [1, 1e39])")),
                      400, "inputs[0].data[1]: must be a finite FP32");
  ExpectProtocolError(infer(input(R"("shape": [1, 2], "datatype": "UINT8", "data": [1, 256])")),
                      400, "inputs[0].data[1]: ");
  ExpectProtocolError(infer(input(R"("shape": [0, 2], "datatype": "FP32", "data": [])")), 400,
                      "inputs[0].shape: ");
  // A huge declared shape is refused by its arithmetic, before anything is allocated.
  ExpectProtocolError(
      infer(input(R"("shape": [1000000000, 1000000000], "datatype": "FP32", "data": [1])")), 400,
      "inputs[0].shape: ");
  ExpectProtocolError(infer(input(R"("shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3])")),
                      400, "inputs[0].shape: does not fit");
  ExpectProtocolError(
      infer(R"({"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]})"),
      400, "inputs[0].name: ");
  ExpectProtocolError(
      infer(input(
          R"("shape": [1, 2], "datatype": "FP32", "data": [1, 2]}], "outputs": [{"name": "y")")),
      400, "outputs[0].name: ");
  ExpectError(Call(Req("POST", "/v2/models/job-1/infer", "{}", {{"Content-Type", "text/plain"}})),
              415, "unsupported_media_type", "Content-Type");
}

TEST_F(ModelRoutesTest, WithoutAModelServiceTheRoutesAre404) {
  FakeJobService jobs;
  Router plain(jobs, RouterOptions{});
  EXPECT_EQ(plain.Handle(Req("GET", "/v2/models/job-1")).status, 404);
  EXPECT_EQ(plain.Handle(Req("GET", "/api/v1/jobs/job-1/model")).status, 404);
  EXPECT_EQ(plain.Handle(Req("GET", "/v2/health/live")).status, 200);
}

}  // namespace
}  // namespace trainingd::api
