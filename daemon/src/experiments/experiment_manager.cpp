#include "trainingd/daemon/experiments/experiment_manager.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "experiment_state.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/daemon/experiments/searcher.h"
#include "trainingd/daemon/jobs/job_id.h"
#include "trainingd/engine/base/logger.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
using api::ExperimentState;
using api::JobState;
using api::TrialState;
using namespace experiment_detail;

ExperimentManager::ExperimentManager(Store& store, EventBus& bus, JobManager& jobs,
                                     ExperimentManagerOptions options)
    : store_(store),
      bus_(bus),
      jobs_(jobs),
      options_(options),
      env_(options.env ? options.env : eng::Env::Default()) {}

eng::Result<std::unique_ptr<ExperimentManager>> ExperimentManager::Create(
    Store& store, EventBus& bus, JobManager& jobs, ExperimentManagerOptions options) {
  std::unique_ptr<ExperimentManager> m(new ExperimentManager(store, bus, jobs, options));
  jobs.SetTrialOwner(
      [m = m.get()](const std::string& id, std::string_view verb) { return m->Drives(id, verb); });
  // Subscribed before loading, so no change between the two is missed (a change seen twice is
  // harmless: reconciling is idempotent).
  m->job_events_ = bus.Subscribe("", 0, [m = m.get()](const api::ServiceEvent& event) {
    const auto* e = std::get_if<api::JobStateEvent>(&event.data);
    if (e == nullptr || event.kind != api::EventKind::kJob) return;
    {
      std::lock_guard<std::mutex> lock(m->inbox_mu_);
      m->changed_jobs_.insert(e->id);
    }
    m->inbox_cv_.notify_one();
  });
  if (eng::Status st = m->Load(); !st.ok()) {
    m->Shutdown();
    return st;
  }
  m->supervisor_ = std::thread([m = m.get()] { m->SupervisorLoop(); });
  return m;
}

ExperimentManager::~ExperimentManager() { Shutdown(); }

void ExperimentManager::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  job_events_.reset();
  jobs_.SetTrialOwner(nullptr);
}

eng::Status ExperimentManager::Load() {
  auto experiments = store_.ListExperiments();
  if (!experiments.ok()) return experiments.status();
  auto trials = store_.ListTrials("");
  if (!trials.ok()) return trials.status();
  auto results = store_.ListRungResults("");
  if (!results.ok()) return results.status();
  std::lock_guard<std::mutex> lock(mu_);
  for (ExperimentRecord& r : *experiments) {
    auto spec = api::ParseExperimentSpec(r.spec_json);
    if (!spec.ok()) {
      return eng::Status::DataLoss("experiment '" + r.id + "': its stored spec no longer parses: " +
                                   spec.status().message());
    }
    auto e = std::make_unique<Experiment>();
    e->rec = std::move(r);
    e->spec = std::move(spec).value();
    e->rungs = BracketRungSteps(e->spec.searcher);
    experiments_.emplace(e->rec.id, std::move(e));
  }
  for (TrialRecord& r : *trials) {
    Experiment* e = FindLocked(r.experiment_id);
    if (e == nullptr) continue;  // its experiment's row went first (a deletion cut short)
    if (r.index != static_cast<int64_t>(e->trials.size())) {
      return eng::Status::DataLoss("experiment '" + r.experiment_id + "': trial " +
                                   std::to_string(r.index) + " follows trial " +
                                   std::to_string(e->trials.size() - 1));
    }
    Trial t;
    t.rec = std::move(r);
    t.bracket = TrialBracket(e->spec, t.rec.index);
    if (auto hp = api::HyperparametersFromText(t.rec.hyperparameters_json); hp.ok()) {
      t.hyperparameters = std::move(hp).value();
    }
    if (!t.rec.job_id.empty()) trial_of_job_[t.rec.job_id] = {t.rec.experiment_id, t.rec.index};
    e->trials.push_back(std::move(t));
  }
  for (const RungResultRecord& r : *results) {
    Experiment* e = FindLocked(r.experiment_id);
    if (e == nullptr || r.trial_index >= static_cast<int64_t>(e->trials.size())) continue;
    Trial& t = e->trials[static_cast<size_t>(r.trial_index)];
    if (r.rung == static_cast<int>(t.rung_metrics.size())) {
      t.rung_metrics.push_back(r.metric);
      t.rung_recorded_at.push_back(r.recorded_at);
    }
  }
  for (auto& [id, e] : experiments_) {
    UpdateOwnershipLocked(*e);
    std::lock_guard<std::mutex> inbox(inbox_mu_);
    for (const Trial& t : e->trials) {
      if (!t.rec.job_id.empty()) changed_jobs_.insert(t.rec.job_id);  // reconciled first thing
    }
  }
  return eng::Status::Ok();
}

