// ParseJobSpec and JobSpecToJson as a whole: defaults and presets, the design sketch, syntax
// errors, unknown fields, wrong types and out-of-range numbers, the canonical JSON and its round
// trips, and every example and documented spec. Each section field by field:
// job_spec_sections_test.cpp.
#include "trainingd/api/job_spec_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "job_spec_test_util.h"
#include "sanitized.h"

namespace trainingd::api {
namespace {

using engine::JobSpec;
using engine::Result;
using nlohmann::json;
using spec_test::ExpectSameSpec;
using spec_test::Fields;
using spec_test::MustFail;
using spec_test::MustParse;
using spec_test::Spec;

// The job spec of docs/design.md's sketch, verbatim.
constexpr const char* kDesignSketch = R"({
  "name": "cnn-fashion",
  "dataset": {"name": "fashion-mnist", "validation_size": 5000},
  "model": {"layers": [
    {"type": "conv2d", "filters": 32, "kernel": 5, "padding": "same", "activation": "relu"},
    {"type": "max_pool2d", "pool": 2, "stride": 2},
    {"type": "conv2d", "filters": 64, "kernel": 5, "padding": "same", "activation": "relu"},
    {"type": "max_pool2d", "pool": 2, "stride": 2},
    {"type": "flatten"},
    {"type": "dense", "units": 1024, "activation": "relu"},
    {"type": "dropout", "rate": 0.4},
    {"type": "dense", "units": 10}]},
  "optimizer": {"type": "adam", "learning_rate": 1e-4},
  "batch_size": 50,
  "max_steps": 20000,
  "seed": 42,
  "hooks": {
    "checkpoint": {"every_steps": 1000, "max_to_keep": 5},
    "summary": {"every_steps": 100},
    "logging": {"every_n_iter": 100, "tensors": ["loss", "accuracy"]},
    "nan_guard": {"fail": true},
    "evaluation": {"every_steps": 500, "split": "validation"},
    "final_eval": {"split": "test"}
  }
})";

TEST(JobSpecJsonTest, AbsentKeysTakeTheDefaultsOfJobSpec) {
  const JobSpec s = MustParse(Spec());
  JobSpec expected;
  expected.name = std::string("t");  // not a const char* assignment: GCC 12's -Wrestrict bug
  expected.model_preset = "softmax";
  expected.model = engine::PresetModel("softmax").value();
  expected.max_steps = 10;
  ExpectSameSpec(s, expected);
}

TEST(JobSpecJsonTest, PresetsExpandToTheirLayers) {
  for (const std::string preset : {"cnn", "mlp", "softmax"}) {
    const JobSpec by_name =
        MustParse(R"({"name": "t", "max_steps": 1, "model": ")" + preset + "\"}");
    const JobSpec by_object =
        MustParse(R"({"name": "t", "max_steps": 1, "model": {"preset": ")" + preset + "\"}}");
    EXPECT_EQ(by_name.model_preset, preset);
    const engine::ModelSpec expected = engine::PresetModel(preset).value();
    ASSERT_EQ(by_name.model.layers.size(), expected.layers.size()) << preset;
    for (size_t i = 0; i < expected.layers.size(); ++i) {
      EXPECT_EQ(Fields(by_name.model.layers[i]), Fields(expected.layers[i])) << preset << " " << i;
    }
    ExpectSameSpec(by_name, by_object);
  }
  const FieldError e = MustFail(R"({"name": "t", "max_steps": 1, "model": "vgg"})",
                                "model: unknown model preset 'vgg' (known: softmax, mlp, cnn, "
                                "resnet, resnet20, resnet32, resnet56)");
  EXPECT_EQ(e.field, "model");
  MustFail(R"({"name": "t", "max_steps": 1, "model": {"preset": "vgg"}})",
           "model.preset: unknown model preset 'vgg' (known: softmax, mlp, cnn, resnet, resnet20, "
           "resnet32, resnet56)");
  MustFail(R"({"name": "t", "max_steps": 1})",
           "model: required: a preset name (cnn, mlp, softmax) or {\"layers\": [...]}");
  MustFail(R"({"name": "t", "max_steps": 1, "model": {}})", "model: give \"preset\" or \"layers\"");
}

