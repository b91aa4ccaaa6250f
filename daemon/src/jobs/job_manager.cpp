#include "trainingd/daemon/jobs/job_manager.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <type_traits>

#include "jobs/job.h"
#include "jobs/machine.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/daemon/jobs/job_id.h"
#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/session/hooks/step_counter_hook.h"

namespace trainingd::daemon {
namespace fs = std::filesystem;
namespace eng = trainingd::engine;
using api::JobState;
using job_detail::IsEnded;
using job_detail::kPreemptingReason;
using job_detail::Queued;
using job_detail::ShouldAbort;
using job_detail::StateEvent;

namespace {

SchedulerOptions SchedulerOptionsFor(SchedulerOptions o, eng::Env* env) {
  if (!o.now) o.now = [env] { return env->NowSeconds(); };
  return o;
}

bool IsWaiting(JobState s) { return s == JobState::kQueued || s == JobState::kPreempted; }

}  // namespace

JobManager::JobManager(Store& store, EventBus& bus, std::unique_ptr<Executor> executor,
                       JobManagerOptions options)
    : store_(store),
      bus_(bus),
      executor_(std::move(executor)),
      options_(std::move(options)),
      env_(options_.env ? options_.env : eng::Env::Default()),
      scheduler_(SchedulerOptionsFor(options_.scheduler, env_)),
      files_(JobFilesOptions{options_.data_dir, options_.jobs_dir,
                             options_.limits.max_log_bytes_per_job}) {}

std::string JobManager::JobsDir() const {
  return options_.jobs_dir.empty() ? options_.data_dir + "/jobs" : options_.jobs_dir;
}

eng::Result<std::unique_ptr<JobManager>> JobManager::Create(Store& store, EventBus& bus,
                                                            std::unique_ptr<Executor> executor,
                                                            JobManagerOptions options) {
  if (!executor || executor->slots() < 1) {
    return eng::Status::InvalidArgument("an executor with at least one slot is needed");
  }
  if (options.threads_per_job < 1 || options.limits.max_checkpoints_per_job < 1 ||
      options.limits.max_profiler_traces_per_job < 1 ||
      options.limits.max_log_bytes_per_job < 4096 || options.limits.max_crash_restarts < 0) {
    return eng::Status::InvalidArgument(
        "threads_per_job, max_checkpoints_per_job and max_profiler_traces_per_job must be >= 1, "
        "max_log_bytes_per_job >= 4096, max_crash_restarts >= 0");
  }
  std::unique_ptr<JobManager> m(
      new JobManager(store, bus, std::move(executor), std::move(options)));
  std::error_code ec;
  fs::create_directories(m->JobsDir(), ec);
  if (ec) {
    return eng::Status::IoError(m->JobsDir() + ": cannot create: " + ec.message());
  }
  TRAININGD_RETURN_IF_ERROR(m->Recover());
  store.SetHealthListener([p = m.get()](const StoreHealth& h) { p->OnStoreHealth(h); });
  m->schedule_thread_ = std::thread([p = m.get()] { p->ScheduleLoop(); });
  return m;
}

JobManager::~JobManager() { Shutdown(); }

void JobManager::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  cv_.notify_all();
  schedule_thread_.join();
  // Every run stops after its current step; their ends (FinishLocked) leave the jobs queued.
  executor_->Shutdown();
  store_.SetHealthListener(nullptr);
  // Bounded: on a dead disk the store retries until its own give-up time at destruction.
  static_cast<void>(store_.Flush(std::chrono::seconds(10)));
}