// --- the supervisor ---

void ExperimentManager::SupervisorLoop() {
  for (;;) {
    std::set<std::string> changed;
    {
      std::unique_lock<std::mutex> lock(inbox_mu_);
      inbox_cv_.wait_for(lock, options_.tick, [&] { return stopping_ || !changed_jobs_.empty(); });
      if (stopping_) return;
      changed.swap(changed_jobs_);
    }
    // What the jobs did, learned without holding mu_ (a metric read waits for the store).
    std::map<std::string, JobNews> news;
    {
      std::vector<std::pair<std::string, std::string>> wanted;  // job, metric
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const std::string& job : changed) {
          const auto it = trial_of_job_.find(job);
          if (it == trial_of_job_.end()) continue;
          const Experiment* e = FindLocked(it->second.first);
          if (e != nullptr) wanted.emplace_back(job, e->spec.searcher.metric);
        }
      }
      for (const auto& [job, metric] : wanted) news.emplace(job, Look(job, metric));
    }
    struct Measure {
      std::string experiment_id;
      int64_t trial;
      std::string job_id;
      int64_t bytes;
    };
    std::vector<Measure> to_measure;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [job, n] : news) {
        const auto it = trial_of_job_.find(job);
        if (it == trial_of_job_.end()) continue;
        Experiment* e = FindLocked(it->second.first);
        if (e == nullptr || it->second.second >= static_cast<int64_t>(e->trials.size())) continue;
        ReconcileLocked(*e, e->trials[static_cast<size_t>(it->second.second)], n);
      }
      for (auto& [id, e] : experiments_) {
        const ExperimentState s = e->rec.state;
        if (s == ExperimentState::kRunning && e->spec.budget_max_seconds > 0 &&
            SecondsUsedLocked(*e) >= e->spec.budget_max_seconds) {
          EndLocked(*e, ExperimentState::kCompleted, "budget: max_seconds reached");
        }
        // Checked here, before anything new is scheduled, and so also after a restart.
        const auto best = BestLocked(*e);
        if (e->rec.state == ExperimentState::kRunning && e->spec.stop_when && best &&
            !BetterMetric(*e->spec.stop_when, best->metric, e->spec.searcher.maximize)) {
          EndLocked(*e, ExperimentState::kCompleted,
                    "stop_when: trial " + std::to_string(best->index) + " reached " +
                        e->spec.searcher.metric + " = " + Number(best->metric));
        }
        if (e->rec.state == ExperimentState::kRunning) ScheduleLocked(*e);
        for (const Trial& t : e->trials) {
          if (!t.rec.job_id.empty() && (Active(t.rec.state) || t.disk_bytes < 0)) {
            to_measure.push_back({id, t.rec.index, t.rec.job_id, 0});
          }
        }
      }
    }
    // The disk, measured outside the lock: the trials that train or changed.
    for (Measure& m : to_measure) m.bytes = jobs_.DiskBytes(m.job_id);
    std::lock_guard<std::mutex> lock(mu_);
    std::set<Experiment*> measured;
    for (const Measure& m : to_measure) {
      Experiment* e = FindLocked(m.experiment_id);
      if (e == nullptr || m.trial >= static_cast<int64_t>(e->trials.size())) continue;
      e->trials[static_cast<size_t>(m.trial)].disk_bytes = m.bytes;
      measured.insert(e);
    }
    for (Experiment* e : measured) SumDiskLocked(*e);
  }
}

