// DatasetCache: the datasets of the jobs that run in this process, by name under one data root.
// Load() loads a dataset whole and shares it between the jobs that use it at the same time. When
// the last of them lets go, the dataset stays loaded for keep_idle, so that the next job on it (the
// next trial of an experiment, the next job of a queue) does not decode it again; a Load of another
// dataset frees the idle ones first, so an idle dataset never adds to what running jobs hold.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::daemon {

class DatasetCache {
 public:
  // keep_idle 0: a dataset is freed when its last job lets go.
  DatasetCache(std::string data_root, std::string datasets_dir,
               std::chrono::milliseconds keep_idle = std::chrono::milliseconds(0));
  ~DatasetCache();  // after every dataset it handed out has been let go
  DatasetCache(const DatasetCache&) = delete;
  DatasetCache& operator=(const DatasetCache&) = delete;

  // The loaded dataset, its labels read for `task`; one copy per (name, split options, task)
  // while anyone holds it or it is idle.
  engine::Result<std::shared_ptr<const engine::Datasets>> Load(
      const engine::DatasetSpec& dataset, engine::Task task = engine::Task::kClassification);

  // Frees every idle dataset now (a run in another process is about to need the memory).
  void FreeIdle();

  const std::string& data_root() const { return data_root_; }
  int resident() const;   // datasets loaded now, held or idle
  int64_t loads() const;  // datasets read from disk so far

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::shared_ptr<const engine::Datasets> data;
    int holders = 0;
    Clock::time_point idle_since;
  };
  void Release(const std::string& key);
  // Frees the idle datasets due by `now` (every idle one at time_point::max()); returns when the
  // next is due, or time_point::max() if none is idle. With mu_ held.
  Clock::time_point FreeIdleLocked(Clock::time_point now);
  void Sweep();  // the sweeper thread: frees each idle dataset keep_idle after it became idle

  const std::string data_root_;
  const std::string datasets_dir_;
  const std::chrono::milliseconds keep_idle_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  bool stopping_ = false;
  int64_t loads_ = 0;
  std::map<std::string, Entry> loaded_;
  std::thread sweeper_;  // only with keep_idle > 0
};

}  // namespace trainingd::daemon