TEST(JobSpecJsonTest, TheDesignSketchParsesToWhatItSays) {
  const JobSpec s = MustParse(kDesignSketch);
  EXPECT_EQ(s.name, "cnn-fashion");
  EXPECT_EQ(s.dataset.name, "fashion-mnist");
  EXPECT_EQ(s.dataset.validation_size, 5000);  // the sketch gives it
  EXPECT_EQ(s.model_preset, "");
  // The sketch's layers are the CNN preset's.
  const engine::ModelSpec cnn = engine::PresetModel("cnn").value();
  ASSERT_EQ(s.model.layers.size(), cnn.layers.size());
  for (size_t i = 0; i < cnn.layers.size(); ++i) {
    EXPECT_EQ(Fields(s.model.layers[i]), Fields(cnn.layers[i])) << "layer " << i;
  }
  EXPECT_EQ(s.optimizer.type, engine::OptimizerOptions::Type::kAdam);
  EXPECT_EQ(s.optimizer.learning_rate.type, engine::LearningRateSchedule::Type::kConstant);
  EXPECT_EQ(s.optimizer.learning_rate.learning_rate, 1e-4f);
  EXPECT_EQ(s.batch_size, 50);
  EXPECT_EQ(s.max_steps, 20000);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(s.hooks.checkpoint.enabled);
  EXPECT_EQ(s.hooks.checkpoint.trigger.every_steps, 1000);
  EXPECT_EQ(s.hooks.checkpoint.max_to_keep, 5);
  EXPECT_EQ(s.hooks.summary.trigger.every_steps, 100);
  EXPECT_EQ(s.hooks.logging.every_n_iter, 100);
  EXPECT_EQ(s.hooks.logging.tensors, (std::vector<std::string>{"loss", "accuracy"}));
  EXPECT_TRUE(s.hooks.nan_guard.fail);
  EXPECT_TRUE(s.hooks.evaluation.enabled);
  EXPECT_EQ(s.hooks.evaluation.trigger.every_steps, 500);
  EXPECT_EQ(s.hooks.evaluation.split, "validation");
  EXPECT_TRUE(s.hooks.final_eval.enabled);
  EXPECT_EQ(s.hooks.final_eval.split, "test");
  EXPECT_FALSE(s.hooks.early_stopping.enabled);
  EXPECT_FALSE(s.hooks.profiler.enabled);
}

TEST(JobSpecJsonTest, SyntaxErrorsGiveTheByteAndTheFieldTheyAreIn) {
  FieldError e = MustFail(R"({"name": })",
                          "name: invalid JSON at byte 10: syntax error while parsing value - "
                          "unexpected '}'; expected '[', '{', or a literal");
  EXPECT_EQ(e.field, "name");
  e = MustFail("",
               "invalid JSON at byte 1: syntax error while parsing value - unexpected "
               "end of input; expected '[', '{', or a literal");
  EXPECT_EQ(e.field, "");
  // Trailing garbage and a comment are outside every member: no field.
  for (const std::string& bad : {Spec() + " x", "// c\n" + Spec()}) {
    FieldError err;
    const Result<JobSpec> r = ParseJobSpec(bad, &err);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message().rfind("invalid JSON at byte ", 0), 0u) << r.status().message();
    EXPECT_EQ(err.field, "");
  }
  // Invalid UTF-8 in a value, deep in the document: the error names where it is.
  e = MustFail(std::string("{\"name\": \"\xff\"}"),
               "name: invalid JSON at byte 11: syntax error while parsing value - invalid "
               "string: ill-formed UTF-8 byte; last read: '\"\xff'");
  EXPECT_EQ(e.field, "name");
  FieldError deep;
  ASSERT_FALSE(ParseJobSpec(R"({"model": {"layers": [{"type": "relu"}, {"type": "dense", )"
                            R"("units": 1e}]}})",
                            &deep)
                   .ok());
  EXPECT_EQ(deep.field, "model.layers[1].units") << deep.message;
  e = MustFail("[1, 2]", "a job spec must be a JSON object, got array");
  EXPECT_EQ(e.field, "");
  // The error out-parameter is optional.
  EXPECT_FALSE(ParseJobSpec("{", nullptr).ok());
}

