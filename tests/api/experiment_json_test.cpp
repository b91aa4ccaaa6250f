// The experiment spec's JSON: good specs and their defaults, each refusal naming its field, the
// canonical form read back equal; a trial's job spec (paths into nested arrays, categorical
// objects, a changed optimizer type, name, seed and max_steps); the answers read back by the
// client's readers.
#include "trainingd/api/experiment_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "sanitized.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/job_spec_json.h"

namespace trainingd::api {
namespace {

using nlohmann::json;

// The brief's example: the tutorial CNN, evaluated on the validation split.
json FullSpec() {
  return json::parse(R"({
    "name": "lr-search",
    "base_job": {"name": "base", "model": "cnn", "max_steps": 1600,
                 "hooks": {"evaluation": {"every_steps": 100, "split": "validation"}}},
    "space": {"optimizer.learning_rate": {"type": "log", "min": 1e-4, "max": 1e-2, "count": 3},
              "batch_size": {"type": "int", "min": 32, "max": 128},
              "model.layers[6].rate": {"type": "double", "min": 0.1, "max": 0.6},
              "optimizer.type": {"type": "categorical", "values": ["adam", "momentum"]}},
    "searcher": {"name": "asha", "metric": "validation/accuracy", "mode": "max", "max_trials": 16,
                 "max_concurrent_trials": 1, "min_steps": 100, "max_steps": 1600,
                 "reduction_factor": 4, "seed": 7},
    "budget": {"max_steps": 0, "max_seconds": 0},
    "stop_when": 0.92,
    "max_trial_restarts": 1,
    "keep_best": 1})");
}

// The smallest spec the asha searcher takes.
json MinimalSpec() {
  return json::parse(R"({
    "name": "s",
    "base_job": {"name": "b", "model": "softmax", "max_steps": 6400,
                 "hooks": {"evaluation": true}},
    "space": {"optimizer.learning_rate": {"type": "log", "min": 1e-4, "max": 1e-1}}})");
}

engine::Result<ExperimentSpec> Parse(const json& doc, FieldError* error = nullptr) {
  return ParseExperimentSpec(doc.dump(), error);
}

TEST(ExperimentSpecJsonTest, ReadsTheFullSpec) {
  auto spec = Parse(FullSpec());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "lr-search");
  EXPECT_EQ(spec->base_job.model.layers.size(), 8u);
  EXPECT_EQ(spec->base_job_json, JobSpecToJson(spec->base_job));
  ASSERT_EQ(spec->space.size(), 4u);
  // In the byte order of the paths.
  EXPECT_EQ(spec->space[0].path, "batch_size");
  EXPECT_EQ(spec->space[0].type, ParamType::kInt);
  EXPECT_EQ(spec->space[0].min, 32);
  EXPECT_EQ(spec->space[0].max, 128);
  EXPECT_EQ(spec->space[1].path, "model.layers[6].rate");
  EXPECT_EQ(spec->space[1].type, ParamType::kDouble);
  EXPECT_EQ(spec->space[2].path, "optimizer.learning_rate");
  EXPECT_EQ(spec->space[2].type, ParamType::kLog);
  EXPECT_EQ(spec->space[2].min, 1e-4);
  EXPECT_EQ(spec->space[2].count, 3);
  EXPECT_EQ(spec->space[3].type, ParamType::kCategorical);
  EXPECT_EQ(spec->space[3].values, (std::vector<std::string>{"\"adam\"", "\"momentum\""}));
  const SearcherSpec& s = spec->searcher;
  EXPECT_EQ(s.name, SearcherSpec::Name::kAsha);
  EXPECT_EQ(s.metric, "validation/accuracy");
  EXPECT_TRUE(s.maximize);
  EXPECT_EQ(s.max_trials, 16);
  EXPECT_EQ(s.max_concurrent_trials, 1);
  EXPECT_EQ(s.min_steps, 100);
  EXPECT_EQ(s.max_steps, 1600);
  EXPECT_EQ(s.reduction_factor, 4);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(spec->budget_max_steps, 0);
  EXPECT_EQ(spec->budget_max_seconds, 0);
  ASSERT_TRUE(spec->stop_when.has_value());
  EXPECT_EQ(*spec->stop_when, 0.92);
  EXPECT_EQ(spec->max_trial_restarts, 1);
  EXPECT_EQ(spec->keep_best, 1);
}

