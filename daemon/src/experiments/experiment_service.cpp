// ExperimentManager as the api::ExperimentService (docs/experiments.md): checking, previewing and
// submitting an experiment, listing, stopping, resuming and deleting, its metrics, and the
// answers built from the state the supervisor (experiment_manager.cpp) keeps.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "experiment_state.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/daemon/experiments/experiment_manager.h"
#include "trainingd/daemon/experiments/searcher.h"
#include "trainingd/daemon/jobs/job_id.h"
#include "trainingd/engine/base/logger.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
using api::ExperimentState;
using api::JobState;
using api::TrialState;
using namespace experiment_detail;

// --- the service ---

eng::Status ExperimentManager::CheckTrialSpecs(const api::ExperimentSpec& spec) const {
  const api::Hyperparameters first = TrialHyperparameters(spec, 0);
  const auto check = [&](const api::Hyperparameters& hp, const std::string& field) -> eng::Status {
    auto job = api::TrialJobSpec(spec, hp, 0, TrialSeed(spec, 0), spec.searcher.max_steps);
    eng::Status st = job.ok() ? jobs_.CheckAdmission(job->first) : job.status();
    if (st.ok()) return st;
    return eng::Status(st.code(), field + ": " + st.message());
  };
  TRAININGD_RETURN_IF_ERROR(check(first, "space"));
  api::Hyperparameters largest = first;
  for (size_t i = 0; i < spec.space.size(); ++i) {
    const api::ParamRange& p = spec.space[i];
    const std::string field = "space[\"" + p.path + "\"]";
    std::vector<std::pair<std::string, std::string>> values;  // (which, value)
    if (p.type == api::ParamType::kCategorical) {
      for (size_t v = 0; v < p.values.size(); ++v) {
        values.emplace_back(".values[" + std::to_string(v) + "]", p.values[v]);
      }
    } else {
      const bool integer = p.type == api::ParamType::kInt;
      const auto text = [&](double v) {
        return integer ? std::to_string(static_cast<int64_t>(v)) : Number(v);
      };
      values.emplace_back(".min", text(p.min));
      values.emplace_back(".max", text(p.max));
      largest[i].second = text(p.max);
    }
    for (const auto& [which, value] : values) {
      api::Hyperparameters hp = first;
      hp[i].second = value;
      TRAININGD_RETURN_IF_ERROR(check(hp, field + which));
    }
  }
  return check(largest, "space (every parameter at its max)");
}

eng::Result<api::ExperimentPlan> ExperimentManager::Preview(const api::ExperimentSpec& spec) {
  TRAININGD_RETURN_IF_ERROR(CheckTrialSpecs(spec));
  return PlanExperiment(spec);
}

eng::Result<api::ExperimentInfo> ExperimentManager::Submit(api::ExperimentSpec spec,
                                                           std::string spec_json,
                                                           std::string owner) {
  TRAININGD_RETURN_IF_ERROR(CheckTrialSpecs(spec));
  api::ExperimentInfo info;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto e = std::make_unique<Experiment>();
    do {
      e->rec.id = NewJobId();
      e->rec.id[0] = 'x';  // "x" and 80 random bits, as a job id is "j" and 80
    } while (experiments_.count(e->rec.id));
    e->rec.name = spec.name;
    e->rec.spec_json = std::move(spec_json);
    e->rec.owner = std::move(owner);
    e->rec.state = ExperimentState::kRunning;
    e->rec.created_at = env_->NowSeconds();
    e->rec.run_started_at = e->rec.created_at;
    e->spec = std::move(spec);
    e->rungs = BracketRungSteps(e->spec.searcher);
    Experiment& x = *e;
    experiments_.emplace(x.rec.id, std::move(e));
    {
      Store::WriteGroup group(store_);
      PutLocked(x);
      DecideLocked(x, "create", -1, -1, std::string(api::SearcherName(x.spec.searcher.name)));
    }
    UpdateOwnershipLocked(x);
    ScheduleLocked(x);
    info = InfoLocked(x, true);
  }
  AwaitStored("experiment " + info.id);
  return info;
}

