// ExperimentManager: hyperparameter search as a kind of work the daemon supervises
// (docs/experiments.md), the service behind the experiment routes (api::ExperimentService).
//
// An experiment's trials are ordinary jobs, submitted, resumed and stopped through the
// JobManager, so they run on whatever executor the daemon has and survive what jobs survive.
// The searcher (searcher.h) decides; this class keeps its decisions and carries them out:
//   - A trial trains to its rung's steps and ends (its job completes at max_steps = the rung's
//     steps, with a final checkpoint and evaluation). Its metric at that step is its result.
//   - A promotion resumes the trial's job from that checkpoint with the next rung's max_steps;
//     exact resume makes it end on the very parameters of a trial that ran straight through.
//   - Every decision is written in the same SQLite transaction as the job change it causes
//     (JobManager::RecordWith, Store::WriteGroup): after a kill -9 there is no job without its
//     trial row and no trial whose job was never made. On start, the manager reloads its rows and
//     reconciles them with the jobs (a trial whose job completed while the daemon was down gets
//     its result then), and the searcher, a pure function of those rows, decides as before.
//   - A failed trial is resumed from its checkpoint up to max_trial_restarts times, then
//     dropped from the rungs with its reason.
//   - Disk: a waiting trial's checkpoints are deleted as soon as its rung can no longer promote
//     it and it is not among the best keep_best trials; at the end only the best keep_best keep
//     theirs.
//
// One thread (the supervisor) reacts to the jobs' state changes, which it learns from the
// EventBus, and to the budget's clock. HTTP threads call the ExperimentService methods. Lock
// order: this manager's lock, then the JobManager's; the JobManager calls back only into a
// leaf lock (SetTrialOwner). Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trainingd/api/experiment_service.h"
#include "trainingd/daemon/jobs/event_bus.h"
#include "trainingd/daemon/jobs/job_manager.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/env.h"

namespace trainingd::daemon {

struct ExperimentManagerOptions {
  engine::Env* env = nullptr;  // null = Env::Default()
  // How often the supervisor measures a running experiment's disk and checks its wall-time
  // budget.
  std::chrono::milliseconds tick{1000};
};

class ExperimentManager final : public api::ExperimentService {
 public:
  // Loads the experiments from `store`, reconciles their trials with `jobs` and goes on with
  // the running ones. Everything given must outlive the manager.
  static engine::Result<std::unique_ptr<ExperimentManager>> Create(
      Store& store, EventBus& bus, JobManager& jobs, ExperimentManagerOptions options);
  ~ExperimentManager() override;  // Shutdown()

  // Stops the supervisor; experiments stay as they are in the database (their trials' jobs are
  // the JobManager's to stop). Call before the JobManager's Shutdown. Idempotent.
  void Shutdown();

  engine::Result<api::ExperimentPlan> Preview(const api::ExperimentSpec& spec) override;
  engine::Result<api::ExperimentInfo> Submit(
      api::ExperimentSpec spec, std::string spec_json,
      std::string owner = std::string(api::kAdminUser)) override;
  engine::Result<api::ExperimentPage> List(std::optional<api::ExperimentState> state, int64_t limit,
                                           const std::string& cursor) override;
  engine::Result<api::ExperimentInfo> Get(const std::string& id) override;
  engine::Result<api::TrialPage> Trials(const std::string& id,
                                        const api::TrialQuery& query) override;
  engine::Result<api::ExperimentInfo> Stop(const std::string& id) override;
  engine::Result<api::ExperimentInfo> Resume(const std::string& id) override;
  engine::Status Delete(const std::string& id) override;
  std::vector<api::Metric> Metrics() override;

 private:
  struct Trial;
  struct Experiment;
  // What the supervisor learned of a trial's job outside the lock.
  struct JobNews;

  ExperimentManager(Store& store, EventBus& bus, JobManager& jobs,
                    ExperimentManagerOptions options);
  engine::Status Load();
  void SupervisorLoop();
  // The job's state, and its metric at its final step if it completed.
  JobNews Look(const std::string& job_id, const std::string& metric);
  // Brings a trial up to date with what its job did. Needs mu_.
  void ReconcileLocked(Experiment& e, Trial& t, const JobNews& news);
  void RecordResultLocked(Experiment& e, Trial& t, const JobNews& news);
  void TrialEndedBadlyLocked(Experiment& e, Trial& t, const std::string& why);
  // Starts trials and promotions while there is room; ends the experiment when nothing is left.
  void ScheduleLocked(Experiment& e);
  void StartTrialLocked(Experiment& e, int64_t index);
  void PromoteLocked(Experiment& e, Trial& t, int rung);
  // Ends the experiment: stops its active trials first (state stopping until they have).
  void EndLocked(Experiment& e, api::ExperimentState state, const std::string& reason);
  // Once no trial is active: prunes what is left, keeps the best trials' checkpoints.
  void CompleteEndLocked(Experiment& e);
  // Deletes the checkpoints of waiting trials that can no longer be promoted and are not among
  // the best. Needs mu_.
  void PruneLocked(Experiment& e);
  void DeleteTrialCheckpointsLocked(Experiment& e, Trial& t, const std::string& why);
  // The experiment's disk from its trials' last measurements, and its peak.
  void SumDiskLocked(Experiment& e);
  // Whether the user may not `verb` trial jobs of experiment `id` on their own (leaf lock).
  bool Drives(const std::string& id, std::string_view verb);
  void UpdateOwnershipLocked(const Experiment& e);
  // Checks the trials a spec makes: trial 0, and each parameter at its extremes (or each of its
  // values), against the job manager's admission.
  engine::Status CheckTrialSpecs(const api::ExperimentSpec& spec) const;

  std::vector<struct TrialProgress> ProgressLocked(const Experiment& e) const;
  api::ExperimentInfo InfoLocked(const Experiment& e, bool detail) const;
  api::TrialInfo TrialInfoLocked(const Experiment& e, const Trial& t) const;
  std::optional<api::BestTrial> BestLocked(const Experiment& e) const;
  void PutLocked(Experiment& e);  // writes the row and publishes the change
  void DecideLocked(const Experiment& e, const std::string& kind, int64_t trial, int rung,
                    const std::string& detail);
  double SecondsUsedLocked(const Experiment& e) const;
  Experiment* FindLocked(const std::string& id);
  // Waits (bounded) until the writes queued so far are in the database.
  void AwaitStored(const std::string& what);

  Store& store_;
  EventBus& bus_;
  JobManager& jobs_;
  ExperimentManagerOptions options_;
  engine::Env* env_;

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Experiment>> experiments_;
  std::map<std::string, std::pair<std::string, int64_t>> trial_of_job_;  // job -> (exp, index)

  // The supervisor's inbox: jobs whose state changed.
  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::set<std::string> changed_jobs_;
  bool stopping_ = false;
  std::unique_ptr<api::Subscription> job_events_;
  std::thread supervisor_;

  // Experiments that keep users off their trials' jobs, by verb (a leaf lock: the job manager
  // asks under its own).
  std::mutex owner_mu_;
  std::set<std::string> driving_;  // running or stopping or stopped: no stop/resume
  std::set<std::string> owning_;   // every experiment: no delete
};

}  // namespace trainingd::daemon
