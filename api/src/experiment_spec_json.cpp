// The experiment spec's JSON (experiment_json.h): reading, writing, and a trial's job spec.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "json_path.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/strict_json.h"
#include "trainingd/engine/data/cross_validation.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::api {
namespace {

using engine::Result;
using engine::Status;
using namespace strict_json;  // NOLINT(google-build-using-namespace): this file's vocabulary
using json_path::IsPrefix;
using json_path::JoinPath;
using json_path::kMaxPathLength;
using json_path::Locate;
using json_path::PathPart;
using json_path::SplitPath;

// Integers beyond 2^53 are not all doubles: ParamRange keeps min and max as doubles.
constexpr int64_t kMaxExactInt = int64_t{1} << 53;
// A grid over every integer of a range (count 0) holds at most this many points.
constexpr int64_t kMaxGridIntegers = 1000000;
constexpr int64_t kMaxReductionFactor = 1000;
constexpr int64_t kMaxTrialRestarts = 100;

// A job document with hyperparameters at `hp_paths` parsed as a job spec. A hyperparameter that
// sets a "type" leaves the fields of the old type in the document; those the new type does not
// take ("optimizer.beta1: not used by optimizer type momentum") are dropped, unless they are
// hyperparameters themselves.
Result<engine::JobSpec> ParseJobDocument(nlohmann::json doc,
                                         const std::vector<std::string>& hp_paths) {
  for (size_t attempt = 0;; ++attempt) {
    FieldError error;
    auto spec = JobSpecFromJson(doc, &error);
    if (spec.ok() || attempt > 64) return spec;
    const std::string& f = error.field;
    const bool unused = error.message.compare(f.size(), 14, ": not used by ") == 0;
    const size_t dot = f.rfind('.');
    const bool droppable =
        unused && dot != std::string::npos &&
        std::find(hp_paths.begin(), hp_paths.end(), f) == hp_paths.end() &&
        std::any_of(hp_paths.begin(), hp_paths.end(), [&](const std::string& hp) {
          return hp.size() > 5 && hp.ends_with(".type") &&
                 std::string_view(hp).substr(0, hp.size() - 5) ==
                     std::string_view(f).substr(0, dot);
        });
    if (!droppable) return spec;
    auto parts = SplitPath(f.substr(0, dot));
    if (!parts.ok()) return spec;
    auto parent = Locate(&doc, *parts);
    if (!parent.ok() || !(*parent)->is_object()) return spec;
    (*parent)->erase(f.substr(dot + 1));
  }
}

// ---------------------------------------------------------------------------------------------
// Reading.

struct ParamTypeEntry {
  const char* name;
  ParamType type;
};
constexpr ParamTypeEntry kParamTypes[] = {{"int", ParamType::kInt},
                                          {"double", ParamType::kDouble},
                                          {"log", ParamType::kLog},
                                          {"categorical", ParamType::kCategorical}};
constexpr SearcherSpec::Name kSearchers[] = {SearcherSpec::Name::kGrid, SearcherSpec::Name::kRandom,
                                             SearcherSpec::Name::kAsha,
                                             SearcherSpec::Name::kCrossValidation};
constexpr int64_t kDefaultFolds = 5;  // scikit-learn's cross_val_score

std::string SpacePath(const std::string& key) { return "space[\"" + key + "\"]"; }

Status ReadSearcher(const json& root, const engine::JobSpec& base, SearcherSpec* s) {
  const std::string path = "searcher";
  const auto it = root.find("searcher");
  const json empty = json::object();
  const json& v = it == root.end() ? empty : *it;
  TRAININGD_RETURN_IF_ERROR(
      CheckObject(v, path,
                  {"name", "metric", "mode", "max_trials", "max_concurrent_trials", "min_steps",
                   "max_steps", "reduction_factor", "brackets", "seed", "folds", "stratified"}));
  if (const auto n = v.find("name"); n != v.end()) {
    std::string name;
    TRAININGD_RETURN_IF_ERROR(Read(*n, "searcher.name", &name));
    const auto* found = std::find_if(std::begin(kSearchers), std::end(kSearchers),
                                     [&](SearcherSpec::Name x) { return name == SearcherName(x); });
    if (found == std::end(kSearchers)) {
      return Bad("searcher.name",
                 "must be one of grid, random, asha, cross_validation; got " + Quote(name));
    }
    s->name = *found;
  }
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "metric", &s->metric));
  // Without a mode, the metric's own direction (metrics.h): higher accuracy, lower loss.
  s->maximize = engine::DefaultMode(s->metric) == "max";
  if (const auto m = v.find("mode"); m != v.end()) {
    std::string mode;
    TRAININGD_RETURN_IF_ERROR(Read(*m, "searcher.mode", &mode));
    if (mode != "max" && mode != "min") {
      return Bad("searcher.mode", "must be max or min; got " + Quote(mode));
    }
    s->maximize = mode == "max";
  }
  if (const auto x = v.find("max_trials"); x != v.end()) {
    TRAININGD_RETURN_IF_ERROR(
        ReadInt(*x, "searcher.max_trials", int64_t{1}, kMaxTrials, &s->max_trials));
  }
  const bool cv = s->name == SearcherSpec::Name::kCrossValidation;
  for (const char* key : {"folds", "stratified"}) {
    if (!cv && v.contains(key)) {
      return Bad(std::string("searcher.") + key, "only the cross_validation searcher has folds");
    }
  }
  if (cv) {
    s->folds = kDefaultFolds;
    if (const auto x = v.find("folds"); x != v.end()) {
      TRAININGD_RETURN_IF_ERROR(
          ReadInt(*x, "searcher.folds", engine::kMinFolds, engine::kMaxFolds, &s->folds));
    }
    TRAININGD_RETURN_IF_ERROR(Field(v, path, "stratified", &s->stratified));
    if (v.contains("max_trials") && s->max_trials != s->folds) {
      return Bad("searcher.max_trials", "a cross_validation experiment has one trial per fold: " +
                                            std::to_string(s->folds) +
                                            " (searcher.folds); leave max_trials out");
    }
    s->max_trials = s->folds;
  }
  if (const auto x = v.find("max_concurrent_trials"); x != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadInt(*x, "searcher.max_concurrent_trials", int64_t{1},
                                      kMaxConcurrentTrials, &s->max_concurrent_trials));
  }
  s->max_steps = base.max_steps;
  if (const auto x = v.find("max_steps"); x != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadInt(*x, "searcher.max_steps", int64_t{1},
                                      std::numeric_limits<int64_t>::max(), &s->max_steps));
  } else if (s->max_steps <= 0) {
    return Bad("searcher.max_steps",
               "required when base_job.max_steps is 0: every trial trains to a number of steps");
  }
  if (const auto x = v.find("reduction_factor"); x != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadInt(*x, "searcher.reduction_factor", int64_t{2},
                                      kMaxReductionFactor, &s->reduction_factor));
  }
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "seed", &s->seed));
  const bool asha = s->name == SearcherSpec::Name::kAsha;
  if (const auto x = v.find("min_steps"); x != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadInt(*x, "searcher.min_steps", asha ? int64_t{1} : int64_t{0},
                                      s->max_steps, &s->min_steps));
  } else if (asha) {
    int64_t min_steps = s->max_steps;
    for (int i = 0; i < 3; ++i) min_steps /= s->reduction_factor;
    s->min_steps = std::max<int64_t>(min_steps, 1);
  }
  if (asha && s->min_steps >= s->max_steps) {
    return Bad("searcher.min_steps", "must be less than searcher.max_steps (" +
                                         std::to_string(s->max_steps) + ") for asha, got " +
                                         std::to_string(s->min_steps));
  }
  if (const auto x = v.find("brackets"); x != v.end()) {
    if (!asha) return Bad("searcher.brackets", "only the asha searcher has brackets");
    const auto rungs = static_cast<int64_t>(RungSteps(*s).size());
    TRAININGD_RETURN_IF_ERROR(ReadInt(*x, "searcher.brackets", int64_t{1}, rungs, &s->brackets));
    const std::vector<int64_t> trials = BracketTrials(*s, s->max_trials);
    for (size_t b = 0; b < trials.size(); ++b) {
      if (trials[b] == 0) {
        return Bad("searcher.brackets", "bracket " + std::to_string(b) + " of " +
                                            std::to_string(s->brackets) +
                                            " would get no trial of searcher.max_trials " +
                                            std::to_string(s->max_trials) +
                                            " (each bracket's share is eta^(rungs-1) / " +
                                            "rungs); raise max_trials or use fewer brackets");
      }
    }
  }
  return Status::Ok();
}