TEST(JobSpecJsonTest, UnknownFieldsAreNamedByTheirFullPath) {
  FieldError e = MustFail(Spec(R"("hooks": {"checkpoint": {"every_step": 100}})"),
                          "hooks.checkpoint.every_step: unknown field; known: enabled, "
                          "every_steps, every_secs, max_to_keep, keep_checkpoint_every_n_hours, "
                          "keep_best");
  EXPECT_EQ(e.field, "hooks.checkpoint.every_step");
  e = MustFail(Spec(R"("batchsize": 7)"),
               "batchsize: unknown field; known: name, task, loss, huber_delta, dataset, model, "
               "precision, optimizer, label_smoothing, class_weights, decision_threshold, "
               "categorical, augmentation, batch_size, max_steps, num_epochs, seed, hooks, "
               "distributed, resources, priority");
  EXPECT_EQ(e.field, "batchsize");
  e = MustFail(Spec(R"("hooks": {"tensorboard": true})"),
               "hooks.tensorboard: unknown field; known: checkpoint, summary, step_counter, "
               "logging, nan_guard, evaluation, final_eval, early_stopping, profiler");
  // A key that is not an identifier is named in the message; the path stays splittable.
  e = MustFail(Spec(R"("dataset": {"a: b": 1})"),
               "dataset: unknown field 'a: b'; known: name, format, sha256, label_column, "
               "weight_column, test_file, test_fraction, split_seed, normalize, columns, "
               "validation_size, max_train_examples, max_test_examples, folds, fold, stratified");
  EXPECT_EQ(e.field, "dataset");
  // A field of another optimizer type is not silently ignored.
  e = MustFail(Spec(R"("optimizer": {"type": "adam", "momentum": 0.9})"),
               "optimizer.momentum: not used by optimizer type adam (which takes type, "
               "learning_rate, beta1, beta2, epsilon, weight_decay, weight_decay_parameters)");
  EXPECT_EQ(e.field, "optimizer.momentum");
}

TEST(JobSpecJsonTest, WrongTypesAreErrors) {
  FieldError e =
      MustFail(Spec(R"("batch_size": "50")"), "batch_size: must be an integer, got string");
  EXPECT_EQ(e.field, "batch_size");
  MustFail(Spec(R"("batch_size": 1.5)"), "batch_size: must be an integer, got 1.5");
  MustFail(Spec(R"("batch_size": null)"), "batch_size: must be an integer, got null");
  MustFail(R"({"name": 7, "model": "mlp", "max_steps": 1})", "name: must be a string, got integer");
  MustFail(Spec(R"("hooks": {"nan_guard": {"fail": "yes"}})"),
           "hooks.nan_guard.fail: must be a boolean, got string");
  MustFail(Spec(R"("hooks": {"checkpoint": 5})"),
           "hooks.checkpoint: must be an object or a boolean, got integer");
  MustFail(Spec(R"("hooks": {"logging": {"tensors": "loss"}})"),
           "hooks.logging.tensors: must be an array, got string");
  MustFail(Spec(R"("hooks": {"logging": {"tensors": ["loss", 3]}})"),
           "hooks.logging.tensors[1]: must be a string, got integer");
  MustFail(Spec(R"("optimizer": {"learning_rate": "fast"})"),
           "optimizer.learning_rate: must be a number or a schedule object, got string");
  MustFail(Spec(R"("optimizer": {"type": "adagrad"})"),
           "optimizer.type: must be one of adam, adamw, sgd, momentum; got 'adagrad'");
  MustFail(Spec(R"("dataset": 3)"), "dataset: must be a name or an object, got integer");
  MustFail(Spec(R"("hooks": [])"), "hooks: must be an object, got array");
  // An integral number written with an exponent or a fraction of zero is an integer.
  EXPECT_EQ(MustParse(Spec(R"("batch_size": 1e2)")).batch_size, 100);
  EXPECT_EQ(MustParse(Spec(R"("batch_size": 64.0)")).batch_size, 64);
  // Integers are numbers where numbers are wanted.
  EXPECT_EQ(MustParse(Spec(R"("hooks": {"checkpoint": {"every_secs": 60}})"))
                .hooks.checkpoint.trigger.every_secs,
            60.0);
}

