// The regression task on the wire: the job spec's task, loss and huber_delta; a regression
// model's model.json; its served outputs; a dataset's tasks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "trainingd/api/dataset_json.h"
#include "trainingd/api/infer_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/model_json.h"

namespace trainingd::api {
namespace {

namespace eng = trainingd::engine;
using nlohmann::json;

// `extra` merged into a small valid spec.
std::string Spec(const json& extra) {
  json spec = {{"name", "t"}, {"model", {{"preset", "mlp"}}}, {"max_steps", 10}};
  spec.update(extra);
  return spec.dump();
}

TEST(TaskJsonTest, ARegressionSpecReadsAndWritesBack) {
  FieldError error;
  auto spec =
      ParseJobSpec(Spec({{"task", "regression"}, {"loss", "huber"}, {"huber_delta", 0.5}}), &error);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->task, eng::Task::kRegression);
  EXPECT_EQ(spec->loss, eng::RegressionLoss::kHuber);
  EXPECT_EQ(spec->huber_delta, 0.5f);
  // A regression job logs no accuracy unless asked: the default tensors are its own.
  EXPECT_EQ(spec->hooks.logging.tensors, (std::vector<std::string>{"global_step", "loss"}));
  const json out = json::parse(JobSpecToJson(*spec));
  EXPECT_EQ(out["task"], "regression");
  EXPECT_EQ(out["loss"], "huber");
  EXPECT_EQ(out["huber_delta"], 0.5);
  auto again = ParseJobSpec(out.dump(), &error);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(JobSpecToJson(*again), JobSpecToJson(*spec));
  // mse is the default loss.
  auto mse = ParseJobSpec(Spec({{"task", "regression"}}), &error);
  ASSERT_TRUE(mse.ok());
  EXPECT_EQ(mse->loss, eng::RegressionLoss::kMse);
  // A classifier's canonical spec is what it always was: no task, no loss.
  auto classifier = ParseJobSpec(Spec({{"loss", "cross_entropy"}}), &error);
  ASSERT_TRUE(classifier.ok()) << classifier.status().ToString();
  const json c = json::parse(JobSpecToJson(*classifier));
  EXPECT_FALSE(c.contains("task"));
  EXPECT_FALSE(c.contains("loss"));
}

TEST(TaskJsonTest, BadTasksAndLossesNameTheField) {
  const auto field = [](const json& extra) {
    FieldError error;
    auto spec = ParseJobSpec(Spec(extra), &error);
    EXPECT_FALSE(spec.ok()) << extra.dump();
    return error.field;
  };
  EXPECT_EQ(field({{"task", "ranking"}}), "task");
  EXPECT_EQ(field({{"task", 1}}), "task");
  EXPECT_EQ(field({{"loss", "mse"}}), "loss");  // a classifier's loss is cross_entropy
  EXPECT_EQ(field({{"task", "regression"}, {"loss", "cross_entropy"}}), "loss");
  EXPECT_EQ(field({{"task", "regression"}, {"loss", "huber"}, {"huber_delta", -1}}), "huber_delta");
  EXPECT_EQ(field({{"task", "regression"}, {"huber_delta", 2}}), "huber_delta");  // not huber
  EXPECT_EQ(field({{"huber_delta", 2}}), "huber_delta");
  EXPECT_EQ(field({{"task", "regression"}, {"label_smoothing", 0.1}}), "label_smoothing");
  EXPECT_EQ(field({{"task", "regression"},
                   {"hooks", {{"logging", {{"tensors", {"loss", "accuracy"}}}}}}}),
            "hooks.logging.tensors[1]");
  EXPECT_EQ(field({{"task", "regression"},
                   {"hooks", {{"early_stopping", {{"monitor", "validation/accuracy"}}}}}}),
            "hooks.early_stopping.monitor");
  EXPECT_EQ(field({{"hooks", {{"early_stopping", {{"monitor", "validation/r2"}}}}}}),
            "hooks.early_stopping.monitor");  // a classifier has no r2
}

TEST(TaskJsonTest, ClassWeightsAndAWeightColumnReadAndWriteBack) {
  FieldError error;
  auto balanced = ParseJobSpec(
      Spec({{"class_weights", "balanced"}, {"dataset", {{"name", "t"}, {"weight_column", "w"}}}}),
      &error);
  ASSERT_TRUE(balanced.ok()) << balanced.status().ToString();
  EXPECT_TRUE(balanced->class_weights.balanced);
  EXPECT_EQ(balanced->dataset.weight_column, "w");
  json out = json::parse(JobSpecToJson(*balanced));
  EXPECT_EQ(out["class_weights"], "balanced");
  EXPECT_EQ(out["dataset"]["weight_column"], "w");
  auto named = ParseJobSpec(Spec({{"class_weights", {{"yes", 3.5}, {"no", 0.5}}}}), &error);
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  out = json::parse(JobSpecToJson(*named));
  EXPECT_EQ(out["class_weights"], json({{"no", 0.5}, {"yes", 3.5}}));
  auto again = ParseJobSpec(out.dump(), &error);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->class_weights, named->class_weights);
  // Neither: none written.
  auto none = ParseJobSpec(Spec(json::object()), &error);
  EXPECT_FALSE(json::parse(JobSpecToJson(*none)).contains("class_weights"));
  const auto field = [](const json& extra) {
    FieldError e;
    EXPECT_FALSE(ParseJobSpec(Spec(extra), &e).ok()) << extra.dump();
    return e.field;
  };
  EXPECT_EQ(field({{"class_weights", "even"}}), "class_weights");
  EXPECT_EQ(field({{"class_weights", json::object()}}), "class_weights");
  EXPECT_EQ(field({{"class_weights", {{"yes", "x"}}}}), "class_weights.yes");
  EXPECT_EQ(field({{"class_weights", {{"yes", -2}}}}), "class_weights.yes");
  EXPECT_EQ(field({{"task", "regression"}, {"class_weights", "balanced"}}), "class_weights");
}

