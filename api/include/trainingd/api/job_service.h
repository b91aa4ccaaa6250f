// JobService: what the HTTP API needs from the service behind it. api/ states it; daemon/
// implements it (JobManager) and serve_command.cpp wires the two together, so api/ never depends
// on daemon/. Values cross it as plain structs; every byte on the wire (JSON, event streams,
// metrics text) is written by api/. Every method is thread-safe and returns quickly: none
// trains, none waits for SQLite writes (reads may query the database).
//
// Errors are engine::Status values, mapped to HTTP by the router:
//   InvalidArgument -> 400 (message starts with the field), NotFound -> 404,
//   FailedPrecondition -> 409 (an illegal state change; the message names the current state),
//   Unavailable -> 503 (e.g. shutting down, queue full), anything else -> 500.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "trainingd/api/prometheus.h"
#include "trainingd/api/user_service.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::api {

// The bounds of the JobService's arguments (the router holds query parameters to the same).
inline constexpr int64_t kMaxListLimit = 1000;       // List: jobs per page
inline constexpr int64_t kMaxLogLines = 10000;       // Logs: lines per read
inline constexpr int64_t kMaxScalarPoints = 100000;  // Scalars: points per query

// queued -> running -> completed | failed | stopped, with stopping while a stop is in progress;
// preempted: stopped by the scheduler for a more urgent job (after a final checkpoint), waiting
// in the queue to resume as a queued job does.
enum class JobState { kQueued, kRunning, kStopping, kCompleted, kFailed, kStopped, kPreempted };
const char* JobStateName(JobState state);
std::optional<JobState> ParseJobState(std::string_view name);

// One attempt of a data-parallel job: its supervisor relaunches the job from its latest checkpoint
// when a rank dies or stalls (docs/distributed.md#supervision).
struct AttemptInfo {
  int attempt = 1;  // counted over all of the job's runs, from 1
  int workers = 1;
  int64_t from_step = 0;  // the checkpoint it started from
  double started_at = 0;
  double ended_at = 0;  // 0 = running
  std::string end;      // "completed", "stopped", or what ended it
};

// One rank's latest step.
struct RankInfo {
  double compute_ms = 0;  // input, forward, loss and backward
  double allreduce_ms = 0;
};

// A job that runs on a Slurm cluster: its Slurm job id and what Slurm says of it.
struct SlurmInfo {
  int64_t job_id = 0;  // 0 = not submitted yet
  std::string state;   // Slurm's: PENDING, RUNNING, ...
  std::string reason;  // why it waits: Priority, Resources, BeginTime; None
  std::string nodes;   // its node list; "" while pending
  int restarts = 0;    // how often Slurm requeued it
};

// A job that is a trial of an experiment (experiment_service.h): which, and its
// hyperparameters as (path, JSON text of the value) in the space's order.
struct TrialRef {
  std::string experiment_id;  // "" = the job is not a trial
  int64_t index = 0;
  std::vector<std::pair<std::string, std::string>> hyperparameters;
};

// The job's best checkpoint (best_checkpoint.h): what export and serving take by default.
struct BestCheckpointInfo {
  int64_t step = 0;
  std::string metric;  // "validation/loss"
  std::string mode;    // "min" or "max"
  double value = 0;
};

struct JobInfo {
  std::string id;  // opaque, URL-safe
  std::string name;
  JobState state = JobState::kQueued;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  double created_at = 0;                         // seconds since the epoch
  double started_at = 0;                         // 0 = not yet
  double finished_at = 0;                        // 0 = not yet
  std::string error;                             // failed jobs: why
  std::string reason;                            // ended jobs: why they ended
  double examples_per_sec = 0;                   // latest measured, running jobs
  std::map<std::string, double> latest_scalars;  // tag -> latest value
  std::string spec_json;                         // the canonical spec (details only)
  int workers = 1;                               // distributed.workers
  std::vector<AttemptInfo> attempts;             // workers > 1: every attempt so far
  std::vector<RankInfo> ranks;                   // workers > 1, running: in rank order
  std::string executor = "local";                // what runs it: "local", "mpi" or "slurm"
  SlurmInfo slurm;                               // executor "slurm"
  TrialRef trial;                                // a trial of an experiment; else empty
  std::string owner{kAdminUser};  // the user who submitted it (a trial: its experiment's)
  // Its place in the queue: higher starts first (the spec's priority until changed).
  int64_t priority = 0;
  // The job that last preempted it (state preempted while it waits after that); "" = none.
  std::string preempted_by;
  // A queued or preempted job: why it does not start although a slot may be free (its owner's
  // running quota); "" otherwise.
  std::string waiting_reason;
  // The checkpoint of its best evaluation, if one was kept (details only).
  std::optional<BestCheckpointInfo> best_checkpoint;
};

struct JobPage {
  std::vector<JobInfo> jobs;  // newest first
  std::string next_cursor;    // empty = no more
};

struct ScalarPoint {
  int64_t step = 0;
  double wall_time = 0;
  double value = 0;  // the bucket's last value when downsampled
  double min = 0;    // = value for a raw point
  double max = 0;
};

struct ScalarQuery {
  std::string tag;
  std::optional<int64_t> from_step, to_step;  // inclusive
  int64_t max_points = 1000;  // > 0; more points are downsampled to min/max/last per bucket
};

struct CheckpointInfo {
  int64_t global_step = 0;
  std::string name;  // "model.ckpt-1000"
  int64_t bytes = 0;
  double mtime = 0;
};

// A job's latest evaluation of a split (GET /api/v1/jobs/{id}/evaluation): its metrics,
// per-class values and confusion matrix, and when it was recorded.
struct EvaluationInfo {
  engine::EvaluationSummary evaluation;
  double wall_time = 0;
};

