// The regression task: a CSV's label column read as numbers, the losses on the standardized
// target, the metrics in the target's units, and a trained model's predictions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "trainingd/engine/base/random.h"
#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/job/model_input.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/session/session.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {

DatasetSource Source(LabelUse use) {
  DatasetSource s;
  s.format = DatasetSource::Format::kCsv;
  s.path = "houses.csv";
  s.label_column = "price";
  s.label_use = use;
  s.test_fraction = 0.25;
  return s;
}

DatasetOptions NoValidation() {
  DatasetOptions o;
  o.validation_size = 0;
  return o;
}

// price = 3 * a - 2 * b + 10, exactly, for rows of (a, b) on a grid.
std::string LinearTable(int rows) {
  std::string csv = "a,b,price\n";
  for (int i = 0; i < rows; ++i) {
    const int a = i % 7, b = (i * 3) % 5;
    csv += std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(3 * a - 2 * b + 10) +
           ".5\n";
  }
  return csv;
}

TEST(RegressionDataTest, ANumericLabelColumnIsReadAsTargets) {
  auto d =
      ParseCsv("a,price\n1,2.5\n2,-1e3\n3,7\n4,0.25\n", Source(LabelUse::kNumbers), NoValidation());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->task, Task::kRegression);
  EXPECT_EQ(d->num_classes, 1);
  EXPECT_TRUE(d->train.labels.empty());
  EXPECT_EQ(d->train.size() + d->test.size(), 4);
  std::vector<float> all = d->train.targets;
  all.insert(all.end(), d->test.targets.begin(), d->test.targets.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<float>{-1000.0f, 0.25f, 2.5f, 7.0f}));
  // The standardization is the train split's: its targets' mean and population deviation.
  double mean = 0, m2 = 0;
  for (float y : d->train.targets) mean += y;
  mean /= static_cast<double>(d->train.size());
  for (float y : d->train.targets) m2 += (y - mean) * (y - mean);
  EXPECT_FLOAT_EQ(d->target_mean, static_cast<float>(mean));
  EXPECT_FLOAT_EQ(d->target_std, static_cast<float>(std::sqrt(m2 / d->train.size())));
}

TEST(RegressionDataTest, ConstantTargetsAreScaledByOne) {
  auto d = ParseCsv("a,price\n1,4\n2,4\n3,4\n4,4\n", Source(LabelUse::kNumbers), NoValidation());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->target_mean, 4.0f);
  EXPECT_EQ(d->target_std, 1.0f);
}

TEST(RegressionDataTest, BadTargetsNameTheLineAndTheColumn) {
  const auto error = [](const std::string& csv) {
    auto d = ParseCsv(csv, Source(LabelUse::kNumbers), NoValidation());
    return d.ok() ? std::string() : d.status().message();
  };
  EXPECT_EQ(error("a,price\n1,2\n2,cheap\n3,4\n"),
            "houses.csv: line 3: column 'price': 'cheap' is not a finite number, which a "
            "regression job's target must be");
  EXPECT_NE(error("a,price\n1,2\n2,inf\n3,4\n").find("line 3: column 'price': 'inf' is not"),
            std::string::npos);
  EXPECT_NE(error("a,price\n1,2\n2,-inf\n3,4\n").find("'-inf' is not a finite"), std::string::npos);
  EXPECT_NE(error("a,price\n1,2\n2,1e39\n3,4\n").find("'1e39' is not a finite"), std::string::npos);
  EXPECT_NE(error("a,price\n1,2\n2,NA\n3,4\n").find("line 3: column 'price': the label is missing"),
            std::string::npos);
  EXPECT_NE(error("a,price\n1,2\n2,\n3,4\n").find("line 3: column 'price': empty label"),
            std::string::npos);
}

// An upload reads the label column for either task: classes when they can be, numbers when
// they are, and refuses it only when it is neither.
TEST(RegressionDataTest, AnUploadKeepsTheLabelsForEitherTask) {
  const DatasetSource either = Source(LabelUse::kClassesOrNumbers);
  auto both = ParseCsv("a,price\n1,2\n2,0\n3,1\n4,2\n", either, NoValidation());
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->num_classes, 3);  // class ids 0..2
  EXPECT_FALSE(both->train.labels.empty());
  EXPECT_FALSE(both->train.targets.empty());
  std::string many = "a,price\n";
  for (int i = 0; i < 300; ++i) many += std::to_string(i) + "," + std::to_string(i) + ".5\n";
  auto numbers = ParseCsv(many, either, NoValidation());
  ASSERT_TRUE(numbers.ok()) << numbers.status().ToString();
  EXPECT_EQ(numbers->num_classes, 0);
  EXPECT_TRUE(numbers->train.labels.empty());
  EXPECT_EQ(numbers->train.size() + numbers->test.size(), 300);
  // As classes, the same file is refused (too many names), as it always was.
  auto classes = ParseCsv(many, Source(LabelUse::kClasses), NoValidation());
  EXPECT_NE(classes.status().message().find("more than 256 distinct labels"), std::string::npos);
  // Neither numbers nor at most 256 names.
  std::string neither = many + "301,cheap\n";
  auto bad = ParseCsv(neither, either, NoValidation());
  EXPECT_NE(bad.status().message().find("more than 256 distinct labels"), std::string::npos);
  // Names only: classes.
  auto names = ParseCsv(
      "a,y\n1,cat\n2,dog\n3,cat\n",
      [&] {
        DatasetSource s = either;
        s.label_column = "y";
        return s;
      }(),
      NoValidation());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->num_classes, 2);
  EXPECT_TRUE(names->train.targets.empty());
}