TEST(ExperimentSpecJsonTest, FillsTheDefaults) {
  auto spec = Parse(MinimalSpec());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const SearcherSpec& s = spec->searcher;
  EXPECT_EQ(s.name, SearcherSpec::Name::kAsha);
  EXPECT_EQ(s.metric, "validation/accuracy");
  EXPECT_TRUE(s.maximize);
  EXPECT_EQ(s.max_trials, 16);
  EXPECT_EQ(s.max_concurrent_trials, 1);
  EXPECT_EQ(s.max_steps, 6400);  // the base job's
  EXPECT_EQ(s.min_steps, 100);   // 6400 / 4^3
  EXPECT_EQ(s.seed, 0u);
  EXPECT_FALSE(spec->stop_when.has_value());
  EXPECT_EQ(spec->max_trial_restarts, 1);
  EXPECT_EQ(spec->keep_best, 1);

  json tiny = MinimalSpec();
  tiny["base_job"]["max_steps"] = 10;  // 10 / 64 = 0: at least 1
  spec = Parse(tiny);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->searcher.min_steps, 1);

  json grid = MinimalSpec();
  grid["searcher"] = {{"name", "grid"}, {"mode", "min"}, {"metric", "validation/loss"}};
  grid.erase("space");  // a grid without a space: the base job once
  spec = Parse(grid);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->searcher.name, SearcherSpec::Name::kGrid);
  EXPECT_FALSE(spec->searcher.maximize);
  EXPECT_EQ(spec->searcher.min_steps, 0);
  EXPECT_TRUE(spec->space.empty());

  json test_metric = MinimalSpec();
  test_metric["base_job"]["hooks"] = {{"final_eval", true}};
  test_metric["searcher"] = {{"metric", "test/loss"}, {"mode", "min"}};
  EXPECT_TRUE(Parse(test_metric).ok());

  // Every classification metric ranks trials; without a mode, in its own direction.
  for (const auto& [metric, maximize] :
       std::vector<std::pair<std::string, bool>>{{"test/f1_macro", true},
                                                 {"test/auc", true},
                                                 {"test/precision_macro", true},
                                                 {"test/recall_macro", true},
                                                 {"test/log_loss", false},
                                                 {"test/loss", false},
                                                 {"test/accuracy", true}}) {
    json m = MinimalSpec();
    m["base_job"]["hooks"] = {{"final_eval", true}};
    m["searcher"] = {{"metric", metric}};
    spec = Parse(m);
    ASSERT_TRUE(spec.ok()) << metric << ": " << spec.status().ToString();
    EXPECT_EQ(spec->searcher.maximize, maximize) << metric;
  }
}

TEST(ExperimentSpecJsonTest, CanonicalFormReadsBackEqual) {
  for (const json& doc : {FullSpec(), MinimalSpec()}) {
    auto spec = Parse(doc);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    const json canonical = ExperimentSpecToJson(*spec);
    EXPECT_TRUE(canonical["base_job"]["model"]["layers"].is_array());
    auto again = ExperimentSpecFromJson(canonical);
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << canonical.dump();
    EXPECT_EQ(ExperimentSpecToJson(*again), canonical);
    EXPECT_EQ(again->base_job_json, spec->base_job_json);
    ASSERT_EQ(again->space.size(), spec->space.size());
    for (size_t i = 0; i < spec->space.size(); ++i) {
      EXPECT_EQ(again->space[i].path, spec->space[i].path);
      EXPECT_EQ(again->space[i].type, spec->space[i].type);
      EXPECT_EQ(again->space[i].min, spec->space[i].min);
      EXPECT_EQ(again->space[i].max, spec->space[i].max);
      EXPECT_EQ(again->space[i].values, spec->space[i].values);
      EXPECT_EQ(again->space[i].count, spec->space[i].count);
    }
    EXPECT_EQ(again->searcher.min_steps, spec->searcher.min_steps);
    EXPECT_EQ(again->stop_when, spec->stop_when);
  }
  // Categorical values of any JSON type come back as they were.
  json doc = MinimalSpec();
  doc["space"]["optimizer.learning_rate"] = {
      {"type", "categorical"},
      {"values", json::array({0.5, json::object({{"type", "exponential_decay"},
                                                 {"learning_rate", 0.1},
                                                 {"decay_steps", 100},
                                                 {"decay_rate", 0.5}})})}};
  auto spec = Parse(doc);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(ExperimentSpecToJson(*spec)["space"]["optimizer.learning_rate"]["values"],
            doc["space"]["optimizer.learning_rate"]["values"]);
}

