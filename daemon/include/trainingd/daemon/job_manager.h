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
// Each job has a directory <data_dir>/jobs/<id>/ holding its checkpoints, event files, profiler
// timelines and log.txt. HTTP threads call the JobService methods: they never train and never
// wait for SQLite writes. Thread-safe.
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
#include "trainingd/daemon/event_bus.h"
#include "trainingd/daemon/store.h"
#include "trainingd/engine/dataset.h"
#include "trainingd/engine/env.h"

namespace trainingd::daemon {

struct JobManagerOptions {
  std::string data_dir = "var";                // jobs/<id>/ under it
  std::string data_root = "/usr/share/datasets";  // datasets by name
  int max_concurrent_jobs = 1;  // a 2-core machine trains one job at a time at full speed
  // Compute threads per job; 0 = the machine's cores / max_concurrent_jobs (at least 1), so jobs
  // never oversubscribe the cores.
  int threads_per_job = 0;
  size_t max_queued_jobs = 1000;  // Submit answers Unavailable beyond
  engine::Env* env = nullptr;     // null = Env::Default()
};

class JobManager final : public api::JobService {
 public:
  // Loads the jobs from `store`, re-queues the ones a previous run left unfinished, and starts
  // the workers. `store` and `bus` must outlive the manager.
  static engine::Result<std::unique_ptr<JobManager>> Create(Store& store, EventBus& bus,
                                                            JobManagerOptions options);
  ~JobManager() override;  // Shutdown()

  // Stops every running job gracefully (final checkpoints), waits for the workers and leaves the
  // stopped jobs queued in the database, so the next start resumes them. Idempotent.
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

  int threads_per_job() const { return threads_per_job_; }

 private:
  struct Job;  // in-memory state of one job
  JobManager(Store& store, EventBus& bus, JobManagerOptions options);
  void WorkerLoop();
  void RunOne(const std::shared_ptr<Job>& job);
  // Sets the state, writes the row's state columns and publishes the change. Needs mu_.
  void SetStateLocked(Job& job, api::JobState state);
  // The job as the API shows it; summaries (lists) leave out the spec.
  api::JobInfo InfoLocked(const Job& job, bool with_spec = true) const;
  std::string JobDir(const std::string& id) const;
  engine::Result<std::shared_ptr<const engine::Datasets>> DatasetsFor(const engine::JobSpec& spec);
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
  std::vector<std::thread> workers_;

  std::mutex data_mu_;  // the dataset cache
  std::map<std::string, std::weak_ptr<const engine::Datasets>> datasets_;
};

}  // namespace trainingd::daemon
