// ParseJobSpec section by section: layers and graphs, the dataset, hooks, learning-rate
// schedules, weight decay, augmentation, distributed, precision, resources, priority and
// categorical encoding, each checked field by field with errors naming the field.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "job_spec_test_util.h"
#include "trainingd/api/job_spec_json.h"

namespace trainingd::api {
namespace {

using engine::JobSpec;
using nlohmann::json;
using spec_test::ExpectSameSpec;
using spec_test::Fields;
using spec_test::MustFail;
using spec_test::MustParse;
using spec_test::Spec;

TEST(JobSpecJsonTest, BadLayersAreNamedByIndex) {
  const std::string head = R"({"name": "t", "max_steps": 1, "model": {"layers": [
      {"type": "conv2d", "filters": 8, "kernel": 3},
      {"type": "max_pool2d"},
      {"type": "flatten"},)";
  const std::string tail = R"(, {"type": "dense", "units": 10}]}})";
  FieldError e = MustFail(head + R"({"type": "dense", "units": 0})" + tail,
                          "model.layers[3].units: must be in [1, 1048576], got 0");
  EXPECT_EQ(e.field, "model.layers[3].units");
  MustFail(head + R"({"type": "dense"})" + tail, "model.layers[3].units: required");
  MustFail(head + R"({"type": "dense", "units": 5, "filters": 3})" + tail,
           "model.layers[3].filters: unknown field; known: type, name, inputs, units, activation, "
           "initializer, stddev, bias_init");
  MustFail(head + R"({"type": "conv3d"})" + tail,
           "model.layers[3].type: must be one of conv2d, max_pool2d, dense, dropout, flatten, "
           "relu, add, concat, avg_pool2d, global_avg_pool, sigmoid, tanh, gelu, batch_norm, "
           "categorical_encoding; got "
           "'conv3d'");
  MustFail(head + R"({"units": 5})" + tail,
           "model.layers[3].type: required; one of conv2d, max_pool2d, dense, dropout, flatten, "
           "relu, add, concat, avg_pool2d, global_avg_pool, sigmoid, tanh, gelu, batch_norm, "
           "categorical_encoding");
  MustFail(head + R"({"type": "dropout", "rate": 1.0})" + tail,
           "model.layers[3].rate: must be in [0, 1), got 1");
  MustFail(head + R"({"type": "dense", "units": 5, "activation": "tanh"})" + tail,
           "model.layers[3].activation: must be one of relu, none; got 'tanh'");
  MustFail(head + R"("dense")" + tail, "model.layers[3]: must be an object, got string");
  MustFail(R"({"name": "t", "max_steps": 1, "model": {"layers": []}})",
           "model.layers: the model has no layers");