TEST(ExperimentSpecJsonTest, BracketsAreAshasAndEachGetsATrial) {
  json doc = FullSpec();
  doc["searcher"]["brackets"] = 3;
  auto spec = Parse(doc);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->searcher.brackets, 3);
  EXPECT_EQ(ExperimentSpecToJson(*spec)["searcher"]["brackets"], 3);
  EXPECT_EQ(ExperimentSpecToJson(*Parse(FullSpec()))["searcher"]["brackets"], 1);  // the default
  // 4 trials over 3 brackets: shares 2.6, 0.96 and 0.48 leave the last two without a trial.
  doc["searcher"]["max_trials"] = 4;
  FieldError error;
  spec = Parse(doc, &error);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(error.field, "searcher.brackets");
  EXPECT_NE(error.message.find("bracket 1 of 3 would get no trial"), std::string::npos)
      << error.message;
  // Grid and random searches have one rung: no brackets, and none in their canonical form.
  doc = FullSpec();
  doc["searcher"]["name"] = "random";
  doc["searcher"].erase("min_steps");
  spec = Parse(doc);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(ExperimentSpecToJson(*spec)["searcher"].contains("brackets"));
  doc["searcher"]["brackets"] = 1;
  spec = Parse(doc, &error);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(error.field, "searcher.brackets");
  EXPECT_NE(error.message.find("only the asha searcher"), std::string::npos) << error.message;
}

struct Refusal {
  const char* pointer;  // JSON pointer of what to change in MinimalSpec() or FullSpec()
  json value;           // the new value; null = remove it
  std::string field;
  std::string message_part;
  bool full = false;
};

json Apply(const Refusal& r) {
  json doc = r.full ? FullSpec() : MinimalSpec();
  const json::json_pointer p(r.pointer);
  if (r.value.is_null()) {
    doc[p.parent_pointer()].erase(p.back());
  } else {
    doc[p] = r.value;
  }
  return doc;
}

