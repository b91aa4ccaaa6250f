// The inverses of experiment_json.h's answer writers, for the API's client: lenient on unknown
// keys, strict on the types of the fields read (as job_json_read.cpp).
#include <nlohmann/json.hpp>

#include "answer_json_util.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/strict_json.h"

namespace trainingd::api {
namespace sj = strict_json;
using answer_json::NeedArray;
using answer_json::NeedObject;
using answer_json::Nullable;
using engine::Result;
using engine::Status;
using nlohmann::json;

namespace {

// obj[key], a number or null, into *out.
Status ReadOptionalNumber(const json& obj, const std::string& path, const char* key,
                          std::optional<double>* out) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    out->reset();
    return Status::Ok();
  }
  double x = 0;
  TRAININGD_RETURN_IF_ERROR(sj::Read(*it, sj::Child(path, key), &x));
  *out = x;
  return Status::Ok();
}

template <typename E>
Status ReadName(const json& obj, const std::string& path, const char* key,
                std::optional<E> (*parse)(std::string_view), E* out) {
  TRAININGD_RETURN_IF_ERROR(sj::Require(obj, path, key));
  std::string name;
  TRAININGD_RETURN_IF_ERROR(sj::Read(obj[key], sj::Child(path, key), &name));
  const std::optional<E> value = parse(name);
  if (!value) return sj::Bad(sj::Child(path, key), "unknown state " + sj::Quote(name));
  *out = *value;
  return Status::Ok();
}

Status HyperparametersAt(const json& obj, const std::string& path, Hyperparameters* out) {
  const auto it = obj.find("hyperparameters");
  if (it == obj.end()) return Status::Ok();
  auto hp = HyperparametersFromJson(*it, sj::Child(path, "hyperparameters"));
  if (!hp.ok()) return hp.status();
  *out = std::move(*hp);
  return Status::Ok();
}

Result<ExperimentPlan> PlanAt(const json& v, const std::string& path) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, path, "rungs"));
  ExperimentPlan plan;
  const std::string rungs = sj::Child(path, "rungs");
  for (size_t i = 0; i < v["rungs"].size(); ++i) {
    const json& r = v["rungs"][i];
    const std::string p = sj::Index(rungs, i);
    TRAININGD_RETURN_IF_ERROR(NeedObject(r, p));
    RungInfo rung;
    TRAININGD_RETURN_IF_ERROR(sj::Field(r, p, "bracket", &rung.bracket));  // (older: none)
    TRAININGD_RETURN_IF_ERROR(sj::Field(r, p, "index", &rung.index));
    TRAININGD_RETURN_IF_ERROR(sj::Field(r, p, "steps", &rung.steps));
    TRAININGD_RETURN_IF_ERROR(sj::Field(r, p, "max_trials", &rung.max_trials));
    TRAININGD_RETURN_IF_ERROR(sj::Field(r, p, "trials", &rung.trials));
    TRAININGD_RETURN_IF_ERROR(sj::Field(r, p, "promoted", &rung.promoted));
    TRAININGD_RETURN_IF_ERROR(ReadOptionalNumber(r, p, "cut", &rung.cut));
    plan.rungs.push_back(rung);
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "trials", &plan.trials));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "grid_size", &plan.grid_size));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "max_total_steps", &plan.max_total_steps));
  if (const auto it = v.find("first_trials"); it != v.end()) {
    const std::string p = sj::Child(path, "first_trials");
    if (!it->is_array()) return sj::Bad(p, "must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      auto hp = HyperparametersFromJson((*it)[i], sj::Index(p, i));
      if (!hp.ok()) return hp.status();
      plan.first_trials.push_back(std::move(*hp));
    }
  }
  return plan;
}

