// Recorder: a RunListener that keeps every event of every run, for executor tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "trainingd/daemon/executors/executor.h"

namespace trainingd::daemon {

// Records every event, per job, and lets a test wait for one.
class Recorder final : public RunListener {
 public:
  void OnRunEvent(const std::string& job_id, RunEvent event) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_[job_id].push_back(std::move(event));
    changed_.notify_all();
  }
  std::vector<RunEvent> Events(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return events_[id];
  }
  // Waits until the run of `id` reported something for which `pred` holds.
  template <typename Pred>
  bool WaitFor(const std::string& id, Pred pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(120), [&] {
      for (const RunEvent& e : events_[id]) {
        if (pred(e)) return true;
      }
      return false;
    });
  }
  bool WaitForEnd(const std::string& id) {
    return WaitFor(id, [](const RunEvent& e) { return std::holds_alternative<RunEnded>(e); });
  }
  const RunEnded& End(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::get<RunEnded>(events_[id].back());
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<RunEvent>> events_;
};

}  // namespace trainingd::daemon
