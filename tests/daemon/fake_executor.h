// FakeExecutor: an Executor whose runs the test drives -- it records what the manager starts and
// stops, and the test reports the runs' events (Emit, End) as an executor's thread would.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "trainingd/daemon/executors/executor.h"

namespace trainingd::daemon {

class FakeExecutor final : public Executor {
 public:
  // `cluster`: its runs outlive the daemon, as a Slurm executor's do.
  explicit FakeExecutor(int slots = 1, bool cluster = false) : slots_(slots), cluster_(cluster) {}

  int slots() const override { return slots_; }
  std::string Name(const engine::JobSpec&) const override { return cluster_ ? "slurm" : "local"; }
  bool RunsOutliveDaemon() const override { return cluster_; }

  engine::Status Start(RunRequest request, RunListener& listener) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!start_error_.ok()) return start_error_;
    if (shut_down_) return engine::Status::Unavailable("shut down");
    if (running_.count(request.job_id)) {
      return engine::Status::FailedPrecondition(request.job_id + " already running");
    }
    if (static_cast<int>(running_.size()) >= slots_) return engine::Status::Unavailable("full");
    running_[request.job_id] = &listener;
    started_.push_back(request);
    return engine::Status::Ok();
  }

  void RequestStop(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_.count(job_id)) stop_requests_.push_back(job_id);
  }

  void FreeIdle() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_idle_calls_;
  }

  // Ends every run as stopped (what a real executor's runs do when asked to stop).
  void Shutdown() override {
    std::map<std::string, RunListener*> runs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shut_down_ = true;
      runs = running_;
    }
    for (const auto& [id, listener] : runs) End(id, Stopped(last_step_[id]));
  }

  // --- the test's side ---
  // Reports an event of the run of `job_id`, as the run's own thread would.
  void Emit(const std::string& job_id, RunEvent event) {
    RunListener* listener = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      listener = running_.at(job_id);
      if (auto* s = std::get_if<ScalarRecorded>(&event)) last_step_[job_id] = s->step;
    }
    listener->OnRunEvent(job_id, std::move(event));
  }
  // Ends the run with `result` (its last event).
  void End(const std::string& job_id, engine::Result<engine::JobResult> result) {
    RunListener* listener = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      listener = running_.at(job_id);
      running_.erase(job_id);
    }
    listener->OnRunEvent(job_id, RunEnded{std::move(result)});
  }
  static engine::JobResult Result(engine::JobResult::Outcome outcome, int64_t step,
                                  std::string reason) {
    engine::JobResult r;
    r.outcome = outcome;
    r.global_step = step;
    r.reason = std::move(reason);
    return r;
  }
  static engine::JobResult Stopped(int64_t step) {
    return Result(engine::JobResult::Outcome::kStopped, step, "stop requested");
  }
  static engine::JobResult Completed(int64_t step) {
    return Result(engine::JobResult::Outcome::kCompleted, step, "reached max_steps");
  }

  std::vector<RunRequest> started() const {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  std::vector<std::string> stop_requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_requests_;
  }
  bool IsRunning(const std::string& job_id) const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_.count(job_id) > 0;
  }
  int free_idle_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return free_idle_calls_;
  }
  void FailStarts(engine::Status error) {
    std::lock_guard<std::mutex> lock(mu_);
    start_error_ = std::move(error);
  }

 private:
  const int slots_;
  const bool cluster_;
  mutable std::mutex mu_;
  bool shut_down_ = false;
  int free_idle_calls_ = 0;
  engine::Status start_error_;
  std::map<std::string, RunListener*> running_;
  std::map<std::string, int64_t> last_step_;
  std::vector<RunRequest> started_;
  std::vector<std::string> stop_requests_;
};

}  // namespace trainingd::daemon