TEST(ExperimentSpecJsonTest, RefusalsNameTheirField) {
  const std::string lr = "space[\"optimizer.learning_rate\"]";
  const json evaluation_off = {{"evaluation", false}};
  const Refusal refusals[] = {
      {"/bogus", 1, "bogus", "unknown field"},
      {"/name", nullptr, "name", "required"},
      {"/name", "a/b", "name", "[A-Za-z0-9._-]"},
      {"/name", 7, "name", "must be a string"},
      {"/base_job", nullptr, "base_job", "required"},
      {"/base_job", json::array(), "base_job", "must be a JSON object"},
      {"/base_job/batch_size", -1, "base_job.batch_size", ""},
      {"/base_job/model", nullptr, "base_job.model", "required"},
      {"/base_job/hooks", evaluation_off, "searcher.metric",
       "enable base_job.hooks.evaluation with split validation"},
      {"/base_job/hooks",
       {{"evaluation", {{"at_end", false}}}},
       "searcher.metric",
       "with split validation and at_end true"},
      {"/space", nullptr, "space", "required"},
      {"/space", json::object(), "space", "at least one"},
      {"/space", json::array(), "space", "must be an object"},
      {"/space/optimizer..x", {{"type", "int"}, {"min", 1}, {"max", 2}}, "space", "not a path"},
      {"/space/optimizer.lr",
       {{"type", "int"}, {"min", 1}, {"max", 2}},
       "space[\"optimizer.lr\"]",
       "'optimizer' has no field 'lr'"},
      {"/space/model.layers[20].units",
       {{"type", "int"}, {"min", 1}, {"max", 2}},
       "space[\"model.layers[20].units\"]",
       "'model.layers' has 2 elements, no [20]"},
      {"/space/batch_size.x",
       {{"type", "int"}, {"min", 1}, {"max", 2}},
       "space[\"batch_size.x\"]",
       "'batch_size' is integer, not an object"},
      {"/space/seed",
       {{"type", "int"}, {"min", 1}, {"max", 2}},
       "space[\"seed\"]",
       "set by the searcher"},
      {"/space/max_steps",
       {{"type", "int"}, {"min", 1}, {"max", 2}},
       "space[\"max_steps\"]",
       "set by the searcher"},
      {"/space/optimizer",
       {{"type", "categorical"}, {"values", {json::object()}}},
       "space[\"optimizer.learning_rate\"]",
       "overlaps space[\"optimizer\"]"},
      {"/space/optimizer.learning_rate/type", nullptr, lr + ".type", "required"},
      {"/space/optimizer.learning_rate/type", "float", lr + ".type", "must be one of"},
      {"/space/optimizer.learning_rate/bogus", 1, lr + ".bogus", "unknown field"},
      {"/space/optimizer.learning_rate/min", 0, lr + ".min", "> 0 for a log range"},
      {"/space/optimizer.learning_rate/max", 1e-5, lr + ".max", "must be > min"},
      {"/space/optimizer.learning_rate/max", nullptr, lr + ".max", "required"},
      {"/space/optimizer.learning_rate/values", {1}, lr + ".values", "not used by type log"},
      {"/space/batch_size",
       {{"type", "int"}, {"min", 1.5}, {"max", 2}},
       "space[\"batch_size\"].min",
       "must be an integer"},
      {"/space/batch_size",
       {{"type", "int"}, {"min", 3}, {"max", 2}},
       "space[\"batch_size\"].max",
       "must be >= min"},
      {"/space/batch_size",
       {{"type", "int"}, {"min", 0}, {"max", 2}},
       "space[\"batch_size\"].min",
       "batch_size: "},
      {"/space/batch_size",
       {{"type", "categorical"}, {"values", json::array()}},
       "space[\"batch_size\"].values",
       "1 to 1000"},
      {"/space/batch_size",
       {{"type", "categorical"}, {"values", {1}}, {"min", 1}},
       "space[\"batch_size\"].min",
       "not used by type categorical"},
      {"/space/batch_size",
       {{"type", "categorical"}, {"values", {16, "x"}}},
       "space[\"batch_size\"].values[1]",
       "batch_size: must be an integer"},
      {"/space/model.layers[6].rate",
       {{"type", "double"}, {"min", 0.1}, {"max", 1.5}},
       "space[\"model.layers[6].rate\"].max",
       "model.layers[6].rate",
       true},
      {"/space/optimizer.type",
       {{"type", "categorical"}, {"values", {"adam", "nesterov"}}},
       "space[\"optimizer.type\"].values[1]",
       "optimizer.type: must be one of",
       true},
      {"/searcher", json::array(), "searcher", "must be an object"},
      {"/searcher/name", "bayes", "searcher.name", "grid, random, asha", true},
      {"/searcher/mode", "maximize", "searcher.mode", "max or min", true},
      {"/searcher/max_trials", 0, "searcher.max_trials", "[1, 100000]", true},
      {"/searcher/max_concurrent_trials", 65, "searcher.max_concurrent_trials", "[1, 64]", true},
      {"/searcher/reduction_factor", 1, "searcher.reduction_factor", "[2, 1000]", true},
      {"/searcher/min_steps", 1600, "searcher.min_steps", "less than searcher.max_steps", true},
      {"/searcher/min_steps", 0, "searcher.min_steps", "[1, 1600]", true},
      {"/searcher/max_steps", 0, "searcher.max_steps", "", true},
      {"/searcher/seed", -1, "searcher.seed", "", true},
      {"/searcher/metric", "validation/f1", "searcher.metric",
       "metric one of loss, accuracy, precision_macro, recall_macro, f1_macro, auc, log_loss",
       true},
      {"/searcher/metric", "test/accuracy", "searcher.metric", "base_job.hooks.final_eval", true},
      {"/searcher/bogus", 1, "searcher.bogus", "unknown field", true},
      {"/searcher/brackets", 4, "searcher.brackets", "[1, 3]", true},  // rungs 100, 400, 1600
      {"/searcher/brackets", 0, "searcher.brackets", "[1, 3]", true},
      {"/base_job/hooks/early_stopping", true, "base_job.hooks.early_stopping.enabled", "asha",
       true},
      {"/base_job/hooks/checkpoint", false, "base_job.hooks.checkpoint.enabled", "asha", true},
      {"/budget/max_steps", -1, "budget.max_steps", "", true},
      {"/budget/max_seconds", -1, "budget.max_seconds", ">= 0", true},
      {"/budget/bogus", 1, "budget.bogus", "unknown field", true},
      {"/stop_when", "high", "stop_when", "must be a number", true},
      {"/max_trial_restarts", 101, "max_trial_restarts", "[0, 100]", true},
      {"/keep_best", 17, "keep_best", "[0, 16]", true},
      {"/base_job/max_steps", 0, "searcher.max_steps", "required when base_job.max_steps is 0"},
  };
  for (const Refusal& r : refusals) {
    json doc = Apply(r);
    if (std::string(r.pointer) == "/base_job/max_steps") doc["base_job"]["num_epochs"] = 1;
    FieldError error;
    auto spec = Parse(doc, &error);
    ASSERT_FALSE(spec.ok()) << r.pointer << " = " << r.value.dump();
    EXPECT_EQ(spec.status().code(), engine::StatusCode::kInvalidArgument);
    EXPECT_EQ(error.field, r.field) << r.pointer << ": " << error.message;
    EXPECT_EQ(error.message, spec.status().message());
    EXPECT_EQ(error.message.rfind(r.field + ": ", 0), 0u) << error.message;
    EXPECT_NE(error.message.find(r.message_part), std::string::npos)
        << r.pointer << ": " << error.message;
  }
}