  // The defaults of the layer fields: conv2d valid/stride 1, max_pool2d stride = pool.
  const JobSpec s = MustParse(head + R"({"type": "relu"})" + tail);
  ASSERT_EQ(s.model.layers.size(), 5u);
  EXPECT_EQ(s.model.layers[0].padding, engine::Padding::kValid);
  EXPECT_EQ(s.model.layers[0].stride, 1);
  EXPECT_EQ(s.model.layers[0].activation, engine::Activation::kNone);
  EXPECT_EQ(s.model.layers[1].pool, 2);
  EXPECT_EQ(s.model.layers[1].stride, 0);
  EXPECT_EQ(s.model.layers[3].type, engine::LayerType::kRelu);
}

TEST(JobSpecJsonTest, DatasetMayBeABareName) {
  const JobSpec s = MustParse(Spec(R"("dataset": "mnist")"));
  EXPECT_EQ(s.dataset.name, "mnist");
  EXPECT_EQ(s.dataset.validation_size, engine::kAutoValidationSize);  // the dataset decides
  const JobSpec o = MustParse(
      Spec(R"("dataset": {"name": "mnist", "validation_size": 0, "max_train_examples": 1000})"));
  EXPECT_EQ(o.dataset.validation_size, 0);
  EXPECT_EQ(o.dataset.max_train_examples, 1000);
  FieldError e = MustFail(Spec(R"("dataset": "/etc")"),
                          "dataset.name: must be 1-100 characters of [A-Za-z0-9._-], and not '.' "
                          "or '..'; got '/etc'");
  EXPECT_EQ(e.field, "dataset.name");
}

// A CSV's column options (docs/data.md#columns): read strictly, written only where they differ
// from the defaults, so older canonical specs are unchanged.
TEST(JobSpecJsonTest, TheDatasetsColumnOptions) {
  const JobSpec s = MustParse(Spec(R"("dataset": {"name": "t", "columns": {"ignore": ["id"],
      "categorical": ["zip"], "missing_values": ["-"], "impute": "median", "max_levels": 50,
      "missing_indicator": ["*"], "hash_buckets": {"city": 64}}})"));
  EXPECT_EQ(s.dataset.columns.ignore, (std::vector<std::string>{"id"}));
  EXPECT_EQ(s.dataset.columns.categorical, (std::vector<std::string>{"zip"}));
  EXPECT_EQ(s.dataset.columns.missing_values, (std::vector<std::string>{"-"}));
  EXPECT_EQ(s.dataset.columns.impute, engine::Impute::kMedian);
  EXPECT_EQ(s.dataset.columns.max_levels, 50);
  EXPECT_EQ(s.dataset.columns.missing_indicator, (std::vector<std::string>{"*"}));
  EXPECT_EQ(s.dataset.columns.hash_buckets, (std::map<std::string, int64_t>{{"city", 64}}));
  MustFail(Spec(R"("dataset": {"name": "t", "columns": {"hash_buckets": {"city": 1}}})"),
           "dataset.columns.hash_buckets.city: must be an integer in [2, 1048576], got 1");
  MustFail(Spec(R"("dataset": {"name": "t", "columns": {"hash_buckets": ["city"]}})"),
           "dataset.columns.hash_buckets: must be an object of column: buckets, got array");
  MustFail(Spec(R"("dataset": {"name": "t", "columns": {"missing_indicator": true}})"),
           "dataset.columns.missing_indicator: must be an array, got boolean");
  EXPECT_EQ(MustFail(Spec(R"("dataset": {"name": "t", "columns": {"impute": "mode"}})"),
                     "dataset.columns.impute: must be mean or median, got 'mode'")
                .field,
            "dataset.columns.impute");
  MustFail(Spec(R"("dataset": {"name": "t", "columns": {"max_levels": 0}})"),
           "dataset.columns.max_levels: must be an integer in [1, 1000000], got 0");
  MustFail(Spec(R"("dataset": {"name": "t", "columns": {"ignore": "id"}})"),
           "dataset.columns.ignore: must be an array, got string");
  MustFail(Spec(R"("dataset": {"name": "t", "columns": {"drop": []}})"),
           "dataset.columns.drop: unknown field; known: categorical, number, ignore, "
           "missing_values, impute, max_levels, missing_indicator, hash_buckets");
}

TEST(JobSpecJsonTest, HooksMayBeGivenAsBooleans) {
  const JobSpec s = MustParse(Spec(
      R"("hooks": {"checkpoint": false, "summary": false, "step_counter": false, "logging": false,
                   "nan_guard": false, "evaluation": true, "final_eval": true,
                   "early_stopping": true, "profiler": true})"));
  EXPECT_FALSE(s.hooks.checkpoint.enabled);
  EXPECT_EQ(s.hooks.checkpoint.max_to_keep, 5);  // the other fields keep their defaults
  EXPECT_FALSE(s.hooks.summary.enabled);
  EXPECT_FALSE(s.hooks.step_counter.enabled);
  EXPECT_FALSE(s.hooks.logging.enabled);
  EXPECT_FALSE(s.hooks.nan_guard.enabled);
  EXPECT_TRUE(s.hooks.evaluation.enabled);
  EXPECT_TRUE(s.hooks.final_eval.enabled);
  EXPECT_TRUE(s.hooks.early_stopping.enabled);
  EXPECT_TRUE(s.hooks.profiler.enabled);

  // An object enables an off-by-default hook unless it says otherwise.
  const JobSpec o = MustParse(Spec(
      R"("hooks": {"evaluation": {"split": "test"},
                   "profiler": {"enabled": false, "every_steps": 5},
                   "early_stopping": {"monitor": "validation/accuracy", "mode": "max",
                                      "patience": 3, "min_delta": 0.001, "every_secs": 30}})"));
  EXPECT_TRUE(o.hooks.evaluation.enabled);
  EXPECT_EQ(o.hooks.evaluation.split, "test");
  EXPECT_FALSE(o.hooks.profiler.enabled);
  EXPECT_EQ(o.hooks.profiler.trigger.every_steps, 5);
  EXPECT_TRUE(o.hooks.early_stopping.enabled);
  EXPECT_EQ(o.hooks.early_stopping.monitor, "validation/accuracy");
  EXPECT_EQ(o.hooks.early_stopping.mode, "max");
  EXPECT_EQ(o.hooks.early_stopping.patience, 3);
  EXPECT_EQ(o.hooks.early_stopping.min_delta, 0.001);
  EXPECT_EQ(o.hooks.early_stopping.trigger.every_secs, 30.0);
  // Absent hooks keep their defaults.
  EXPECT_TRUE(o.hooks.checkpoint.enabled);
  EXPECT_FALSE(o.hooks.final_eval.enabled);

  // Without a mode, the monitored metric's direction: higher accuracy, F1, AUC; lower losses.
  for (const auto& [monitor, mode] :
       std::vector<std::pair<std::string, std::string>>{{"validation/accuracy", "max"},
                                                        {"validation/f1_macro", "max"},
                                                        {"test/auc", "max"},
                                                        {"validation/precision_macro", "max"},
                                                        {"validation/recall_macro", "max"},
                                                        {"validation/log_loss", "min"},
                                                        {"validation/loss", "min"}}) {
    const JobSpec m =
        MustParse(Spec(R"("hooks": {"early_stopping": {"monitor": ")" + monitor + R"("}})"));
    EXPECT_EQ(m.hooks.early_stopping.mode, mode) << monitor;
  }
  // A mode given wins.
  EXPECT_EQ(MustParse(Spec(R"("hooks": {"early_stopping": {"monitor": "validation/auc",
                                                          "mode": "min"}})"))
                .hooks.early_stopping.mode,
            "min");
}