TEST(JobSpecJsonTest, NumbersOutOfRangeAreErrors) {
  MustFail(Spec(R"("seed": -1)"), "seed: must be an integer in [0, 18446744073709551615], got -1");
  EXPECT_EQ(MustParse(Spec(R"("seed": 18446744073709551615)")).seed, 18446744073709551615u);
  MustFail(Spec(R"("max_steps": 9223372036854775808)"),
           "max_steps: must be an integer in [-9223372036854775808, 9223372036854775807], got "
           "9223372036854775808");
  MustFail(Spec(R"("hooks": {"checkpoint": {"max_to_keep": 3000000000}})"),
           "hooks.checkpoint.max_to_keep: must be an integer in [-2147483648, 2147483647], got "
           "3000000000");
  MustFail(Spec(R"("batch_size": 1e300)"),
           "batch_size: must be an integer in [-9223372036854775808, 9223372036854775807], got "
           "1e+300");
  MustFail(Spec(R"("optimizer": {"learning_rate": 1e39})"),
           "optimizer.learning_rate: must be a finite number within float range, got 1e+39");
  // A number beyond double range is a JSON error; infinity from a parsed document a field error.
  const FieldError overflow = MustFail(Spec(R"("hooks": {"summary": {"every_secs": 1e999}})"),
                                       "hooks.summary.every_secs: invalid JSON: number overflow "
                                       "parsing '1e999'");
  EXPECT_EQ(overflow.field, "hooks.summary.every_secs");
  json doc = json::parse(Spec());
  doc["hooks"]["summary"]["every_secs"] = std::numeric_limits<double>::infinity();
  FieldError inf;
  const Result<JobSpec> r = JobSpecFromJson(doc, &inf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "hooks.summary.every_secs: must be a finite number, got inf");
  EXPECT_EQ(inf.field, "hooks.summary.every_secs");
  // Semantic ranges come from engine::ValidateJobSpec, with the same format.
  FieldError e = MustFail(Spec(R"("batch_size": 0)"), "batch_size: must be >= 1, got 0");
  EXPECT_EQ(e.field, "batch_size");
  e = MustFail(Spec(R"("hooks": {"checkpoint": {"every_steps": 10, "every_secs": 60}})"),
               "hooks.checkpoint: give every_steps or every_secs, not both");
  EXPECT_EQ(e.field, "hooks.checkpoint");
  e = MustFail(Spec(R"("hooks": {"logging": {"tensors": ["loss", "los"]}})"),
               "hooks.logging.tensors[1]: fetch 'los' is unknown to a classification job; known: "
               "loss, accuracy, global_step, learning_rate, epoch, <split>/<metric> with split "
               "train, validation or test and metric one of loss, accuracy, precision_macro, "
               "recall_macro, f1_macro, auc, log_loss");
  EXPECT_EQ(e.field, "hooks.logging.tensors[1]");
  e = MustFail(Spec(R"("hooks": {"early_stopping": {"monitor": "validation/f1"}})"),
               "hooks.early_stopping.monitor: must be '<split>/<metric>' with split train, "
               "validation or test and a metric of a classification job, one of loss, accuracy, "
               "precision_macro, recall_macro, f1_macro, auc, log_loss; got 'validation/f1'");
  EXPECT_EQ(e.field, "hooks.early_stopping.monitor");
  e = MustFail(R"({"name": "../x", "model": "mlp", "max_steps": 1})",
               "name: must be 1-100 characters of [A-Za-z0-9._-], and not '.' or '..'; got '../x'");
  EXPECT_EQ(e.field, "name");
  e = MustFail(R"({"name": "x", "model": "mlp"})",
               "max_steps: the job would never end: give max_steps or num_epochs (or both) > 0");
  EXPECT_EQ(e.field, "max_steps");
  e = MustFail(Spec(R"("optimizer": {"type": "adam", "beta2": 1})"),
               "optimizer.beta2: must be in [0, 1), got 1");
  EXPECT_EQ(e.field, "optimizer.beta2");
}

