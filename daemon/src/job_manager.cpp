#include "trainingd/daemon/job_manager.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "machine.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/daemon/job_id.h"
#include "trainingd/engine/checkpoint_manager.h"
#include "trainingd/engine/hooks/step_counter_hook.h"
#include "trainingd/engine/job_runner.h"
#include "trainingd/engine/logger.h"
#include "trainingd/engine/parallel.h"

namespace trainingd::daemon {
namespace fs = std::filesystem;
namespace eng = trainingd::engine;
using api::JobState;
using json = nlohmann::json;

struct JobManager::Job {
  JobRecord rec;
  eng::JobSpec spec;
  std::atomic<bool> stop{false};
  double examples_per_sec = 0;
  std::map<std::string, double> latest;  // guarded by the manager's mu_
  // Why the daemon (not the user) stopped it, e.g. a full disk; "" = the user. Guarded by mu_.
  std::string stop_cause;
  eng::StatusCode stop_code = eng::StatusCode::kOk;  // ResourceExhausted or IoError with a cause
};

namespace {

bool IsEnded(JobState s) {
  return s == JobState::kCompleted || s == JobState::kFailed || s == JobState::kStopped;
}

std::string StateEventData(const JobRecord& r) {
  return json{{"id", r.id},           {"name", r.name},
              {"state", api::JobStateName(r.state)}, {"global_step", r.global_step},
              {"max_steps", r.max_steps}, {"error", r.error},
              {"reason", r.reason}}
      .dump();
}

// A job's console: each line appended to its log (JobFiles) and published as a "log" event. A
// line the disk has no room for is still published; the first such failure is kept, so the job
// can be ended for it (the session itself finds out at its next checkpoint or summary write).
class JobLogger final : public eng::Logger {
 public:
  JobLogger(JobFiles& files, EventBus& bus, std::string id)
      : files_(files), bus_(bus), id_(std::move(id)) {}
  void Log(eng::LogSeverity severity, std::string_view message) override {
    std::string line = std::string(eng::LogSeverityName(severity)) + ":trainingd:";
    line += message;
    std::lock_guard<std::mutex> lock(mu_);
    if (eng::Status st = files_.AppendLog(id_, line); !st.ok() && failure_.ok()) failure_ = st;
    bus_.Publish(id_, "log", json{{"text", line}}.dump());
  }
  eng::Status failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }

 private:
  std::mutex mu_;
  JobFiles& files_;
  EventBus& bus_;
  std::string id_;
  eng::Status failure_;
};

// "name" or "name@step", from TRAININGD_TEST_ABORT_JOB.
bool ShouldAbort(const JobManagerOptions& o, const std::string& name, int64_t step) {
  return !o.abort_job_name.empty() && o.abort_job_name == name && step >= o.abort_at_step;
}

}  // namespace

// Scalars from the job's session: into the database (queued, batched by the writer) and onto
// the bus. Runs on the job's worker thread.
class ScalarSink final : public eng::SummarySink {
 public:
  ScalarSink(Store& store, EventBus& bus, std::function<void(const std::string&, int64_t, double)>
                                              on_scalar,
             std::string job_id)
      : store_(store), bus_(bus), on_scalar_(std::move(on_scalar)), job_id_(std::move(job_id)) {}
  eng::Status AddScalar(std::string_view tag, int64_t step, double value,
                        double wall_time) override {
    const std::string t(tag);
    store_.AddScalars({ScalarRecord{job_id_, t, step, wall_time, value}});
    bus_.Publish(job_id_, "scalar",
                 json{{"tag", t}, {"step", step}, {"value", value}, {"wall_time", wall_time}}
                     .dump());
    on_scalar_(t, step, value);
    return eng::Status::Ok();
  }

 private:
  Store& store_;
  EventBus& bus_;
  std::function<void(const std::string&, int64_t, double)> on_scalar_;
  std::string job_id_;
};

JobManager::JobManager(Store& store, EventBus& bus, JobManagerOptions options)
    : store_(store),
      bus_(bus),
      options_(std::move(options)),
      env_(options_.env ? options_.env : eng::Env::Default()),
      datasets_(options_.data_root),
      files_(JobFilesOptions{options_.data_dir, options_.max_log_bytes_per_job}) {}