TEST(JobSpecJsonTest, LearningRateSchedules) {
  const JobSpec e = MustParse(Spec(
      R"("optimizer": {"type": "sgd", "learning_rate": {"type": "exponential_decay",
          "learning_rate": 0.1, "decay_steps": 1000, "decay_rate": 0.96, "staircase": true}})"));
  EXPECT_EQ(e.optimizer.type, engine::OptimizerOptions::Type::kSgd);
  EXPECT_EQ(Fields(e.optimizer.learning_rate),
            Fields(engine::LearningRateSchedule::ExponentialDecay(0.1f, 1000, 0.96f, true)));
  const JobSpec p = MustParse(Spec(
      R"("optimizer": {"type": "momentum", "momentum": 0.95, "use_nesterov": true,
          "learning_rate": {"type": "piecewise_constant", "boundaries": [100, 200],
                            "values": [0.1, 0.01, 0.001]}})"));
  EXPECT_EQ(p.optimizer.momentum, 0.95f);
  EXPECT_TRUE(p.optimizer.use_nesterov);
  EXPECT_EQ(Fields(p.optimizer.learning_rate),
            Fields(engine::LearningRateSchedule::StepDecay({100, 200}, {0.1f, 0.01f, 0.001f})));

  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "exponential_decay",
                                                    "decay_rate": 0.5}})"),
           "optimizer.learning_rate.decay_steps: required");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "constant", "decay_steps": 5}})"),
           "optimizer.learning_rate.decay_steps: not used by schedule type constant (which takes "
           "type, learning_rate)");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "piecewise_constant",
                                                    "boundaries": [10], "values": [0.1, 0]}})"),
           "optimizer.learning_rate.values[1]: must be positive and finite, got 0");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "piecewise_constant",
                                                    "boundaries": [10, 1.5], "values": [1]}})"),
           "optimizer.learning_rate.boundaries[1]: must be an integer, got 1.5");
  MustFail(Spec(R"("optimizer": {"learning_rate": -1})"),
           "optimizer.learning_rate: must be positive and finite, got -1");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"learning_rate": 0}})"),
           "optimizer.learning_rate: must be positive and finite, got 0");
}