TEST(ExperimentSpecJsonTest, GridRangesNeedPoints) {
  json doc = MinimalSpec();
  doc["searcher"] = {{"name", "grid"}};
  FieldError error;
  EXPECT_FALSE(Parse(doc, &error).ok());
  EXPECT_EQ(error.field, "space[\"optimizer.learning_rate\"].count");
  doc["space"]["optimizer.learning_rate"]["count"] = 3;
  EXPECT_TRUE(Parse(doc).ok());
  doc["space"]["batch_size"] = {{"type", "int"}, {"min", 1}, {"max", 2000000}};
  EXPECT_FALSE(Parse(doc, &error).ok());
  EXPECT_EQ(error.field, "space[\"batch_size\"].count");
  doc["space"]["batch_size"]["max"] = 100;  // every integer of [1, 100]
  EXPECT_TRUE(Parse(doc).ok());
  doc["space"]["batch_size"]["count"] = 101;
  EXPECT_FALSE(Parse(doc, &error).ok());
  EXPECT_EQ(error.field, "space[\"batch_size\"].count");
}

json Values(int n) {
  json values = json::array();
  for (int i = 0; i < n; ++i) values.push_back(0.0001 * (i + 1));
  return values;
}

TEST(ExperimentSpecJsonTest, BoundsARange) {
  json doc = MinimalSpec();
  doc["space"]["optimizer.learning_rate"] = {{"type", "categorical"}, {"values", Values(1001)}};
  FieldError error;
  EXPECT_FALSE(Parse(doc, &error).ok());
  EXPECT_EQ(error.field, "space[\"optimizer.learning_rate\"].values");
}

// 10 ranges of 1000 values are the most; an 11th is refused. Each value is checked as a job
// (19,000 parses): 0.6 s here, 20-27 s under a sanitizer, whose runs check the same code on
// smaller spaces (the other tests here, the experiment_spec fuzzer).
TEST(ExperimentSpecJsonTest, BoundsTheSpaceAsAWhole) {
  if (test_support::kSanitized) GTEST_SKIP() << "Release only: 19,000 job parses";
  const json values = Values(1000);
  FieldError error;
  json doc = MinimalSpec();
  doc["base_job"]["model"] = "mlp";
  doc["space"] = json::object();
  for (const char* path :
       {"optimizer.learning_rate", "optimizer.beta1", "optimizer.beta2", "optimizer.epsilon",
        "model.layers[1].stddev", "model.layers[1].bias_init", "model.layers[2].stddev",
        "model.layers[2].bias_init", "model.layers[3].stddev", "model.layers[3].bias_init"}) {
    doc["space"][path] = {{"type", "categorical"}, {"values", values}};
  }
  EXPECT_TRUE(Parse(doc).ok());
  doc["space"]["dataset.max_train_examples"] = {{"type", "categorical"}, {"values", {0}}};
  EXPECT_FALSE(Parse(doc, &error).ok());
  EXPECT_EQ(error.field.rfind("space[", 0), 0u) << error.message;
  EXPECT_NE(error.message.find("10000 in all"), std::string::npos) << error.message;
}

TEST(ExperimentSpecJsonTest, BadJsonNamesNoFieldOrTheMember) {
  FieldError error;
  EXPECT_FALSE(ParseExperimentSpec("{", &error).ok());
  EXPECT_EQ(error.field, "");
  EXPECT_FALSE(ParseExperimentSpec("[]", &error).ok());
  EXPECT_EQ(error.field, "");
  EXPECT_FALSE(ParseExperimentSpec(R"({"searcher": {"seed": 1e999}})", &error).ok());
  EXPECT_FALSE(ParseExperimentSpec(R"({"searcher": {"seed": ]})", &error).ok());
  EXPECT_EQ(error.field, "searcher.seed");
}

TEST(TrialJobSpecTest, AppliesTheHyperparameters) {
  auto spec = Parse(FullSpec());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const Hyperparameters hp = {{"batch_size", "64"},
                              {"model.layers[6].rate", "0.25"},
                              {"optimizer.learning_rate", "0.003"},
                              {"optimizer.type", "\"momentum\""}};
  auto trial = TrialJobSpec(*spec, hp, 3, 99, 400);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  const engine::JobSpec& job = trial->first;
  EXPECT_EQ(job.name, "lr-search-trial-3");
  EXPECT_EQ(job.seed, 99u);
  EXPECT_EQ(job.max_steps, 400);
  EXPECT_EQ(job.batch_size, 64);
  EXPECT_EQ(job.model.layers[6].rate, 0.25f);
  EXPECT_EQ(job.optimizer.learning_rate.learning_rate, 0.003f);
  // Adam's fields dropped, momentum's at their defaults.
  EXPECT_EQ(job.optimizer.type, engine::OptimizerOptions::Type::kMomentum);
  EXPECT_EQ(trial->second, JobSpecToJson(job));
  EXPECT_FALSE(json::parse(trial->second)["optimizer"].contains("beta1"));
  // Everything else is the base job's.
  EXPECT_EQ(job.hooks.evaluation.enabled, true);
  EXPECT_EQ(job.model.layers.size(), 8u);
}