eng::Result<std::unique_ptr<JobManager>> JobManager::Create(Store& store, EventBus& bus,
                                                            JobManagerOptions options) {
  if (options.max_concurrent_jobs < 1 || options.max_concurrent_jobs > kMaxConcurrentJobs) {
    return eng::Status::InvalidArgument("max_concurrent_jobs must be in [1, " +
                                        std::to_string(kMaxConcurrentJobs) + "]");
  }
  if (options.max_checkpoints_per_job < 1 || options.max_profiler_traces_per_job < 1 ||
      options.max_log_bytes_per_job < 4096 || options.max_crash_restarts < 0) {
    return eng::Status::InvalidArgument(
        "max_checkpoints_per_job and max_profiler_traces_per_job must be >= 1, "
        "max_log_bytes_per_job >= 4096, max_crash_restarts >= 0");
  }
  std::unique_ptr<JobManager> m(new JobManager(store, bus, std::move(options)));
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  m->threads_per_job_ = m->options_.threads_per_job > 0
                            ? m->options_.threads_per_job
                            : std::max(1, cores / m->options_.max_concurrent_jobs);
  std::error_code ec;
  fs::create_directories(m->options_.data_dir + "/jobs", ec);
  if (ec) {
    return eng::Status::IoError(m->options_.data_dir + "/jobs: cannot create: " + ec.message());
  }
  // Load every job; the oldest unfinished ones go back in the queue first.
  std::vector<JobRecord> all;
  std::string cursor;
  for (;;) {
    auto page = store.ListJobs(std::nullopt, 1000, cursor);
    if (!page.ok()) return page.status();
    if (page->empty()) break;
    all.insert(all.end(), page->begin(), page->end());
    cursor = page->back().id;
  }
  std::reverse(all.begin(), all.end());  // oldest first
  for (JobRecord& r : all) {
    auto job = std::make_shared<Job>();
    auto spec = api::ParseJobSpec(r.spec_json);
    if (!spec.ok()) {
      r.state = JobState::kFailed;
      r.error = "stored spec no longer valid: " + spec.status().message();
    } else {
      job->spec = std::move(spec).value();
    }
    if (r.state == JobState::kRunning) {
      // Marked running before it trained and not ended: the daemon died under it.
      ++r.crash_count;
      if (r.crash_count > m->options_.max_crash_restarts) {
        r.state = JobState::kFailed;
        r.error = "Aborted: the daemon died while this job ran, " +
                  std::to_string(r.crash_count) + " times in a row";
        r.reason = "crashed the daemon: it was running each of the last " +
                   std::to_string(r.crash_count) +
                   " times the daemon died, so it is not restarted again (max_crash_restarts " +
                   std::to_string(m->options_.max_crash_restarts) + "); resume it to try again";
        r.finished_at = m->env_->NowSeconds();
      } else {
        r.state = JobState::kQueued;
        r.reason = "the daemon died while it ran; resumes from its latest checkpoint (restart " +
                   std::to_string(r.crash_count) + " of at most " +
                   std::to_string(m->options_.max_crash_restarts) + ")";
        m->queue_.push_back(r.id);
      }
      store.UpdateJobCrashCount(r.id, r.crash_count);
    } else if (r.state == JobState::kQueued) {
      m->queue_.push_back(r.id);
    } else if (r.state == JobState::kStopping) {
      r.state = JobState::kStopped;
      r.reason = "stop requested";
    }
    job->rec = r;
    store.UpdateJobState(r.id, r.state, r.started_at, r.finished_at, r.error, r.reason);
    auto latest = store.LatestScalars(r.id);
    if (latest.ok()) job->latest = *latest;
    m->jobs_.emplace(r.id, std::move(job));
  }
  store.SetHealthListener([p = m.get()](const StoreHealth& h) { p->OnStoreHealth(h); });
  for (int i = 0; i < m->options_.max_concurrent_jobs; ++i) {
    m->workers_.emplace_back([p = m.get()] { p->WorkerLoop(); });
  }
  return m;
}