TEST(JobSpecJsonTest, WeightDecayCosineScheduleAndLabelSmoothing) {
  using Type = engine::OptimizerOptions::Type;
  using Decayed = engine::OptimizerOptions::DecayedParameters;
  const JobSpec a = MustParse(Spec(
      R"("optimizer": {"type": "adamw", "learning_rate": {"type": "cosine", "learning_rate": 0.01,
          "decay_steps": 1000, "warmup_steps": 50, "alpha": 0.1}}, "label_smoothing": 0.1)"));
  EXPECT_EQ(a.optimizer.type, Type::kAdamW);
  EXPECT_EQ(a.optimizer.weight_decay, 0.004f);  // Keras' AdamW default
  EXPECT_EQ(a.optimizer.weight_decay_parameters, Decayed::kKernels);
  EXPECT_EQ(Fields(a.optimizer.learning_rate),
            Fields(engine::LearningRateSchedule::CosineDecay(0.01f, 1000, 0.1f, 50)));
  EXPECT_EQ(a.label_smoothing, 0.1f);
  const JobSpec s = MustParse(Spec(R"("optimizer": {"type": "sgd", "weight_decay": 1e-4,
                                        "weight_decay_parameters": "all"})"));
  EXPECT_EQ(s.optimizer.weight_decay, 1e-4f);
  EXPECT_EQ(s.optimizer.weight_decay_parameters, Decayed::kAll);
  EXPECT_EQ(MustParse(Spec(R"("optimizer": {"type": "adam"})")).optimizer.weight_decay, 0.0f);
  // The canonical spec has them for every type, so an experiment's space may set them.
  const json plain = JobSpecToJsonValue(MustParse(Spec()));
  EXPECT_EQ(plain["label_smoothing"], 0.0);
  EXPECT_EQ(plain["optimizer"]["weight_decay"], 0.0);
  EXPECT_EQ(plain["optimizer"]["weight_decay_parameters"], "kernels");

  MustFail(Spec(R"("optimizer": {"type": "momentum", "weight_decay": -1})"),
           "optimizer.weight_decay: must be non-negative and finite, got -1");
  MustFail(Spec(R"("optimizer": {"weight_decay_parameters": "biases"})"),
           "optimizer.weight_decay_parameters: must be one of kernels, all; got 'biases'");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "cosine", "learning_rate": 0.1}})"),
           "optimizer.learning_rate.decay_steps: required");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "cosine", "learning_rate": 0.1,
                                                    "decay_steps": 10, "alpha": 2}})"),
           "optimizer.learning_rate.alpha: must be in [0, 1], got 2");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "cosine", "learning_rate": 0.1,
                                                    "decay_steps": 10, "warmup_steps": -5}})"),
           "optimizer.learning_rate.warmup_steps: must be >= 0, got -5");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "cosine", "decay_steps": 10,
                                                    "decay_rate": 0.5}})"),
           "optimizer.learning_rate.decay_rate: not used by schedule type cosine (which takes "
           "type, learning_rate, decay_steps, warmup_steps, alpha)");
  MustFail(Spec(R"("optimizer": {"learning_rate": {"type": "exponential_decay",
                   "decay_steps": 10, "decay_rate": 0.5, "warmup_steps": 3}})"),
           "optimizer.learning_rate.warmup_steps: not used by schedule type exponential_decay "
           "(which takes type, learning_rate, decay_steps, decay_rate, staircase)");
  MustFail(Spec(R"("label_smoothing": 1)"), "label_smoothing: must be in [0, 1), got 1");
  MustFail(Spec(R"("label_smoothing": -0.1)"), "label_smoothing: must be in [0, 1), got -0.1");
  MustFail(Spec(R"("label_smoothing": "0.1")"), "label_smoothing: must be a number, got string");
}