engine::JobBudget JobManager::Budget() const {
  engine::JobBudget b;
  b.memory_bytes = options_.limits.max_job_memory_bytes;
  if (b.memory_bytes == 0) {
    b.memory_bytes = PhysicalMemoryBytes() / 4 * 3 / executor_->slots();
  }
  b.disk_bytes = options_.limits.max_job_disk_bytes;
  if (b.disk_bytes == 0) {
    // Half of what is free where the job's files go. A disk that is full now (the queue holds
    // until there is room) says nothing about whether the job fits: it is not checked then.
    const int64_t free = FreeDiskBytes(JobsDir());
    b.disk_bytes = free >= kMinFreeDiskBytes ? free / 2 : -1;
  }
  b.memory_bytes = std::max<int64_t>(b.memory_bytes, 0);  // negative: unlimited (0)
  b.disk_bytes = std::max<int64_t>(b.disk_bytes, 0);
  return b;
}

eng::JobRunLimits JobManager::RunLimits(const eng::JobSpec& spec) const {
  eng::JobRunLimits l;
  const int cpus = spec.resources.cpus_per_worker;
  l.compute_threads = cpus > 0 ? cpus : options_.threads_per_job;
  l.max_checkpoints = options_.limits.max_checkpoints_per_job;
  l.max_profiler_traces = options_.limits.max_profiler_traces_per_job;
  l.max_log_bytes = options_.limits.max_log_bytes_per_job;
  return l;
}

eng::Result<eng::JobResources> JobManager::Admit(eng::JobSpec* fitted) const {
  const eng::JobSpec& spec = *fitted;
  TRAININGD_RETURN_IF_ERROR(eng::ValidateJobSpec(spec));
  if (spec.hooks.checkpoint.enabled &&
      spec.hooks.checkpoint.max_to_keep > options_.limits.max_checkpoints_per_job) {
    return eng::Status::InvalidArgument(
        "hooks.checkpoint.max_to_keep: " + std::to_string(spec.hooks.checkpoint.max_to_keep) +
        " is more than this daemon keeps per job (max_checkpoints_per_job " +
        std::to_string(options_.limits.max_checkpoints_per_job) + ")");
  }
  const eng::DistributedSpec& d = spec.distributed;
  // A job cannot make the daemon start processes on other machines (mpirun would reach them
  // with ssh as the daemon's user): its ranks run where the daemon's config says (mpi.hostfile;
  // this machine by default).
  if (!d.hosts.empty()) {
    return eng::Status::InvalidArgument(
        "distributed.hosts: the daemon's config says where a job's ranks run (mpi.hostfile); a "
        "job cannot name hosts (trainingd run can)");
  }
  if (!d.hostfile.empty()) {
    return eng::Status::InvalidArgument(
        "distributed.hostfile: the daemon's config says where a job's ranks run "
        "(mpi.hostfile); a job cannot name a hostfile (trainingd run can)");
  }
  // On this machine a job's workers share its compute threads: asking for more would
  // oversubscribe the cores. (A cluster's scheduler grants the CPUs of its nodes itself.)
  const int cpus = spec.resources.cpus_per_worker;
  const int workers = std::max(1, d.workers);
  if (cpus > 0 && !executor_->RunsOutliveDaemon() &&
      int64_t{cpus} * workers > options_.threads_per_job) {
    return eng::Status::InvalidArgument(
        "resources.cpus_per_worker: " + std::to_string(cpus) + " for each of " +
        std::to_string(workers) + " worker(s) is more than the " +
        std::to_string(options_.threads_per_job) +
        " compute thread(s) this daemon gives a job, so that jobs never oversubscribe its cores "
        "(threads_per_job in its config)");
  }
  auto data =
      eng::ProbeJobDataset(spec.dataset, options_.data_root, options_.datasets_dir, spec.task);
  if (!data.ok()) return data.status();
  TRAININGD_RETURN_IF_ERROR(
      eng::FitModelToData(fitted, data->example_shape, data->num_classes, data->categorical));
  auto plan = eng::PlanJob(spec, *data, RunLimits(spec));
  if (!plan.ok()) return plan.status();
  // The ranks of a data-parallel job run side by side here, each with the dataset, the model and
  // its optimizer: each must fit in its share of the job's budget.
  eng::JobBudget budget = Budget();
  if (d.workers > 1 && budget.memory_bytes > 0) budget.memory_bytes /= d.workers;
  if (eng::Status st = eng::CheckJobBudget(spec, *plan, budget); !st.ok()) {
    if (d.workers == 1) return st;
    return eng::Status(st.code(), st.message() + " (each of the " + std::to_string(d.workers) +
                                      " ranks of this data-parallel job, which run side by side "
                                      "here, has 1/" +
                                      std::to_string(d.workers) + " of the per-job budget)");
  }
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
  i.workers = job.spec.distributed.workers;
  i.attempts = job.attempts;
  if (r.state == JobState::kRunning) i.ranks = job.ranks;
  i.executor = executor_->Name(job.spec);
  i.slurm = job.slurm;
  i.owner = r.owner;
  i.priority = r.priority;
  i.preempted_by = r.preempted_by;
  if (IsWaiting(r.state)) i.waiting_reason = scheduler_.WaitingReason(r.id);
  if (!r.experiment_id.empty()) {
    i.trial.experiment_id = r.experiment_id;
    i.trial.index = r.trial_index;
    if (auto hp = api::HyperparametersFromText(r.hyperparameters_json); hp.ok()) {
      i.trial.hyperparameters = std::move(hp).value();
    }
  }
  return i;
}