eng::Result<api::ExperimentPage> ExperimentManager::List(std::optional<ExperimentState> state,
                                                         int64_t limit, const std::string& cursor) {
  if (limit < 1 || limit > api::kMaxListLimit) {
    return eng::Status::InvalidArgument("limit: must be in [1, " +
                                        std::to_string(api::kMaxListLimit) + "], got " +
                                        std::to_string(limit));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Experiment*> all;
  for (const auto& [id, e] : experiments_) {
    if (!state || e->rec.state == *state) all.push_back(e.get());
  }
  std::sort(all.begin(), all.end(), [](const Experiment* a, const Experiment* b) {
    return a->rec.created_at != b->rec.created_at ? a->rec.created_at > b->rec.created_at
                                                  : a->rec.id > b->rec.id;
  });
  size_t start = 0;
  if (!cursor.empty()) {
    const auto it = std::find_if(all.begin(), all.end(),
                                 [&](const Experiment* e) { return e->rec.id == cursor; });
    if (it == all.end()) return eng::Status::InvalidArgument("cursor: unknown or expired");
    start = static_cast<size_t>(it - all.begin()) + 1;
  }
  api::ExperimentPage page;
  for (size_t i = start; i < all.size() && page.experiments.size() < static_cast<size_t>(limit);
       ++i) {
    page.experiments.push_back(InfoLocked(*all[i], false));
  }
  if (start + page.experiments.size() < all.size()) {
    page.next_cursor = page.experiments.back().id;
  }
  return page;
}

eng::Result<api::ExperimentInfo> ExperimentManager::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Experiment* e = FindLocked(id);
  if (e == nullptr) return eng::Status::NotFound("experiment '" + id + "' does not exist");
  // The running trials' steps as of now.
  for (Trial& t : e->trials) {
    if (!Active(t.rec.state)) continue;
    if (auto job = jobs_.Get(t.rec.job_id); job.ok()) t.global_step = job->global_step;
  }
  return InfoLocked(*e, true);
}

eng::Result<api::TrialPage> ExperimentManager::Trials(const std::string& id,
                                                      const api::TrialQuery& query) {
  if (query.limit < 1 || query.limit > api::kMaxTrialPage) {
    return eng::Status::InvalidArgument("limit: must be in [1, " +
                                        std::to_string(api::kMaxTrialPage) + "]");
  }
  if (query.offset < 0) return eng::Status::InvalidArgument("offset: must be >= 0");
  std::lock_guard<std::mutex> lock(mu_);
  Experiment* e = FindLocked(id);
  if (e == nullptr) return eng::Status::NotFound("experiment '" + id + "' does not exist");
  int param = -1;
  for (size_t i = 0; i < e->spec.space.size(); ++i) {
    if (e->spec.space[i].path == query.sort) param = static_cast<int>(i);
  }
  const bool known = query.sort == "index" || query.sort == "metric" || query.sort == "state" ||
                     query.sort == "global_step" || param >= 0;
  if (!known) {
    std::string paths;
    for (const api::ParamRange& p : e->spec.space) paths += (paths.empty() ? "" : ", ") + p.path;
    return eng::Status::InvalidArgument(
        "sort: must be index, metric, state, global_step or a path of the experiment's space" +
        (paths.empty() ? std::string() : " (" + paths + ")") + "; got \"" +
        query.sort.substr(0, 64) + "\"");
  }
  std::vector<api::TrialInfo> trials;
  for (const Trial& t : e->trials) {
    if (!query.state || t.rec.state == *query.state) trials.push_back(TrialInfoLocked(*e, t));
  }
  // By the key, ascending or descending; a trial without a metric last either way; ties in
  // index order.
  const auto compare = [&](const api::TrialInfo& a, const api::TrialInfo& b) -> int {
    const auto three_way = [](auto x, auto y) { return x < y ? -1 : y < x ? 1 : 0; };
    if (query.sort == "index") return three_way(a.index, b.index);
    if (query.sort == "metric") return three_way(*a.metric, *b.metric);
    if (query.sort == "global_step") return three_way(a.global_step, b.global_step);
    if (query.sort == "state") {
      return std::string_view(api::TrialStateName(a.state)).compare(api::TrialStateName(b.state));
    }
    const std::string& x = a.hyperparameters[static_cast<size_t>(param)].second;
    const std::string& y = b.hyperparameters[static_cast<size_t>(param)].second;
    const auto nx = AsNumber(x), ny = AsNumber(y);
    return nx && ny ? three_way(*nx, *ny) : x.compare(y);
  };
  std::stable_sort(trials.begin(), trials.end(), [&](const auto& a, const auto& b) {
    if (query.sort == "metric" && a.metric.has_value() != b.metric.has_value()) {
      return a.metric.has_value();
    }
    const int c = compare(a, b);
    return query.descending ? c > 0 : c < 0;
  });
  api::TrialPage page;
  page.total = static_cast<int64_t>(trials.size());
  for (int64_t i = query.offset; i < page.total && i < query.offset + query.limit; ++i) {
    page.trials.push_back(std::move(trials[static_cast<size_t>(i)]));
  }
  return page;
}