Result<ExperimentInfo> ExperimentAt(const json& v, const std::string& path) {
  TRAININGD_RETURN_IF_ERROR(NeedObject(v, path));
  ExperimentInfo e;
  TRAININGD_RETURN_IF_ERROR(sj::Require(v, path, "id"));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "id", &e.id));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "name", &e.name));
  TRAININGD_RETURN_IF_ERROR(ReadName(v, path, "state", &ParseExperimentState, &e.state));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "searcher", &e.searcher));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "metric", &e.metric));
  std::string mode = "max";
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "mode", &mode));
  e.maximize = mode != "min";
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "created_at", &e.created_at));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "finished_at", &e.finished_at));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "error", &e.error));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "reason", &e.reason));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "trials_started", &e.trials_started));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "max_trials", &e.max_trials));
  if (const auto it = v.find("trials_by_state"); it != v.end()) {
    const std::string p = sj::Child(path, "trials_by_state");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    for (const auto& [state, count] : it->items()) {
      TRAININGD_RETURN_IF_ERROR(sj::Read(count, sj::Child(p, state), &e.trials_by_state[state]));
    }
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "steps_used", &e.steps_used));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "seconds_used", &e.seconds_used));
  if (const auto it = v.find("budget"); it != v.end()) {
    const std::string p = sj::Child(path, "budget");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "max_steps", &e.budget_max_steps));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "max_seconds", &e.budget_max_seconds));
  }
  if (const auto it = v.find("best"); it != v.end() && !it->is_null()) {
    const std::string p = sj::Child(path, "best");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    BestTrial best;
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "trial", &best.index));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "job_id", &best.job_id));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "metric", &best.metric));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "step", &best.step));
    TRAININGD_RETURN_IF_ERROR(HyperparametersAt(*it, p, &best.hyperparameters));
    e.best = std::move(best);
  }
  if (const auto it = v.find("cross_validation"); it != v.end() && !it->is_null()) {
    const std::string p = sj::Child(path, "cross_validation");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    CrossValidationInfo cv;
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "folds", &cv.folds));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "stratified", &cv.stratified));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "folds_done", &cv.folds_done));
    const auto number = [&](const char* key, std::optional<double>* out) -> Status {
      const auto x = it->find(key);
      if (x == it->end() || x->is_null()) return Status::Ok();
      double d = 0;
      TRAININGD_RETURN_IF_ERROR(sj::Read(*x, sj::Child(p, key), &d));
      *out = d;
      return Status::Ok();
    };
    TRAININGD_RETURN_IF_ERROR(number("mean", &cv.mean));
    TRAININGD_RETURN_IF_ERROR(number("std", &cv.std));
    if (const auto f = it->find("fold_metrics"); f != it->end()) {
      const std::string fp = sj::Child(p, "fold_metrics");
      if (!f->is_array()) return Status::InvalidArgument(fp + ": must be an array");
      for (size_t k = 0; k < f->size(); ++k) {
        if ((*f)[k].is_null()) {
          cv.fold_metrics.emplace_back();
          continue;
        }
        double d = 0;
        TRAININGD_RETURN_IF_ERROR(sj::Read((*f)[k], fp + "[" + std::to_string(k) + "]", &d));
        cv.fold_metrics.emplace_back(d);
      }
    }
    e.cross_validation = std::move(cv);
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "disk_bytes", &e.disk_bytes));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "peak_disk_bytes", &e.peak_disk_bytes));
  if (const auto it = v.find("plan"); it != v.end()) {
    auto plan = PlanAt(*it, sj::Child(path, "plan"));
    if (!plan.ok()) return plan.status();
    e.plan = std::move(*plan);
  }
  if (const auto it = v.find("spec"); it != v.end() && !it->is_null()) e.spec_json = it->dump();
  return e;
}

Result<TrialInfo> TrialAt(const json& v, const std::string& path) {
  TRAININGD_RETURN_IF_ERROR(NeedObject(v, path));
  TrialInfo t;
  TRAININGD_RETURN_IF_ERROR(sj::Require(v, path, "index"));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "index", &t.index));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "job_id", &t.job_id));
  TRAININGD_RETURN_IF_ERROR(HyperparametersAt(v, path, &t.hyperparameters));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "seed", &t.seed));
  TRAININGD_RETURN_IF_ERROR(ReadName(v, path, "state", &ParseTrialState, &t.state));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "bracket", &t.bracket));
  t.rung = -1;
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "rung", &t.rung));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "target_steps", &t.target_steps));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "rung_metrics", &t.rung_metrics));
  if (v.contains("rung_recorded_at")) {  // (not in answers of daemons before it)
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "rung_recorded_at", &t.rung_recorded_at));
  }
  TRAININGD_RETURN_IF_ERROR(ReadOptionalNumber(v, path, "metric", &t.metric));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "restarts", &t.restarts));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "reason", &t.reason));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "checkpoints_kept", &t.checkpoints_kept));
  if (v.contains("job_state")) {
    TRAININGD_RETURN_IF_ERROR(ReadName(v, path, "job_state", &ParseJobState, &t.job_state));
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "global_step", &t.global_step));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "created_at", &t.created_at));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "finished_at", &t.finished_at));
  return t;
}

}  // namespace

Result<Hyperparameters> HyperparametersFromJson(const json& v, const std::string& path) {
  TRAININGD_RETURN_IF_ERROR(NeedObject(v, path));
  Hyperparameters hp;
  for (const auto& [key, value] : v.items()) hp.emplace_back(key, value.dump());
  return hp;
}

Result<Hyperparameters> HyperparametersFromText(std::string_view text) {
  const json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return HyperparametersFromJson(v, "hyperparameters");
}

Result<ExperimentInfo> ExperimentFromJson(const json& v) { return ExperimentAt(v, ""); }

Result<ExperimentPage> ExperimentPageFromJson(const json& v) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, "", "experiments"));
  ExperimentPage page;
  for (size_t i = 0; i < v["experiments"].size(); ++i) {
    auto e = ExperimentAt(v["experiments"][i], sj::Index("experiments", i));
    if (!e.ok()) return e.status();
    page.experiments.push_back(std::move(*e));
  }
  TRAININGD_RETURN_IF_ERROR(Nullable(v, "", "next_cursor", &page.next_cursor));
  return page;
}

Result<TrialInfo> TrialFromJson(const json& v) { return TrialAt(v, ""); }

Result<TrialPage> TrialPageFromJson(const json& v) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, "", "trials"));
  TrialPage page;
  for (size_t i = 0; i < v["trials"].size(); ++i) {
    auto t = TrialAt(v["trials"][i], sj::Index("trials", i));
    if (!t.ok()) return t.status();
    page.trials.push_back(std::move(*t));
  }
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "total", &page.total));
  return page;
}

Result<ExperimentPlan> PlanFromJson(const json& v) { return PlanAt(v, ""); }

}  // namespace trainingd::api