TEST(RegressionDataTest, TheLabelSummaryHasTheNumbersStatistics) {
  const std::string path = ::testing::TempDir() + "/regression_summary.csv";
  std::ofstream(path) << "a,price\n1,1\n2,2\n3,3\n4,6\n";
  DatasetSource s = Source(LabelUse::kClassesOrNumbers);
  s.path = path;
  auto info = ProbeDataset(s, NoValidation(), ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info->numeric_labels);
  const ColumnSummary& label = info->columns[1];
  EXPECT_EQ(label.type, ColumnType::kLabel);
  EXPECT_DOUBLE_EQ(label.mean, 3);
  EXPECT_DOUBLE_EQ(label.stddev, std::sqrt((4 + 1 + 0 + 9) / 4.0));
  EXPECT_DOUBLE_EQ(label.min, 1);
  EXPECT_DOUBLE_EQ(label.max, 6);
  std::remove(path.c_str());
}

TEST(RegressionLossTest, LossesAndGradientsByHand) {
  Tensor out(Shape{3, 1});
  out[0] = 0.5f;
  out[1] = -2.0f;
  out[2] = 1.0f;
  // Targets 10, 2, 12 with mean 8 and std 2: standardized 1, -3, 2; residuals -0.5, 1, -1.
  const std::vector<float> y = {10, 2, 12};
  const TargetScale scale{8, 2};
  Tensor grad;
  const RegressionSums mse = RegressionLossOf(out, y, RegressionLoss::kMse, 1, scale, &grad, 4);
  EXPECT_DOUBLE_EQ(mse.loss_sum, 0.25 + 1 + 1);
  EXPECT_FLOAT_EQ(grad[0], 2 * -0.5f / 4);
  EXPECT_FLOAT_EQ(grad[1], 2 * 1.0f / 4);
  const RegressionSums mae = RegressionLossOf(out, y, RegressionLoss::kMae, 1, scale, &grad, 0);
  EXPECT_DOUBLE_EQ(mae.loss_sum, 2.5);
  EXPECT_FLOAT_EQ(grad[0], -1.0f / 3);
  EXPECT_FLOAT_EQ(grad[2], -1.0f / 3);
  const RegressionSums huber =
      RegressionLossOf(out, y, RegressionLoss::kHuber, 0.75f, scale, &grad, 0);
  // |r| <= 0.75: r^2 / 2; else 0.75 * (|r| - 0.375).
  EXPECT_DOUBLE_EQ(huber.loss_sum, 0.125 + 2 * 0.75 * (1 - 0.375));
  EXPECT_FLOAT_EQ(grad[0], -0.5f / 3);
  EXPECT_FLOAT_EQ(grad[1], 0.75f / 3);
  EXPECT_DOUBLE_EQ(mse.weight_sum, 3);
}

JobSpec RegressionJob(int64_t steps) {
  JobSpec spec;
  spec.name = "regression";
  spec.task = Task::kRegression;
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  spec.batch_size = 32;
  spec.max_steps = steps;
  spec.optimizer.learning_rate = LearningRateSchedule::Constant(0.01f);
  spec.hooks.logging.tensors = {"global_step", "loss"};
  spec.hooks.checkpoint.enabled = false;
  spec.hooks.summary.enabled = false;
  spec.hooks.final_eval.enabled = true;
  return spec;
}

