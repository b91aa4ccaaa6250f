// The REST answers about experiments (experiment_json.h; docs/openapi.yaml has the schemas).
#include "trainingd/api/experiment_json.h"

#include <nlohmann/json.hpp>

#include "answer_json_util.h"

namespace trainingd::api {
using answer_json::TextOrNull;
using answer_json::TimeOrNull;
using nlohmann::json;

namespace {

json OptionalNumber(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

}  // namespace

json HyperparametersToJson(const Hyperparameters& hp) {
  json out = json::object();
  for (const auto& [path, text] : hp) {
    json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    out[path] = value.is_discarded() ? json(text) : std::move(value);
  }
  return out;
}

json PlanToJson(const ExperimentPlan& plan) {
  json rungs = json::array();
  for (const RungInfo& r : plan.rungs) {
    rungs.push_back({{"bracket", r.bracket},
                     {"index", r.index},
                     {"steps", r.steps},
                     {"max_trials", r.max_trials},
                     {"trials", r.trials},
                     {"promoted", r.promoted},
                     {"cut", OptionalNumber(r.cut)}});
  }
  json first = json::array();
  for (const Hyperparameters& hp : plan.first_trials) first.push_back(HyperparametersToJson(hp));
  return {{"rungs", std::move(rungs)},
          {"trials", plan.trials},
          {"grid_size", plan.grid_size},
          {"max_total_steps", plan.max_total_steps},
          {"first_trials", std::move(first)}};
}

json ExperimentToJson(const ExperimentInfo& e, bool detail) {
  json best = nullptr;
  if (e.best) {
    best = {{"trial", e.best->index},
            {"job_id", e.best->job_id},
            {"metric", e.best->metric},
            {"step", e.best->step},
            {"hyperparameters", HyperparametersToJson(e.best->hyperparameters)}};
  }
  json by_state = json::object();
  for (const auto& [state, count] : e.trials_by_state) by_state[state] = count;
  json out = {
      {"id", e.id},
      {"name", e.name},
      {"state", ExperimentStateName(e.state)},
      {"searcher", e.searcher},
      {"metric", e.metric},
      {"mode", e.maximize ? "max" : "min"},
      {"created_at", TimeOrNull(e.created_at)},
      {"finished_at", TimeOrNull(e.finished_at)},
      {"error", TextOrNull(e.error)},
      {"reason", TextOrNull(e.reason)},
      {"owner", e.owner},
      {"trials_started", e.trials_started},
      {"max_trials", e.max_trials},
      {"trials_by_state", std::move(by_state)},
      {"steps_used", e.steps_used},
      {"seconds_used", e.seconds_used},
      {"budget", {{"max_steps", e.budget_max_steps}, {"max_seconds", e.budget_max_seconds}}},
      {"best", std::move(best)},
      {"disk_bytes", e.disk_bytes},
      {"peak_disk_bytes", e.peak_disk_bytes},
      {"plan", PlanToJson(e.plan)}};
  if (e.cross_validation) {
    const CrossValidationInfo& cv = *e.cross_validation;
    const auto number = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
    json folds = json::array();
    for (const auto& m : cv.fold_metrics) folds.push_back(number(m));
    out["cross_validation"] = {{"folds", cv.folds},
                               {"stratified", cv.stratified},
                               {"fold_metrics", std::move(folds)},
                               {"folds_done", cv.folds_done},
                               {"mean", number(cv.mean)},
                               {"std", number(cv.std)}};
  } else {
    out["cross_validation"] = nullptr;
  }
  if (detail) {
    // As JobToJson: a stored spec that does not parse (it always should) is null.
    json spec = json::parse(e.spec_json, nullptr, /*allow_exceptions=*/false);
    out["spec"] = spec.is_discarded() ? json(nullptr) : std::move(spec);
  }
  return out;
}

json ExperimentPageToJson(const ExperimentPage& page) {
  json experiments = json::array();
  for (const ExperimentInfo& e : page.experiments)
    experiments.push_back(ExperimentToJson(e, false));
  return {{"experiments", std::move(experiments)}, {"next_cursor", TextOrNull(page.next_cursor)}};
}

json TrialToJson(const TrialInfo& t) {
  return {{"index", t.index},
          {"job_id", t.job_id},
          {"hyperparameters", HyperparametersToJson(t.hyperparameters)},
          {"seed", t.seed},
          {"state", TrialStateName(t.state)},
          {"bracket", t.bracket},
          {"rung", t.rung < 0 ? json(nullptr) : json(t.rung)},
          {"target_steps", t.target_steps},
          {"rung_metrics", t.rung_metrics},
          {"rung_recorded_at", t.rung_recorded_at},
          {"metric", OptionalNumber(t.metric)},
          {"restarts", t.restarts},
          {"reason", TextOrNull(t.reason)},
          {"checkpoints_kept", t.checkpoints_kept},
          {"job_state", JobStateName(t.job_state)},
          {"global_step", t.global_step},
          {"created_at", TimeOrNull(t.created_at)},
          {"finished_at", TimeOrNull(t.finished_at)}};
}

json TrialPageToJson(const TrialPage& page, int64_t offset, int64_t limit) {
  json trials = json::array();
  for (const TrialInfo& t : page.trials) trials.push_back(TrialToJson(t));
  return {
      {"trials", std::move(trials)}, {"total", page.total}, {"offset", offset}, {"limit", limit}};
}

}  // namespace trainingd::api
