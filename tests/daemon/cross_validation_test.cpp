// The cross_validation searcher on a real JobManager, Store and LocalExecutor: k trials, one per
// fold, each validating on its fold; the result is each fold's metric, their mean and sample
// standard deviation; the same across a restart of the daemon's managers; bad specs refused
// naming the field.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "experiment_fixture.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/daemon/experiments/experiment_manager.h"
#include "trainingd/daemon/experiments/searcher.h"

namespace trainingd::daemon {
namespace {

using api::ExperimentState;
using api::TrialState;

// 3-fold cross-validation of a softmax on 900 Fashion-MNIST examples, 150 steps a fold (long
// enough for a restart to find trials running).
// `searcher_extra` is spliced into the searcher, `dataset_extra` into the base job's dataset.
std::string CvSpec(const std::string& searcher_extra = "", const std::string& dataset_extra = "",
                   const std::string& extra = "") {
  return R"({"name": "cv",
    "base_job": {"name": "t", "model": "softmax",
      "dataset": {"name": "fashion-mnist", "max_train_examples": 900, "max_test_examples": 200,
                  "split_seed": 5)" +
         dataset_extra + R"(},
      "batch_size": 50, "max_steps": 150, "seed": 1,
      "optimizer": {"type": "adam", "learning_rate": 0.003},
      "hooks": {"checkpoint": {"every_steps": 1000}, "summary": {"every_steps": 10},
                "evaluation": {"every_steps": 1000, "split": "validation"},
                "logging": {"enabled": false}}},
    "searcher": {"name": "cross_validation", "metric": "validation/accuracy", "mode": "max",
                 "folds": 3, "max_concurrent_trials": 2)" +
         searcher_extra + "}" + extra + "}";
}

// Two slots: folds run side by side.
class CrossValidationExperimentTest : public ExperimentFixture {
 protected:
  CrossValidationExperimentTest() { slots_ = 2; }
};

TEST_F(CrossValidationExperimentTest, EachFoldIsATrialAndTheResultIsTheirMeanAndStd) {
  const std::string id = SubmitSearch(CvSpec()).id;
  const api::ExperimentInfo done = WaitForExperiment(id, {ExperimentState::kCompleted});
  EXPECT_EQ(done.searcher, "cross_validation");
  EXPECT_EQ(done.trials_started, 3);
  const std::vector<api::TrialInfo> trials = AllTrials(id);
  ASSERT_EQ(trials.size(), 3u);
  std::vector<double> metrics;
  for (const api::TrialInfo& t : trials) {
    EXPECT_EQ(t.state, TrialState::kCompleted);
    ASSERT_EQ(t.hyperparameters.size(), 1u);
    EXPECT_EQ(t.hyperparameters[0].first, "dataset.fold");
    EXPECT_EQ(t.hyperparameters[0].second, std::to_string(t.index));
    EXPECT_EQ(t.seed, 1u);  // the base job's: the folds differ only in their data
    ASSERT_TRUE(t.metric.has_value());
    metrics.push_back(*t.metric);
    // Its job validates on its fold: 900 examples in 3 folds of 300.
    auto job = manager_->Get(t.job_id);
    ASSERT_TRUE(job.ok());
    auto spec = api::ParseJobSpec(job->spec_json);
    ASSERT_TRUE(spec.ok()) << job->spec_json;
    EXPECT_EQ(spec->dataset.folds, 3);
    EXPECT_EQ(spec->dataset.fold, t.index);
    EXPECT_TRUE(spec->dataset.stratified);
  }
  // Different data, different accuracies (a fold of 300 validation examples).
  EXPECT_FALSE(metrics[0] == metrics[1] && metrics[1] == metrics[2]);
  ASSERT_TRUE(done.cross_validation.has_value());
  const api::CrossValidationInfo& cv = *done.cross_validation;
  EXPECT_EQ(cv.folds, 3);
  EXPECT_EQ(cv.folds_done, 3);
  ASSERT_EQ(cv.fold_metrics.size(), 3u);
  double mean = 0;
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(cv.fold_metrics[i].has_value());
    EXPECT_EQ(*cv.fold_metrics[i], metrics[i]);
    mean += metrics[i] / 3;
  }
  double squares = 0;
  for (double m : metrics) squares += (m - mean) * (m - mean);
  ASSERT_TRUE(cv.mean && cv.std);
  EXPECT_NEAR(*cv.mean, mean, 1e-12);
  EXPECT_NEAR(*cv.std, std::sqrt(squares / 2), 1e-12);  // sample standard deviation
  // The answer carries it, and reads back.
  const auto json = api::ExperimentToJson(done, false);
  EXPECT_EQ(json["cross_validation"]["folds"], 3);
  auto back = api::ExperimentFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->cross_validation.has_value());
  EXPECT_EQ(back->cross_validation->std, cv.std);