void JobManager::SetStateLocked(Job& job, JobState state) {
  JobRecord& r = job.rec;
  r.state = state;
  const double now = env_->NowSeconds();
  if (state == JobState::kRunning) r.started_at = now;
  if (IsEnded(state)) r.finished_at = now;
  if (IsWaiting(state)) r.finished_at = 0;
  store_.UpdateJobState(r.id, r.state, r.started_at, r.finished_at, r.error, r.reason);
  bus_.Publish(r.id, api::EventKind::kState, StateEvent(r));
  bus_.Publish("", api::EventKind::kJob, StateEvent(r));
}

eng::Result<api::JobInfo> JobManager::Submit(eng::JobSpec spec, std::string spec_json,
                                             std::string owner) {
  return Recorded(SubmitUnrecorded(std::move(spec), std::move(spec_json), std::move(owner)));
}

std::vector<std::string> JobManager::ActiveJobsOf(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) {
    const JobState state = job->rec.state;
    if (job->rec.owner == owner &&
        (IsWaiting(state) || state == JobState::kRunning || state == JobState::kStopping)) {
      ids.push_back(id);
    }
  }
  return ids;
}

eng::Result<api::JobInfo> JobManager::Recorded(eng::Result<api::JobInfo> changed) {
  if (changed.ok()) AwaitStored(changed->id, "the request's change", kRecordTimeout);
  return changed;
}

void JobManager::AwaitStored(const std::string& job_id, const char* what,
                             std::chrono::seconds timeout) {
  // Outside mu_: the store's health listener takes it. Bounded, as the database may be failing
  // (the writes are then held in memory and retried; OnStoreHealth holds the queue meanwhile).
  if (eng::Status st = store_.FlushForReply(timeout); !st.ok()) {
    eng::Logger::Stderr()->Warning("job " + job_id + ": " + what +
                                   " is not yet in the database: " + st.ToString());
  }
}

eng::Result<api::JobInfo> JobManager::SubmitTrial(eng::JobSpec spec, std::string spec_json,
                                                  const api::TrialRef& trial,
                                                  const RecordWith& with, std::string owner) {
  return Recorded(
      SubmitUnrecorded(std::move(spec), std::move(spec_json), std::move(owner), &trial, with));
}

eng::Status JobManager::CheckAdmission(eng::JobSpec spec) const {
  if (options_.resolve_dataset) TRAININGD_RETURN_IF_ERROR(options_.resolve_dataset(&spec.dataset));
  return Admit(&spec).status();
}