ExperimentManager::JobNews ExperimentManager::Look(const std::string& job_id,
                                                   const std::string& metric) {
  JobNews n;
  auto job = jobs_.Get(job_id);
  if (!job.ok()) return n;
  n.exists = true;
  n.state = job->state;
  n.global_step = job->global_step;
  n.finished_at = job->finished_at;
  n.error = job->error;
  n.reason = job->reason;
  if (n.state != JobState::kCompleted) return n;
  // The run's summaries were queued before its end: once they are in the database, the metric
  // at its final step is there too.
  AwaitStored("the scalars of job " + job_id);
  api::ScalarQuery query;
  query.tag = metric;
  query.from_step = n.global_step;
  query.to_step = n.global_step;
  query.max_points = 1;
  auto points = store_.QueryScalars(job_id, query);
  if (points.ok() && !points->empty() && points->back().step == n.global_step) {
    n.metric = points->back().value;
  }
  return n;
}

void ExperimentManager::ReconcileLocked(Experiment& e, Trial& t, const JobNews& news) {
  if (!news.exists) {
    if (!Final(t.rec.state)) TrialEndedBadlyLocked(e, t, "its job was deleted");
    return;
  }
  t.job_state = news.state;
  t.global_step = news.global_step;
  t.finished_at = news.finished_at;
  t.disk_bytes = -1;
  const bool ending = e.rec.state == ExperimentState::kStopping;
  if (!JobEnded(news.state)) {
    // A job the previous daemon re-queued while the experiment was stopping.
    if (ending && Active(t.rec.state)) {
      if (auto stopped = jobs_.StopTrial(t.rec.job_id); !stopped.ok()) {
        eng::Logger::Stderr()->Warning("experiment " + e.rec.id + ": cannot stop trial " +
                                       std::to_string(t.rec.index) + ": " +
                                       stopped.status().ToString());
      }
    }
    return;
  }
  if (Active(t.rec.state)) {
    if (news.state == JobState::kCompleted && news.global_step >= t.rec.target_steps) {
      RecordResultLocked(e, t, news);
    } else if (news.state == JobState::kStopped && ending) {
      t.rec.state = TrialState::kStopped;
      store_.PutTrial(t.rec);
    } else if (news.state == JobState::kFailed) {
      TrialEndedBadlyLocked(e, t, news.error.empty() ? "its job failed" : news.error);
    } else {
      TrialEndedBadlyLocked(e, t,
                            "its job ended (" + std::string(api::JobStateName(news.state)) +
                                ") at step " + std::to_string(news.global_step) +
                                ", before its rung's " + std::to_string(t.rec.target_steps) +
                                (news.reason.empty() ? "" : ": " + news.reason));
    }
  }
  if (ending) {
    const bool any_active = std::any_of(e.trials.begin(), e.trials.end(),
                                        [](const Trial& x) { return Active(x.rec.state); });
    if (!any_active) CompleteEndLocked(e);
  }
}

void ExperimentManager::RecordResultLocked(Experiment& e, Trial& t, const JobNews& news) {
  const std::vector<int64_t>& rungs = e.RungsOf(t);
  const auto rung =
      static_cast<int>(std::find(rungs.begin(), rungs.end(), t.rec.target_steps) - rungs.begin());
  if (!news.metric) {
    TrialEndedBadlyLocked(e, t,
                          "its job recorded no " + e.spec.searcher.metric + " at step " +
                              std::to_string(news.global_step));
    return;
  }
  const double metric = *news.metric;
  const double now = env_->NowSeconds();
  t.rung_metrics.resize(static_cast<size_t>(rung));  // (a result recorded twice replaces)
  t.rung_metrics.push_back(metric);
  t.rung_recorded_at.resize(static_cast<size_t>(rung));
  t.rung_recorded_at.push_back(now);
  const bool last = rung + 1 >= static_cast<int>(rungs.size());
  t.rec.state = last ? TrialState::kCompleted : TrialState::kWaiting;
  {
    Store::WriteGroup group(store_);
    store_.PutRungResult({e.rec.id, t.rec.index, rung, news.global_step, metric, now});
    store_.PutTrial(t.rec);
    DecideLocked(e, "result", t.rec.index, rung,
                 e.spec.searcher.metric + " = " + Number(metric) + " at step " +
                     std::to_string(news.global_step));
  }
  PruneLocked(e);
  PutLocked(e);
}