// The searcher's metric is a tag every trial records at its final step.
Status CheckMetric(const SearcherSpec& s, const engine::JobSpec& base) {
  const size_t slash = s.metric.find('/');
  const std::string split = s.metric.substr(0, slash);
  const std::string kind = slash == std::string::npos ? "" : s.metric.substr(slash + 1);
  if (split.empty() || !engine::FindEvaluationMetric(kind)) {
    return Bad("searcher.metric",
               "must be '<split>/<metric>' with metric one of " + engine::EvaluationMetricNames() +
                   ", what the evaluation hooks record at a trial's end; got " + Quote(s.metric));
  }
  const engine::HooksSpec& h = base.hooks;
  if ((h.evaluation.enabled && h.evaluation.at_end && h.evaluation.split == split) ||
      (h.final_eval.enabled && h.final_eval.split == split)) {
    return Status::Ok();
  }
  std::string hint = "enable base_job.hooks.evaluation with split " + split + " and at_end true";
  if (split == "test") hint += ", or base_job.hooks.final_eval with split test";
  return Bad("searcher.metric",
             "no trial would record " + Quote(s.metric) + " at its final step: " + hint);
}

Status ReadRange(const json& v, const std::string& path, SearcherSpec::Name searcher,
                 ParamRange* r) {
  TRAININGD_RETURN_IF_ERROR(CheckObject(v, path, {"type", "min", "max", "values", "count"}));
  const auto t = v.find("type");
  if (t == v.end())
    return Bad(Child(path, "type"), "required; one of int, double, log, categorical");
  std::string type;
  TRAININGD_RETURN_IF_ERROR(Read(*t, Child(path, "type"), &type));
  const auto* found = std::find_if(std::begin(kParamTypes), std::end(kParamTypes),
                                   [&](const ParamTypeEntry& p) { return type == p.name; });
  if (found == std::end(kParamTypes)) {
    return Bad(Child(path, "type"),
               "must be one of int, double, log, categorical; got " + Quote(type));
  }
  r->type = found->type;
  const std::string what = std::string("type ") + found->name;
  if (r->type == ParamType::kCategorical) {
    for (const char* key : {"min", "max", "count"}) {
      if (v.contains(key))
        return Bad(Child(path, key), "not used by " + what + " (which takes values)");
    }
    TRAININGD_RETURN_IF_ERROR(Require(v, path, "values"));
    const json& values = v["values"];
    const std::string vp = Child(path, "values");
    if (!values.is_array())
      return Bad(vp, std::string("must be an array, got ") + TypeName(values));
    if (values.empty() || values.size() > static_cast<size_t>(kMaxCategoricalValues)) {
      return Bad(vp, "must hold 1 to " + std::to_string(kMaxCategoricalValues) + " values, got " +
                         std::to_string(values.size()));
    }
    for (const json& x : values) r->values.push_back(x.dump());
    return Status::Ok();
  }
  if (v.contains("values")) {
    return Bad(Child(path, "values"), "not used by " + what + " (which takes min, max, count)");
  }
  TRAININGD_RETURN_IF_ERROR(Require(v, path, "min"));
  TRAININGD_RETURN_IF_ERROR(Require(v, path, "max"));
  if (r->type == ParamType::kInt) {
    int64_t lo = 0, hi = 0;
    TRAININGD_RETURN_IF_ERROR(
        ReadInt(v["min"], Child(path, "min"), -kMaxExactInt, kMaxExactInt, &lo));
    TRAININGD_RETURN_IF_ERROR(
        ReadInt(v["max"], Child(path, "max"), -kMaxExactInt, kMaxExactInt, &hi));
    if (hi < lo) return Bad(Child(path, "max"), "must be >= min (" + std::to_string(lo) + ")");
    r->min = static_cast<double>(lo);
    r->max = static_cast<double>(hi);
  } else {
    TRAININGD_RETURN_IF_ERROR(Read(v["min"], Child(path, "min"), &r->min));
    TRAININGD_RETURN_IF_ERROR(Read(v["max"], Child(path, "max"), &r->max));
    if (r->type == ParamType::kLog && r->min <= 0) {
      return Bad(Child(path, "min"), "must be > 0 for a log range, got " + Got(v["min"]));
    }
    if (!(r->min < r->max)) return Bad(Child(path, "max"), "must be > min, got " + Got(v["max"]));
  }
  if (const auto c = v.find("count"); c != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadInt(*c, Child(path, "count"), int64_t{0}, kMaxTrials, &r->count));
  }
  if (searcher != SearcherSpec::Name::kGrid) return Status::Ok();
  if (r->type == ParamType::kInt) {
    const int64_t integers = static_cast<int64_t>(r->max - r->min) + 1;
    if (r->count == 0 && integers > kMaxGridIntegers) {
      return Bad(Child(path, "count"),
                 "required by the grid searcher for an int range of more than " +
                     std::to_string(kMaxGridIntegers) + " integers (this one has " +
                     std::to_string(integers) + ")");
    }
    if (r->count > integers) {
      return Bad(Child(path, "count"), "must be at most the range's " + std::to_string(integers) +
                                           " integers, got " + std::to_string(r->count));
    }
  } else if (r->count == 0) {
    return Bad(Child(path, "count"), "required by the grid searcher for a " +
                                         std::string(found->name) +
                                         " range: its number of points, > 0");
  }
  return Status::Ok();
}

