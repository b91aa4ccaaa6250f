#include "trainingd/daemon/job_manager.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

// A job's console: each line appended to <dir>/log.txt and published as a "log" event.
class JobLogger final : public eng::Logger {
 public:
  JobLogger(const std::string& path, EventBus& bus, std::string topic)
      : out_(path, std::ios::app), bus_(bus), topic_(std::move(topic)) {}
  void Log(eng::LogSeverity severity, std::string_view message) override {
    std::string line = std::string(eng::LogSeverityName(severity)) + ":trainingd:";
    line += message;
    std::lock_guard<std::mutex> lock(mu_);
    out_ << line << '\n';
    out_.flush();
    bus_.Publish(topic_, "log", json{{"text", line}}.dump());
  }

 private:
  std::mutex mu_;
  std::ofstream out_;
  EventBus& bus_;
  std::string topic_;
};

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
      env_(options_.env ? options_.env : eng::Env::Default()) {}

eng::Result<std::unique_ptr<JobManager>> JobManager::Create(Store& store, EventBus& bus,
                                                            JobManagerOptions options) {
  if (options.max_concurrent_jobs < 1 || options.max_concurrent_jobs > 64) {
    return eng::Status::InvalidArgument("max_concurrent_jobs must be in [1, 64]");
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
    if (r.state == JobState::kRunning || r.state == JobState::kQueued) {
      r.state = JobState::kQueued;
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
  static_cast<void>(store_.Flush());
}

std::string JobManager::JobDir(const std::string& id) const {
  return options_.data_dir + "/jobs/" + id;
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
  TRAININGD_RETURN_IF_ERROR(eng::ValidateJobSpec(spec));
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
  r.checkpoint_dir = JobDir(r.id);
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
    if (eng::Status st = eng::ValidateJobSpec(spec); !st.ok()) return st;
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
  std::error_code ec;
  fs::remove_all(JobDir(id), ec);
  if (ec) return eng::Status::IoError(JobDir(id) + ": " + ec.message());
  return eng::Status::Ok();
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
  const std::string dir = JobDir(id);
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
  std::vector<api::LogLine> out;
  std::ifstream in(JobDir(id) + "/log.txt");
  std::string text;
  for (int64_t n = 1; std::getline(in, text); ++n) {
    if (n < from_line) continue;
    out.push_back({n, text});
    if (static_cast<int64_t>(out.size()) >= limit) break;
  }
  return out;
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
  out << "# HELP trainingd_sse_subscribers Live event subscriptions.\n"
         "# TYPE trainingd_sse_subscribers gauge\ntrainingd_sse_subscribers "
      << bus_.subscriber_count() << "\n";
  return out.str();
}

eng::Result<std::shared_ptr<const eng::Datasets>> JobManager::DatasetsFor(
    const eng::JobSpec& spec) {
  const eng::DatasetSpec& d = spec.dataset;
  const std::string key = d.name + "|" + std::to_string(d.validation_size) + "|" +
                          std::to_string(d.max_train_examples) + "|" +
                          std::to_string(d.max_test_examples);
  std::lock_guard<std::mutex> lock(data_mu_);
  if (auto cached = datasets_[key].lock()) return cached;
  auto loaded = eng::LoadJobDatasets(d, options_.data_root);
  if (!loaded.ok()) return loaded.status();
  datasets_[key] = *loaded;
  return *loaded;
}

void JobManager::WorkerLoop() {
  eng::SetComputeThreads(threads_per_job_);
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return shutting_down_ || !queue_.empty(); });
      if (shutting_down_) return;
      job = FindLocked(queue_.front());
      queue_.pop_front();
      if (!job) continue;
      job->stop = false;
      job->rec.error.clear();
      job->rec.reason.clear();
      SetStateLocked(*job, JobState::kRunning);
    }
    RunOne(job);
  }
}

void JobManager::RunOne(const std::shared_ptr<Job>& job) {
  const std::string id = job->rec.id;
  const std::string dir = JobDir(id);
  std::error_code ec;
  fs::create_directories(dir, ec);
  auto logger = std::make_shared<JobLogger>(dir + "/log.txt", bus_, id);
  eng::JobSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    spec = job->spec;
  }
  const int64_t batch = spec.batch_size;
  auto sink = std::make_shared<ScalarSink>(
      store_, bus_,
      [this, job, batch](const std::string& tag, int64_t step, double value) {
        std::lock_guard<std::mutex> lock(mu_);
        job->latest[tag] = value;
        if (tag == eng::kStepsPerSecTag) job->examples_per_sec = value * static_cast<double>(batch);
        if (step > job->rec.global_step) {
          job->rec.global_step = step;
          store_.UpdateJobStep(job->rec.id, step);
        }
      },
      id);

  eng::Result<eng::JobResult> result = eng::Status::Internal("not run");
  auto data = DatasetsFor(spec);
  if (!data.ok()) {
    result = data.status();
  } else {
    eng::JobRunOptions o;
    o.checkpoint_dir = dir;
    o.data_root = options_.data_root;
    o.datasets = *data;
    o.stop = &job->stop;
    o.summary_sinks = {sink};
    o.env = env_;
    o.logger = logger;
    o.on_session_created = [this, job](eng::MonitoredSession& ms) {
      // Restored at this step: what was recorded after it is redone, so drop it now (queued
      // before any new scalar, so the writer applies it first).
      const int64_t step = ms.global_step();
      store_.DropScalarsAfter(job->rec.id, step);
      std::lock_guard<std::mutex> lock(mu_);
      job->rec.global_step = step;
      store_.UpdateJobStep(job->rec.id, step);
    };
    result = eng::RunJob(spec, o);
  }

  std::lock_guard<std::mutex> lock(mu_);
  if (!result.ok()) {
    job->rec.error = result.status().ToString();
    job->rec.reason = "could not start: " + result.status().message();
    logger->Error(job->rec.reason);
    SetStateLocked(*job, JobState::kFailed);
    return;
  }
  job->rec.global_step = result->global_step;
  store_.UpdateJobStep(id, result->global_step);
  for (const auto& [k, v] : result->final_values) job->latest[k] = v;
  job->rec.reason = result->reason;
  switch (result->outcome) {
    case eng::JobResult::Outcome::kCompleted:
      SetStateLocked(*job, JobState::kCompleted);
      break;
    case eng::JobResult::Outcome::kStopped:
      if (shutting_down_) {
        // The daemon is going down, not the user: leave it queued so the next start resumes it.
        job->rec.reason = "daemon shut down; resumes on the next start";
        SetStateLocked(*job, JobState::kQueued);
      } else {
        SetStateLocked(*job, JobState::kStopped);
      }
      break;
    case eng::JobResult::Outcome::kFailed:
      job->rec.error = result->error.ToString();
      SetStateLocked(*job, JobState::kFailed);
      break;
  }
}

}  // namespace trainingd::daemon
