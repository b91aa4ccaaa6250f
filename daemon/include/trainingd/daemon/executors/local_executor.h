// LocalExecutor: runs jobs on threads of this process -- each run on its own thread with its own
// compute threads, inside engine::RunJob (a monitored training session) -- and reports what they
// do through the Executor interface (executor.h). What were the daemon's worker threads.
//
// Each run is an exception boundary: whatever it throws, std::bad_alloc included, ends that run
// with an error (ResourceExhausted for memory) in its RunEnded; the process goes on. Datasets are
// loaded once, shared by the runs that use them at the same time and kept a few seconds for the
// next (DatasetCache). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "trainingd/daemon/datasets/dataset_cache.h"
#include "trainingd/daemon/executors/executor.h"
#include "trainingd/daemon/executors/run_table.h"
#include "trainingd/engine/base/env.h"

namespace trainingd::daemon {

struct LocalExecutorOptions {
  int slots = 1;            // runs at once
  int threads_per_job = 1;  // compute threads of each run
  std::string data_root = "/usr/share/datasets";
  std::string datasets_dir;  // uploaded datasets
  // How long a dataset no run holds stays loaded: an experiment's trials and a queue's jobs follow
  // each other within milliseconds, and decoding Fashion-MNIST again takes 0.4 s.
  std::chrono::milliseconds keep_datasets_idle = std::chrono::seconds(10);
  engine::Env* env = nullptr;  // null = Env::Default()
};

class LocalExecutor final : public Executor {
 public:
  explicit LocalExecutor(LocalExecutorOptions options);
  ~LocalExecutor() override;  // Shutdown()

  int slots() const override { return options_.slots; }
  engine::Status Start(RunRequest request, RunListener& listener) override;
  void RequestStop(const std::string& job_id) override;
  void FreeIdle() override { datasets_.FreeIdle(); }
  void Shutdown() override;

 private:
  struct Run {
    std::atomic<bool> stop{false};
    std::thread thread;
  };
  // The run's body on its own thread: RunJob, its events, the exception boundary.
  void Body(const RunRequest& request, RunListener& listener, Run& run);

  const LocalExecutorOptions options_;
  DatasetCache datasets_;
  RunTable<Run> runs_;
};

}  // namespace trainingd::daemon
