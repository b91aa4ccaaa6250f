// JobManager: the service behind the HTTP API (api::JobService) -- the jobs' state machine,
// admission and restart recovery, their rows and scalars in the Store and their live events on
// the EventBus. Which queued job starts next, and which runs are preempted, is its Scheduler's
// to say (scheduler.h: priority, fair share, submit time; quotas), which it holds under its own
// lock. It does not run jobs: it hands each to an Executor (executor.h) and learns what the run
// does from the executor's events (docs/architecture.md).
//
// States: queued -> running -> completed | failed | stopped, with stopping while a stop is in
// progress; running -> stopping -> preempted -> running when the scheduler preempts a run for a
// more urgent job (PreemptLocked): the run stops as a user's stop does (final checkpoint), the
// job waits at its original submit time and its next run resumes from that checkpoint; neither
// a failure nor a crash restart.
//
// Stop asks the executor to stop the run (it stops after its current step, writes a final
// checkpoint and runs its end hooks) or, for a queued job, stops it at once. Resume puts a
// stopped, failed or completed job back in the queue, optionally with a new max_steps; its new
// run restores the latest checkpoint, and scalars stamped after that checkpoint's step are
// dropped so every series stays monotonic in step. On start (Create), jobs the previous daemon
// left queued, preempted or running are queued again (and so resume from their checkpoints); a
// job that was stopping is marked stopped, or preempted if a preemption was stopping it.
//
// Admission (docs/operations.md#admission): Submit and a Resume with a new max_steps check the
// spec against its dataset and estimate its memory and disk (engine::PlanJob); a job over the
// per-job budgets is refused with InvalidArgument naming the field that weighs most.
//
// Crash containment: a job is marked running in the database before its run starts; one found
// running at start-up was running when the daemon died, so its crash count goes up and it is
// queued again (resuming from its latest checkpoint) up to max_crash_restarts times in a row,
// then failed. Until it ends normally, such a job runs alone, so a job that kills the daemon
// cannot take an innocent neighbour's restarts with it. (That a run throws is the executor's to
// contain: it ends the run with an error.)
//
// Storage faults: when the database cannot be written because the disk is full or failing,
// running jobs are stopped (a final checkpoint if one fits, else failed) and no queued job
// starts until writes succeed again; a data or jobs/ disk with less than kMinFreeDiskBytes free
// holds the queue too. Health() says degraded meanwhile.
//
// Each job has a directory <data_dir>/jobs/<id>/ (JobFiles) holding its checkpoints, event files,
// profiler timelines and its rotated log, which the manager writes from the run's log events.
// HTTP threads call the JobService methods: they never train and never wait for SQLite writes.
// One scheduling thread starts the queued jobs the Scheduler picks as the executor's slots free
// up. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/daemon/executors/executor.h"
#include "trainingd/daemon/jobs/event_bus.h"
#include "trainingd/daemon/jobs/job_files.h"
#include "trainingd/daemon/jobs/job_limits.h"
#include "trainingd/daemon/scheduler/scheduler.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_runner.h"

namespace trainingd::daemon {

// The most jobs that may train at once.
inline constexpr int kMaxConcurrentJobs = 64;

// Below this much free space on the disk of the data directory or of its jobs/, queued jobs
// wait: a job's first checkpoint would not fit.
inline constexpr int64_t kMinFreeDiskBytes = int64_t{1} << 20;

struct JobManagerOptions {
  std::string data_dir = "var";  // jobs/<id>/ under it
  // The jobs' directories instead: "" = <data_dir>/jobs. A Slurm executor's job_root, which the
  // cluster's nodes share.
  std::string jobs_dir;
  std::string data_root = "/usr/share/datasets";  // datasets by name (admission reads them)
  std::string datasets_dir;  // uploaded datasets (DatasetStore); admission reads them too
  // Makes a submitted spec's dataset exact before admission (DatasetStore::ResolveJobDataset:
  // an upload's digest and options go into the canonical spec). Empty = taken as given.
  std::function<engine::Status(engine::DatasetSpec*)> resolve_dataset;
  // Compute threads each run uses (the executor's), for admission's memory estimate.
  int threads_per_job = 1;
  size_t max_queued_jobs = 1000;  // Submit answers Unavailable beyond
  engine::Env* env = nullptr;     // null = Env::Default()

  JobLimits limits;  // budgets, caps, crash restarts (job_limits.h)
  // Fair share, quotas and preemption (scheduler.h); its clock null = env's.
  SchedulerOptions scheduler;
  // Testing only (TRAININGD_TEST_ABORT_JOB): a job with this name aborts the process once it
  // reaches global step abort_at_step (0 = as soon as it starts running).
  std::string abort_job_name;
  int64_t abort_at_step = 0;
};

class JobManager final : public api::JobService, private RunListener {
 public:
  struct Job;  // in-memory state of one job (src/jobs/job.h)