void ExperimentManager::TrialEndedBadlyLocked(Experiment& e, Trial& t, const std::string& why) {
  const bool can_retry = !t.rec.job_id.empty() && t.rec.restarts < e.spec.max_trial_restarts &&
                         e.rec.state == ExperimentState::kRunning && why != "its job was deleted";
  if (can_retry) {
    ++t.rec.restarts;
    TrialRecord rec = t.rec;
    auto resumed = jobs_.ResumeTrial(t.rec.job_id, t.rec.target_steps, [&](const api::JobInfo&) {
      store_.PutTrial(rec);
      DecideLocked(e, "restart", rec.index, -1,
                   "restart " + std::to_string(rec.restarts) + " of " +
                       std::to_string(e.spec.max_trial_restarts) + " after: " + why);
    });
    if (resumed.ok()) {
      t.job_state = resumed->state;
      PutLocked(e);
      return;
    }
    --t.rec.restarts;
  }
  t.rec.state = TrialState::kFailed;
  t.rec.reason = why;
  {
    Store::WriteGroup group(store_);
    store_.PutTrial(t.rec);
    DecideLocked(e, "fail", t.rec.index, -1, why);
  }
  PutLocked(e);
}

void ExperimentManager::ScheduleLocked(Experiment& e) {
  for (;;) {
    if (e.rec.state != ExperimentState::kRunning) return;
    const auto active = std::count_if(e.trials.begin(), e.trials.end(),
                                      [](const Trial& t) { return Active(t.rec.state); });
    if (active >= e.spec.searcher.max_concurrent_trials) return;
    const SearchAction action = NextSearchAction(e.spec, ProgressLocked(e));
    if (action.kind == SearchAction::Kind::kNone) {
      if (active != 0) return;
      if (BestLocked(e)) {
        EndLocked(e, ExperimentState::kCompleted, "every trial is done");
      } else {
        const std::string last = e.trials.empty() ? "" : e.trials.back().rec.reason;
        EndLocked(e, ExperimentState::kFailed, "no trial has a result; the last one: " + last);
      }
      return;
    }
    // The budget of steps: what every trial has been given so far, and this action's share.
    if (e.spec.budget_max_steps > 0) {
      int64_t given = 0;
      for (const Trial& t : e.trials) given += t.rec.target_steps;
      int64_t cost = 0;
      if (action.kind == SearchAction::Kind::kStart) {
        cost = e.rungs[static_cast<size_t>(TrialBracket(e.spec, action.trial))][0];
      } else {
        const Trial& t = e.trials[static_cast<size_t>(action.trial)];
        cost = e.RungsOf(t)[static_cast<size_t>(action.rung)] - t.rec.target_steps;
      }
      if (given + cost > e.spec.budget_max_steps) {
        if (active == 0) EndLocked(e, ExperimentState::kCompleted, "budget: max_steps reached");
        return;
      }
    }
    const size_t before = e.trials.size();
    if (action.kind == SearchAction::Kind::kStart) {
      StartTrialLocked(e, action.trial);
      if (e.trials.size() == before) return;  // not now (the job queue is full)
    } else {
      PromoteLocked(e, e.trials[static_cast<size_t>(action.trial)], action.rung);
    }
  }
}

void ExperimentManager::StartTrialLocked(Experiment& e, int64_t index) {
  Trial t;
  t.rec.experiment_id = e.rec.id;
  t.rec.index = index;
  t.rec.seed = TrialSeed(e.spec, index);
  t.bracket = TrialBracket(e.spec, index);
  t.rec.target_steps = e.RungsOf(t)[0];
  t.rec.created_at = env_->NowSeconds();
  t.hyperparameters = TrialHyperparameters(e.spec, index);
  t.rec.hyperparameters_json = api::DumpJson(api::HyperparametersToJson(t.hyperparameters));
  eng::Status refused;
  if (auto job =
          api::TrialJobSpec(e.spec, t.hyperparameters, index, t.rec.seed, t.rec.target_steps);
      !job.ok()) {
    refused = job.status();
  } else {
    api::TrialRef ref{e.rec.id, index, t.hyperparameters};
    auto submitted = jobs_.SubmitTrial(
        job->first, job->second, ref,
        [&](const api::JobInfo& j) {
          t.rec.job_id = j.id;
          store_.PutTrial(t.rec);
          DecideLocked(e, "start", index, 0,
                       "to step " + std::to_string(t.rec.target_steps) +
                           (e.rungs.size() > 1 ? " in bracket " + std::to_string(t.bracket) : "") +
                           ": " + t.rec.hyperparameters_json);
        },
        e.rec.owner);
    if (submitted.ok()) {
      t.job_state = submitted->state;
      trial_of_job_[t.rec.job_id] = {e.rec.id, index};
      e.trials.push_back(std::move(t));
      PutLocked(e);
      return;
    }
    if (submitted.status().code() == eng::StatusCode::kUnavailable) return;  // later
    refused = submitted.status();
  }
  // A trial the daemon refuses (a combination of values over a budget): it fails, the search
  // goes on.
  t.rec.state = TrialState::kFailed;
  t.rec.reason = "its job was refused: " + refused.message();
  {
    Store::WriteGroup group(store_);
    store_.PutTrial(t.rec);
    DecideLocked(e, "fail", index, -1, t.rec.reason);
  }
  e.trials.push_back(std::move(t));
  PutLocked(e);
}