TEST(JobSpecJsonTest, CanonicalJsonRoundTrips) {
  const std::vector<std::string> inputs = {
      Spec(),
      kDesignSketch,
      R"({"name": "m", "model": "mlp", "num_epochs": 3, "seed": 18446744073709551615})",
      Spec(R"("optimizer": {"type": "momentum", "momentum": 0.3, "use_nesterov": true,
              "learning_rate": {"type": "piecewise_constant", "boundaries": [100, 200],
                                "values": [0.3, 0.03, 0.003]}})"),
      Spec(R"("optimizer": {"type": "sgd", "learning_rate": {"type": "exponential_decay",
              "learning_rate": 0.7, "decay_steps": 7, "decay_rate": 0.33}})"),
      Spec(R"("dataset": {"name": "t", "format": "csv", "sha256":
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "columns": {"ignore":
              ["id", "name"], "missing_values": [], "impute": "median"}})"),
      Spec(R"("dataset": {"name": "mnist", "validation_size": 0, "max_train_examples": 17,
                          "max_test_examples": 3},
              "optimizer": {"beta1": 0.5, "beta2": 0.75, "epsilon": 1e-7, "learning_rate": 3e-5},
              "hooks": {"checkpoint": {"enabled": false, "every_secs": 0.1, "max_to_keep": 2,
                                       "keep_checkpoint_every_n_hours": 0.5},
                        "summary": false, "logging": {"every_n_secs": 2.5, "at_end": true,
                                                      "tensors": ["test/accuracy"]},
                        "nan_guard": {"fail": false}, "step_counter": {"every_steps": 0},
                        "evaluation": {"every_secs": 1e-3, "split": "train", "at_end": false},
                        "final_eval": {"enabled": false, "split": "validation"},
                        "early_stopping": {"monitor": "test/accuracy", "mode": "max",
                                           "patience": 9, "min_delta": 0.1, "every_steps": 3},
                        "profiler": {"every_steps": 11}})"),
      R"({"name": "c", "max_steps": 5, "model": {"preset": "cnn", "layers": [
          {"type": "conv2d", "filters": 3, "kernel": 3, "stride": 2, "padding": "same",
           "activation": "relu", "initializer": "truncated_normal", "stddev": 0.05,
           "bias_init": 0.1},
          {"type": "max_pool2d", "pool": 3}, {"type": "relu"}, {"type": "flatten"},
          {"type": "dropout", "rate": 0.123456789},
          {"type": "dense", "units": 10, "initializer": "truncated_normal", "stddev": 0.3}]}})",
      Spec(R"("distributed": {"workers": 3, "hosts": ["node-1:2", "10.0.0.7"],
                              "max_restarts": 0, "stall_timeout_secs": 12.5,
                              "reduction_blocks": 24})"),
      Spec(R"("distributed": {"workers": 2, "hostfile": "/etc/trainingd/hosts"})"),
      Spec(R"("resources": {"cpus_per_worker": 4, "time_limit_secs": 5400.5})"),
      Spec(R"("precision": "mixed_bfloat16")"),
      Spec(R"("optimizer": {"type": "adamw", "learning_rate": {"type": "cosine",
              "learning_rate": 0.003, "decay_steps": 900, "warmup_steps": 100, "alpha": 0.05}},
              "label_smoothing": 0.1)"),
      Spec(R"("optimizer": {"type": "momentum", "weight_decay": 5e-4,
              "weight_decay_parameters": "all", "learning_rate": {"type": "cosine",
              "learning_rate": 0.1, "decay_steps": 10}})"),
      Spec(R"("optimizer": {"type": "adamw", "weight_decay": 0})"),
  };
  for (const std::string& input : inputs) {
    const JobSpec first = MustParse(input);
    const std::string canonical = JobSpecToJson(first);
    const JobSpec second = MustParse(canonical);
    ExpectSameSpec(first, second);
    // Canonical text is a fixed point, compact or pretty.
    EXPECT_EQ(JobSpecToJson(second), canonical);
    ExpectSameSpec(MustParse(JobSpecToJson(first, 2)), first);
  }
}