JobManager::~JobManager() { Shutdown(); }

void JobManager::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_ && workers_.empty()) return;
    shutting_down_ = true;
    for (auto& [id, job] : jobs_) {
      if (job->rec.state == JobState::kRunning) job->stop = true;
    }
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  store_.SetHealthListener(nullptr);
  // Bounded: on a dead disk the store retries until its own give-up time at destruction.
  static_cast<void>(store_.Flush(std::chrono::seconds(10)));
}

engine::JobBudget JobManager::Budget() const {
  engine::JobBudget b;
  b.memory_bytes = options_.max_job_memory_bytes;
  if (b.memory_bytes == 0) {
    b.memory_bytes = PhysicalMemoryBytes() / 4 * 3 / options_.max_concurrent_jobs;
  }
  b.disk_bytes = options_.max_job_disk_bytes;
  if (b.disk_bytes == 0) {
    const int64_t free = FreeDiskBytes(options_.data_dir);
    b.disk_bytes = free > 0 ? free / 2 : -1;
  }
  b.memory_bytes = std::max<int64_t>(b.memory_bytes, 0);  // negative: unlimited (0)
  b.disk_bytes = std::max<int64_t>(b.disk_bytes, 0);
  return b;
}

eng::JobRunLimits JobManager::RunLimits() const {
  eng::JobRunLimits l;
  l.compute_threads = threads_per_job_;
  l.max_checkpoints = options_.max_checkpoints_per_job;
  l.max_profiler_traces = options_.max_profiler_traces_per_job;
  l.max_log_bytes = options_.max_log_bytes_per_job;
  return l;
}

eng::Result<eng::JobResources> JobManager::Admit(const eng::JobSpec& spec) const {
  TRAININGD_RETURN_IF_ERROR(eng::ValidateJobSpec(spec));
  if (spec.hooks.checkpoint.enabled &&
      spec.hooks.checkpoint.max_to_keep > options_.max_checkpoints_per_job) {
    return eng::Status::InvalidArgument(
        "hooks.checkpoint.max_to_keep: " + std::to_string(spec.hooks.checkpoint.max_to_keep) +
        " is more than this daemon keeps per job (max_checkpoints_per_job " +
        std::to_string(options_.max_checkpoints_per_job) + ")");
  }
  auto data = datasets_.Probe(spec.dataset);
  if (!data.ok()) return data.status();
  auto plan = eng::PlanJob(spec, *data, RunLimits());
  if (!plan.ok()) return plan.status();
  TRAININGD_RETURN_IF_ERROR(eng::CheckJobBudget(spec, *plan, Budget()));
  return plan;
}