eng::Result<api::ExperimentInfo> ExperimentManager::Stop(const std::string& id) {
  api::ExperimentInfo info;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Experiment* e = FindLocked(id);
    if (e == nullptr) return eng::Status::NotFound("experiment '" + id + "' does not exist");
    if (e->rec.state == ExperimentState::kStopping) return InfoLocked(*e, true);
    if (e->rec.state != ExperimentState::kRunning) {
      return eng::Status::FailedPrecondition("experiment '" + id + "' is " +
                                             api::ExperimentStateName(e->rec.state) +
                                             ": only a running experiment can be stopped");
    }
    EndLocked(*e, ExperimentState::kStopped, "stopped");
    info = InfoLocked(*e, true);
  }
  AwaitStored("the stop of experiment " + id);
  return info;
}

eng::Result<api::ExperimentInfo> ExperimentManager::Resume(const std::string& id) {
  api::ExperimentInfo info;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Experiment* e = FindLocked(id);
    if (e == nullptr) return eng::Status::NotFound("experiment '" + id + "' does not exist");
    if (e->rec.state != ExperimentState::kStopped && e->rec.state != ExperimentState::kFailed) {
      return eng::Status::FailedPrecondition(
          "experiment '" + id + "' is " + api::ExperimentStateName(e->rec.state) +
          ": only a stopped or failed experiment can be resumed");
    }
    e->rec.state = ExperimentState::kRunning;
    e->rec.error.clear();
    e->rec.reason.clear();
    e->rec.finished_at = 0;
    e->rec.run_started_at = env_->NowSeconds();
    {
      Store::WriteGroup group(store_);
      PutLocked(*e);
      DecideLocked(*e, "resume", -1, -1, "");
    }
    UpdateOwnershipLocked(*e);
    for (Trial& t : e->trials) {
      if (t.rec.state != TrialState::kStopped) continue;
      TrialRecord rec = t.rec;
      rec.state = TrialState::kRunning;
      auto resumed = jobs_.ResumeTrial(rec.job_id, std::nullopt, [&](const api::JobInfo&) {
        store_.PutTrial(rec);
        DecideLocked(*e, "resume", rec.index, -1, "to step " + std::to_string(rec.target_steps));
      });
      if (resumed.ok()) {
        t.rec = rec;
        t.job_state = resumed->state;
      } else {
        TrialEndedBadlyLocked(*e, t, "it could not be resumed: " + resumed.status().message());
      }
    }
    ScheduleLocked(*e);
    info = InfoLocked(*e, true);
  }
  AwaitStored("the resumption of experiment " + id);
  return info;
}

eng::Status ExperimentManager::Delete(const std::string& id) {
  std::vector<std::string> job_ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Experiment* e = FindLocked(id);
    if (e == nullptr) return eng::Status::NotFound("experiment '" + id + "' does not exist");
    if (e->rec.state == ExperimentState::kRunning || e->rec.state == ExperimentState::kStopping) {
      return eng::Status::FailedPrecondition("experiment '" + id + "' is " +
                                             api::ExperimentStateName(e->rec.state) +
                                             ": stop it before deleting it");
    }
    for (const Trial& t : e->trials) {
      if (t.rec.job_id.empty()) continue;
      job_ids.push_back(t.rec.job_id);
      trial_of_job_.erase(t.rec.job_id);
    }
    experiments_.erase(id);
    {
      std::lock_guard<std::mutex> owners(owner_mu_);
      driving_.erase(id);
    }
  }
  // The jobs first, the experiment's rows last: a crash midway leaves the experiment, whose
  // deletion can be asked again, and never a trial job that nothing owns.
  for (const std::string& job : job_ids) {
    if (eng::Status st = jobs_.DeleteTrial(job);
        !st.ok() && st.code() != eng::StatusCode::kNotFound) {
      return st;
    }
  }
  store_.DeleteExperiment(id);
  {
    std::lock_guard<std::mutex> owners(owner_mu_);
    owning_.erase(id);
  }
  api::ExperimentStateEvent deleted;
  deleted.id = id;
  deleted.deleted = true;
  bus_.Publish("", api::EventKind::kExperiment, deleted);
  AwaitStored("the deletion of experiment " + id);
  return eng::Status::Ok();
}

