// FakeJobService: an in-memory JobService for the router and server tests. Jobs live in a map;
// events are published by the test (Publish) and delivered in id order to subscribers, on the
// publishing thread, under the service's lock (so Subscribe's replay and live delivery never
// interleave). Every call can be made to fail (FailNext) or throw (ThrowNext). Thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/api/job_spec_json.h"

namespace trainingd::api {

class FakeJobService : public JobService {
 public:
  // What the router last passed in, for assertions.
  struct Calls {
    std::optional<JobState> list_state;
    int64_t list_limit = -1;
    std::string list_cursor;
    std::optional<int64_t> resume_max_steps;
    ScalarQuery scalar_query;
    int64_t logs_from = -1, logs_limit = -1;
    std::string evaluation_split = "(none)";
    int64_t subscribe_after = -1;
    std::string subscribe_job = "<none>";
  };

  void FailNext(engine::Status status) {
    std::lock_guard lock(mu_);
    fail_next_ = std::move(status);
  }
  void ThrowNext() { throw_next_ = true; }

  // While closed, Scalars() waits (as a slow SQLite read would) until the gate opens again.
  void CloseScalarsGate() {
    std::lock_guard lock(gate_mu_);
    gate_open_ = false;
  }
  void OpenScalarsGate() {
    {
      std::lock_guard lock(gate_mu_);
      gate_open_ = true;
    }
    gate_cv_.notify_all();
  }
  int scalars_waiting() const {
    std::lock_guard lock(gate_mu_);
    return gate_waiting_;
  }

  Calls calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

  // Adds a job directly (bypassing Submit) in `state`; returns its id.
  std::string AddJob(const std::string& name, JobState state) {
    std::lock_guard lock(mu_);
    return AddLocked(name, state, 1000, "{\"name\":\"" + name + "\"}");
  }
  void SetState(const std::string& id, JobState state) {
    std::lock_guard lock(mu_);
    jobs_.at(id).state = state;
  }

  // Publishes an event on the stream of `job_id` ("" = the job list); returns its id.
  int64_t Publish(const std::string& job_id, EventKind kind, decltype(ServiceEvent::data) data) {
    std::lock_guard lock(mu_);
    Stream& stream = streams_[job_id];
    ServiceEvent event{++stream.last_id, kind, std::move(data)};
    stream.history.push_back(event);
    for (auto& [key, deliver] : stream.subscribers) deliver(event);
    return event.id;
  }

  size_t SubscriberCount(const std::string& job_id) const {
    std::lock_guard lock(mu_);
    auto it = streams_.find(job_id);
    return it == streams_.end() ? 0 : it->second.subscribers.size();
  }

  engine::Result<JobInfo> Submit(engine::JobSpec spec, std::string spec_json,
                                 std::string owner = std::string(kAdminUser)) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    std::string id = AddLocked(spec.name, JobState::kQueued, spec.max_steps, std::move(spec_json));
    jobs_.at(id).owner = std::move(owner);
    return jobs_.at(id);
  }
  void SetOwner(const std::string& id, const std::string& owner) {
    std::lock_guard lock(mu_);
    jobs_.at(id).owner = owner;
  }