struct LogLine {
  int64_t line = 0;  // 1-based
  std::string text;
};

// What the events of the streams say. A job's state (on its own stream, and on the job list's
// when it changes); `deleted` for the list's notice that the job is gone (then only `id` counts).
struct JobStateEvent {
  std::string id;
  std::string name;
  JobState state = JobState::kQueued;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  std::string error;   // "" = none
  std::string reason;  // "" = none
  bool deleted = false;
};

// A summary value the job recorded.
struct ScalarEvent {
  std::string tag;
  int64_t step = 0;
  double value = 0;
  double wall_time = 0;
};

// A line of the job's console.
struct LogEvent {
  std::string text;
};

// An experiment (experiment_service.h): running -> completed | failed | stopped, with stopping
// while its trials stop. Resume takes a stopped or failed experiment back to running.
enum class ExperimentState { kRunning, kStopping, kCompleted, kFailed, kStopped };
const char* ExperimentStateName(ExperimentState state);
std::optional<ExperimentState> ParseExperimentState(std::string_view name);

// An experiment's change, on the job list's stream: its state and progress, or `deleted` (then
// only `id` counts). The full record is GET /api/v1/experiments/{id}.
struct ExperimentStateEvent {
  std::string id;
  std::string name;
  ExperimentState state = ExperimentState::kRunning;
  int64_t trials_started = 0;
  int64_t max_trials = 0;
  int64_t steps_used = 0;
  std::optional<double> best_metric;  // nullopt = no result yet
  int64_t best_trial = -1;
  std::string error;   // "" = none
  std::string reason;  // "" = none
  bool deleted = false;
};

// Which stream an event is on and so what it is called there: "state" (a job's own stream),
// "job" and "experiment" (the job list's), "scalar", "log".
enum class EventKind { kState, kJob, kScalar, kLog, kExperiment };

// One server-sent event: `id` is the job's (or the list's) sequence number.
struct ServiceEvent {
  int64_t id = 0;
  EventKind kind = EventKind::kState;
  std::variant<JobStateEvent, ScalarEvent, LogEvent, ExperimentStateEvent> data;
};

// Whether the service works fully: "degraded" with the problems (e.g. the database cannot be
// written because the disk is full) while it serves but cannot keep everything it is given.
struct ServiceHealth {
  bool degraded = false;
  std::vector<std::string> problems;
};

// Alive as long as the subscription; destroying it unsubscribes.
class Subscription {
 public:
  virtual ~Subscription() = default;
};

class JobService {
 public:
  virtual ~JobService() = default;

  // `spec` as parsed and checked by api/, and its canonical JSON text (JobSpecToJson), which is
  // what the service keeps and answers with. `owner` is the user submitting it (user_service.h).
  virtual engine::Result<JobInfo> Submit(engine::JobSpec spec, std::string spec_json,
                                         std::string owner = std::string(kAdminUser)) = 0;
  // limit in [1, kMaxListLimit].
  virtual engine::Result<JobPage> List(std::optional<JobState> state, int64_t limit,
                                       const std::string& cursor) = 0;
  virtual engine::Result<JobInfo> Get(const std::string& id) = 0;
  virtual engine::Result<JobInfo> Stop(const std::string& id) = 0;
  virtual engine::Result<JobInfo> Resume(const std::string& id,
                                         std::optional<int64_t> max_steps) = 0;
  virtual engine::Status Delete(const std::string& id) = 0;
  // Changes the job's priority (kMinJobPriority..kMaxJobPriority; InvalidArgument naming
  // "priority" outside); a queued job takes its new place in the queue at once. A service
  // without a queue of its own answers FailedPrecondition.
  virtual engine::Result<JobInfo> SetPriority(const std::string& id, int64_t priority) {
    (void)priority;
    return engine::Status::FailedPrecondition("job '" + id + "': priorities are not supported");
  }
  virtual engine::Result<std::vector<ScalarPoint>> Scalars(const std::string& id,
                                                           const ScalarQuery& query) = 0;
  virtual engine::Result<std::vector<std::string>> ScalarTags(const std::string& id) = 0;
  virtual engine::Result<std::vector<CheckpointInfo>> Checkpoints(const std::string& id) = 0;
  // The job's latest evaluation of `split` ("train", "validation", "test"), or ("") of any
  // split, the latest recorded. NotFound for an unknown job, and for a job with no such
  // evaluation yet (saying so). A service that keeps none answers FailedPrecondition.
  virtual engine::Result<EvaluationInfo> Evaluation(const std::string& id,
                                                    const std::string& split) {
    (void)split;
    return engine::Status::FailedPrecondition("job '" + id + "': evaluations are not kept");
  }
  // from_line >= 1, limit in [1, kMaxLogLines].
  virtual engine::Result<std::vector<LogLine>> Logs(const std::string& id, int64_t from_line,
                                                    int64_t limit) = 0;

  // Events of one job (job_id) or of the job list (job_id empty) with id > after_id, then live
  // ones, delivered in id order on a service thread; `deliver` must not block (queue and return).
  // NotFound for an unknown job.
  virtual engine::Result<std::unique_ptr<Subscription>> Subscribe(
      const std::string& job_id, int64_t after_id,
      std::function<void(const ServiceEvent&)> deliver) = 0;

  // The service's own metrics (jobs by state, steps, examples/s, the database's writes); the
  // HTTP layer adds its own and writes them all (prometheus.h).
  virtual std::vector<Metric> Metrics() = 0;

  // For GET /healthz.
  virtual ServiceHealth Health() { return {}; }
};

}  // namespace trainingd::api