  // Loads the jobs from `store`, re-queues the ones a previous run left unfinished, and starts
  // scheduling them on `executor`. `store` and `bus` must outlive the manager.
  static engine::Result<std::unique_ptr<JobManager>> Create(Store& store, EventBus& bus,
                                                            std::unique_ptr<Executor> executor,
                                                            JobManagerOptions options);
  ~JobManager() override;  // Shutdown()

  // Stops every running job gracefully (final checkpoints), waits for their runs to end and
  // leaves the jobs they stopped queued in the database, so the next start resumes them.
  // Idempotent.
  void Shutdown();

  engine::Result<api::JobInfo> Submit(engine::JobSpec spec, std::string spec_json,
                                      std::string owner = std::string(api::kAdminUser)) override;
  // The ids of the queued, running and stopping jobs `owner` owns (a user that has some cannot
  // be deleted).
  std::vector<std::string> ActiveJobsOf(const std::string& owner) const;
  // The ids of the queued, running and stopping jobs that read uploaded dataset `name`.
  std::vector<std::string> JobsUsingDataset(const std::string& name) const;
  // The directory of the job's checkpoints and model.json (what the model server serves);
  // NotFound when there is no such job.
  engine::Result<std::string> CheckpointDir(const std::string& id) const;
  engine::Result<api::JobPage> List(std::optional<api::JobState> state, int64_t limit,
                                    const std::string& cursor) override;
  engine::Result<api::JobInfo> Get(const std::string& id) override;
  engine::Result<api::JobInfo> Stop(const std::string& id) override;
  engine::Result<api::JobInfo> Resume(const std::string& id,
                                      std::optional<int64_t> max_steps) override;
  engine::Status Delete(const std::string& id) override;
  // The job's place in the queue (scheduler.h); kept for its later runs too.
  engine::Result<api::JobInfo> SetPriority(const std::string& id, int64_t priority) override;
  engine::Result<std::vector<api::ScalarPoint>> Scalars(const std::string& id,
                                                        const api::ScalarQuery& query) override;
  engine::Result<std::vector<std::string>> ScalarTags(const std::string& id) override;
  engine::Result<std::vector<api::CheckpointInfo>> Checkpoints(const std::string& id) override;
  engine::Result<api::EvaluationInfo> Evaluation(const std::string& id,
                                                 const std::string& split) override;
  engine::Result<std::vector<api::LogLine>> Logs(const std::string& id, int64_t from_line,
                                                 int64_t limit) override;
  engine::Result<std::unique_ptr<api::Subscription>> Subscribe(
      const std::string& job_id, int64_t after_id,
      std::function<void(const api::ServiceEvent&)> deliver) override;
  std::vector<api::Metric> Metrics() override;
  api::ServiceHealth Health() override;

  // The per-job budgets in force (the automatic ones resolved; disk: as of now).
  engine::JobBudget Budget() const;
  // The owner's fair-share usage in slot-seconds as of now (scheduler.h; kept in the store).
  double FairShareUsage(const std::string& owner) const;

  // --- for the experiment manager (experiments/experiment_manager.h), whose trials are jobs ---
  // Admission alone: whether Submit would take `spec` (the dataset resolved, the model fitted,
  // the budgets held to), without submitting it.
  engine::Status CheckAdmission(engine::JobSpec spec) const;
  // Writes the experiment manager queues along with a job change: called under the manager's
  // lock with the changed job, inside a Store::WriteGroup, so the change and these writes commit
  // in one transaction. It may only queue writes on the store.
  using RecordWith = std::function<void(const api::JobInfo&)>;
  // Submit, of a job that is trial `trial` of an experiment; `owner` is the experiment's.
  engine::Result<api::JobInfo> SubmitTrial(engine::JobSpec spec, std::string spec_json,
                                           const api::TrialRef& trial, const RecordWith& with,
                                           std::string owner = std::string(api::kAdminUser));
  // Resume, Stop and Delete of a trial's job by its experiment.
  engine::Result<api::JobInfo> ResumeTrial(const std::string& id, std::optional<int64_t> max_steps,
                                           const RecordWith& with);
  engine::Result<api::JobInfo> StopTrial(const std::string& id);
  engine::Status DeleteTrial(const std::string& id);
  // Deletes the checkpoints of a job that is not running (an experiment's pruned trial); its
  // row, log, scalars and event files stay. A later resume starts from step 0.
  engine::Status DeleteCheckpoints(const std::string& id);
  // The bytes of the job's directory (checkpoints, event files, log); 0 for an unknown job.
  int64_t DiskBytes(const std::string& id) const;
  // Whether the experiment a trial's job belongs to keeps a user from doing `verb` ("stop",
  // "resume", "delete") to the job on its own; then that answers FailedPrecondition naming the
  // experiment. Called under the manager's lock: it must not call back into the manager.
  void SetTrialOwner(
      std::function<bool(const std::string& experiment_id, std::string_view verb)> drives);