std::shared_ptr<JobManager::Job> JobManager::FindLocked(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

api::JobInfo JobManager::InfoLocked(const Job& job, bool with_spec) const {
  api::JobInfo i;
  const JobRecord& r = job.rec;
  i.id = r.id;
  i.name = r.name;
  i.state = r.state;
  i.global_step = r.global_step;
  i.max_steps = r.max_steps;
  i.created_at = r.created_at;
  i.started_at = r.started_at;
  i.finished_at = r.finished_at;
  i.error = r.error;
  i.reason = r.reason;
  i.examples_per_sec = r.state == JobState::kRunning ? job.examples_per_sec : 0;
  i.latest_scalars = job.latest;
  if (with_spec) i.spec_json = r.spec_json;
  return i;
}

void JobManager::SetStateLocked(Job& job, JobState state) {
  JobRecord& r = job.rec;
  r.state = state;
  const double now = env_->NowSeconds();
  if (state == JobState::kRunning) r.started_at = now;
  if (IsEnded(state)) r.finished_at = now;
  if (state == JobState::kQueued) r.finished_at = 0;
  store_.UpdateJobState(r.id, r.state, r.started_at, r.finished_at, r.error, r.reason);
  const std::string data = StateEventData(r);
  bus_.Publish(r.id, "state", data);
  bus_.Publish("", "job", data);
}

eng::Result<api::JobInfo> JobManager::Submit(eng::JobSpec spec) {
  // Before the lock: the dataset's headers are read and the spec estimated.
  if (auto admitted = Admit(spec); !admitted.ok()) return admitted.status();
  auto job = std::make_shared<Job>();
  JobRecord& r = job->rec;
  r.name = spec.name;
  r.spec_json = api::JobSpecToJson(spec);
  r.created_at = env_->NowSeconds();
  r.max_steps = spec.max_steps;
  r.state = JobState::kQueued;
  job->spec = std::move(spec);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return eng::Status::Unavailable("the daemon is shutting down");
  if (queue_.size() >= options_.max_queued_jobs) {
    return eng::Status::Unavailable("the queue is full (" + std::to_string(queue_.size()) +
                                    " jobs waiting)");
  }
  do {
    r.id = NewJobId();
  } while (jobs_.count(r.id));
  r.checkpoint_dir = files_.Dir(r.id);
  store_.PutJob(r);
  jobs_.emplace(r.id, job);
  queue_.push_back(r.id);
  const std::string data = StateEventData(r);
  bus_.Publish(r.id, "state", data);
  bus_.Publish("", "job", data);
  cv_.notify_one();
  return InfoLocked(*job);
}

eng::Result<api::JobPage> JobManager::List(std::optional<JobState> state, int64_t limit,
                                           const std::string& cursor) {
  if (limit < 1 || limit > 1000) {
    return eng::Status::InvalidArgument("limit: must be in [1, 1000], got " +
                                        std::to_string(limit));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Job>> all;
  for (const auto& [id, job] : jobs_) {
    if (!state || job->rec.state == *state) all.push_back(job);
  }
  // Newest first; ties by id so the order is total and a cursor (an id) is stable.
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a->rec.created_at != b->rec.created_at ? a->rec.created_at > b->rec.created_at
                                                  : a->rec.id > b->rec.id;
  });
  size_t start = 0;
  if (!cursor.empty()) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const auto& j) { return j->rec.id == cursor; });
    if (it == all.end()) return eng::Status::InvalidArgument("cursor: unknown or expired");
    start = static_cast<size_t>(it - all.begin()) + 1;
  }
  api::JobPage page;
  for (size_t i = start; i < all.size() && page.jobs.size() < static_cast<size_t>(limit); ++i) {
    page.jobs.push_back(InfoLocked(*all[i], /*with_spec=*/false));
  }
  if (start + page.jobs.size() < all.size()) page.next_cursor = page.jobs.back().id;
  return page;
}

eng::Result<api::JobInfo> JobManager::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto job = FindLocked(id);
  if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
  return InfoLocked(*job);
}

eng::Result<api::JobInfo> JobManager::Stop(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto job = FindLocked(id);
  if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
  switch (job->rec.state) {
    case JobState::kQueued:
      queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
      job->rec.reason = "stopped before it started";
      SetStateLocked(*job, JobState::kStopped);
      break;
    case JobState::kRunning:
      job->stop = true;
      SetStateLocked(*job, JobState::kStopping);
      break;
    case JobState::kStopping:
      break;  // already on its way
    default:
      return eng::Status::FailedPrecondition("job '" + id + "' is " +
                                             api::JobStateName(job->rec.state) +
                                             ": only a queued or running job can be stopped");
  }
  return InfoLocked(*job);
}