TEST(JobSpecJsonTest, AugmentationParsesRoundTripsAndIsCheckedFieldByField) {
  const JobSpec a = MustParse(Spec(
      R"("augmentation": {"random_crop": {"padding": 4}, "horizontal_flip": true,
                          "translate": 0.1, "brightness": 0.2, "contrast": 0.3})"));
  EXPECT_EQ(a.augmentation.random_crop_padding, 4);
  EXPECT_TRUE(a.augmentation.horizontal_flip);
  EXPECT_EQ(a.augmentation.translate, 0.1f);
  EXPECT_EQ(a.augmentation.brightness, 0.2f);
  EXPECT_EQ(a.augmentation.contrast, 0.3f);
  const json canonical = JobSpecToJsonValue(a);
  EXPECT_EQ(canonical["augmentation"]["random_crop"]["padding"], 4);
  EXPECT_EQ(MustParse(JobSpecToJson(a)).augmentation, a.augmentation);
  const JobSpec flip = MustParse(Spec(R"("augmentation": {"horizontal_flip": true})"));
  EXPECT_EQ(flip.augmentation.random_crop_padding, 0);
  EXPECT_FALSE(JobSpecToJsonValue(flip)["augmentation"].contains("random_crop"));
  EXPECT_EQ(MustParse(JobSpecToJson(flip)).augmentation, flip.augmentation);
  // Without one (or with every transform off), the canonical spec is what it always was.
  EXPECT_FALSE(JobSpecToJsonValue(MustParse(Spec())).contains("augmentation"));
  EXPECT_FALSE(
      JobSpecToJsonValue(MustParse(Spec(R"("augmentation": {})"))).contains("augmentation"));

  FieldError e = MustFail(Spec(R"("augmentation": {"random_crop": {"padding": 0}})"),
                          "augmentation.random_crop.padding: must be an integer in [1, 64], got 0");
  EXPECT_EQ(e.field, "augmentation.random_crop.padding");
  MustFail(Spec(R"("augmentation": {"random_crop": {"padding": 1000}})"),
           "augmentation.random_crop.padding: must be an integer in [1, 64], got 1000");
  MustFail(Spec(R"("augmentation": {"random_crop": {}})"),
           "augmentation.random_crop.padding: required");
  MustFail(Spec(R"("augmentation": {"random_crop": 4})"),
           "augmentation.random_crop: must be an object, got integer");
  MustFail(Spec(R"("augmentation": {"random_crop": {"padding": 4, "size": 20}})"),
           "augmentation.random_crop.size: unknown field; known: padding");
  e = MustFail(Spec(R"("augmentation": {"vertical_flip": true})"),
               "augmentation.vertical_flip: unknown field; known: random_crop, horizontal_flip, "
               "translate, brightness, contrast");
  EXPECT_EQ(e.field, "augmentation.vertical_flip");
  MustFail(Spec(R"("augmentation": {"horizontal_flip": 1})"),
           "augmentation.horizontal_flip: must be a boolean, got integer");
  e = MustFail(Spec(R"("augmentation": {"translate": 2})"),
               "augmentation.translate: must be a fraction of the height and width in [0, 0.5], "
               "got 2");
  EXPECT_EQ(e.field, "augmentation.translate");
  MustFail(Spec(R"("augmentation": {"brightness": -0.5})"),
           "augmentation.brightness: must be in [0, 1] (a fraction of the image's range), got "
           "-0.5");
  MustFail(Spec(R"("augmentation": {"contrast": 1e30})"),
           "augmentation.contrast: must be in [0, 1), got 1e+30");
  MustFail(Spec(R"("augmentation": true)"), "augmentation: must be an object, got boolean");
  // per_channel is the images' normalization, computed as the job loads its dataset.
  EXPECT_EQ(MustParse(Spec(R"("dataset": {"name": "fashion-mnist", "normalize": "per_channel"})"))
                .dataset.normalize,
            "per_channel");
  MustFail(Spec(R"("dataset": {"name": "fashion-mnist", "normalize": "zscore"})"),
           "dataset.normalize: must be none, standard (tables) or per_channel (images); got "
           "'zscore'");
}

// A residual block as the JSON of docs/job-spec.md#graph writes it.
constexpr const char* kResidualGraph = R"({"name": "g", "max_steps": 1, "model": {"layers": [
    {"type": "conv2d", "name": "stem", "filters": 8, "kernel": 3, "padding": "same"},
    {"type": "relu"},
    {"type": "conv2d", "name": "branch", "filters": 8, "kernel": 3, "padding": "same"},
    {"type": "add", "name": "sum", "inputs": ["stem", "branch"]},
    {"type": "concat", "inputs": ["sum", "input"]},
    {"type": "avg_pool2d", "pool": 2},
    {"type": "gelu"}, {"type": "sigmoid"}, {"type": "tanh"},
    {"type": "global_avg_pool"},
    {"type": "dense", "units": 10}]}})";

TEST(JobSpecJsonTest, GraphLayersParseAndRoundTrip) {
  const JobSpec s = MustParse(kResidualGraph);
  ASSERT_EQ(s.model.layers.size(), 11u);
  EXPECT_EQ(s.model.layers[0].name, "stem");
  EXPECT_TRUE(s.model.layers[1].name.empty());
  EXPECT_EQ(s.model.layers[3].inputs, (std::vector<std::string>{"stem", "branch"}));
  EXPECT_EQ(s.model.layers[4].type, engine::LayerType::kConcat);
  EXPECT_EQ(s.model.layers[5].type, engine::LayerType::kAvgPool2d);
  EXPECT_EQ(s.model.layers[5].stride, 0);
  EXPECT_EQ(s.model.layers[9].type, engine::LayerType::kGlobalAvgPool);
  const std::string canonical = JobSpecToJson(s);
  ExpectSameSpec(MustParse(canonical), s);
  const json layers = json::parse(canonical)["model"]["layers"];
  EXPECT_EQ(layers[3], json::parse(R"({"type": "add", "name": "sum",
                                       "inputs": ["stem", "branch"]})"));
  // A layer of a plain stack writes neither field: the canonical JSON of every existing spec
  // stays what it was.
  EXPECT_EQ(layers[1], json::parse(R"({"type": "relu"})"));
  EXPECT_FALSE(layers[6].contains("inputs"));
}