// The values a range puts at its path, each with the field that gave it.
std::vector<std::pair<std::string, std::string>> RangeExtremes(const ParamRange& r,
                                                               const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  if (r.type == ParamType::kCategorical) {
    for (size_t i = 0; i < r.values.size(); ++i) {
      out.emplace_back(Index(Child(path, "values"), i), r.values[i]);
    }
  } else if (r.type == ParamType::kInt) {
    out.emplace_back(Child(path, "min"), json(static_cast<int64_t>(r.min)).dump());
    out.emplace_back(Child(path, "max"), json(static_cast<int64_t>(r.max)).dump());
  } else {
    out.emplace_back(Child(path, "min"), json(r.min).dump());
    out.emplace_back(Child(path, "max"), json(r.max).dump());
  }
  return out;
}

Status ReadSpace(const json& root, const json& base_doc, SearcherSpec::Name searcher,
                 std::vector<ParamRange>* space) {
  const auto it = root.find("space");
  if (it == root.end()) {
    if (searcher == SearcherSpec::Name::kGrid) return Status::Ok();
    return Bad("space",
               "required: the hyperparameters to search, e.g. {\"optimizer.learning_rate\""
               ": {\"type\": \"log\", \"min\": 1e-4, \"max\": 1e-2}}");
  }
  const json& v = *it;
  if (!v.is_object()) return Bad("space", std::string("must be an object, got ") + TypeName(v));
  if (v.empty() && searcher != SearcherSpec::Name::kGrid) {
    return Bad("space", "must hold at least one hyperparameter");
  }
  if (v.size() > static_cast<size_t>(kMaxSpaceParams)) {
    return Bad("space", "must hold at most " + std::to_string(kMaxSpaceParams) +
                            " hyperparameters, got " + std::to_string(v.size()));
  }
  std::vector<std::vector<PathPart>> seen;
  int64_t values = 0;
  for (const auto& [key, range] : v.items()) {
    auto parts = SplitPath(key);
    if (!parts.ok()) return Bad("space", Quote(key) + " is " + parts.status().message());
    const std::string path = SpacePath(key);
    if (key == "name" || key == "max_steps" || key == "seed") {
      return Bad(path,
                 "set by the searcher for each trial (name, max_steps and seed are; use "
                 "searcher.max_steps and searcher.seed)");
    }
    json probe = base_doc;
    if (auto at = Locate(&probe, *parts); !at.ok()) {
      return Bad(path, "not a field of the base job's spec: " + at.status().message());
    }
    for (size_t i = 0; i < seen.size(); ++i) {
      if (IsPrefix(seen[i], *parts) || IsPrefix(*parts, seen[i])) {
        return Bad(path, "overlaps space[\"" + JoinPath(seen[i], seen[i].size()) +
                             "\"]: one path may not lie inside another");
      }
    }
    seen.push_back(*parts);
    ParamRange r;
    r.path = key;
    TRAININGD_RETURN_IF_ERROR(ReadRange(range, path, searcher, &r));
    values += static_cast<int64_t>(r.values.size());
    if (values > kMaxSpaceValues) {
      return Bad(Child(path, "values"), "the space's categorical values are more than " +
                                            std::to_string(kMaxSpaceValues) + " in all");
    }
    for (const auto& [field, value] : RangeExtremes(r, path)) {
      json doc = base_doc;
      TRAININGD_RETURN_IF_ERROR(ApplyHyperparameter(&doc, key, value));
      auto job = ParseJobDocument(std::move(doc), {key});
      if (!job.ok()) return Bad(field, job.status().message());
    }
    space->push_back(std::move(r));
  }
  return Status::Ok();
}