  engine::Result<JobPage> List(std::optional<JobState> state, int64_t limit,
                               const std::string& cursor) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    calls_.list_state = state;
    calls_.list_limit = limit;
    calls_.list_cursor = cursor;
    JobPage page;
    bool started = cursor.empty();
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (!started) {
        started = *it == cursor;
        continue;
      }
      const JobInfo& job = jobs_.at(*it);
      if (state && job.state != *state) continue;
      if (static_cast<int64_t>(page.jobs.size()) == limit) {
        page.next_cursor = page.jobs.back().id;
        break;
      }
      JobInfo summary = job;
      summary.spec_json.clear();
      page.jobs.push_back(summary);
    }
    if (!started) return engine::Status::InvalidArgument("cursor: unknown cursor");
    return page;
  }

  engine::Result<JobInfo> Get(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound(id);
    return it->second;
  }

  engine::Result<JobInfo> Stop(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound(id);
    JobInfo& job = it->second;
    if (job.state == JobState::kQueued) {
      job.state = JobState::kStopped;
    } else if (job.state == JobState::kRunning) {
      job.state = JobState::kStopping;
    } else {
      return engine::Status::FailedPrecondition("job " + id + " is " + JobStateName(job.state) +
                                                "; only queued or running jobs can be stopped");
    }
    return job;
  }

  engine::Result<JobInfo> SetPriority(const std::string& id, int64_t priority) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound(id);
    it->second.priority = priority;
    return it->second;
  }

  engine::Result<JobInfo> Resume(const std::string& id, std::optional<int64_t> max_steps) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    calls_.resume_max_steps = max_steps;
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound(id);
    JobInfo& job = it->second;
    if (job.state != JobState::kStopped && job.state != JobState::kFailed) {
      return engine::Status::FailedPrecondition("job " + id + " is " + JobStateName(job.state) +
                                                "; only stopped or failed jobs can be resumed");
    }
    if (max_steps && *max_steps <= job.global_step) {
      return engine::Status::InvalidArgument("max_steps: must be > the job's global_step");
    }
    job.state = JobState::kQueued;
    if (max_steps) job.max_steps = *max_steps;
    return job;
  }

  engine::Status Delete(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound(id);
    if (it->second.state == JobState::kRunning || it->second.state == JobState::kStopping) {
      return engine::Status::FailedPrecondition("job " + id + " is " +
                                                JobStateName(it->second.state));
    }
    jobs_.erase(it);
    order_.erase(std::find(order_.begin(), order_.end(), id));
    return engine::Status::Ok();
  }

  // "loss" has points at steps 0, 10, ..., 990 with value step / 10; other tags have none.
  engine::Result<std::vector<ScalarPoint>> Scalars(const std::string& id,
                                                   const ScalarQuery& query) override {
    {
      std::unique_lock gate(gate_mu_);
      ++gate_waiting_;
      gate_cv_.wait(gate, [this] { return gate_open_; });
      --gate_waiting_;
    }
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    calls_.scalar_query = query;
    if (!jobs_.count(id)) return NotFound(id);
    std::vector<ScalarPoint> points;
    if (query.tag != "loss") return points;
    for (int64_t step = 0; step < 1000; step += 10) {
      if (query.from_step && step < *query.from_step) continue;
      if (query.to_step && step > *query.to_step) continue;
      double v = static_cast<double>(step) / 10;
      points.push_back({step, 1700000000.0 + static_cast<double>(step), v, v, v});
    }
    if (static_cast<int64_t>(points.size()) > query.max_points) points.resize(query.max_points);
    return points;
  }

  engine::Result<std::vector<std::string>> ScalarTags(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    if (!jobs_.count(id)) return NotFound(id);
    return std::vector<std::string>{"accuracy", "loss"};
  }

  engine::Result<std::vector<CheckpointInfo>> Checkpoints(const std::string& id) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    if (!jobs_.count(id)) return NotFound(id);
    return std::vector<CheckpointInfo>{{500, "model.ckpt-500", 1234, 1700000500.0},
                                       {1000, "model.ckpt-1000", 1234, 1700001000.0}};
  }

  // A two-class validation evaluation at step 1000 ("cat", "dog"); none of another split.
  engine::Result<EvaluationInfo> Evaluation(const std::string& id,
                                            const std::string& split) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    calls_.evaluation_split = split;
    if (!jobs_.count(id)) return NotFound(id);
    if (!split.empty() && split != "validation") {
      return engine::Status::NotFound("job '" + id + "' has no evaluation of the " + split +
                                      " split yet");
    }
    EvaluationInfo info;
    info.wall_time = 1700001000.5;
    engine::EvaluationSummary& e = info.evaluation;
    e.split = "validation";
    e.step = 1000;
    e.loss = 0.25;
    e.class_names = {"cat", "dog"};
    const std::vector<double> p = {0.9, 0.1, 0.4, 0.6, 0.3, 0.7, 0.8, 0.2, 0.2, 0.8};
    const std::vector<int32_t> y = {0, 0, 1, 1, 1};
    e.metrics = engine::ComputeClassificationMetrics(p, 2, y);
    return info;
  }

  // Ten lines, "line 1" .. "line 10".
  engine::Result<std::vector<LogLine>> Logs(const std::string& id, int64_t from_line,
                                            int64_t limit) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    calls_.logs_from = from_line;
    calls_.logs_limit = limit;
    if (!jobs_.count(id)) return NotFound(id);
    std::vector<LogLine> lines;
    for (int64_t n = from_line; n <= 10 && n < from_line + limit; ++n) {
      lines.push_back({n, "line " + std::to_string(n)});
    }
    return lines;
  }

  engine::Result<std::unique_ptr<Subscription>> Subscribe(
      const std::string& job_id, int64_t after_id,
      std::function<void(const ServiceEvent&)> deliver) override {
    std::lock_guard lock(mu_);
    if (auto s = Injected(); !s.ok()) return s;
    calls_.subscribe_after = after_id;
    calls_.subscribe_job = job_id;
    if (!job_id.empty() && !jobs_.count(job_id)) return NotFound(job_id);
    Stream& stream = streams_[job_id];
    for (const ServiceEvent& event : stream.history) {
      if (event.id > after_id) deliver(event);
    }
    int64_t key = ++next_subscriber_;
    stream.subscribers.emplace(key, std::move(deliver));
    return std::unique_ptr<Subscription>(std::make_unique<FakeSubscription>(this, job_id, key));
  }

  std::vector<Metric> Metrics() override {
    std::lock_guard lock(mu_);
    return {SingleMetric("trainingd_jobs", "Jobs.", MetricType::kGauge,
                         static_cast<double>(jobs_.size()))};
  }

  ServiceHealth Health() override {
    std::lock_guard lock(mu_);
    return health_;
  }
  void SetHealth(ServiceHealth h) {
    std::lock_guard lock(mu_);
    health_ = std::move(h);
  }

 private:
  ServiceHealth health_;
  struct Stream {
    int64_t last_id = 0;
    std::vector<ServiceEvent> history;
    std::map<int64_t, std::function<void(const ServiceEvent&)>> subscribers;
  };

  class FakeSubscription : public Subscription {
   public:
    FakeSubscription(FakeJobService* service, std::string job_id, int64_t key)
        : service_(service), job_id_(std::move(job_id)), key_(key) {}
    ~FakeSubscription() override {
      std::lock_guard lock(service_->mu_);
      service_->streams_[job_id_].subscribers.erase(key_);
    }

   private:
    FakeJobService* service_;
    std::string job_id_;
    int64_t key_;
  };

  static engine::Status NotFound(const std::string& id) {
    return engine::Status::NotFound("job " + id + " not found");
  }

  // The injected failure, if any, once; throws when asked to.
  engine::Status Injected() {
    if (throw_next_.exchange(false)) throw std::runtime_error("injected failure");
    engine::Status s = std::move(fail_next_);
    fail_next_ = engine::Status::Ok();
    return s;
  }

  std::string AddLocked(const std::string& name, JobState state, int64_t max_steps,
                        std::string spec_json) {
    std::string id = "job-" + std::to_string(++next_id_);
    JobInfo job;
    job.id = id;
    job.name = name;
    job.state = state;
    job.max_steps = max_steps;
    job.created_at = 1700000000.0 + static_cast<double>(next_id_);
    job.spec_json = std::move(spec_json);
    jobs_.emplace(id, job);
    order_.push_back(id);
    return id;
  }

  mutable std::mutex mu_;
  mutable std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool gate_open_ = true;  // guarded by gate_mu_
  int gate_waiting_ = 0;   // guarded by gate_mu_
  engine::Status fail_next_;
  std::atomic<bool> throw_next_{false};
  Calls calls_;
  std::map<std::string, JobInfo> jobs_;
  std::vector<std::string> order_;  // oldest first
  std::map<std::string, Stream> streams_;
  int64_t next_id_ = 0;
  int64_t next_subscriber_ = 0;
};

}  // namespace trainingd::api