eng::ModelInput RegressionInput() {
  eng::ModelInput in;
  in.example_shape = eng::Shape{2};
  in.num_classes = 1;
  in.class_names = {"price"};
  in.task = eng::Task::kRegression;
  in.target = {123456.7f, 0.1f};
  in.preprocessing = eng::Preprocessing::kNone;
  in.dataset_name = "houses";
  in.dataset_format = "csv";
  in.dataset_sha256 = std::string(64, 'a');
  in.model.layers = {eng::LayerSpec::Dense(1, eng::Activation::kNone)};
  return in;
}

TEST(TaskJsonTest, ARegressionModelJsonRoundTrips) {
  const eng::ModelInput in = RegressionInput();
  const std::string text = ModelInputToJson(in);
  const json doc = json::parse(text);
  EXPECT_EQ(doc["task"], "regression");
  auto back = ParseModelInput(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, in);
  // A classifier's model.json has neither field, and may not have the scale.
  eng::ModelInput classifier = in;
  classifier.task = eng::Task::kClassification;
  classifier.target = {};
  EXPECT_FALSE(json::parse(ModelInputToJson(classifier)).contains("task"));
  json bad = doc;
  bad.erase("target_std");
  FieldError error;
  EXPECT_FALSE(ParseModelInput(bad.dump(), &error).ok());
  EXPECT_EQ(error.field, "target_std");
  bad = doc;
  bad["task"] = "classification";
  EXPECT_FALSE(ParseModelInput(bad.dump(), &error).ok());
  EXPECT_EQ(error.field, "target_mean");
  bad = doc;
  bad["target_std"] = 0;
  EXPECT_FALSE(ParseModelInput(bad.dump(), &error).ok());
  EXPECT_NE(error.message.find("target_std"), std::string::npos);
}

TEST(TaskJsonTest, ARegressionModelsAnswersCarryItsPredictions) {
  InferResult r;
  r.model = "job";
  r.batch = 2;
  r.classes = 1;
  r.regression = true;
  r.logits = {0.5f, -1.0f};
  r.probabilities = {12.5f, -3.25f};
  r.class_names = {"price"};
  const json v2 = json::parse(InferResponseJson(r));
  ASSERT_EQ(v2["outputs"].size(), 2u);
  EXPECT_EQ(v2["outputs"][1]["name"], "prediction");
  EXPECT_EQ(v2["outputs"][1]["shape"], json({2, 1}));
  EXPECT_EQ(v2["outputs"][1]["data"], json({12.5, -3.25}));
  EXPECT_EQ(json::parse(PredictResponseJson(r))["predictions"], json({12.5, -3.25}));
  auto request = ParseInferRequest(
      R"({"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}],
          "outputs": [{"name": "prediction"}]})");
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->outputs, std::vector<std::string>{"prediction"});
  auto predict = ParsePredictRequest(R"({"instances": [[1, 2]]})");
  ASSERT_TRUE(predict.ok());
  EXPECT_TRUE(predict->predictions_only);
}

TEST(TaskJsonTest, ADatasetSaysWhichTasksItsLabelsServe) {
  DatasetRecord d;
  d.name = "houses";
  d.format = "csv";
  d.num_classes = 0;
  d.numeric_labels = true;
  EXPECT_EQ(DatasetToJson(d)["tasks"], json({"regression"}));
  d.num_classes = 3;
  EXPECT_EQ(DatasetToJson(d)["tasks"], json({"classification", "regression"}));
  d.numeric_labels = false;
  EXPECT_EQ(DatasetToJson(d)["tasks"], json({"classification"}));
}

}  // namespace
}  // namespace trainingd::api