void ExperimentManager::PromoteLocked(Experiment& e, Trial& t, int rung) {
  TrialRecord rec = t.rec;
  rec.state = TrialState::kRunning;
  rec.target_steps = e.RungsOf(t)[static_cast<size_t>(rung)];
  auto resumed = jobs_.ResumeTrial(rec.job_id, rec.target_steps, [&](const api::JobInfo&) {
    store_.PutTrial(rec);
    DecideLocked(e, "promote", rec.index, rung,
                 "to step " + std::to_string(rec.target_steps) + " with " + e.spec.searcher.metric +
                     " = " + Number(t.rung_metrics.back()) + " at rung " +
                     std::to_string(rung - 1));
  });
  if (!resumed.ok()) {
    TrialEndedBadlyLocked(e, t, "its promotion was refused: " + resumed.status().message());
    return;
  }
  t.rec = rec;
  t.job_state = resumed->state;
  PutLocked(e);
}

void ExperimentManager::EndLocked(Experiment& e, ExperimentState state, const std::string& reason) {
  if (e.rec.state == ExperimentState::kStopping) return;  // already ending
  // The trials' stops and the experiment's end commit together: a restart finds both or neither.
  Store::WriteGroup group(store_);
  e.rec.seconds_used = SecondsUsedLocked(e);
  e.rec.run_started_at = 0;
  // A stopping experiment's reason says how it ends: "" = stopped, else completed (or failed).
  e.rec.reason = state == ExperimentState::kStopped ? "" : reason;
  if (state == ExperimentState::kFailed) e.rec.error = reason;
  bool any_active = false;
  for (Trial& t : e.trials) {
    if (!Active(t.rec.state)) continue;
    any_active = true;
    if (auto st = jobs_.StopTrial(t.rec.job_id); !st.ok()) {
      eng::Logger::Stderr()->Warning("experiment " + e.rec.id + ": cannot stop trial " +
                                     std::to_string(t.rec.index) + ": " + st.status().ToString());
    }
  }
  DecideLocked(e, state == ExperimentState::kStopped ? "stop" : "end", -1, -1, reason);
  e.rec.state = ExperimentState::kStopping;
  if (!any_active) {
    CompleteEndLocked(e);
  } else {
    PutLocked(e);
  }
}

void ExperimentManager::CompleteEndLocked(Experiment& e) {
  const bool stopped = e.rec.reason.empty() && e.rec.error.empty();
  e.rec.finished_at = env_->NowSeconds();
  if (stopped) {
    e.rec.state = ExperimentState::kStopped;
    for (Trial& t : e.trials) {
      if (Active(t.rec.state)) t.rec.state = TrialState::kStopped;
    }
  } else {
    e.rec.state = e.rec.error.empty() ? ExperimentState::kCompleted : ExperimentState::kFailed;
    // What is left cannot go on: pruned, and only the best trials keep their checkpoints.
    std::vector<const Trial*> ranked;
    for (const Trial& t : e.trials) {
      if (t.rec.state != TrialState::kFailed && !t.rung_metrics.empty()) ranked.push_back(&t);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Trial* a, const Trial* b) {
      return BetterMetric(a->rung_metrics.back(), b->rung_metrics.back(), e.spec.searcher.maximize);
    });
    std::set<int64_t> keep;
    for (size_t i = 0; i < ranked.size() && static_cast<int64_t>(i) < e.spec.keep_best; ++i) {
      keep.insert(ranked[i]->rec.index);
    }
    for (Trial& t : e.trials) {
      if (!Final(t.rec.state)) {
        t.rec.state = TrialState::kPruned;
        t.rec.reason =
            "the experiment ended: " + (e.rec.error.empty() ? e.rec.reason : e.rec.error);
        store_.PutTrial(t.rec);
      }
      if (!keep.count(t.rec.index) && t.rec.checkpoints_kept && !t.rec.job_id.empty()) {
        DeleteTrialCheckpointsLocked(e, t,
                                     "not among the best " + std::to_string(e.spec.keep_best));
      }
    }
  }
  for (const Trial& t : e.trials) store_.PutTrial(t.rec);
  // Measured now, so the ended experiment shows its final disk (nothing changes it after).
  for (Trial& t : e.trials) {
    if (!t.rec.job_id.empty() && t.disk_bytes < 0) t.disk_bytes = jobs_.DiskBytes(t.rec.job_id);
  }
  SumDiskLocked(e);
  UpdateOwnershipLocked(e);
  PutLocked(e);
}

