// RunTable: the runs an executor holds, each on a thread of its own until it reports its end;
// what the LocalExecutor and the MpiExecutor share. `Run` is the executor's per-run state, with
// a `std::thread thread` and whatever its stop needs; the table adds the bookkeeping.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

template <typename Run>
class RunTable {
 public:
  // Adds a run for `id` and starts body(run) on its thread. Unavailable after Shutdown or with
  // all `slots` taken; FailedPrecondition when `id` runs already.
  template <typename Body>
  engine::Status Start(const std::string& id, int slots, Body body) {
    Reap();
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return engine::Status::Unavailable("the executor is shut down");
    if (runs_.count(id)) {
      return engine::Status::FailedPrecondition("job '" + id + "' is already running");
    }
    if (static_cast<int>(runs_.size()) >= slots) {
      return engine::Status::Unavailable("all " + std::to_string(slots) +
                                         " slots are running jobs");
    }
    auto entry = std::make_unique<Entry>();
    Entry& e = *entry;
    runs_.emplace(id, std::move(entry));
    e.run.thread = std::thread([body = std::move(body), &e]() mutable { body(e.run); });
    return engine::Status::Ok();
  }

  // fn(run) under the table's lock, if `id` runs.
  template <typename Fn>
  void With(const std::string& id, Fn fn) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(id);
    if (it != runs_.end()) fn(it->second->run);
  }

  // Called by the run's thread before it reports its end: its slot is free from then on (a
  // Start the listener makes for the next job finds room); its thread is joined later.
  void Finished(Run& run) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, e] : runs_) {
      if (&e->run == &run) e->done = true;
    }
  }

  // Refuses new runs, calls stop(run) on each under the lock, and joins them all.
  template <typename Fn>
  void Shutdown(Fn stop) {
    std::map<std::string, std::unique_ptr<Entry>> runs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shut_down_ = true;
      for (auto& [id, e] : runs_) stop(e->run);
      runs.swap(runs_);
    }
    for (auto& [id, e] : runs) e->run.thread.join();
  }

 private:
  struct Entry {
    Run run;
    bool done = false;  // guarded by mu_
  };
  // Joins the threads of runs that ended.
  void Reap() {
    std::vector<std::unique_ptr<Entry>> ended;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = runs_.begin(); it != runs_.end();) {
        if (it->second->done) {
          ended.push_back(std::move(it->second));
          it = runs_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& e : ended) e->run.thread.join();
  }

  std::mutex mu_;
  bool shut_down_ = false;
  std::map<std::string, std::unique_ptr<Entry>> runs_;  // by job id, until reaped
};

}  // namespace trainingd::daemon