eng::Result<api::JobInfo> JobManager::Resume(const std::string& id,
                                             std::optional<int64_t> max_steps) {
  std::lock_guard<std::mutex> lock(mu_);
  auto job = FindLocked(id);
  if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
  const JobState s = job->rec.state;
  if (s != JobState::kStopped && s != JobState::kFailed && s != JobState::kCompleted) {
    return eng::Status::FailedPrecondition("job '" + id + "' is " + api::JobStateName(s) +
                                           ": only a stopped, failed or completed job can be "
                                           "resumed");
  }
  if (max_steps) {
    eng::JobSpec spec = job->spec;
    spec.max_steps = *max_steps;
    // A longer run writes more: admitted again (a short read of the dataset's headers).
    if (auto admitted = Admit(spec); !admitted.ok()) return admitted.status();
    if (*max_steps > 0 && *max_steps <= job->rec.global_step) {
      return eng::Status::InvalidArgument("max_steps: " + std::to_string(*max_steps) +
                                          " is not beyond the job's global step " +
                                          std::to_string(job->rec.global_step));
    }
    job->spec = spec;
    job->rec.max_steps = *max_steps;
    job->rec.spec_json = api::JobSpecToJson(spec);
  } else if (s == JobState::kCompleted) {
    return eng::Status::FailedPrecondition("job '" + id +
                                           "' is completed: give a larger max_steps to go on");
  }
  job->stop = false;
  job->rec.error.clear();
  job->rec.reason.clear();
  job->rec.crash_count = 0;  // the user asks for another try
  store_.PutJob(job->rec);
  queue_.push_back(id);
  SetStateLocked(*job, JobState::kQueued);
  cv_.notify_one();
  return InfoLocked(*job);
}

eng::Status JobManager::Delete(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(id);
    if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
    const JobState s = job->rec.state;
    if (s == JobState::kRunning || s == JobState::kStopping) {
      return eng::Status::FailedPrecondition("job '" + id + "' is " + api::JobStateName(s) +
                                             ": stop it before deleting it");
    }
    queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
    jobs_.erase(id);
    store_.DeleteJob(id);
    bus_.Publish("", "job", json{{"id", id}, {"state", "deleted"}}.dump());
    bus_.Forget(id);
  }
  return files_.Remove(id);
}

eng::Result<std::vector<api::ScalarPoint>> JobManager::Scalars(const std::string& id,
                                                               const api::ScalarQuery& query) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  return store_.QueryScalars(id, query);
}

eng::Result<std::vector<std::string>> JobManager::ScalarTags(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  return store_.ScalarTags(id);
}

eng::Result<std::vector<api::CheckpointInfo>> JobManager::Checkpoints(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  std::vector<api::CheckpointInfo> out;
  const std::string dir = files_.Dir(id);
  std::error_code ec;
  if (!fs::exists(dir + "/checkpoint", ec)) return out;
  auto manager = eng::CheckpointManager::Create(dir);
  if (!manager.ok()) return manager.status();
  for (const std::string& path : (*manager)->KeptCheckpoints()) {
    api::CheckpointInfo c;
    c.name = fs::path(path).filename().string();
    const size_t dash = c.name.rfind('-');
    if (dash != std::string::npos) {
      std::from_chars(c.name.data() + dash + 1, c.name.data() + c.name.size(), c.global_step);
    }
    c.bytes = static_cast<int64_t>(fs::file_size(path, ec));
    const auto mtime = fs::last_write_time(path, ec);
    if (!ec) {
      c.mtime = std::chrono::duration<double>(
                    std::chrono::file_clock::to_sys(mtime).time_since_epoch())
                    .count();
    }
    out.push_back(c);
  }
  return out;
}

eng::Result<std::vector<api::LogLine>> JobManager::Logs(const std::string& id, int64_t from_line,
                                                        int64_t limit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  if (from_line < 1) return eng::Status::InvalidArgument("from: must be >= 1");
  if (limit < 1 || limit > 100000) return eng::Status::InvalidArgument("limit: must be in [1, 100000]");
  return files_.ReadLog(id, from_line, limit);
}

eng::Result<std::unique_ptr<api::Subscription>> JobManager::Subscribe(
    const std::string& job_id, int64_t after_id,
    std::function<void(const api::ServiceEvent&)> deliver) {
  if (!job_id.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(job_id)) return eng::Status::NotFound("job '" + job_id + "' does not exist");
  }
  return bus_.Subscribe(job_id, after_id, std::move(deliver));
}