 private:
  JobManager(Store& store, EventBus& bus, std::unique_ptr<Executor> executor,
             JobManagerOptions options);
  // Submit, Stop and Resume change the job, then Recorded waits (at most kRecordTimeout) until
  // the change is in the database: a kill -9 right after the reply keeps it (a stop that was
  // acknowledged and then lost would let a cluster job run on). While the database fails, the
  // reply does not wait (Store::FlushForReply): the change is held in memory and retried.
  static constexpr std::chrono::seconds kRecordTimeout{5};
  engine::Result<api::JobInfo> Recorded(engine::Result<api::JobInfo> changed);
  // Waits at most `timeout` until every write queued so far is in the database; logs "job
  // <job_id>: <what> is not yet in the database" if not. Not under mu_.
  void AwaitStored(const std::string& job_id, const char* what, std::chrono::seconds timeout);
  engine::Result<api::JobInfo> SubmitUnrecorded(engine::JobSpec spec, std::string spec_json,
                                                std::string owner,
                                                const api::TrialRef* trial = nullptr,
                                                const RecordWith& with = nullptr);
  engine::Result<api::JobInfo> StopUnrecorded(const std::string& id, bool by_owner);
  engine::Result<api::JobInfo> ResumeUnrecorded(const std::string& id,
                                                std::optional<int64_t> max_steps, bool by_owner,
                                                const RecordWith& with = nullptr);
  engine::Status DeleteJob(const std::string& id, bool by_owner);
  // FailedPrecondition when the job is a trial its experiment still drives. Needs mu_.
  engine::Status CheckNotDrivenLocked(const Job& job, const char* verb) const;
  // Loads every job from the store and queues again the ones a previous daemon left unfinished
  // (job_recovery.cpp). Called once, by Create, before the scheduling thread starts.
  engine::Status Recover();
  // The scheduling thread: starts the queued jobs scheduler_ picks while the executor has free
  // slots.
  void ScheduleLoop();
  // The next job that may start, removed from the queue; null if none may start now. Needs mu_.
  std::shared_ptr<Job> NextRunnableLocked();
  // Asks the runs the scheduler chooses as victims to stop for more urgent queued jobs (their
  // final checkpoint is the stop's). Needs mu_.
  void PreemptLocked();
  // Queues the store's writes of the fair-share accounts the scheduler charged since the last
  // call, so that usage outlives a restart. Needs mu_.
  void SaveUsageLocked();
  // RunListener: what a run reports (executor threads).
  void OnRunEvent(const std::string& job_id, RunEvent event) override;
  // Sets the job's end state from its run's result. Needs mu_.
  void FinishLocked(Job& job, const engine::Result<engine::JobResult>& result);
  // Admission: the spec checked against its dataset, estimated and held to the budgets.
  // Admission; fits a preset's last layer to the dataset's classes in *spec (FitModelToData), so
  // the spec kept is the model that runs.
  engine::Result<engine::JobResources> Admit(engine::JobSpec* spec) const;
  // What a run of `spec` may use: the daemon's caps, and the spec's threads or the daemon's.
  engine::JobRunLimits RunLimits(const engine::JobSpec& spec) const;
  // The store's writes started or stopped failing (its writer thread).
  void OnStoreHealth(const StoreHealth& health);
  // <data_dir>/jobs, or options_.jobs_dir.
  std::string JobsDir() const;
  // Disks under the data directory with less than kMinFreeDiskBytes free, as problems.
  std::vector<std::string> DiskProblems() const;
  // Sets the state, writes the row's state columns and publishes the change. Needs mu_.
  void SetStateLocked(Job& job, api::JobState state);
  // The job as the API shows it; summaries (lists) leave out the spec.
  api::JobInfo InfoLocked(const Job& job, bool with_spec = true) const;
  std::shared_ptr<Job> FindLocked(const std::string& id) const;

  Store& store_;
  EventBus& bus_;
  const std::unique_ptr<Executor> executor_;
  JobManagerOptions options_;
  engine::Env* env_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // the scheduler waits on it
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  Scheduler scheduler_;  // the queued jobs and their order; guarded by mu_
  bool shutting_down_ = false;
  int running_ = 0;               // runs started and not ended
  bool running_suspect_ = false;  // one of them crashed the daemon before: it runs alone
  std::string store_failure_;     // why the database cannot be written; "" = it can
  std::thread schedule_thread_;
  std::function<bool(const std::string&, std::string_view)> trial_owner_;  // guarded by mu_

  JobFiles files_;
};

}  // namespace trainingd::daemon
