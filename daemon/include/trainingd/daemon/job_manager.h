// JobManager: the service behind the HTTP API -- a queue of jobs, a pool of worker threads that
// train them (engine::RunJob), their rows and scalars in the Store, their live events on the
// EventBus. Implements api::JobService (docs/architecture.md, docs/operations.md).
//
// States: queued -> running -> completed | failed | stopped, with stopping while a stop is in
// progress. Stop sets the job's stop flag (the running session stops after its current step,
// writes a final checkpoint and runs its end hooks) or, for a queued job, stops it at once.
// Resume puts a stopped or failed job back in the queue, optionally with a new max_steps; its new
// session restores the latest checkpoint, and scalars stamped after that checkpoint's step are
// dropped so every series stays monotonic in step. On start (Create), jobs the previous daemon
// left queued or running are queued again (and so resume from their checkpoints); a job that was
// stopping is marked stopped.
//
// Admission (docs/operations.md#admission): Submit and a Resume with a new max_steps check the
// spec against its dataset and estimate its memory and disk (engine::PlanJob); a job over the
// per-job budgets is refused with InvalidArgument naming the field that weighs most.
//
// Crash containment: a job's run is an exception boundary (std::bad_alloc included: the job
// fails, the daemon goes on). A job is marked running in the database before it trains; one
// found running at start-up was running when the daemon died, so its crash count goes up and it
// is queued again (resuming from its latest checkpoint) up to max_crash_restarts times in a row,
// then failed. Until it ends normally, such a job runs alone, so a job that kills the daemon
// cannot take an innocent neighbour's restarts with it.
//
// Storage faults (docs/operations.md#full-disk-and-storage-faults): when the database cannot be
// written because the disk is full or failing, running jobs are stopped (after a final
// checkpoint if one fits, else failed). While the database cannot be written, or the disk of the
// data directory or of its jobs/ has less than kMinFreeDiskBytes free, no queued job starts and
// Health() says degraded; a job whose own files no longer fit ends with a disk-full reason.
//
// Each job has a directory <data_dir>/jobs/<id>/ (JobFiles) holding its checkpoints, event files,
// profiler timelines and its rotated log. HTTP threads call the JobService methods: they never
// train and never wait for SQLite writes. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/daemon/dataset_cache.h"
#include "trainingd/daemon/event_bus.h"
#include "trainingd/daemon/job_files.h"
#include "trainingd/daemon/store.h"
#include "trainingd/engine/env.h"
#include "trainingd/engine/job_resources.h"
#include "trainingd/engine/job_runner.h"

namespace trainingd::daemon {

// The most jobs that may train at once.
inline constexpr int kMaxConcurrentJobs = 64;

// Below this much free space on the disk of the data directory or of its jobs/, queued jobs
// wait: a job's first checkpoint would not fit.
inline constexpr int64_t kMinFreeDiskBytes = int64_t{1} << 20;

struct JobManagerOptions {
  std::string data_dir = "var";                // jobs/<id>/ under it
  std::string data_root = "/usr/share/datasets";  // datasets by name
  int max_concurrent_jobs = 1;  // a 2-core machine trains one job at a time at full speed
  // Compute threads per job; 0 = the machine's cores / max_concurrent_jobs (at least 1), so jobs
  // never oversubscribe the cores.
  int threads_per_job = 0;
  size_t max_queued_jobs = 1000;  // Submit answers Unavailable beyond
  engine::Env* env = nullptr;     // null = Env::Default()

  // Admission budgets per job. Memory 0 = 3/4 of the machine's physical memory divided by
  // max_concurrent_jobs; disk 0 = half of the space free on the data directory's file system
  // when the job is submitted. A negative value turns that check off.
  int64_t max_job_memory_bytes = 0;
  int64_t max_job_disk_bytes = 0;
  // Per-job caps on what fills a disk (engine::JobRunLimits): checkpoints on disk at once
  // (max_to_keep must fit; hourly-preserved ones count), profiler timelines kept, log size
  // before rotation (one rotated file is kept).
  int max_checkpoints_per_job = 50;
  int max_profiler_traces_per_job = 20;
  int64_t max_log_bytes_per_job = int64_t{16} << 20;
  // A job running when the daemon died is queued again at most this many times in a row.
  int max_crash_restarts = 2;
  // Testing only (TRAININGD_TEST_ABORT_JOB): a job with this name aborts the process once it
  // reaches global step abort_at_step (0 = as soon as it starts running).
  std::string abort_job_name;
  int64_t abort_at_step = 0;
};

class JobManager final : public api::JobService {
 public:
  // Loads the jobs from `store`, re-queues the ones a previous run left unfinished, and starts
  // the workers. `store` and `bus` must outlive the manager.
  static engine::Result<std::unique_ptr<JobManager>> Create(Store& store, EventBus& bus,
                                                            JobManagerOptions options);
  ~JobManager() override;  // Shutdown()