std::vector<api::Metric> ExperimentManager::Metrics() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int64_t> by_state;
  for (ExperimentState s :
       {ExperimentState::kRunning, ExperimentState::kStopping, ExperimentState::kCompleted,
        ExperimentState::kFailed, ExperimentState::kStopped}) {
    by_state[api::ExperimentStateName(s)] = 0;
  }
  int64_t trials = 0;
  for (const auto& [id, e] : experiments_) {
    ++by_state[api::ExperimentStateName(e->rec.state)];
    trials += static_cast<int64_t>(e->trials.size());
  }
  api::Metric experiments{
      "trainingd_experiments", "Experiments by state.", api::MetricType::kGauge, {}};
  for (const auto& [state, n] : by_state) {
    experiments.samples.push_back({"", {{"state", state}}, static_cast<double>(n)});
  }
  return {experiments,
          api::SingleMetric("trainingd_experiment_trials", "Trials started by all experiments.",
                            api::MetricType::kGauge, static_cast<double>(trials))};
}

// --- helpers ---

bool ExperimentManager::Drives(const std::string& id, std::string_view verb) {
  std::lock_guard<std::mutex> lock(owner_mu_);
  return verb == "delete" ? owning_.count(id) != 0 : driving_.count(id) != 0;
}

void ExperimentManager::UpdateOwnershipLocked(const Experiment& e) {
  std::lock_guard<std::mutex> lock(owner_mu_);
  owning_.insert(e.rec.id);
  const ExperimentState s = e.rec.state;
  if (s == ExperimentState::kCompleted || s == ExperimentState::kFailed) {
    driving_.erase(e.rec.id);
  } else {
    driving_.insert(e.rec.id);
  }
}