  // The same experiment again, with the daemon's managers restarted once a fold has its result:
  // the same folds, the same metrics.
  const std::string second = SubmitSearch(CvSpec()).id;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         experiments_->Get(second)->cross_validation->folds_done < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Restart();
  const api::ExperimentInfo again = WaitForExperiment(second, {ExperimentState::kCompleted});
  ASSERT_TRUE(again.cross_validation.has_value());
  EXPECT_EQ(again.cross_validation->fold_metrics, cv.fold_metrics);
  EXPECT_EQ(again.cross_validation->std, cv.std);
  EXPECT_EQ(again.trials_started, 3);
}

TEST(CrossValidationSpecTest, BadSpecsAreRefusedNamingTheField) {
  const auto fails = [](const std::string& text, const std::string& field) {
    auto spec = api::ParseExperimentSpec(text);
    if (spec.ok()) return ::testing::AssertionFailure() << "accepted: " << text;
    if (spec.status().message().rfind(field, 0) != 0) {
      return ::testing::AssertionFailure() << spec.status().message();
    }
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(fails(CvSpec(R"(, "folds": 1)"), "searcher.folds"));
  EXPECT_TRUE(fails(CvSpec(R"(, "folds": 21)"), "searcher.folds"));
  EXPECT_TRUE(fails(CvSpec(R"(, "max_trials": 4)"), "searcher.max_trials"));
  EXPECT_TRUE(fails(CvSpec("", R"(, "validation_size": 100)"), "base_job.dataset.validation_size"));
  EXPECT_TRUE(fails(CvSpec("", R"(, "folds": 4)"), "base_job.dataset.folds"));
  EXPECT_TRUE(fails(CvSpec("", "", R"(, "space": {"optimizer.learning_rate":
                                      {"type": "log", "min": 0.001, "max": 0.1}})"),
                    "space"));
  const std::string grid_with_folds = R"({"name": "g",
    "base_job": {"name": "t", "model": "softmax", "max_steps": 10,
                 "hooks": {"evaluation": {"split": "validation"}}},
    "space": {"optimizer.learning_rate": {"type": "log", "min": 0.001, "max": 0.1}},
    "searcher": {"name": "grid", "folds": 3}})";
  EXPECT_TRUE(fails(grid_with_folds, "searcher.folds"));
  // The canonical spec reads back as the same experiment (a restart reads it so).
  auto spec = api::ParseExperimentSpec(CvSpec(R"(, "stratified": false)"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->searcher.max_trials, 3);
  EXPECT_FALSE(spec->base_job.dataset.stratified);
  auto again = api::ParseExperimentSpec(api::DumpJson(api::ExperimentSpecToJson(*spec)));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->base_job_json, spec->base_job_json);
  EXPECT_EQ(TrialHyperparameters(*again, 2), (api::Hyperparameters{{"dataset.fold", "2"}}));
}

TEST(CrossValidationSpecTest, TheResultsStdIsTheSampleStd) {
  api::SearcherSpec s;
  s.name = api::SearcherSpec::Name::kCrossValidation;
  s.folds = 4;
  const auto cv = CrossValidationResult(s, {0.5, std::nullopt, 0.7});
  EXPECT_EQ(cv.fold_metrics.size(), 4u);
  EXPECT_EQ(cv.folds_done, 2);
  EXPECT_NEAR(*cv.mean, 0.6, 1e-12);
  EXPECT_NEAR(*cv.std, std::sqrt(0.02), 1e-12);
  const auto one = CrossValidationResult(s, {0.5});
  EXPECT_EQ(one.mean, 0.5);
  EXPECT_FALSE(one.std.has_value());
}

}  // namespace
}  // namespace trainingd::daemon