eng::Result<api::JobInfo> JobManager::SubmitUnrecorded(eng::JobSpec spec, std::string spec_json,
                                                       std::string owner,
                                                       const api::TrialRef* trial,
                                                       const RecordWith& with) {
  // Before the lock: the dataset's headers are read and the spec estimated.
  if (options_.resolve_dataset) {
    const eng::DatasetSpec given = spec.dataset;
    TRAININGD_RETURN_IF_ERROR(options_.resolve_dataset(&spec.dataset));
    if (spec.dataset.sha256 != given.sha256 || spec.dataset.format != given.format) {
      spec_json = api::JobSpecToJson(spec);  // the canonical spec names the exact data
    }
  }
  const eng::ModelSpec submitted_model = spec.model;
  if (auto admitted = Admit(&spec); !admitted.ok()) return admitted.status();
  if (!(spec.model == submitted_model)) spec_json = api::JobSpecToJson(spec);
  auto job = std::make_shared<Job>();
  JobRecord& r = job->rec;
  r.name = spec.name;
  r.spec_json = std::move(spec_json);
  r.created_at = env_->NowSeconds();
  r.max_steps = spec.max_steps;
  r.state = JobState::kQueued;
  r.owner = std::move(owner);
  r.priority = spec.priority;
  if (trial != nullptr) {
    r.experiment_id = trial->experiment_id;
    r.trial_index = trial->index;
    r.hyperparameters_json = api::DumpJson(api::HyperparametersToJson(trial->hyperparameters));
  }
  job->spec = std::move(spec);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return eng::Status::Unavailable("the daemon is shutting down");
  // The owner's quotas (an experiment's trials count against its running slots only).
  TRAININGD_RETURN_IF_ERROR(scheduler_.CheckPriority(r.owner, r.priority));
  if (trial == nullptr) TRAININGD_RETURN_IF_ERROR(scheduler_.CheckQueue(r.owner));
  if (scheduler_.size() >= options_.max_queued_jobs) {
    return eng::Status::Unavailable("the queue is full (" + std::to_string(scheduler_.size()) +
                                    " jobs waiting)");
  }
  do {
    r.id = NewJobId();
  } while (jobs_.count(r.id));
  r.checkpoint_dir = files_.Dir(r.id);
  {
    Store::WriteGroup group(store_);
    store_.PutJob(r);
    if (with) with(InfoLocked(*job));
  }
  jobs_.emplace(r.id, job);
  scheduler_.Enqueue(Queued(*job, r.created_at));
  bus_.Publish(r.id, api::EventKind::kState, StateEvent(r));
  bus_.Publish("", api::EventKind::kJob, StateEvent(r));
  cv_.notify_all();
  return InfoLocked(*job);
}

std::vector<std::string> JobManager::JobsUsingDataset(const std::string& name) const {
  std::vector<std::string> ids;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, job] : jobs_) {
    const JobState s = job->rec.state;
    const bool active = IsWaiting(s) || s == JobState::kRunning || s == JobState::kStopping;
    if (active && job->spec.dataset.format != "idx" && job->spec.dataset.name == name) {
      ids.push_back(id);
    }
  }
  return ids;
}