TEST(RegressionTrainingTest, AnMlpLearnsALinearTargetAndReportsItsMetrics) {
  DatasetSource s = Source(LabelUse::kNumbers);
  s.standardize = true;
  auto data = ParseCsv(LinearTable(400), s, NoValidation());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  JobSpec spec = RegressionJob(600);
  ASSERT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec).ToString();
  ASSERT_TRUE(FitModelToData(&spec, data->train.example_shape(), data->num_classes).ok());
  EXPECT_EQ(spec.model.layers.back().units, 1);
  auto trainer = Trainer::Create(spec.model, spec.optimizer, data->train, data->num_classes,
                                 {.batch_size = 32,
                                  .task = Task::kRegression,
                                  .target_scale = {data->target_mean, data->target_std}});
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  const LossAndAccuracy before = *(*trainer)->Evaluate(data->test);
  for (int i = 0; i < 600; ++i) (*trainer)->Step();
  const LossAndAccuracy after = *(*trainer)->Evaluate(data->test);
  EXPECT_LT(after.loss, before.loss / 20);
  EXPECT_LT(after.rmse, 0.2);  // the target ranges over 2.5..28.5
  EXPECT_GT(after.r2, 0.99);
  EXPECT_LE(after.mae, after.rmse);
  // The metrics by hand from the model's outputs.
  Tensor images(data->test.images.shape());
  std::copy_n(data->test.images.data(), images.size(), images.data());
  const Tensor& outputs = (*trainer)->model().Forward(images, Mode::kEval);
  double sse = 0, sae = 0, mean = 0, sst = 0;
  for (float y : data->test.targets) mean += y;
  mean /= static_cast<double>(data->test.size());
  for (int64_t i = 0; i < data->test.size(); ++i) {
    const double e =
        double{data->target_mean + data->target_std * outputs[i]} - data->test.targets[i];
    sse += e * e;
    sae += std::abs(e);
    sst += (data->test.targets[i] - mean) * (data->test.targets[i] - mean);
  }
  const auto n = static_cast<double>(data->test.size());
  // (Within the float predictions' rounding: an error of 1e-3 on a target of 15.)
  EXPECT_NEAR(after.rmse, std::sqrt(sse / n), 1e-6);
  EXPECT_NEAR(after.mae, sae / n, 1e-6);
  EXPECT_NEAR(after.r2, 1 - sse / sst, 1e-6);
}

TEST(RegressionTrainingTest, TheJobReportsTheTasksMetricsAndItsModelPredictsInTheTargetsUnits) {
  auto data = ParseCsv(LinearTable(200), Source(LabelUse::kNumbers), NoValidation());
  ASSERT_TRUE(data.ok());
  JobSpec spec = RegressionJob(50);
  spec.dataset.label_column = "price";
  JobRunOptions o;
  o.checkpoint_dir = ::testing::TempDir() + "/regression_job";
  o.datasets = std::make_shared<Datasets>(*data);
  ModelInput recorded;
  o.on_model_input = [&](const ModelInput& in) {
    recorded = in;
    return Status::Ok();
  };
  auto r = RunJob(spec, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->final_values.count("test/accuracy"), 0u);
  for (const char* m : {"test/loss", "test/rmse", "test/mae", "test/r2"}) {
    EXPECT_EQ(r->final_values.count(m), 1u) << m;
  }
  EXPECT_EQ(recorded.task, Task::kRegression);
  EXPECT_EQ(recorded.num_classes, 1);
  EXPECT_EQ(recorded.class_names, std::vector<std::string>{"price"});
  EXPECT_EQ(recorded.target.mean, data->target_mean);
  EXPECT_EQ(recorded.target.std, data->target_std);
  EXPECT_TRUE(ValidateModelInput(recorded).ok());
}

TEST(RegressionSpecTest, ClassificationOnlyFieldsAndMetricsAreRefusedNamingTheField) {
  JobSpec spec = RegressionJob(10);
  spec.hooks.logging.tensors = {"global_step", "loss", "accuracy"};
  EXPECT_EQ(ValidateJobSpec(spec).message().rfind("hooks.logging.tensors[2]: fetch 'accuracy' is "
                                                  "unknown to a regression job",
                                                  0),
            0u)
      << ValidateJobSpec(spec).message();
  spec = RegressionJob(10);
  spec.hooks.early_stopping.enabled = true;
  spec.hooks.early_stopping.monitor = "validation/accuracy";
  EXPECT_EQ(ValidateJobSpec(spec).message().rfind("hooks.early_stopping.monitor:", 0), 0u);
  spec.hooks.early_stopping.monitor = "validation/rmse";
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec).ToString();
  spec = RegressionJob(10);
  spec.label_smoothing = 0.1f;
  EXPECT_EQ(ValidateJobSpec(spec).message().rfind("label_smoothing:", 0), 0u);
  spec = RegressionJob(10);
  spec.huber_delta = 0;
  EXPECT_EQ(ValidateJobSpec(spec).message().rfind("huber_delta:", 0), 0u);
  // A classifier has no rmse.
  JobSpec classifier = RegressionJob(10);
  classifier.task = Task::kClassification;
  classifier.hooks.logging.tensors = {"test/rmse"};
  EXPECT_EQ(ValidateJobSpec(classifier).message().rfind("hooks.logging.tensors[0]:", 0), 0u);
}

}  // namespace
}  // namespace trainingd::engine