// The image models' optimisation (docs/optimizers.md) is searchable over any base job: weight
// decay and label smoothing are in every canonical spec, the cosine schedule's fields in a base
// that uses it; and a value out of range is refused at submit, naming the space's path.
TEST(TrialJobSpecTest, WeightDecayLabelSmoothingAndTheCosineScheduleAreSearchable) {
  json doc = MinimalSpec();
  doc["base_job"]["optimizer"] = {{"type", "adamw"},
                                  {"learning_rate",
                                   {{"type", "cosine"},
                                    {"learning_rate", 0.01},
                                    {"decay_steps", 6000},
                                    {"warmup_steps", 100}}}};
  doc["space"] = {
      {"optimizer.weight_decay", {{"type", "log"}, {"min", 1e-5}, {"max", 1e-2}}},
      {"label_smoothing", {{"type", "double"}, {"min", 0.0}, {"max", 0.2}}},
      {"optimizer.learning_rate.warmup_steps", {{"type", "int"}, {"min", 0}, {"max", 500}}},
      {"optimizer.type", {{"type", "categorical"}, {"values", {"adamw", "momentum"}}}}};
  auto spec = Parse(doc);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const Hyperparameters hp = {{"optimizer.weight_decay", "0.0005"},
                              {"label_smoothing", "0.1"},
                              {"optimizer.learning_rate.warmup_steps", "250"},
                              {"optimizer.type", "\"momentum\""}};
  auto trial = TrialJobSpec(*spec, hp, 0, 1, 100);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  EXPECT_EQ(trial->first.optimizer.type, engine::OptimizerOptions::Type::kMomentum);
  EXPECT_EQ(trial->first.optimizer.weight_decay, 0.0005f);
  EXPECT_EQ(trial->first.label_smoothing, 0.1f);
  EXPECT_EQ(trial->first.optimizer.learning_rate.warmup_steps, 250);

  json plain = MinimalSpec();
  plain["space"] = {{"label_smoothing", {{"type", "double"}, {"min", 0.0}, {"max", 1.0}}}};
  FieldError error;
  EXPECT_FALSE(Parse(plain, &error).ok());
  EXPECT_EQ(error.field, "space[\"label_smoothing\"].max");
  plain["space"] = {{"optimizer.weight_decay", {{"type", "double"}, {"min", -1.0}, {"max", 0.1}}}};
  EXPECT_FALSE(Parse(plain, &error).ok());
  EXPECT_EQ(error.field, "space[\"optimizer.weight_decay\"].min");
}

// Augmentation is searchable over a base job that has it on: its canonical form then holds every
// field (random_crop when its padding is set); over a base without it, the path is refused at
// submit, naming it, as any path the base job does not have.
TEST(TrialJobSpecTest, AugmentationIsSearchableOverABaseThatHasIt) {
  json doc = MinimalSpec();
  doc["base_job"]["augmentation"] = {{"random_crop", {{"padding", 2}}}};
  doc["space"] = {
      {"augmentation.random_crop.padding", {{"type", "int"}, {"min", 1}, {"max", 4}}},
      {"augmentation.horizontal_flip", {{"type", "categorical"}, {"values", {true, false}}}},
      {"augmentation.brightness", {{"type", "double"}, {"min", 0.0}, {"max", 0.3}}}};
  auto spec = Parse(doc);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const Hyperparameters hp = {{"augmentation.random_crop.padding", "3"},
                              {"augmentation.horizontal_flip", "true"},
                              {"augmentation.brightness", "0.25"}};
  auto trial = TrialJobSpec(*spec, hp, 0, 1, 100);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  EXPECT_EQ(trial->first.augmentation.random_crop_padding, 3);
  EXPECT_TRUE(trial->first.augmentation.horizontal_flip);
  EXPECT_EQ(trial->first.augmentation.brightness, 0.25f);

  json bad = doc;
  bad["space"] = {{"augmentation.brightness", {{"type", "double"}, {"min", 0.0}, {"max", 2.0}}}};
  FieldError error;
  EXPECT_FALSE(Parse(bad, &error).ok());
  EXPECT_EQ(error.field, "space[\"augmentation.brightness\"].max");
  json without = MinimalSpec();
  without["space"] = {
      {"augmentation.brightness", {{"type", "double"}, {"min", 0.0}, {"max", 0.3}}}};
  EXPECT_FALSE(Parse(without, &error).ok());
  EXPECT_EQ(error.field.rfind("space", 0), 0u) << error.field;
}

