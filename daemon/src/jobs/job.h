// JobManager's in-memory record of one job, and the small helpers its files share
// (job_manager.cpp: the API's verbs and scheduling; job_recovery.cpp: loading the jobs a previous
// daemon left; job_run_events.cpp: what a run reports). Private to the daemon library.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/daemon/jobs/job_manager.h"
#include "trainingd/daemon/scheduler/scheduler.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

struct JobManager::Job {
  JobRecord rec;
  engine::JobSpec spec;
  double examples_per_sec = 0;
  std::map<std::string, double> latest;  // guarded by the manager's mu_
  // Why the daemon (not the user) stopped it, e.g. a full disk; "" = the user. Guarded by mu_.
  std::string stop_cause;
  // ResourceExhausted or IoError with a cause.
  engine::StatusCode stop_code = engine::StatusCode::kOk;
  // The first log line of this run the disk had no room for (the line was still published).
  engine::Status log_failure;
  bool suspect = false;  // this run is of a job that crashed the daemon before
  // The executor holds a run of it (from its Start to its RunEnded). A job whose run waits in a
  // cluster's queue is queued and has a run.
  bool has_run = false;
  // Its run outlives the daemon and was being stopped when the daemon died: the new Start
  // follows it again and asks it to stop once more.
  bool stop_on_start = false;
  // The scheduler chose its run to stop for job rec.preempted_by: when the run stops, the job
  // is preempted (queued again at its original submit time), not stopped.
  bool preempting = false;
  api::SlurmInfo slurm;  // a run on Slurm: what Slurm says of it
  // A data-parallel job's attempts (also in the store) and its ranks' latest step (this run's).
  std::vector<api::AttemptInfo> attempts;
  std::vector<api::RankInfo> ranks;
};

namespace job_detail {

// The start of the reason of a job whose run stops for a preemption (recovery reads it).
inline constexpr std::string_view kPreemptingReason = "preempted by job ";

// The scheduler's view of a job that joins the queue at `submitted_at` (its original submit
// time, or the time of a resume, which joins the back).
inline QueuedJob Queued(const JobManager::Job& job, double submitted_at) {
  const JobRecord& r = job.rec;
  QueuedJob q;
  q.id = r.id;
  q.owner = r.owner;
  q.priority = r.priority;
  q.runs_alone = r.crash_count > 0;  // a suspect runs alone (crash containment)
  q.submitted_at = submitted_at;
  // A stop keeps its work only with checkpoints. An experiment's trial is preempted as any job:
  // its experiment waits while it is preempted (not an end) and takes its result at its rung.
  q.preemptible = job.spec.hooks.checkpoint.enabled;
  return q;
}

inline bool IsEnded(JobState s) {
  return s == JobState::kCompleted || s == JobState::kFailed || s == JobState::kStopped;
}

inline api::JobStateEvent StateEvent(const JobRecord& r) {
  return {r.id, r.name, r.state, r.global_step, r.max_steps, r.error, r.reason, false};
}

// "name" or "name@step", from TRAININGD_TEST_ABORT_JOB.
inline bool ShouldAbort(const JobManagerOptions& o, const std::string& name, int64_t step) {
  return !o.abort_job_name.empty() && o.abort_job_name == name && step >= o.abort_at_step;
}

}  // namespace job_detail

}  // namespace trainingd::daemon
