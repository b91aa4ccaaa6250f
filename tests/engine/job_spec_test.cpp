#include "trainingd/engine/job/job_spec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

#include "test_util.h"

namespace trainingd::engine {
namespace {

using testing::FailsNaming;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A valid spec: the CNN preset for 100 steps, every other field at its default.
JobSpec ValidSpec() {
  JobSpec s;
  s.name = "cnn-fashion";
  s.model_preset = "cnn";
  s.model = PresetModel("cnn").value();
  s.max_steps = 100;
  return s;
}

// Succeeds when `status` is InvalidArgument with exactly `message`.
::testing::AssertionResult FailsWith(const Status& status, const std::string& message) {
  if (status.ok()) return ::testing::AssertionFailure() << "expected: " << message;
  if (status.code() != StatusCode::kInvalidArgument || status.message() != message) {
    return ::testing::AssertionFailure() << "got " << status.ToString() << "\nexpected " << message;
  }
  return ::testing::AssertionSuccess();
}

TEST(JobSpecTest, ValidSpecAndDefaultsPass) {
  EXPECT_TRUE(ValidateJobSpec(ValidSpec()).ok()) << ValidateJobSpec(ValidSpec()).ToString();
  // Every preset, and a job bounded by epochs only.
  for (const std::string& preset : PresetModelNames()) {
    JobSpec s = ValidSpec();
    s.model_preset = preset;
    s.model = PresetModel(preset).value();
    s.max_steps = 0;
    s.num_epochs = 3;
    EXPECT_TRUE(ValidateJobSpec(s).ok()) << preset << ": " << ValidateJobSpec(s).ToString();
  }
}

TEST(JobSpecTest, IsSafeNameAcceptsOnlySinglePathComponents) {
  for (const std::string ok : {"a", "fashion-mnist", "MNIST_v1.2", "...", "a..b", "-x"}) {
    EXPECT_TRUE(IsSafeName(ok)) << ok;
  }
  EXPECT_TRUE(IsSafeName(std::string(100, 'x')));
  for (const std::string& bad : std::initializer_list<std::string>{
           "", ".", "..", "a/b", "../etc", "/abs", "a b", "a\\b", "caf\xc3\xa9", {"a\0b", 3}}) {
    EXPECT_FALSE(IsSafeName(bad)) << bad;
  }
  EXPECT_FALSE(IsSafeName(std::string(101, 'x')));
}

TEST(JobSpecTest, NamesMustBeSafe) {
  JobSpec s = ValidSpec();
  s.name = "";
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "name: must be 1-100 characters of [A-Za-z0-9._-], and not '.' or '..'; "
                        "got ''"));
  s = ValidSpec();
  s.dataset.name = "../../etc";
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "dataset.name: must be 1-100 characters"));
  // A long name is echoed cut short.
  s.dataset.name = std::string(500, '/');
  EXPECT_LT(ValidateJobSpec(s).message().size(), 200u);
}

TEST(JobSpecTest, DatasetSizesMustBeNonNegative) {
  JobSpec s = ValidSpec();
  s.dataset.validation_size = -2;  // -1 is kAutoValidationSize
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "dataset.validation_size: must be >= 0, got -2"));
  s = ValidSpec();
  s.dataset.max_train_examples = -5;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "dataset.max_train_examples: must be >= 0"));
  s = ValidSpec();
  s.dataset.max_test_examples = -5;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "dataset.max_test_examples: must be >= 0"));
}

TEST(JobSpecTest, BatchSizeAndStopConditions) {
  JobSpec s = ValidSpec();
  s.batch_size = 0;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "batch_size: must be >= 1, got 0"));
  s = ValidSpec();
  s.max_steps = -1;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "max_steps: must be >= 0, got -1"));
  s = ValidSpec();
  s.num_epochs = -2;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "num_epochs: must be >= 0, got -2"));
  s = ValidSpec();
  s.max_steps = 0;
  s.num_epochs = 0;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "max_steps: the job would never end"));
}

TEST(JobSpecTest, ModelLayersAreCheckedOneByOne) {
  JobSpec s = ValidSpec();
  s.model.layers.clear();
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "model.layers: the model has no layers"));

  s = ValidSpec();
  s.model.layers[2].filters = 0;  // conv2d
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s), "model.layers[2].filters: must be in [1, 65536], got 0"));
  s = ValidSpec();
  s.model.layers[0].kernel = 65;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[0].kernel: must be in [1, 64]"));
  s = ValidSpec();
  s.model.layers[0].stride = 0;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[0].stride: must be in [1, 64]"));
  s = ValidSpec();
  s.model.layers[1].pool = 0;  // max_pool2d
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[1].pool: must be in [1, 64]"));
  s = ValidSpec();
  s.model.layers[1].stride = 0;  // max_pool2d: 0 = the pool size
  EXPECT_TRUE(ValidateJobSpec(s).ok());
  s.model.layers[1].stride = -1;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[1].stride: must be in [0, 64]"));
  s = ValidSpec();
  s.model.layers[5].units = 0;  // dense
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s), "model.layers[5].units: must be in [1, 1048576], got 0"));
  s = ValidSpec();
  s.model.layers[6].rate = 1.0f;  // dropout
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "model.layers[6].rate: must be in [0, 1), got 1"));
  s.model.layers[6].rate = std::nanf("");
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[6].rate: must be in [0, 1)"));
  s = ValidSpec();
  s.model.layers[7].stddev = 0.0f;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[7].stddev: must be positive"));
  s = ValidSpec();
  s.model.layers[7].bias_init = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "model.layers[7].bias_init: must be finite, got inf"));
  s = ValidSpec();
  s.model_preset = "vgg";
  EXPECT_TRUE(FailsWith(
      ValidateJobSpec(s),
      "model.preset: unknown model preset 'vgg' " +
          std::string("(known: softmax, mlp, cnn, resnet, resnet20, resnet32, resnet56)")));
}