eng::Result<api::JobPage> JobManager::List(std::optional<JobState> state, int64_t limit,
                                           const std::string& cursor) {
  if (limit < 1 || limit > api::kMaxListLimit) {
    return eng::Status::InvalidArgument("limit: must be in [1, " +
                                        std::to_string(api::kMaxListLimit) + "], got " +
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
    auto it =
        std::find_if(all.begin(), all.end(), [&](const auto& j) { return j->rec.id == cursor; });
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
  api::JobInfo info;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(id);
    if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
    info = InfoLocked(*job);
  }
  // Read outside the lock; an unreadable record is as none (the job's log says why).
  if (auto best = eng::ReadBestCheckpoint(files_.Dir(id)); best.ok() && *best) {
    info.best_checkpoint = api::BestCheckpointInfo{(*best)->global_step, (*best)->metric,
                                                   (*best)->mode, (*best)->value};
  }
  return info;
}

eng::Result<api::JobInfo> JobManager::Stop(const std::string& id) {
  return Recorded(StopUnrecorded(id, /*by_owner=*/false));
}

eng::Result<api::JobInfo> JobManager::StopTrial(const std::string& id) {
  return Recorded(StopUnrecorded(id, /*by_owner=*/true));
}

void JobManager::SetTrialOwner(std::function<bool(const std::string&, std::string_view)> drives) {
  std::lock_guard<std::mutex> lock(mu_);
  trial_owner_ = std::move(drives);
}

eng::Status JobManager::CheckNotDrivenLocked(const Job& job, const char* verb) const {
  const std::string& experiment = job.rec.experiment_id;
  if (experiment.empty() || !trial_owner_ || !trial_owner_(experiment, verb)) {
    return eng::Status::Ok();
  }
  return eng::Status::FailedPrecondition("job '" + job.rec.id + "' is trial " +
                                         std::to_string(job.rec.trial_index) + " of experiment '" +
                                         experiment + "', which decides when it runs: " + verb +
                                         " the experiment instead");
}

eng::Result<api::JobInfo> JobManager::StopUnrecorded(const std::string& id, bool by_owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto job = FindLocked(id);
  if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
  if (!by_owner) TRAININGD_RETURN_IF_ERROR(CheckNotDrivenLocked(*job, "stop"));
  switch (job->rec.state) {
    case JobState::kQueued:
    case JobState::kPreempted:
      if (job->has_run) {  // waiting in a cluster's queue: its executor cancels it
        executor_->RequestStop(id);
        SetStateLocked(*job, JobState::kStopping);
        break;
      }
      scheduler_.Remove(id);
      job->rec.reason = "stopped before it started";
      SetStateLocked(*job, JobState::kStopped);
      break;
    case JobState::kRunning:
      executor_->RequestStop(id);
      SetStateLocked(*job, JobState::kStopping);
      break;
    case JobState::kStopping:
      if (job->preempting) {  // a preemption under way becomes the user's stop
        job->preempting = false;
        job->rec.reason = "stop requested while it was being preempted";
        SetStateLocked(*job, JobState::kStopping);
      }
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
  return Recorded(ResumeUnrecorded(id, max_steps, /*by_owner=*/false));
}

eng::Result<api::JobInfo> JobManager::SetPriority(const std::string& id, int64_t priority) {
  if (priority < eng::kMinJobPriority || priority > eng::kMaxJobPriority) {
    return eng::Status::InvalidArgument("priority: must be in [" +
                                        std::to_string(eng::kMinJobPriority) + ", " +
                                        std::to_string(eng::kMaxJobPriority) +
                                        "] (higher starts first), got " + std::to_string(priority));
  }
  eng::Result<api::JobInfo> changed = [&]() -> eng::Result<api::JobInfo> {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(id);
    if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
    TRAININGD_RETURN_IF_ERROR(scheduler_.CheckPriority(job->rec.owner, priority));
    job->rec.priority = priority;
    store_.PutJob(job->rec);
    // A queued job takes its new place at once; any other keeps it for its next time queued.
    scheduler_.SetPriority(id, priority);
    cv_.notify_all();
    return InfoLocked(*job);
  }();
  return Recorded(std::move(changed));
}

eng::Result<api::JobInfo> JobManager::ResumeTrial(const std::string& id,
                                                  std::optional<int64_t> max_steps,
                                                  const RecordWith& with) {
  return Recorded(ResumeUnrecorded(id, max_steps, /*by_owner=*/true, with));
}

eng::Result<api::JobInfo> JobManager::ResumeUnrecorded(const std::string& id,
                                                       std::optional<int64_t> max_steps,
                                                       bool by_owner, const RecordWith& with) {
  std::lock_guard<std::mutex> lock(mu_);
  auto job = FindLocked(id);
  if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
  if (!by_owner) TRAININGD_RETURN_IF_ERROR(CheckNotDrivenLocked(*job, "resume"));
  const JobState s = job->rec.state;
  if (s != JobState::kStopped && s != JobState::kFailed && s != JobState::kCompleted) {
    return eng::Status::FailedPrecondition("job '" + id + "' is " + api::JobStateName(s) +
                                           ": only a stopped, failed or completed job can be "
                                           "resumed");
  }
  if (!by_owner) TRAININGD_RETURN_IF_ERROR(scheduler_.CheckQueue(job->rec.owner));
  if (max_steps) {
    eng::JobSpec spec = job->spec;
    spec.max_steps = *max_steps;
    // A longer run writes more: admitted again (a short read of the dataset's headers).
    if (auto admitted = Admit(&spec); !admitted.ok()) return admitted.status();
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
  job->rec.error.clear();
  job->rec.reason.clear();
  job->rec.crash_count = 0;  // the user asks for another try
  {
    Store::WriteGroup group(store_);
    store_.PutJob(job->rec);
    SetStateLocked(*job, JobState::kQueued);
    if (with) with(InfoLocked(*job));
  }
  scheduler_.Enqueue(Queued(*job, env_->NowSeconds()));  // a resume joins the back
  cv_.notify_all();
  return InfoLocked(*job);
}

eng::Status JobManager::Delete(const std::string& id) { return DeleteJob(id, /*by_owner=*/false); }

eng::Status JobManager::DeleteTrial(const std::string& id) {
  return DeleteJob(id, /*by_owner=*/true);
}

eng::Status JobManager::DeleteJob(const std::string& id, bool by_owner) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(id);
    if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
    if (!by_owner) TRAININGD_RETURN_IF_ERROR(CheckNotDrivenLocked(*job, "delete"));
    const JobState s = job->rec.state;
    if (s == JobState::kRunning || s == JobState::kStopping || job->has_run) {
      return eng::Status::FailedPrecondition("job '" + id + "' is " + api::JobStateName(s) +
                                             ": stop it before deleting it");
    }
    scheduler_.Remove(id);
    jobs_.erase(id);
    store_.DeleteJob(id);
    api::JobStateEvent deleted;
    deleted.id = id;
    deleted.deleted = true;
    bus_.Publish("", api::EventKind::kJob, deleted);
    bus_.Forget(id);
  }
  // Gone from the database before its files, so a kill -9 between the two leaves no job
  // without them.
  AwaitStored(id, "its deletion", kRecordTimeout);
  return files_.Remove(id);
}

eng::Status JobManager::DeleteCheckpoints(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);  // no run starts meanwhile
  auto job = FindLocked(id);
  if (!job) return eng::Status::NotFound("job '" + id + "' does not exist");
  if (!IsEnded(job->rec.state) || job->has_run) {
    return eng::Status::FailedPrecondition("job '" + id + "' is " +
                                           api::JobStateName(job->rec.state) +
                                           ": its checkpoints are in use");
  }
  return eng::DeleteCheckpoints(files_.Dir(id));
}

