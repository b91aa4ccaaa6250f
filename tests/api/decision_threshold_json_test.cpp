// A two-class classifier's decision threshold on the wire: the job spec's decision_threshold
// (read, written back only when set, refused naming the field), model.json's, and the served
// "label" output of KServe v2 and TF Serving's "labels".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "trainingd/api/infer_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/model_json.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::api {
namespace {

namespace eng = trainingd::engine;
using nlohmann::json;

std::string ThresholdSpec(const json& extra) {
  json spec = {{"name", "t"}, {"model", {{"preset", "mlp"}}}, {"max_steps", 10}};
  spec.update(extra);
  return spec.dump();
}

TEST(DecisionThresholdJsonTest, ReadsAndWritesBackOnlyWhenSet) {
  FieldError error;
  auto spec = ParseJobSpec(ThresholdSpec({{"decision_threshold", 0.3}}), &error);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(spec->decision_threshold.has_value());
  EXPECT_EQ(*spec->decision_threshold, 0.3);
  EXPECT_EQ(eng::DecisionThresholdOf(*spec), 0.3);
  const json out = json::parse(JobSpecToJson(*spec));
  EXPECT_EQ(out["decision_threshold"], 0.3);
  auto again = ParseJobSpec(out.dump(), &error);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->decision_threshold, spec->decision_threshold);
  // Unset: the canonical spec is what it always was, and the model predicts by arg-max.
  auto none = ParseJobSpec(ThresholdSpec(json::object()), &error);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->decision_threshold.has_value());
  EXPECT_EQ(eng::DecisionThresholdOf(*none), eng::kDefaultDecisionThreshold);
  EXPECT_FALSE(json::parse(JobSpecToJson(*none)).contains("decision_threshold"));
}

TEST(DecisionThresholdJsonTest, BadThresholdsNameTheField) {
  const auto refused = [](const json& extra) {
    FieldError e;
    EXPECT_FALSE(ParseJobSpec(ThresholdSpec(extra), &e).ok()) << extra.dump();
    return e.field + ": " + e.message;
  };
  for (const json& t : {json(0), json(1), json(-0.2), json(1.5), json("0.3"), json(nullptr)}) {
    const std::string got = refused({{"decision_threshold", t}});
    EXPECT_EQ(got.rfind("decision_threshold: ", 0), 0u) << t.dump() << " -> " << got;
  }
  EXPECT_NE(refused({{"decision_threshold", 1}}).find("(0, 1)"), std::string::npos);
  const std::string regression = refused({{"task", "regression"}, {"decision_threshold", 0.3}});
  EXPECT_EQ(regression.rfind("decision_threshold: ", 0), 0u) << regression;
  EXPECT_NE(regression.find("regression job"), std::string::npos) << regression;
}

TEST(DecisionThresholdJsonTest, OnlyATwoClassDatasetTakesOne) {
  eng::JobSpec spec;
  spec.decision_threshold = 0.25;
  EXPECT_TRUE(eng::CheckDecisionThreshold(spec, 2).ok());
  const eng::Status three = eng::CheckDecisionThreshold(spec, 3);
  EXPECT_FALSE(three.ok());
  EXPECT_EQ(three.message().rfind("decision_threshold: ", 0), 0u) << three.ToString();
  EXPECT_NE(three.message().find("the dataset has 3 classes"), std::string::npos);
  spec.decision_threshold.reset();
  EXPECT_TRUE(eng::CheckDecisionThreshold(spec, 3).ok());
}

eng::ModelInput ThresholdBinaryInput() {
  eng::ModelInput in;
  in.example_shape = eng::Shape{2};
  in.num_classes = 2;
  in.class_names = {"no", "yes"};
  in.preprocessing = eng::Preprocessing::kNone;
  in.dataset_name = "churn";
  in.dataset_format = "csv";
  in.dataset_sha256 = std::string(64, 'a');
  in.model.layers = {eng::LayerSpec::Dense(2, eng::Activation::kNone)};
  return in;
}