TEST(JobSpecJsonTest, CanonicalJsonIsFullyExpanded) {
  const json j = JobSpecToJsonValue(MustParse(Spec()));
  EXPECT_EQ(j["model"]["preset"], "softmax");
  ASSERT_EQ(j["model"]["layers"].size(), 2u);
  EXPECT_EQ(j["model"]["layers"][1],
            json::parse(R"({"type": "dense", "units": 10, "activation": "none",
                            "initializer": "glorot_uniform", "stddev": 0.1, "bias_init": 0})"));
  // Floats are written as the shortest decimal that reads back the same.
  EXPECT_EQ(j["optimizer"].dump(),
            R"({"beta1":0.9,"beta2":0.999,"epsilon":1e-08,"learning_rate":0.001,"type":"adam",)"
            R"("weight_decay":0.0,"weight_decay_parameters":"kernels"})");
  EXPECT_EQ(j["hooks"]["checkpoint"],
            json::parse(R"({"enabled": true, "every_steps": 0, "every_secs": 0.0,
                            "max_to_keep": 5, "keep_checkpoint_every_n_hours": 0.0,
                            "keep_best": true})"));
  EXPECT_EQ(j["hooks"]["evaluation"]["enabled"], false);
  EXPECT_EQ(j["hooks"]["logging"]["tensors"],
            json::parse(R"(["global_step", "loss", "accuracy"])"));
  EXPECT_EQ(j["precision"], "float32");
  for (const char* key : {"name", "dataset", "model", "precision", "optimizer", "batch_size",
                          "max_steps", "num_epochs", "seed", "hooks"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(JobSpecJsonTest, EveryFloatRoundTrips) {
  // Programmatic specs, with floats no one would type.
  JobSpec s;
  s.name = "floats";
  s.model_preset = "cnn";
  s.model = engine::PresetModel("cnn").value();
  s.max_steps = 1;
  uint32_t bits = 0x3c23d70a;  // ~0.01f
  // 200 under the sanitizers, where a round trip takes 30 times as long.
  for (int i = 0; i < (test_support::kSanitized ? 200 : 2000); ++i) {
    bits = bits * 1664525u + 1013904223u;
    float f;
    const uint32_t positive = (bits & 0x3fffffffu) | 0x00800000u;  // normal, positive, < 2
    std::memcpy(&f, &positive, sizeof(f));
    s.optimizer.learning_rate = engine::LearningRateSchedule::Constant(f);
    s.model.layers[6].rate = f < 1.0f ? f : 0.5f;
    s.model.layers[7].bias_init = -f;
    s.hooks.early_stopping.min_delta = static_cast<double>(f) / 3.0;
    const JobSpec back = MustParse(JobSpecToJson(s));
    ASSERT_EQ(back.optimizer.learning_rate.learning_rate, f) << i;
    ASSERT_EQ(back.model.layers[6].rate, s.model.layers[6].rate) << i;
    ASSERT_EQ(back.model.layers[7].bias_init, -f) << i;
    ASSERT_EQ(back.hooks.early_stopping.min_delta, s.hooks.early_stopping.min_delta) << i;
  }
}

TEST(JobSpecJsonTest, StringsThatAreNotUtf8DoNotThrowWhenWritten) {
  JobSpec s = MustParse(Spec());
  s.hooks.final_eval.split = "\xff\xfe";
  std::string text;
  ASSERT_NO_THROW(text = JobSpecToJson(s));
  EXPECT_NE(text.find("\"split\":\"\xef\xbf\xbd\xef\xbf\xbd\""), std::string::npos) << text;
}

TEST(JobSpecJsonTest, EveryExampleParsesAndRoundTrips) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TRAININGD_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const JobSpec s = MustParse(text.str());
    ExpectSameSpec(MustParse(JobSpecToJson(s)), s);
    EXPECT_EQ(s.dataset.name, "fashion-mnist");
    EXPECT_TRUE(s.hooks.evaluation.enabled);
    EXPECT_TRUE(s.hooks.final_eval.enabled);
    EXPECT_EQ(s.hooks.final_eval.split, "test");
    ++count;
  }
  EXPECT_GE(count, 3);
  // The CNN example is the tutorial's: Adam 1e-4, batch 50, 20000 steps.
  std::ifstream in(std::string(TRAININGD_EXAMPLES_DIR) + "/cnn.json");
  std::stringstream text;
  text << in.rdbuf();
  const JobSpec cnn = MustParse(text.str());
  EXPECT_EQ(cnn.optimizer.learning_rate.learning_rate, 1e-4f);
  EXPECT_EQ(cnn.batch_size, 50);
  EXPECT_EQ(cnn.max_steps, 20000);
  EXPECT_EQ(cnn.hooks.checkpoint.trigger.every_steps, 1000);
  EXPECT_EQ(cnn.hooks.evaluation.trigger.every_steps, 1000);
}

TEST(JobSpecJsonTest, TheDocumentedExamplesParse) {
  std::ifstream in(std::string(TRAININGD_EXAMPLES_DIR) + "/../docs/job-spec.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  const JobSpec s = MustParse(doc.substr(begin + 8, end - begin - 8));
  EXPECT_TRUE(s.hooks.early_stopping.enabled);
  EXPECT_EQ(s.hooks.early_stopping.patience, 5);
  const JobSpec smallest = MustParse(R"({"name": "quick", "model": "softmax", "max_steps": 1000})");
  EXPECT_EQ(smallest.max_steps, 1000);
}

}  // namespace
}  // namespace trainingd::api