TEST(TrialJobSpecTest, CategoricalObjectsAndLongNames) {
  json doc = MinimalSpec();
  doc["name"] = std::string(100, 'x');
  const json schedule = {{"type", "exponential_decay"},
                         {"learning_rate", 0.1},
                         {"decay_steps", 100},
                         {"decay_rate", 0.5}};
  doc["space"]["optimizer.learning_rate"] = {{"type", "categorical"}, {"values", {0.01, schedule}}};
  auto spec = Parse(doc);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto trial = TrialJobSpec(*spec, {{"optimizer.learning_rate", schedule.dump()}}, 12345, 1, 10);
  ASSERT_TRUE(trial.ok()) << trial.status().ToString();
  EXPECT_EQ(trial->first.optimizer.learning_rate.type,
            engine::LearningRateSchedule::Type::kExponentialDecay);
  EXPECT_EQ(trial->first.optimizer.learning_rate.decay_steps, 100);
  EXPECT_EQ(trial->first.name.size(), 100u);
  EXPECT_TRUE(trial->first.name.ends_with("x-trial-12345"));

  // A value the job refuses, a path it does not have, a value that is not JSON.
  auto bad = TrialJobSpec(*spec, {{"batch_size", "0"}}, 1, 1, 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("batch_size: ", 0), 0u) << bad.status().message();
  bad = TrialJobSpec(*spec, {{"optimizer.lr", "1"}}, 1, 1, 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'optimizer' has no field 'lr'"), std::string::npos);
  bad = TrialJobSpec(*spec, {{"batch_size", "sixty"}}, 1, 1, 10);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is not JSON"), std::string::npos);
}

TEST(TrialJobSpecTest, ApplyHyperparameterWalksObjectsAndArrays) {
  json doc = {{"a", {{"b", json::array({json::object({{"c", 1}}), 2})}}}};
  EXPECT_TRUE(ApplyHyperparameter(&doc, "a.b[0].c", "[true]").ok());
  EXPECT_EQ(doc["a"]["b"][0]["c"], json::array({true}));
  EXPECT_TRUE(ApplyHyperparameter(&doc, "a.b[1]", "{\"x\": null}").ok());
  EXPECT_EQ(doc["a"]["b"][1], json::object({{"x", nullptr}}));
  for (const char* bad : {"", "a.", ".a", "a[", "a[x]", "a[1", "a..b", "a b", "1a", "a[0]x"}) {
    EXPECT_FALSE(ApplyHyperparameter(&doc, bad, "1").ok()) << bad;
  }
  auto st = ApplyHyperparameter(&doc, "a.b[2]", "1");
  EXPECT_NE(st.message().find("'a.b' has 2 elements, no [2]"), std::string::npos) << st.message();
  st = ApplyHyperparameter(&doc, "z", "1");
  EXPECT_NE(st.message().find("the spec has no field 'z'"), std::string::npos) << st.message();
}

ExperimentInfo SampleExperiment() {
  ExperimentInfo e;
  e.id = "e-1";
  e.name = "lr-search";
  e.state = ExperimentState::kStopped;
  e.searcher = "asha";
  e.metric = "validation/loss";
  e.maximize = false;
  e.created_at = 1700000000.5;
  e.finished_at = 1700000100;
  e.error = "";
  e.reason = "stopped";
  e.trials_started = 5;
  e.max_trials = 16;
  e.trials_by_state = {{"waiting", 2}, {"running", 3}};
  e.steps_used = 1000;
  e.budget_max_steps = 5000;
  e.seconds_used = 12.5;
  e.budget_max_seconds = 60;
  e.best = BestTrial{2, "job-2", 0.31, 400, {{"batch_size", "64"}, {"optimizer.type", "\"adam\""}}};
  e.disk_bytes = 1 << 20;
  e.peak_disk_bytes = 3 << 20;
  e.plan.rungs = {{0, 0, 100, 16, 5, 1, 0.4},
                  {0, 1, 400, 4, 1, 0, std::nullopt},
                  {1, 0, 400, 2, 0, 0, std::nullopt}};
  e.plan.trials = 16;
  e.plan.max_total_steps = 4000;
  e.plan.first_trials = {{{"batch_size", "32"}}, {{"batch_size", "128"}}};
  e.spec_json = R"({"name":"lr-search"})";
  return e;
}

TEST(ExperimentAnswersTest, ExperimentsReadBackEqual) {
  const ExperimentInfo e = SampleExperiment();
  const json detail = ExperimentToJson(e, true);
  EXPECT_EQ(detail["mode"], "min");
  EXPECT_EQ(detail["error"], nullptr);
  EXPECT_EQ(detail["best"]["hyperparameters"]["optimizer.type"], "adam");
  EXPECT_EQ(detail["plan"]["rungs"][1]["cut"], nullptr);
  EXPECT_EQ(detail["plan"]["rungs"][2]["bracket"], 1);
  EXPECT_EQ(detail["spec"]["name"], "lr-search");
  EXPECT_FALSE(ExperimentToJson(e, false).contains("spec"));
  auto back = ExperimentFromJson(detail);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ExperimentToJson(*back, true), detail);
  EXPECT_EQ(back->spec_json, e.spec_json);

  ExperimentInfo fresh;
  fresh.id = "e-2";
  const json nulls = ExperimentToJson(fresh, false);
  EXPECT_EQ(nulls["created_at"], nullptr);
  EXPECT_EQ(nulls["finished_at"], nullptr);
  EXPECT_EQ(nulls["best"], nullptr);
  EXPECT_EQ(nulls["reason"], nullptr);

  ExperimentPage page{{e, fresh}, "next"};
  auto page_back = ExperimentPageFromJson(ExperimentPageToJson(page));
  ASSERT_TRUE(page_back.ok()) << page_back.status().ToString();
  ASSERT_EQ(page_back->experiments.size(), 2u);
  EXPECT_EQ(page_back->next_cursor, "next");
  EXPECT_EQ(ExperimentToJson(page_back->experiments[0], false), ExperimentToJson(e, false));
  EXPECT_EQ(ExperimentPageToJson({{}, ""})["next_cursor"], nullptr);

  auto plan = PlanFromJson(PlanToJson(e.plan));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(PlanToJson(*plan), PlanToJson(e.plan));

  EXPECT_FALSE(ExperimentFromJson(json::array()).ok());
  EXPECT_FALSE(ExperimentFromJson({{"id", "x"}, {"state", "paused"}}).ok());
  EXPECT_FALSE(ExperimentFromJson({{"id", "x"}, {"state", "running"}, {"steps_used", "1"}}).ok());
}