  // Stops every running job gracefully (final checkpoints), waits for the workers and leaves the
  // stopped jobs queued in the database, so the next start resumes them; a job a user was
  // stopping ends stopped. Idempotent.
  void Shutdown();

  engine::Result<api::JobInfo> Submit(engine::JobSpec spec) override;
  engine::Result<api::JobPage> List(std::optional<api::JobState> state, int64_t limit,
                                    const std::string& cursor) override;
  engine::Result<api::JobInfo> Get(const std::string& id) override;
  engine::Result<api::JobInfo> Stop(const std::string& id) override;
  engine::Result<api::JobInfo> Resume(const std::string& id,
                                      std::optional<int64_t> max_steps) override;
  engine::Status Delete(const std::string& id) override;
  engine::Result<std::vector<api::ScalarPoint>> Scalars(const std::string& id,
                                                        const api::ScalarQuery& query) override;
  engine::Result<std::vector<std::string>> ScalarTags(const std::string& id) override;
  engine::Result<std::vector<api::CheckpointInfo>> Checkpoints(const std::string& id) override;
  engine::Result<std::vector<api::LogLine>> Logs(const std::string& id, int64_t from_line,
                                                 int64_t limit) override;
  engine::Result<std::unique_ptr<api::Subscription>> Subscribe(
      const std::string& job_id, int64_t after_id,
      std::function<void(const api::ServiceEvent&)> deliver) override;
  std::string Metrics() override;
  api::ServiceHealth Health() override;

  int threads_per_job() const { return threads_per_job_; }
  // The per-job budgets in force (the automatic ones resolved; disk: as of now).
  engine::JobBudget Budget() const;

 private:
  struct Job;  // in-memory state of one job
  JobManager(Store& store, EventBus& bus, JobManagerOptions options);
  void WorkerLoop();
  // The next job a worker may start, removed from the queue; null if none may start now.
  // Needs mu_.
  std::shared_ptr<Job> NextRunnableLocked();
  void RunOne(const std::shared_ptr<Job>& job);
  // RunOne's body, which may throw.
  engine::Result<engine::JobResult> Train(const std::shared_ptr<Job>& job);
  // Sets the job's end state from its result (or failure to run). Needs mu_.
  void FinishLocked(Job& job, const engine::Result<engine::JobResult>& result);
  // Admission: the spec checked against its dataset, estimated and held to the budgets.
  engine::Result<engine::JobResources> Admit(const engine::JobSpec& spec) const;
  engine::JobRunLimits RunLimits() const;
  // The store's writes started or stopped failing (its writer thread).
  void OnStoreHealth(const StoreHealth& health);
  // "the disk holding DIR is full (N free)" for the data directory and its jobs/, once per file
  // system, when less than kMinFreeDiskBytes is free.
  std::vector<std::string> DiskProblems() const;
  // Sets the state, writes the row's state columns and publishes the change. Needs mu_.
  void SetStateLocked(Job& job, api::JobState state);
  // The job as the API shows it; summaries (lists) leave out the spec.
  api::JobInfo InfoLocked(const Job& job, bool with_spec = true) const;
  std::shared_ptr<Job> FindLocked(const std::string& id) const;

  Store& store_;
  EventBus& bus_;
  JobManagerOptions options_;
  engine::Env* env_;
  int threads_per_job_ = 1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::deque<std::string> queue_;  // ids, oldest first
  bool shutting_down_ = false;
  int running_ = 0;  // jobs being trained
  bool running_suspect_ = false;  // one of them crashed the daemon before: it runs alone
  std::string store_failure_;  // why the database cannot be written; "" = it can
  std::vector<std::thread> workers_;

  DatasetCache datasets_;
  JobFiles files_;
};

}  // namespace trainingd::daemon