// A batch norm trains on the statistics of each batch, which one example does not have; a
// graph's names and edges are checked here too, before any data is read.
TEST(JobSpecTest, BatchNormNeedsBatchesOfTwoAndGraphsAreChecked) {
  JobSpec s = ValidSpec();
  s.model.layers.insert(s.model.layers.begin() + 1, LayerSpec::BatchNorm());
  EXPECT_TRUE(ValidateJobSpec(s).ok()) << ValidateJobSpec(s).ToString();
  s.batch_size = 1;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "batch_size: 1 is too small for model.layers[1] (batch_norm): it trains "
                        "on the statistics of each batch, which one example does not have; use 2 "
                        "or more"));
  s.batch_size = 2;
  s.model.layers[1].momentum = 1.5f;
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s), "model.layers[1].momentum: must be in [0, 1], got 1.5"));
  s.model.layers[1].momentum = 0.9f;
  s.model.layers[1].epsilon = -1.0f;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[1].epsilon: must be positive"));
  s = ValidSpec();
  s.model.layers[2].inputs = {"later"};
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "model.layers[2].inputs[0]: 'later' names no layer"));
}

TEST(JobSpecTest, OptimizerErrorsArePrefixedWithTheirPath) {
  JobSpec s = ValidSpec();
  s.optimizer.beta1 = 1.0f;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "optimizer.beta1: must be in [0, 1), got 1"));
  s = ValidSpec();
  s.optimizer.epsilon = 0;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "optimizer.epsilon: must be positive and finite"));
  s = ValidSpec();
  s.optimizer.type = OptimizerOptions::Type::kMomentum;
  s.optimizer.momentum = -0.5f;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "optimizer.momentum: must be non-negative"));
  // A constant rate is the number at optimizer.learning_rate itself.
  s = ValidSpec();
  s.optimizer.learning_rate = LearningRateSchedule::Constant(0);
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s), "optimizer.learning_rate: must be positive and finite, got 0"));
  s.optimizer.learning_rate = LearningRateSchedule::Constant(std::nanf(""));
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "optimizer.learning_rate: must be positive"));
  // A schedule's fields sit inside the schedule object.
  s.optimizer.learning_rate = LearningRateSchedule::ExponentialDecay(0.1f, 0, 0.5f);
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "optimizer.learning_rate.decay_steps: must be positive, got 0"));
  s.optimizer.learning_rate = LearningRateSchedule::ExponentialDecay(-0.1f, 10, 0.5f);
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "optimizer.learning_rate.learning_rate: "));
  s.optimizer.learning_rate = LearningRateSchedule::StepDecay({10, 5}, {0.1f, 0.01f, 0.001f});
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s),
                          "optimizer.learning_rate.boundaries: must be strictly increasing"));
  s.optimizer.learning_rate = LearningRateSchedule::StepDecay({10}, {0.1f, 0.0f});
  EXPECT_TRUE(
      FailsNaming(ValidateJobSpec(s), "optimizer.learning_rate.values[1]: must be positive"));
}

TEST(JobSpecTest, TriggersAreNonNegativeFiniteAndNotBoth) {
  JobSpec s = ValidSpec();
  s.hooks.checkpoint.trigger = {.every_steps = 100, .every_secs = 60};
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s), "hooks.checkpoint: give every_steps or every_secs, not both"));
  s = ValidSpec();
  s.hooks.summary.trigger.every_steps = -1;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "hooks.summary.every_steps: must be >= 0, got -1"));
  s = ValidSpec();
  s.hooks.evaluation.trigger.every_secs = kNaN;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "hooks.evaluation.every_secs: must be a finite number >= 0, got nan"));
  s = ValidSpec();
  s.hooks.early_stopping.trigger.every_secs = kInf;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.early_stopping.every_secs: "));
  s = ValidSpec();
  s.hooks.profiler.trigger = {.every_steps = 1, .every_secs = 1};
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.profiler: give every_steps or every_secs"));
  // Disabled hooks are checked too: their values are still part of the spec.
  s.hooks.profiler.enabled = false;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.profiler: "));
}