void ExperimentManager::SumDiskLocked(Experiment& e) {
  e.disk_bytes = 0;
  for (const Trial& t : e.trials) e.disk_bytes += std::max<int64_t>(t.disk_bytes, 0);
  e.rec.peak_disk_bytes = std::max(e.rec.peak_disk_bytes, e.disk_bytes);
}

void ExperimentManager::PruneLocked(Experiment& e) {
  const std::vector<TrialProgress> progress = ProgressLocked(e);
  int64_t steps_left = -1;
  if (e.spec.budget_max_steps > 0) {
    steps_left = e.spec.budget_max_steps;
    for (const Trial& t : e.trials) steps_left -= t.rec.target_steps;
    steps_left = std::max<int64_t>(steps_left, 0);
  }
  // The best keep_best so far keep their checkpoints whatever their rung.
  std::set<int64_t> best;
  {
    std::vector<const Trial*> ranked;
    for (const Trial& t : e.trials) {
      if (t.rec.state != TrialState::kFailed && !t.rung_metrics.empty()) ranked.push_back(&t);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Trial* a, const Trial* b) {
      return BetterMetric(a->rung_metrics.back(), b->rung_metrics.back(), e.spec.searcher.maximize);
    });
    for (size_t i = 0; i < ranked.size() && static_cast<int64_t>(i) < e.spec.keep_best; ++i) {
      best.insert(ranked[i]->rec.index);
    }
  }
  for (Trial& t : e.trials) {
    const bool stuck = (t.rec.state == TrialState::kWaiting &&
                        !CanStillBePromoted(e.spec, progress, t.rec.index, steps_left)) ||
                       t.rec.state == TrialState::kCompleted || t.rec.state == TrialState::kFailed;
    if (!stuck) continue;
    if (t.rec.state == TrialState::kWaiting) {
      t.rec.state = TrialState::kPruned;
      t.rec.reason = "its rung cannot promote it any more";
      Store::WriteGroup group(store_);
      store_.PutTrial(t.rec);
      DecideLocked(e, "prune", t.rec.index, static_cast<int>(t.rung_metrics.size()) - 1,
                   t.rec.reason);
    }
    if (t.rec.checkpoints_kept && !best.count(t.rec.index) && !t.rec.job_id.empty() &&
        JobEnded(t.job_state)) {
      DeleteTrialCheckpointsLocked(e, t, "not among the best " + std::to_string(e.spec.keep_best));
    }
  }
}

void ExperimentManager::DeleteTrialCheckpointsLocked(Experiment& e, Trial& t,
                                                     const std::string& why) {
  if (eng::Status st = jobs_.DeleteCheckpoints(t.rec.job_id); !st.ok()) {
    if (st.code() != eng::StatusCode::kNotFound) {
      eng::Logger::Stderr()->Warning("experiment " + e.rec.id + ": trial " +
                                     std::to_string(t.rec.index) + ": " + st.ToString());
      return;
    }
  }
  t.rec.checkpoints_kept = false;
  t.disk_bytes = -1;
  Store::WriteGroup group(store_);
  store_.PutTrial(t.rec);
  DecideLocked(e, "delete_checkpoints", t.rec.index, -1, why);
}

}  // namespace trainingd::daemon