std::string JobManager::Metrics() {
  std::map<JobState, int> by_state;
  int64_t steps = 0;
  double eps = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, job] : jobs_) {
      ++by_state[job->rec.state];
      steps += job->rec.global_step;
      if (job->rec.state == JobState::kRunning) eps += job->examples_per_sec;
    }
  }
  std::ostringstream out;
  out << "# HELP trainingd_jobs Jobs by state.\n# TYPE trainingd_jobs gauge\n";
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kStopping,
                     JobState::kCompleted, JobState::kFailed, JobState::kStopped}) {
    out << "trainingd_jobs{state=\"" << api::JobStateName(s) << "\"} " << by_state[s] << "\n";
  }
  out << "# HELP trainingd_global_steps Sum of every job's global step.\n"
         "# TYPE trainingd_global_steps gauge\ntrainingd_global_steps "
      << steps << "\n";
  out << "# HELP trainingd_examples_per_second Training speed of the running jobs.\n"
         "# TYPE trainingd_examples_per_second gauge\ntrainingd_examples_per_second "
      << eps << "\n";
  const StoreStats st = store_.stats();
  out << "# HELP trainingd_sqlite_write_queue Writes waiting for the SQLite writer.\n"
         "# TYPE trainingd_sqlite_write_queue gauge\ntrainingd_sqlite_write_queue "
      << st.queued_writes << "\n";
  out << "# HELP trainingd_sqlite_committed_scalars_total Scalars committed.\n"
         "# TYPE trainingd_sqlite_committed_scalars_total counter\n"
         "trainingd_sqlite_committed_scalars_total "
      << st.committed_scalars << "\n";
  out << "# HELP trainingd_sqlite_failed_writes_total Transactions the database failed (each "
         "retried until it commits).\n"
         "# TYPE trainingd_sqlite_failed_writes_total counter\n"
         "trainingd_sqlite_failed_writes_total "
      << st.failed_writes << "\n";
  out << "# HELP trainingd_sqlite_dropped_scalars_total Scalars refused while the write queue "
         "was full and the database failing.\n"
         "# TYPE trainingd_sqlite_dropped_scalars_total counter\n"
         "trainingd_sqlite_dropped_scalars_total "
      << st.dropped_scalars << "\n";
  out << "# HELP trainingd_degraded 1 while the database cannot be written.\n"
         "# TYPE trainingd_degraded gauge\ntrainingd_degraded "
      << (store_.health().degraded ? 1 : 0) << "\n";
  out << "# HELP trainingd_sse_subscribers Live event subscriptions.\n"
         "# TYPE trainingd_sse_subscribers gauge\ntrainingd_sse_subscribers "
      << bus_.subscriber_count() << "\n";
  return out.str();
}

api::ServiceHealth JobManager::Health() {
  api::ServiceHealth h;
  const StoreHealth store = store_.health();
  if (store.degraded) {
    h.problems.push_back("the database cannot be written: " + store.error.ToString() +
                         " (retrying; no queued job starts meanwhile)");
  }
  for (const std::string& p : DiskProblems()) {
    h.problems.push_back(p + "; no queued job starts until there is room");
  }
  h.degraded = !h.problems.empty();
  return h;
}

std::vector<std::string> JobManager::DiskProblems() const {
  std::vector<std::string> out;
  int64_t seen = -1;
  for (const std::string& dir : {options_.data_dir, options_.data_dir + "/jobs"}) {
    const int64_t fs = FileSystemOf(dir);
    if (fs == seen) continue;
    seen = fs;
    const int64_t free = FreeDiskBytes(dir);
    if (free >= 0 && free < kMinFreeDiskBytes) {
      out.push_back("the disk holding " + dir + " is full (" + eng::FormatBytes(free) + " free)");
    }
  }
  return out;
}

void JobManager::OnStoreHealth(const StoreHealth& health) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!health.degraded) {
    store_failure_.clear();
    cv_.notify_all();  // queued jobs may start again
    return;
  }
  store_failure_ = health.error.ToString();
  // A full or failing disk: what the running jobs record is no longer kept, and their
  // checkpoints may not fit either. Stop them now, while a final checkpoint may still fit.
  // A lock held by someone else (Unavailable) only holds the queue.
  const eng::StatusCode code = health.error.code();
  if (code != eng::StatusCode::kResourceExhausted && code != eng::StatusCode::kIoError) return;
  const std::string cause = code == eng::StatusCode::kResourceExhausted ? "disk full" : "disk error";
  for (auto& [id, job] : jobs_) {
    if (job->rec.state != JobState::kRunning) continue;
    job->stop_cause = cause + " (the database cannot be written: " + health.error.message() + ")";
    job->stop_code = code;
    job->stop = true;
    SetStateLocked(*job, JobState::kStopping);
  }
}