TEST(JobSpecJsonTest, BatchNormTakesKerasDefaultsAndRoundTrips) {
  const std::string head = R"({"name": "b", "max_steps": 1, "model": {"layers": [
      {"type": "conv2d", "filters": 8, "kernel": 3}, )";
  const std::string tail = R"(, {"type": "flatten"}, {"type": "dense", "units": 10}]}})";
  const JobSpec s = MustParse(head + R"({"type": "batch_norm"})" + tail);
  EXPECT_EQ(s.model.layers[1].type, engine::LayerType::kBatchNorm);
  EXPECT_EQ(s.model.layers[1].momentum, 0.99f);
  EXPECT_EQ(s.model.layers[1].epsilon, 1e-3f);
  const JobSpec t =
      MustParse(head + R"({"type": "batch_norm", "momentum": 0.9, "epsilon": 1e-5})" + tail);
  ExpectSameSpec(MustParse(JobSpecToJson(t)), t);
  EXPECT_EQ(json::parse(JobSpecToJson(t))["model"]["layers"][1],
            json::parse(R"({"type": "batch_norm", "momentum": 0.9, "epsilon": 1e-5})"));
  MustFail(head + R"({"type": "batch_norm", "momentum": 2})" + tail,
           "model.layers[1].momentum: must be in [0, 1], got 2");
  MustFail(head + R"({"type": "batch_norm", "units": 2})" + tail,
           "model.layers[1].units: unknown field; known: type, name, inputs, momentum, epsilon");
  MustFail(head + R"({"type": "batch_norm"})" + tail.substr(0, tail.size() - 1) +
               R"(, "batch_size": 1})",
           "batch_size: 1 is too small for model.layers[1] (batch_norm): it trains on the "
           "statistics of each batch, which one example does not have; use 2 or more");
}