TEST(JobSpecTest, CheckpointStepCounterAndLoggingFields) {
  JobSpec s = ValidSpec();
  s.hooks.checkpoint.max_to_keep = 0;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "hooks.checkpoint.max_to_keep: must be >= 1, got 0"));
  s = ValidSpec();
  s.hooks.checkpoint.keep_checkpoint_every_n_hours = -1;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.checkpoint.keep_checkpoint_every_n_hours: "));
  s = ValidSpec();
  s.hooks.step_counter.every_steps = -1;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.step_counter.every_steps: must be >= 0"));
  s = ValidSpec();
  s.hooks.logging.every_n_iter = 10;
  s.hooks.logging.every_n_secs = 5;
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s), "hooks.logging: give every_n_iter or every_n_secs, not both"));
  s = ValidSpec();
  s.hooks.logging.every_n_secs = -kInf;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.logging.every_n_secs: "));
}

TEST(JobSpecTest, LoggingTensorsAreKnownFetches) {
  JobSpec s = ValidSpec();
  s.hooks.logging.tensors = {"loss", "los"};
  const Status st = ValidateJobSpec(s);
  EXPECT_TRUE(FailsNaming(st, "hooks.logging.tensors[1]: fetch 'los' is unknown"));
  s.hooks.logging.tensors = {"loss", "validation/accuracy", "epoch", "learning_rate"};
  EXPECT_TRUE(ValidateJobSpec(s).ok()) << ValidateJobSpec(s).ToString();
  s.hooks.logging.tensors = {"loss", "epoch", "loss"};
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "hooks.logging.tensors[2]: 'loss' is listed twice"));
  s.hooks.logging.tensors = {};
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.logging.tensors: must name at least one"));
  s.hooks.logging.enabled = false;
  EXPECT_TRUE(ValidateJobSpec(s).ok());
}

TEST(JobSpecTest, SplitsAndEarlyStopping) {
  JobSpec s = ValidSpec();
  s.hooks.evaluation.split = "dev";
  EXPECT_TRUE(
      FailsWith(ValidateJobSpec(s),
                "hooks.evaluation.split: must be one of train, validation, test; got 'dev'"));
  s = ValidSpec();
  s.hooks.final_eval.split = "";
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.final_eval.split: must be one of"));

  for (const std::string ok :
       {"validation/loss", "train/accuracy", "test/loss", "validation/auc", "test/f1_macro",
        "validation/precision_macro", "validation/recall_macro", "train/log_loss"}) {
    s = ValidSpec();
    s.hooks.early_stopping.monitor = ok;
    EXPECT_TRUE(ValidateJobSpec(s).ok()) << ok;
  }
  for (const std::string bad :
       {"loss", "validation/", "dev/loss", "validation/f1", "/loss", "validation/rmse"}) {
    s = ValidSpec();
    s.hooks.early_stopping.monitor = bad;
    EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.early_stopping.monitor: must be")) << bad;
  }
  // The message lists the known metrics.
  s = ValidSpec();
  s.hooks.early_stopping.monitor = "validation/f1";
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "hooks.early_stopping.monitor: must be '<split>/<metric>' with split "
                        "train, validation or test and a metric of a classification job, one of "
                        "loss, accuracy, precision_macro, recall_macro, f1_macro, auc, log_loss; "
                        "got "
                        "'validation/f1'"));
  s = ValidSpec();
  s.hooks.early_stopping.mode = "auto";
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "hooks.early_stopping.mode: must be 'min' or 'max', got 'auto'"));
  s = ValidSpec();
  s.hooks.early_stopping.patience = 0;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s), "hooks.early_stopping.patience: must be >= 1, got 0"));
  s = ValidSpec();
  s.hooks.early_stopping.min_delta = -0.1;
  EXPECT_TRUE(FailsWith(ValidateJobSpec(s),
                        "hooks.early_stopping.min_delta: must be a finite number >= 0, got -0.1"));
}

TEST(JobSpecTest, TheFirstBadFieldInDocumentOrderIsReported) {
  JobSpec s = ValidSpec();
  s.hooks.checkpoint.max_to_keep = 0;
  s.batch_size = 0;
  s.name = "a/b";
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "name: "));
  s.name = "ok";
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "batch_size: "));
}

TEST(JobSpecTest, NoHookMayUseAnEmptyValidationSplit) {
  JobSpec s = ValidSpec();
  s.dataset.validation_size = 0;
  EXPECT_TRUE(ValidateJobSpec(s).ok()) << ValidateJobSpec(s).ToString();  // nothing uses it
  s.hooks.evaluation.enabled = true;
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.evaluation.split: uses the validation split"));
  s.hooks.evaluation.split = "test";
  EXPECT_TRUE(ValidateJobSpec(s).ok());
  s.hooks.early_stopping.enabled = true;  // monitors validation/loss by default
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.early_stopping.monitor: uses"));
  s.hooks.early_stopping.enabled = false;
  s.hooks.logging.tensors = {"loss", "validation/accuracy"};
  EXPECT_TRUE(FailsNaming(ValidateJobSpec(s), "hooks.logging.tensors[1]: uses"));
}

}  // namespace
}  // namespace trainingd::engine