// The cross_validation searcher's folds in the base job (fold 0; each trial sets its own). A
// base job that names folds itself must agree (the canonical spec, read again, does).
Status SetFolds(const SearcherSpec& s, engine::JobSpec* base) {
  engine::DatasetSpec& d = base->dataset;
  if (d.folds != 0 && (d.folds != s.folds || d.stratified != s.stratified)) {
    return Bad("base_job.dataset.folds",
               "set by the cross_validation searcher (searcher.folds, searcher.stratified); "
               "leave it out of the base job");
  }
  if (d.validation_size != engine::kAutoValidationSize) {
    return Bad("base_job.dataset.validation_size",
               "with the cross_validation searcher each trial's validation split is its fold: "
               "leave validation_size out");
  }
  d.folds = s.folds;
  d.fold = 0;
  d.stratified = s.stratified;
  if (engine::Status st = engine::ValidateJobSpec(*base); !st.ok()) {
    return Status::InvalidArgument("base_job." + st.message());
  }
  return Status::Ok();
}

Status ReadExperimentSpec(const json& root, ExperimentSpec* spec) {
  TRAININGD_RETURN_IF_ERROR(CheckObject(root, "",
                                        {"name", "base_job", "space", "searcher", "budget",
                                         "stop_when", "max_trial_restarts", "keep_best"}));
  TRAININGD_RETURN_IF_ERROR(Require(root, "", "name"));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "name", &spec->name));
  if (!engine::IsSafeName(spec->name)) {
    return Bad("name", "must be 1-100 characters of [A-Za-z0-9._-], and not '.' or '..'; got " +
                           Quote(spec->name));
  }
  TRAININGD_RETURN_IF_ERROR(Require(root, "", "base_job"));
  FieldError base_error;
  auto base = JobSpecFromJson(root["base_job"], &base_error);
  if (!base.ok()) {
    if (base.status().code() != engine::StatusCode::kInvalidArgument) return base.status();
    // "batch_size: ..." -> "base_job.batch_size: ..."; a message naming no field -> "base_job: ..."
    return Status::InvalidArgument(
        std::string(base_error.field.empty() ? "base_job: " : "base_job.") +
        base.status().message());
  }
  spec->base_job = std::move(*base);
  TRAININGD_RETURN_IF_ERROR(ReadSearcher(root, spec->base_job, &spec->searcher));
  const SearcherSpec& s = spec->searcher;
  if (s.name == SearcherSpec::Name::kCrossValidation) {
    TRAININGD_RETURN_IF_ERROR(SetFolds(s, &spec->base_job));
  }
  spec->base_job_json = JobSpecToJson(spec->base_job);
  const json base_doc = JobSpecToJsonValue(spec->base_job);

  TRAININGD_RETURN_IF_ERROR(CheckMetric(s, spec->base_job));
  const engine::HooksSpec& hooks = spec->base_job.hooks;
  if (s.name == SearcherSpec::Name::kAsha && hooks.early_stopping.enabled) {
    return Bad("base_job.hooks.early_stopping.enabled",
               "must be false with the asha searcher, which decides when trials stop");
  }
  if (s.name == SearcherSpec::Name::kAsha && !hooks.checkpoint.enabled) {
    return Bad("base_job.hooks.checkpoint.enabled",
               "must be true with the asha searcher, which resumes promoted trials from their "
               "checkpoints");
  }
  {
    json doc = base_doc;
    doc["max_steps"] = s.max_steps;
    auto job = JobSpecFromJson(doc);
    if (!job.ok()) return Bad("searcher.max_steps", job.status().message());
  }
  if (s.name == SearcherSpec::Name::kCrossValidation) {
    // Each fold is the same model on other data: a search per fold would be nested
    // cross-validation, which this searcher does not do.
    if (const auto it = root.find("space"); it != root.end() && !(it->is_object() && it->empty())) {
      return Bad("space",
                 "a cross_validation experiment has no search space: its trials are the folds "
                 "of one job spec (search first, then cross-validate the best trial's spec)");
    }
  } else {
    TRAININGD_RETURN_IF_ERROR(ReadSpace(root, base_doc, s.name, &spec->space));
  }

  if (const auto it = root.find("budget"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(CheckObject(*it, "budget", {"max_steps", "max_seconds"}));
    if (const auto x = it->find("max_steps"); x != it->end()) {
      TRAININGD_RETURN_IF_ERROR(ReadInt(*x, "budget.max_steps", int64_t{0},
                                        std::numeric_limits<int64_t>::max(),
                                        &spec->budget_max_steps));
    }
    TRAININGD_RETURN_IF_ERROR(Field(*it, "budget", "max_seconds", &spec->budget_max_seconds));
    if (spec->budget_max_seconds < 0) {
      return Bad("budget.max_seconds",
                 "must be >= 0 (0 = no limit), got " + Got((*it)["max_seconds"]));
    }
  }
  if (const auto it = root.find("stop_when"); it != root.end() && !it->is_null()) {
    double target = 0;
    TRAININGD_RETURN_IF_ERROR(Read(*it, "stop_when", &target));
    spec->stop_when = target;
  }
  if (const auto it = root.find("max_trial_restarts"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadInt(*it, "max_trial_restarts", int64_t{0}, kMaxTrialRestarts,
                                      &spec->max_trial_restarts));
  }
  if (const auto it = root.find("keep_best"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(
        ReadInt(*it, "keep_best", int64_t{0}, s.max_trials, &spec->keep_best));
  }
  spec->keep_best = std::min(spec->keep_best, s.max_trials);
  return Status::Ok();
}

Result<ExperimentSpec> FailExperimentSpec(const Status& status, FieldError* error) {
  if (error) {
    const std::string& m = status.message();
    const size_t colon = m.find(": ");
    const bool named =
        colon != std::string::npos && m.find(' ') > colon && !m.starts_with("invalid JSON");
    error->field = named ? m.substr(0, colon) : std::string();
    error->message = m;
  }
  return status;
}

json RangeValue(const ParamRange& r) {
  json o = {{"type", ParamTypeName(r.type)}};
  switch (r.type) {
    case ParamType::kCategorical: {
      json values = json::array();
      for (const std::string& v : r.values) {
        json x = json::parse(v, nullptr, /*allow_exceptions=*/false);
        values.push_back(x.is_discarded() ? json(v) : std::move(x));
      }
      o["values"] = std::move(values);
      return o;
    }
    case ParamType::kInt:
      o["min"] = static_cast<int64_t>(r.min);
      o["max"] = static_cast<int64_t>(r.max);
      break;
    case ParamType::kDouble:
    case ParamType::kLog:
      o["min"] = r.min;
      o["max"] = r.max;
      break;
  }
  o["count"] = r.count;
  return o;
}

}  // namespace