std::vector<TrialProgress> ExperimentManager::ProgressLocked(const Experiment& e) const {
  std::vector<TrialProgress> out;
  out.reserve(e.trials.size());
  for (const Trial& t : e.trials) {
    TrialProgress p;
    p.index = t.rec.index;
    p.bracket = t.bracket;
    p.rung_metrics = t.rung_metrics;
    p.active = Active(t.rec.state) || t.rec.state == TrialState::kStopped;
    p.dropped = t.rec.state == TrialState::kFailed;
    p.pruned = t.rec.state == TrialState::kPruned;
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<api::BestTrial> ExperimentManager::BestLocked(const Experiment& e) const {
  const Trial* best = nullptr;
  for (const Trial& t : e.trials) {
    if (t.rec.state == TrialState::kFailed || t.rung_metrics.empty()) continue;
    if (best == nullptr ||
        BetterMetric(t.rung_metrics.back(), best->rung_metrics.back(), e.spec.searcher.maximize)) {
      best = &t;
    }
  }
  if (best == nullptr) return std::nullopt;
  api::BestTrial b;
  b.index = best->rec.index;
  b.job_id = best->rec.job_id;
  b.metric = best->rung_metrics.back();
  b.step = e.RungsOf(*best)[best->rung_metrics.size() - 1];
  b.hyperparameters = best->hyperparameters;
  return b;
}

api::TrialInfo ExperimentManager::TrialInfoLocked(const Experiment& e, const Trial& t) const {
  api::TrialInfo i;
  i.index = t.rec.index;
  i.job_id = t.rec.job_id;
  i.hyperparameters = t.hyperparameters;
  i.seed = t.rec.seed;
  i.state = t.rec.state;
  i.bracket = t.bracket;
  i.rung = static_cast<int>(t.rung_metrics.size()) - 1;
  i.target_steps = t.rec.target_steps;
  i.rung_metrics = t.rung_metrics;
  i.rung_recorded_at = t.rung_recorded_at;
  if (!t.rung_metrics.empty()) i.metric = t.rung_metrics.back();
  i.restarts = t.rec.restarts;
  i.reason = t.rec.reason;
  i.checkpoints_kept = t.rec.checkpoints_kept;
  i.job_state = t.job_state;
  i.global_step = t.global_step;
  i.created_at = t.rec.created_at;
  i.finished_at = JobEnded(t.job_state) ? t.finished_at : 0;
  (void)e;
  return i;
}

api::ExperimentInfo ExperimentManager::InfoLocked(const Experiment& e, bool detail) const {
  api::ExperimentInfo i;
  i.id = e.rec.id;
  i.name = e.rec.name;
  i.owner = e.rec.owner;
  i.state = e.rec.state;
  i.searcher = api::SearcherName(e.spec.searcher.name);
  i.metric = e.spec.searcher.metric;
  i.maximize = e.spec.searcher.maximize;
  i.created_at = e.rec.created_at;
  i.finished_at = e.rec.finished_at;
  i.error = e.rec.error;
  i.reason = e.rec.state == ExperimentState::kStopping ? "" : e.rec.reason;
  i.trials_started = static_cast<int64_t>(e.trials.size());
  i.max_trials = TrialCount(e.spec);
  for (TrialState s : {TrialState::kRunning, TrialState::kWaiting, TrialState::kPruned,
                       TrialState::kCompleted, TrialState::kFailed, TrialState::kStopped}) {
    i.trials_by_state[api::TrialStateName(s)] = 0;
  }
  for (const Trial& t : e.trials) {
    ++i.trials_by_state[api::TrialStateName(t.rec.state)];
    i.steps_used += t.global_step;
  }
  i.budget_max_steps = e.spec.budget_max_steps;
  i.seconds_used = SecondsUsedLocked(e);
  i.budget_max_seconds = e.spec.budget_max_seconds;
  i.best = BestLocked(e);
  i.disk_bytes = e.disk_bytes;
  i.peak_disk_bytes = e.rec.peak_disk_bytes;
  i.plan = PlanExperiment(e.spec);
  const std::vector<TrialProgress> progress = ProgressLocked(e);
  for (api::RungInfo& rung : i.plan.rungs) {
    for (const Trial& t : e.trials) {
      if (t.bracket != rung.bracket || static_cast<int>(t.rung_metrics.size()) <= rung.index) {
        continue;
      }
      if (t.rec.state == TrialState::kFailed) continue;
      ++rung.trials;
      if (t.rec.target_steps > rung.steps) ++rung.promoted;
    }
    rung.cut = RungCut(e.spec, progress, rung.bracket, rung.index);
  }
  if (e.spec.searcher.name == api::SearcherSpec::Name::kCrossValidation) {
    std::vector<std::optional<double>> folds;
    for (const Trial& t : e.trials) {
      folds.resize(std::max(folds.size(), static_cast<size_t>(t.rec.index) + 1));
      if (t.rec.state == TrialState::kCompleted && !t.rung_metrics.empty()) {
        folds[static_cast<size_t>(t.rec.index)] = t.rung_metrics.back();
      }
    }
    i.cross_validation = CrossValidationResult(e.spec.searcher, std::move(folds));
  }
  if (detail) i.spec_json = e.rec.spec_json;
  return i;
}

void ExperimentManager::PutLocked(Experiment& e) {
  store_.PutExperiment(e.rec);
  api::ExperimentStateEvent event;
  event.id = e.rec.id;
  event.name = e.rec.name;
  event.state = e.rec.state;
  event.trials_started = static_cast<int64_t>(e.trials.size());
  event.max_trials = TrialCount(e.spec);
  for (const Trial& t : e.trials) event.steps_used += t.global_step;
  if (auto best = BestLocked(e)) {
    event.best_metric = best->metric;
    event.best_trial = best->index;
  }
  event.error = e.rec.error;
  event.reason = e.rec.state == ExperimentState::kStopping ? "" : e.rec.reason;
  bus_.Publish("", api::EventKind::kExperiment, std::move(event));
}

void ExperimentManager::DecideLocked(const Experiment& e, const std::string& kind, int64_t trial,
                                     int rung, const std::string& detail) {
  DecisionRecord d;
  d.experiment_id = e.rec.id;
  d.at = env_->NowSeconds();
  d.kind = kind;
  d.trial_index = trial;
  d.rung = rung;
  d.detail = detail;
  store_.AddDecision(d);
}

double ExperimentManager::SecondsUsedLocked(const Experiment& e) const {
  if (e.rec.run_started_at <= 0) return e.rec.seconds_used;
  return e.rec.seconds_used + std::max(0.0, env_->NowSeconds() - e.rec.run_started_at);
}

ExperimentManager::Experiment* ExperimentManager::FindLocked(const std::string& id) {
  const auto it = experiments_.find(id);
  return it == experiments_.end() ? nullptr : it->second.get();
}

void ExperimentManager::AwaitStored(const std::string& what) {
  if (eng::Status st = store_.FlushForReply(kRecordTimeout); !st.ok()) {
    eng::Logger::Stderr()->Warning(what + " is not yet in the database: " + st.ToString());
  }
}

}  // namespace trainingd::daemon