TEST(DecisionThresholdJsonTest, ModelJsonRecordsItForTwoClasses) {
  eng::ModelInput in = ThresholdBinaryInput();
  in.decision_threshold = 0.3;
  const std::string text = ModelInputToJson(in);
  EXPECT_EQ(json::parse(text)["decision_threshold"], 0.3);
  auto back = ParseModelInput(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, in);
  // A model recorded before thresholds: 0.5.
  json old = json::parse(text);
  old.erase("decision_threshold");
  auto older = ParseModelInput(old.dump());
  ASSERT_TRUE(older.ok());
  EXPECT_EQ(older->decision_threshold, 0.5);
  // Out of range, or on three classes: refused naming it.
  json bad = json::parse(text);
  bad["decision_threshold"] = 1.0;
  FieldError error;
  EXPECT_FALSE(ParseModelInput(bad.dump(), &error).ok());
  EXPECT_EQ(error.field, "decision_threshold");
  eng::ModelInput three = in;
  three.num_classes = 3;
  three.class_names = {"a", "b", "c"};
  three.model.layers = {eng::LayerSpec::Dense(3, eng::Activation::kNone)};
  bad = json::parse(ModelInputToJson(three));
  EXPECT_FALSE(bad.contains("decision_threshold"));
  bad["decision_threshold"] = 0.3;
  EXPECT_FALSE(ParseModelInput(bad.dump(), &error).ok());
  EXPECT_EQ(error.field, "decision_threshold");
}

TEST(DecisionThresholdJsonTest, AnswersCarryTheLabels) {
  InferResult r;
  r.model = "job";
  r.batch = 2;
  r.classes = 2;
  r.with_logits = false;
  r.probabilities = {0.6f, 0.4f, 0.9f, 0.1f};
  r.with_labels = true;
  r.labels = {1, 0};
  r.class_names = {"no", "yes"};
  const json v2 = json::parse(InferResponseJson(r));
  ASSERT_EQ(v2["outputs"].size(), 2u);
  EXPECT_EQ(v2["outputs"][1],
            json({{"name", "label"}, {"datatype", "INT64"}, {"shape", {2}}, {"data", {1, 0}}}));
  const json tf = json::parse(PredictResponseJson(r));
  EXPECT_EQ(tf["labels"], json({1, 0}));
  EXPECT_EQ(tf["predictions"].size(), 2u);
  auto request = ParseInferRequest(
      R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}],
          "outputs": [{"name": "label"}]})");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->outputs, std::vector<std::string>{"label"});
  EXPECT_FALSE(request->decision_threshold.has_value());
  // A request's own threshold: read, and echoed with the answer; out of range refused naming it.
  auto own = ParseInferRequest(
      R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}],
          "parameters": {"decision_threshold": 0.8, "other": 1}})");
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->decision_threshold, 0.8);
  for (const char* bad : {"0", "1", "-1", "\"0.8\"", "null"}) {
    FieldError e;
    auto refused = ParseInferRequest(
        std::string(R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32",
                                     "data": [1, 2]}], "parameters": {"decision_threshold": )") +
        bad + "}}");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().message().rfind("parameters.decision_threshold: ", 0), 0u)
        << refused.status().ToString();
  }
  r.decision_threshold = 0.8;
  EXPECT_EQ(json::parse(InferResponseJson(r))["parameters"]["decision_threshold"], 0.8);
  ModelMetadata m;
  m.decision_threshold = 0.3;
  EXPECT_EQ(json::parse(ModelMetadataJson(m))["parameters"]["decision_threshold"], 0.3);
  m.decision_threshold.reset();
  EXPECT_TRUE(json::parse(ModelMetadataJson(m))["parameters"]["decision_threshold"].is_null());
}

}  // namespace
}  // namespace trainingd::api