Result<ExperimentSpec> ParseExperimentSpec(std::string_view json_text, FieldError* error) {
  auto doc = Parse(json_text);
  if (!doc.ok()) return FailExperimentSpec(doc.status(), error);
  return ExperimentSpecFromJson(*doc, error);
}

Result<ExperimentSpec> ExperimentSpecFromJson(const json& doc, FieldError* error) {
  try {
    if (!doc.is_object()) {
      return FailExperimentSpec(
          Status::InvalidArgument(std::string("an experiment spec must be a JSON object, got ") +
                                  TypeName(doc)),
          error);
    }
    ExperimentSpec spec;
    if (Status s = ReadExperimentSpec(doc, &spec); !s.ok()) return FailExperimentSpec(s, error);
    return spec;
  } catch (const std::exception& e) {
    return FailExperimentSpec(
        Status::Internal(std::string("reading the experiment spec failed: ") + e.what()), error);
  }
}

json ExperimentSpecToJson(const ExperimentSpec& spec) {
  json space = json::object();
  for (const ParamRange& r : spec.space) space[r.path] = RangeValue(r);
  const SearcherSpec& s = spec.searcher;
  json searcher = {{"name", SearcherName(s.name)},
                   {"metric", s.metric},
                   {"mode", s.maximize ? "max" : "min"},
                   {"max_trials", s.max_trials},
                   {"max_concurrent_trials", s.max_concurrent_trials},
                   {"min_steps", s.min_steps},
                   {"max_steps", s.max_steps},
                   {"reduction_factor", s.reduction_factor},
                   {"seed", s.seed}};
  if (s.name == SearcherSpec::Name::kAsha) searcher["brackets"] = s.brackets;
  if (s.name == SearcherSpec::Name::kCrossValidation) {
    searcher["folds"] = s.folds;
    searcher["stratified"] = s.stratified;
  }
  return {
      {"name", spec.name},
      {"base_job", JobSpecToJsonValue(spec.base_job)},
      {"space", std::move(space)},
      {"searcher", std::move(searcher)},
      {"budget", {{"max_steps", spec.budget_max_steps}, {"max_seconds", spec.budget_max_seconds}}},
      {"stop_when", spec.stop_when ? json(*spec.stop_when) : json(nullptr)},
      {"max_trial_restarts", spec.max_trial_restarts},
      {"keep_best", spec.keep_best}};
}