TEST(JobSpecJsonTest, BadGraphsAreRefusedNamingTheField) {
  const auto with = [](const std::string& from, const std::string& to) {
    std::string s = kResidualGraph;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  // A later layer (a cycle), an unknown one, the layer itself.
  MustFail(with(R"(["stem", "branch"])", R"(["stem", "later"])"),
           "model.layers[3].inputs[1]: 'later' names no layer of the model (nor 'input')");
  MustFail(with(R"("name": "branch", )", R"("name": "branch", "inputs": ["sum"], )"),
           "model.layers[2].inputs[0]: 'sum' names model.layers[3], which comes later: a layer "
           "takes only earlier layers (no cycles)");
  MustFail(with(R"(["stem", "branch"])", R"(["sum", "branch"])"),
           "model.layers[3].inputs[0]: 'sum' is this layer itself: a layer takes only earlier "
           "layers (no cycles)");
  MustFail(with(R"(["stem", "branch"])", R"(["branch"])"),
           "model.layers[3].inputs: add takes two or more inputs, got 1");
  MustFail(with(R"({"type": "add", "name": "sum", )", R"({"type": "add", "name": "stem", )"),
           "model.layers[3].name: 'stem' is also the name of model.layers[0]");
  MustFail(with(R"(["stem", "branch"])", R"("stem")"),
           "model.layers[3].inputs: must be an array, got string");
  MustFail(with(R"({"type": "gelu"})", R"({"type": "gelu", "pool": 2})"),
           "model.layers[6].pool: unknown field; known: type, name, inputs");
}

TEST(JobSpecJsonTest, TheDistributedSectionIsCheckedFieldByField) {
  const JobSpec s = MustParse(Spec(R"("batch_size": 4, "distributed": {"workers": 4})"));
  EXPECT_EQ(s.distributed.workers, 4);
  EXPECT_EQ(s.distributed.max_restarts, 3);
  EXPECT_EQ(s.distributed.stall_timeout_secs, 60);
  EXPECT_EQ(s.distributed.reduction_blocks, 4);
  MustFail(Spec(R"("distributed": {"worker": 2})"),
           "distributed.worker: unknown field; known: workers, hosts, hostfile, max_restarts, "
           "stall_timeout_secs, reduction_blocks");
  MustFail(Spec(R"("distributed": {"workers": 0})"),
           "distributed.workers: must be in [1, 1024], got 0");
  MustFail(Spec(R"("batch_size": 2, "distributed": {"workers": 3})"),
           "batch_size: 2 is less than the 3 workers: each needs at least one example of every "
           "batch");
  EXPECT_EQ(MustFail(Spec(R"("distributed": {"workers": 2, "hosts": ["a", "b;rm -rf /"]})"),
                     "distributed.hosts[1]: must be a host name or address of [A-Za-z0-9.-], "
                     "optionally followed by ':<slots>'; got 'b;rm -rf /'")
                .field,
            "distributed.hosts[1]");
  MustFail(Spec(R"("distributed": {"hosts": ["-oProxyCommand=x"]})"),
           "distributed.hosts[0]: must be a host name or address of [A-Za-z0-9.-], optionally "
           "followed by ':<slots>'; got '-oProxyCommand=x'");
  MustFail(Spec(R"("distributed": {"hosts": ["a"], "hostfile": "/h"})"),
           "distributed.hostfile: give hosts or a hostfile, not both");
  MustFail(Spec(R"("distributed": {"hostfile": "hosts.txt"})"),
           "distributed.hostfile: must be an absolute path; got 'hosts.txt'");
  MustFail(Spec(R"("distributed": {"max_restarts": -1})"),
           "distributed.max_restarts: must be in [0, 100], got -1");
  MustFail(Spec(R"("distributed": {"stall_timeout_secs": 0.5})"),
           "distributed.stall_timeout_secs: must be in [1, 86400] seconds");
  MustFail(Spec(R"("distributed": {"reduction_blocks": 0})"),
           "distributed.reduction_blocks: must be in [1, 4096], got 0");
  MustFail(Spec(R"("distributed": {"reduction_blocks": 4097})"),
           "distributed.reduction_blocks: must be in [1, 4096], got 4097");
  MustFail(Spec(R"("batch_size": 100, "distributed": {"workers": 16})"),
           "distributed.reduction_blocks: 4 is less than the 16 workers: each trains on whole "
           "blocks of every batch, so it needs at least one; a multiple of the worker counts you "
           "use keeps their shares even");
  EXPECT_EQ(MustParse(Spec(R"("batch_size": 100,
                              "distributed": {"workers": 16, "reduction_blocks": 48})"))
                .distributed.reduction_blocks,
            48);
  MustFail(Spec(R"("distributed": {"workers": 2},
                   "hooks": {"evaluation": {"every_secs": 60}})"),
           "hooks.evaluation.every_secs: with 2 workers this hook evaluates on every rank "
           "together, so it must be triggered by steps, which all ranks count alike; use "
           "every_steps");
}

TEST(JobSpecJsonTest, ThePrecisionIsOneOfTensorFlowsPolicyNames) {
  EXPECT_EQ(MustParse(Spec()).precision, engine::Precision::kFloat32);
  EXPECT_EQ(MustParse(Spec(R"("precision": "float32")")).precision, engine::Precision::kFloat32);
  EXPECT_EQ(MustParse(Spec(R"("precision": "mixed_bfloat16")")).precision,
            engine::Precision::kMixedBfloat16);
  const FieldError e =
      MustFail(Spec(R"("precision": "mixed_float16")"),
               "precision: must be one of float32, mixed_bfloat16; got 'mixed_float16'");
  EXPECT_EQ(e.field, "precision");
  MustFail(Spec(R"("precision": 16)"), "precision: must be a string, got integer");
}

TEST(JobSpecJsonTest, TheResourcesSectionIsCheckedFieldByField) {
  const JobSpec none = MustParse(Spec(""));
  EXPECT_EQ(none.resources.cpus_per_worker, 0);
  EXPECT_EQ(none.resources.time_limit_secs, 0);
  const JobSpec s =
      MustParse(Spec(R"("resources": {"cpus_per_worker": 2, "time_limit_secs": 3600})"));
  EXPECT_EQ(s.resources.cpus_per_worker, 2);
  EXPECT_EQ(s.resources.time_limit_secs, 3600);
  MustFail(Spec(R"("resources": {"cpus": 2})"),
           "resources.cpus: unknown field; known: cpus_per_worker, time_limit_secs");
  MustFail(Spec(R"("resources": {"cpus_per_worker": -1})"),
           "resources.cpus_per_worker: must be in [0, 1024] (0: the daemon's default), got -1");
  MustFail(Spec(R"("resources": {"cpus_per_worker": 1025})"),
           "resources.cpus_per_worker: must be in [0, 1024] (0: the daemon's default), got 1025");
  MustFail(Spec(R"("resources": {"time_limit_secs": -5})"),
           "resources.time_limit_secs: must be in [0, 31536000] seconds (a year; 0: no limit)");
  MustFail(Spec(R"("resources": {"time_limit_secs": 1e300})"),
           "resources.time_limit_secs: must be in [0, 31536000] seconds (a year; 0: no limit)");
  MustFail(Spec(R"("resources": {"time_limit_secs": "1h"})"),
           "resources.time_limit_secs: must be a number, got string");
}

TEST(JobSpecJsonTest, PriorityIsAnIntegerInItsRangeWrittenOnlyWhenSet) {
  EXPECT_EQ(MustParse(Spec()).priority, 0);
  EXPECT_EQ(JobSpecToJsonValue(MustParse(Spec())).count("priority"), 0u);
  const JobSpec urgent = MustParse(Spec(R"("priority": 1000)"));
  EXPECT_EQ(urgent.priority, 1000);
  EXPECT_EQ(JobSpecToJsonValue(urgent)["priority"], 1000);
  EXPECT_EQ(MustParse(JobSpecToJson(urgent)).priority, 1000);  // round trip
  EXPECT_EQ(MustParse(Spec(R"("priority": -1000)")).priority, -1000);
  EXPECT_EQ(MustFail(Spec(R"("priority": 1001)"),
                     "priority: must be in [-1000, 1000] (higher starts first), got 1001")
                .field,
            "priority");
  EXPECT_EQ(MustFail(Spec(R"("priority": -5000)"),
                     "priority: must be in [-1000, 1000] (higher starts first), got -5000")
                .field,
            "priority");
  FieldError e;
  EXPECT_FALSE(ParseJobSpec(Spec(R"("priority": 2.5)"), &e).ok());
  EXPECT_EQ(e.field, "priority");
  EXPECT_FALSE(ParseJobSpec(Spec(R"("priority": "high")"), &e).ok());
  EXPECT_EQ(e.field, "priority");
}

TEST(JobSpecJsonTest, CategoricalEncodingOptionsAndTheLayerTheDataGives) {
  EXPECT_EQ(JobSpecToJsonValue(MustParse(Spec())).count("categorical"), 0u);
  const JobSpec s =
      MustParse(Spec(R"("categorical": {"one_hot_max_levels": 4, "embedding_dim": 8})"));
  EXPECT_EQ(s.categorical.one_hot_max_levels, 4);
  EXPECT_EQ(s.categorical.embedding_dim, 8);
  EXPECT_EQ(MustParse(JobSpecToJson(s)).categorical, s.categorical);  // round trip
  MustFail(Spec(R"("categorical": {"one_hot_max_levels": 5000})"),
           "categorical.one_hot_max_levels: must be in [0, 4096], got 5000");
  MustFail(Spec(R"("categorical": {"embedding_dim": -1})"),
           "categorical.embedding_dim: must be in [0, 1024], got -1");
  MustFail(Spec(R"("categorical": {"size": 3})"),
           "categorical.size: unknown field; known: one_hot_max_levels, embedding_dim");
  // The layer FitModelToData writes reads back from a canonical spec.
  const JobSpec fitted = MustParse(Spec(
      R"("model": {"layers": [{"type": "categorical_encoding", "category_codes": [5, 42],
                               "embedding_dims": [0, 13]}, {"type": "dense", "units": 3}]})"));
  EXPECT_EQ(fitted.model.layers[0].category_codes, (std::vector<int64_t>{5, 42}));
  EXPECT_EQ(fitted.model.layers[0].embedding_dims, (std::vector<int64_t>{0, 13}));
  EXPECT_EQ(MustParse(JobSpecToJson(fitted)).model, fitted.model);
  MustFail(Spec(R"("model": {"layers": [{"type": "categorical_encoding", "category_codes": [5],
                                         "embedding_dims": [0, 3]}]})"),
           "model.layers[0].embedding_dims: needs one value per category_codes value");
  MustFail(Spec(R"("model": {"layers": [{"type": "categorical_encoding", "category_codes": [1],
                                         "embedding_dims": [0]}]})"),
           "model.layers[0].category_codes[0]: must be in [2, 1000002], got 1");
}

}  // namespace
}  // namespace trainingd::api