TEST(ExperimentAnswersTest, TrialsReadBackEqual) {
  TrialInfo t;
  t.index = 4;
  t.job_id = "job-4";
  t.hyperparameters = {{"batch_size", "64"}, {"model.layers[6].rate", "0.25"}};
  t.seed = 18446744073709551615u;
  t.state = TrialState::kPruned;
  t.bracket = 1;
  t.rung = 1;
  t.target_steps = 400;
  t.rung_metrics = {0.5, 0.6};
  t.rung_recorded_at = {1700000020.5, 1700000050.25};
  t.metric = 0.6;
  t.restarts = 1;
  t.reason = "below the cut at rung 1";
  t.checkpoints_kept = false;
  t.job_state = JobState::kCompleted;
  t.global_step = 400;
  t.created_at = 1700000000;
  t.finished_at = 1700000050;
  TrialInfo fresh;  // no rung, no metric, no times
  const json page = TrialPageToJson({{t, fresh}, 9}, 20, 2);
  EXPECT_EQ(page["total"], 9);
  EXPECT_EQ(page["offset"], 20);
  EXPECT_EQ(page["limit"], 2);
  EXPECT_EQ(page["trials"][0]["hyperparameters"]["model.layers[6].rate"], 0.25);
  EXPECT_EQ(page["trials"][0]["rung_recorded_at"], json({1700000020.5, 1700000050.25}));
  EXPECT_EQ(page["trials"][0]["bracket"], 1);
  EXPECT_EQ(page["trials"][1]["rung"], nullptr);
  EXPECT_EQ(page["trials"][1]["metric"], nullptr);
  EXPECT_EQ(page["trials"][1]["finished_at"], nullptr);
  auto back = TrialPageFromJson(page);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->total, 9);
  ASSERT_EQ(back->trials.size(), 2u);
  EXPECT_EQ(TrialToJson(back->trials[0]), TrialToJson(t));
  EXPECT_EQ(back->trials[1].rung, -1);
  EXPECT_FALSE(back->trials[1].metric.has_value());
  EXPECT_EQ(back->trials[0].hyperparameters, t.hyperparameters);
  EXPECT_FALSE(TrialPageFromJson({{"trials", {{{"index", 1}, {"state", "done"}}}}}).ok());
}

TEST(ExperimentAnswersTest, JobsSayWhichExperimentTheyAreATrialOf) {
  JobInfo job;
  job.id = "job-1";
  EXPECT_EQ(JobToJson(job, false)["experiment"], nullptr);
  auto plain = JobFromJson(JobToJson(job, false));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->trial.experiment_id.empty());

  job.trial = {"e-1", 7, {{"batch_size", "64"}, {"optimizer.type", "\"adam\""}}};
  const json v = JobToJson(job, false);
  EXPECT_EQ(v["experiment"], json::parse(R"({"id":"e-1","trial":7,
                            "hyperparameters":{"batch_size":64,"optimizer.type":"adam"}})"));
  auto back = JobFromJson(v);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->trial.experiment_id, "e-1");
  EXPECT_EQ(back->trial.index, 7);
  EXPECT_EQ(back->trial.hyperparameters, job.trial.hyperparameters);
}

}  // namespace
}  // namespace trainingd::api