std::shared_ptr<JobManager::Job> JobManager::NextRunnableLocked() {
  // Nothing starts while the database cannot be written (its state would not be kept) or the
  // disk is full, nor beside a job that was running when the daemon died.
  if (shutting_down_ || queue_.empty() || !store_failure_.empty() || running_suspect_) {
    return nullptr;
  }
  if (!DiskProblems().empty()) return nullptr;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    std::shared_ptr<Job> job = FindLocked(*it);
    if (!job) {
      queue_.erase(it);
      return NextRunnableLocked();
    }
    // A suspect runs alone: it waits until nothing else runs.
    if (job->rec.crash_count > 0 && running_ > 0) continue;
    queue_.erase(it);
    return job;
  }
  return nullptr;
}

void JobManager::WorkerLoop() {
  eng::SetComputeThreads(threads_per_job_);
  for (;;) {
    std::shared_ptr<Job> job;
    bool suspect = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Woken by a submit, a job's end or the database's recovery; the disk's free space is
      // looked at again every second.
      while (!shutting_down_ && !(job = NextRunnableLocked())) {
        cv_.wait_for(lock, std::chrono::seconds(1));
      }
      if (!job) return;  // shutting down
      ++running_;
      suspect = job->rec.crash_count > 0;
      if (suspect) running_suspect_ = true;
      job->stop = false;
      job->stop_cause.clear();
      job->rec.error.clear();
      job->rec.reason.clear();
      SetStateLocked(*job, JobState::kRunning);
    }
    // Durably running before it trains: if the process dies from here on, the next start
    // counts it (crash containment). Bounded, as the database may be failing.
    if (eng::Status st = store_.Flush(std::chrono::seconds(10)); !st.ok()) {
      eng::Logger::Stderr()->Warning("job " + job->rec.id +
                                     ": its running state is not yet in the database: " +
                                     st.ToString());
    }
    RunOne(job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
      if (suspect) running_suspect_ = false;
    }
    cv_.notify_all();
  }
}

void JobManager::RunOne(const std::shared_ptr<Job>& job) {
  // The job's exception boundary: whatever its run throws ends the job, never the daemon.
  eng::Result<eng::JobResult> result = eng::Status::Internal("not run");
  try {
    result = Train(job);
  } catch (const std::bad_alloc&) {
    result = eng::Status::ResourceExhausted(
        "out of memory: an allocation failed while the job ran (its estimate was within the "
        "per-job memory budget; other processes or jobs may hold the rest)");
  } catch (const std::exception& e) {
    result = eng::Status::Internal(std::string("the job threw an exception: ") + e.what());
  } catch (...) {
    result = eng::Status::Internal("the job threw an unknown exception");
  }
  files_.CloseLog(job->rec.id);
  std::lock_guard<std::mutex> lock(mu_);
  FinishLocked(*job, result);
  // A finished job keeps no replay history: its last event (the final state) only.
  if (job->rec.state != JobState::kQueued) bus_.Retire(job->rec.id);
}