int64_t JobManager::DiskBytes(const std::string& id) const {
  std::error_code ec;
  int64_t bytes = 0;
  for (fs::recursive_directory_iterator it(files_.Dir(id), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) bytes += static_cast<int64_t>(it->file_size(ec));
  }
  return bytes;
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

eng::Result<std::string> JobManager::CheckpointDir(const std::string& id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  return files_.Dir(id);
}

eng::Result<std::vector<api::CheckpointInfo>> JobManager::Checkpoints(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  // Read-only: the run may be writing the directory right now.
  auto listed = eng::ListCheckpoints(files_.Dir(id));
  if (!listed.ok()) return listed.status();
  std::vector<api::CheckpointInfo> out;
  for (const eng::CheckpointFileInfo& c : *listed) {
    out.push_back({c.global_step, fs::path(c.path).filename().string(), c.bytes, c.mtime});
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
  if (limit < 1 || limit > api::kMaxLogLines) {
    return eng::Status::InvalidArgument("limit: must be in [1, " +
                                        std::to_string(api::kMaxLogLines) + "]");
  }
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

std::vector<api::Metric> JobManager::Metrics() {
  using api::MetricType;
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
  api::Metric jobs{"trainingd_jobs", "Jobs by state.", MetricType::kGauge, {}};
  for (JobState s :
       {JobState::kQueued, JobState::kRunning, JobState::kStopping, JobState::kCompleted,
        JobState::kFailed, JobState::kStopped, JobState::kPreempted}) {
    jobs.samples.push_back(
        {"", {{"state", api::JobStateName(s)}}, static_cast<double>(by_state[s])});
  }
  const StoreStats st = store_.stats();
  const auto value = [](auto v) { return static_cast<double>(v); };
  return {
      std::move(jobs),
      api::SingleMetric("trainingd_global_steps", "Sum of every job's global step.",
                        MetricType::kGauge, value(steps)),
      api::SingleMetric("trainingd_examples_per_second", "Training speed of the running jobs.",
                        MetricType::kGauge, eps),
      api::SingleMetric("trainingd_sqlite_write_queue", "Writes waiting for the SQLite writer.",
                        MetricType::kGauge, value(st.queued_writes)),
      api::SingleMetric("trainingd_sqlite_committed_scalars_total", "Scalars committed.",
                        MetricType::kCounter, value(st.committed_scalars)),
      api::SingleMetric("trainingd_sqlite_failed_writes_total",
                        "Transactions the database failed (each retried until it commits).",
                        MetricType::kCounter, value(st.failed_writes)),
      api::SingleMetric("trainingd_sqlite_dropped_scalars_total",
                        "Scalars refused while the write queue was full and the database failing.",
                        MetricType::kCounter, value(st.dropped_scalars)),
      api::SingleMetric("trainingd_degraded", "1 while the database cannot be written.",
                        MetricType::kGauge, store_.health().degraded ? 1 : 0),
      api::SingleMetric("trainingd_sse_subscribers", "Live event subscriptions.",
                        MetricType::kGauge, value(bus_.subscriber_count()))};
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
  for (const std::string& dir : {options_.data_dir, JobsDir()}) {
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
  const std::string cause =
      code == eng::StatusCode::kResourceExhausted ? "disk full" : "disk error";
  for (auto& [id, job] : jobs_) {
    if (job->rec.state != JobState::kRunning) continue;
    job->stop_cause = cause + " (the database cannot be written: " + health.error.message() + ")";
    job->stop_code = code;
    executor_->RequestStop(id);
    SetStateLocked(*job, JobState::kStopping);
  }
}

void JobManager::PreemptLocked() {
  // Not while nothing may start anyway (the database, a suspect running alone).
  if (shutting_down_ || !store_failure_.empty() || running_suspect_) return;
  // Nor while a disk is full: the victim's final checkpoint might not fit.
  if (scheduler_.empty() || !DiskProblems().empty()) return;
  // Only runs that train: a cluster's run still waiting in its queue is not stopped for a
  // preemption (it holds a slot here but frees nothing there).
  const auto trains = [this](const std::string& id) {
    std::shared_ptr<Job> job = FindLocked(id);
    return job && job->rec.state == JobState::kRunning;
  };
  const std::vector<Preemption> victims =
      scheduler_.ChooseVictims(executor_->slots() - running_, trains);
  SaveUsageLocked();  // choosing grows the charges of runs past their estimates
  for (const Preemption& p : victims) {
    std::shared_ptr<Job> job = FindLocked(p.victim);
    if (!job || job->rec.state != JobState::kRunning) continue;  // ending anyway
    job->preempting = true;
    job->rec.preempted_by = p.by;
    store_.PutJob(job->rec);
    job->rec.reason = std::string(kPreemptingReason) + p.by + " (priority " +
                      std::to_string(p.by_priority) + "): stopping after a final checkpoint";
    eng::Logger::Stderr()->Info("job " + p.victim + ": " + job->rec.reason);
    executor_->RequestStop(p.victim);
    SetStateLocked(*job, JobState::kStopping);
  }
}

std::shared_ptr<JobManager::Job> JobManager::NextRunnableLocked() {
  // Nothing starts while the database cannot be written (its state would not be kept) or the
  // disk is full, nor beside a job that was running when the daemon died.
  if (shutting_down_ || scheduler_.empty() || !store_failure_.empty() || running_suspect_) {
    return nullptr;
  }
  if (!DiskProblems().empty()) return nullptr;
  // Which job starts is the scheduler's to say (one at a time: this loop starts it, then asks
  // again while slots are free).
  for (;;) {
    std::vector<QueuedJob> next = scheduler_.Take(1, running_);
    if (next.empty()) {
      SaveUsageLocked();
      return nullptr;
    }
    if (std::shared_ptr<Job> job = FindLocked(next.front().id)) {
      SaveUsageLocked();  // its owner was charged the estimate
      return job;
    }
    scheduler_.Finished(next.front().id);  // deleted meanwhile: no run
  }
}

void JobManager::SaveUsageLocked() {
  for (const OwnerUsage& u : scheduler_.TakeChangedUsage()) {
    store_.PutFairShareUsage(FairShareUsageRecord{u.owner, u.usage, u.at});
  }
}

double JobManager::FairShareUsage(const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_.Usage(owner);
}

void JobManager::ScheduleLoop() {
  for (;;) {
    std::shared_ptr<Job> job;
    RunRequest request;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Woken by a submit, a run's end or the database's recovery; the disks' free space is
      // looked at again every second.
      while (!shutting_down_ && !(running_ < executor_->slots() && (job = NextRunnableLocked()))) {
        PreemptLocked();
        cv_.wait_for(lock, std::chrono::seconds(1));
      }
      if (shutting_down_) return;
      ++running_;
      job->suspect = job->rec.crash_count > 0;
      if (job->suspect) running_suspect_ = true;
      job->stop_cause.clear();
      job->log_failure = eng::Status::Ok();
      job->rec.error.clear();
      job->rec.reason.clear();
      // A run on a cluster is queued until the cluster runs it (its executor says when).
      SetStateLocked(*job, executor_->RunsOutliveDaemon() ? JobState::kQueued : JobState::kRunning);
      job->has_run = true;
      request = RunRequest{job->rec.id, job->spec, files_.Dir(job->rec.id), RunLimits(job->spec)};
    }
    // What a cluster's scheduler is asked to reserve (a short read of the dataset's headers).
    if (executor_->RunsOutliveDaemon()) {
      if (auto data = eng::ProbeJobDataset(request.spec.dataset, options_.data_root,
                                           options_.datasets_dir, request.spec.task);
          data.ok()) {
        if (auto plan = eng::PlanJob(request.spec, *data, request.limits); plan.ok()) {
          request.memory_bytes = plan->memory();
        }
      }
    }
    // Durably running before it trains: if the process dies from here on, the next start
    // counts it (crash containment). Bounded, as the database may be failing.
    AwaitStored(request.job_id, "its running state", std::chrono::seconds(10));
    if (ShouldAbort(options_, request.spec.name, 0) && options_.abort_at_step == 0) std::abort();
    eng::Status started = files_.CreateDir(request.job_id);
    if (started.ok()) started = executor_->Start(request, *this);
    if (!started.ok()) {
      OnRunEvent(request.job_id, RunEnded{started});
      continue;
    }
    // A stop that came between the state change and the start found no run to stop.
    std::lock_guard<std::mutex> lock(mu_);
    if (job->stop_on_start && job->rec.state != JobState::kStopping && job->has_run) {
      job->stop_on_start = false;
      SetStateLocked(*job, JobState::kStopping);
    }
    if (job->rec.state == JobState::kStopping) executor_->RequestStop(request.job_id);
  }
}

}  // namespace trainingd::daemon