Status ApplyHyperparameter(json* doc, std::string_view path, std::string_view value_json) {
  const std::string where(path.substr(0, kMaxPathLength));
  auto parts = SplitPath(path);
  if (!parts.ok()) return Status::InvalidArgument(Quote(path) + " is " + parts.status().message());
  auto at = Locate(doc, *parts);
  if (!at.ok()) return Bad(where, "not a field of the job spec: " + at.status().message());
  json value = json::parse(value_json, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return Bad(where, "the value " + Quote(value_json) + " is not JSON");
  **at = std::move(value);
  return Status::Ok();
}

Result<std::pair<engine::JobSpec, std::string>> TrialJobSpec(const ExperimentSpec& spec,
                                                             const Hyperparameters& hp,
                                                             int64_t index, uint64_t seed,
                                                             int64_t max_steps) {
  try {
    json doc = json::parse(spec.base_job_json, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) doc = JobSpecToJsonValue(spec.base_job);
    std::vector<std::string> paths;
    for (const auto& [path, value] : hp) {
      TRAININGD_RETURN_IF_ERROR(ApplyHyperparameter(&doc, path, value));
      paths.push_back(path);
    }
    const std::string suffix = "-trial-" + std::to_string(index);
    doc["name"] = spec.name.substr(0, 100 - suffix.size()) + suffix;
    doc["seed"] = seed;
    doc["max_steps"] = max_steps;
    auto job = ParseJobDocument(std::move(doc), paths);
    if (!job.ok()) return job.status();
    std::string text = JobSpecToJson(*job);
    return std::make_pair(std::move(*job), std::move(text));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("building trial ") + std::to_string(index) +
                            "'s job spec failed: " + e.what());
  }
}

}  // namespace trainingd::api