eng::Result<eng::JobResult> JobManager::Train(const std::shared_ptr<Job>& job) {
  const std::string id = job->rec.id;
  TRAININGD_RETURN_IF_ERROR(files_.CreateDir(id));
  auto logger = std::make_shared<JobLogger>(files_, bus_, id);
  eng::JobSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    spec = job->spec;
  }
  if (ShouldAbort(options_, spec.name, 0) && options_.abort_at_step == 0) std::abort();
  const int64_t batch = spec.batch_size;
  auto sink = std::make_shared<ScalarSink>(
      store_, bus_,
      [this, job, batch](const std::string& tag, int64_t step, double value) {
        if (ShouldAbort(options_, job->spec.name, step) && options_.abort_at_step > 0) std::abort();
        std::lock_guard<std::mutex> lock(mu_);
        job->latest[tag] = value;
        if (tag == eng::kStepsPerSecTag) job->examples_per_sec = value * static_cast<double>(batch);
        if (step > job->rec.global_step) {
          job->rec.global_step = step;
          store_.UpdateJobStep(job->rec.id, step);
        }
      },
      id);

  auto data = datasets_.Load(spec.dataset);
  if (!data.ok()) return data.status();
  eng::JobRunOptions o;
  o.checkpoint_dir = files_.Dir(id);
  o.data_root = options_.data_root;
  o.datasets = *data;
  o.stop = &job->stop;
  o.summary_sinks = {sink};
  o.env = env_;
  o.logger = logger;
  o.limits = RunLimits();
  o.on_session_created = [this, job](eng::MonitoredSession& ms) {
    // Restored at this step: what was recorded after it is redone, so drop it now (queued
    // before any new scalar, so the writer applies it first).
    const int64_t step = ms.global_step();
    store_.DropScalarsAfter(job->rec.id, step);
    std::lock_guard<std::mutex> lock(mu_);
    job->rec.global_step = step;
    store_.UpdateJobStep(job->rec.id, step);
  };
  auto result = eng::RunJob(spec, o);
  // A log line the disk had no room for, in a run that did not notice a full disk itself.
  if (result.ok() && result->outcome == eng::JobResult::Outcome::kCompleted) {
    const eng::Status log = logger->failure();
    if (log.code() == eng::StatusCode::kResourceExhausted) {
      result->reason += "; some log lines were lost (" + log.message() + ")";
    }
  }
  return result;
}

void JobManager::FinishLocked(Job& job, const eng::Result<eng::JobResult>& result) {
  const std::string& id = job.rec.id;
  job.rec.crash_count = 0;  // it ended without taking the daemon down
  store_.UpdateJobCrashCount(id, 0);
  if (!result.ok()) {
    job.rec.error = result.status().ToString();
    job.rec.reason = result.status().code() == eng::StatusCode::kResourceExhausted ||
                             result.status().code() == eng::StatusCode::kInternal
                         ? result.status().message()
                         : "could not start: " + result.status().message();
    eng::Logger::Stderr()->Error("job " + id + " failed: " + job.rec.reason);
    static_cast<void>(files_.AppendLog(id, "ERROR:trainingd:" + job.rec.reason));
    SetStateLocked(job, JobState::kFailed);
    return;
  }
  job.rec.global_step = result->global_step;
  store_.UpdateJobStep(id, result->global_step);
  for (const auto& [k, v] : result->final_values) job.latest[k] = v;
  job.rec.reason = result->reason;
  switch (result->outcome) {
    case eng::JobResult::Outcome::kCompleted:
      SetStateLocked(job, JobState::kCompleted);
      break;
    case eng::JobResult::Outcome::kStopped:
      if (!job.stop_cause.empty()) {
        // The daemon stopped it (a full disk): say so, and whether a final checkpoint made it.
        if (eng::HasCheckpointAt(files_.Dir(id), result->global_step)) {
          job.rec.reason = job.stop_cause + "; stopped after a final checkpoint at global step " +
                           std::to_string(result->global_step);
          SetStateLocked(job, JobState::kStopped);
        } else {
          job.rec.reason = job.stop_cause + "; no final checkpoint was written";
          job.rec.error = eng::Status(job.stop_code, job.rec.reason).ToString();
          SetStateLocked(job, JobState::kFailed);
        }
      } else if (shutting_down_ && job.rec.state == JobState::kRunning) {
        // The daemon is going down, not the user: leave it queued so the next start resumes it.
        // A job the user was stopping (kStopping) ends stopped: that stop was accepted.
        job.rec.reason = "daemon shut down; resumes on the next start";
        SetStateLocked(job, JobState::kQueued);
      } else {
        SetStateLocked(job, JobState::kStopped);
      }
      break;
    case eng::JobResult::Outcome::kFailed:
      job.rec.error = result->error.ToString();
      SetStateLocked(job, JobState::kFailed);
      break;
  }
}

}  // namespace trainingd::daemon
