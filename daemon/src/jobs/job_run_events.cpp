// JobManager's RunListener: what a run reports (executor threads) -- its session, scalars,
// evaluations, log lines, attempts and Slurm status -- and its end, which sets the job's state;
// and the reads of what it reported that only the store holds (its evaluations).
#include <nlohmann/json.hpp>

#include "jobs/job.h"
#include "trainingd/api/evaluation_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/daemon/jobs/job_manager.h"
#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/session/hooks/step_counter_hook.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
using api::JobState;
using job_detail::ShouldAbort;
using job_detail::StateEvent;
using json = nlohmann::json;

void JobManager::OnRunEvent(const std::string& job_id, RunEvent event) {
  if (auto* created = std::get_if<SessionCreated>(&event)) {
    // Restored at this step: what was recorded after it is redone, so drop it now (queued
    // before any new scalar, so the writer applies it first).
    store_.DropScalarsAfter(job_id, created->global_step);
    std::lock_guard<std::mutex> lock(mu_);
    if (auto job = FindLocked(job_id)) {
      job->rec.global_step = created->global_step;
      store_.UpdateJobStep(job_id, created->global_step);
      // A cluster's run has a session: it runs, whether or not its scheduler said so yet.
      if (job->rec.state == JobState::kQueued && job->has_run) {
        SetStateLocked(*job, JobState::kRunning);
      }
    }
  } else if (auto* scalar = std::get_if<ScalarRecorded>(&event)) {
    std::string name;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto job = FindLocked(job_id);
      if (!job) return;
      name = job->spec.name;
      job->latest[scalar->tag] = scalar->value;
      if (scalar->tag == eng::kStepsPerSecTag) {
        job->examples_per_sec = scalar->value * static_cast<double>(job->spec.batch_size);
      }
      if (scalar->step > job->rec.global_step) {
        job->rec.global_step = scalar->step;
        store_.UpdateJobStep(job_id, scalar->step);
      }
    }
    if (ShouldAbort(options_, name, scalar->step) && options_.abort_at_step > 0) std::abort();
    // Outside the lock: the store may make the run wait for room in its queue.
    store_.AddScalars(
        {ScalarRecord{job_id, scalar->tag, scalar->step, scalar->wall_time, scalar->value}});
    bus_.Publish(job_id, api::EventKind::kScalar,
                 api::ScalarEvent{scalar->tag, scalar->step, scalar->value, scalar->wall_time});
  } else if (auto* evaluation = std::get_if<eng::EvaluationRecorded>(&event)) {
    // The split's latest evaluation replaces the one before (DropScalarsAfter drops those of
    // steps a resume redoes).
    const eng::EvaluationSummary& e = evaluation->evaluation;
    store_.PutEvaluation({job_id, e.split, e.step, evaluation->wall_time,
                          api::DumpJson(api::EvaluationToJson(e, evaluation->wall_time))});
  } else if (auto* log = std::get_if<LogWritten>(&event)) {
    std::string line = std::string(eng::LogSeverityName(log->severity)) + ":trainingd:";
    line += log->text;
    // A line the disk has no room for is still published; the first failure is kept, so the
    // end can say so (the run itself finds out at its next checkpoint or summary write).
    const eng::Status appended = files_.AppendLog(job_id, line);
    if (!appended.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      auto job = FindLocked(job_id);
      if (job && job->log_failure.ok()) job->log_failure = appended;
    }
    bus_.Publish(job_id, api::EventKind::kLog, api::LogEvent{std::move(line)});
  } else if (auto* started = std::get_if<eng::AttemptStarted>(&event)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto job = FindLocked(job_id)) {
      api::AttemptInfo a;
      a.attempt = static_cast<int>(job->attempts.size()) + 1;  // over all of the job's runs
      a.workers = started->workers;
      a.from_step = started->from_step;
      a.started_at = started->wall_time;
      job->attempts.push_back(a);
      job->ranks.clear();
      store_.PutAttempt(job_id, a);
      // The state again, so watchers read the job anew: a cluster run reports its attempt after
      // Slurm's RUNNING has made it running.
      bus_.Publish(job_id, api::EventKind::kState, StateEvent(job->rec));
    }
  } else if (auto* attempt_ended = std::get_if<eng::AttemptEnded>(&event)) {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(job_id);
    if (job && !job->attempts.empty() && job->attempts.back().ended_at == 0) {
      api::AttemptInfo& a = job->attempts.back();
      a.ended_at = attempt_ended->wall_time;
      a.end = attempt_ended->reason;
      store_.PutAttempt(job_id, a);
      bus_.Publish(job_id, api::EventKind::kState, StateEvent(job->rec));
    }
  } else if (auto* timings = std::get_if<eng::RankTimings>(&event)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto job = FindLocked(job_id)) {
      job->ranks.clear();
      for (const eng::RankTiming& t : timings->ranks) {
        job->ranks.push_back({t.compute_seconds * 1e3, t.allreduce_seconds * 1e3});
      }
    }
  } else if (auto* status = std::get_if<eng::SchedulerStatus>(&event)) {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(job_id);
    if (!job) return;
    if (job->slurm.job_id != status->job_id) store_.UpdateJobSlurmId(job_id, status->job_id);
    job->slurm = {status->job_id, status->state, status->reason, status->nodes, status->restarts};
    job->rec.slurm_job_id = status->job_id;
    // Waiting in the cluster's queue is queued; running there is running. (A stop under way
    // stays stopping.)
    const JobState s = job->rec.state;
    if (status->state == "PENDING" && s == JobState::kRunning) {
      SetStateLocked(*job, JobState::kQueued);
    } else if (status->state == "RUNNING" && s == JobState::kQueued) {
      SetStateLocked(*job, JobState::kRunning);
    } else {
      // The state event carries no Slurm details: a change of reason or nodes is published as
      // the same state again, so watchers read the job anew.
      bus_.Publish(job_id, api::EventKind::kState, StateEvent(job->rec));
    }
  } else if (auto* ended = std::get_if<RunEnded>(&event)) {
    files_.CloseLog(job_id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
      scheduler_.Finished(job_id);  // its owner's fair-share charge becomes its run time
      SaveUsageLocked();
      if (auto job = FindLocked(job_id)) {
        job->has_run = false;
        if (job->suspect) running_suspect_ = false;
        FinishLocked(*job, ended->result);
        // A finished job keeps no replay history: its last event (the final state) only.
        if (job->rec.state != JobState::kQueued && job->rec.state != JobState::kPreempted) {
          bus_.Retire(job_id);
        }
      }
    }
    cv_.notify_all();
  }
}

void JobManager::FinishLocked(Job& job, const eng::Result<eng::JobResult>& result) {
  const std::string& id = job.rec.id;
  const bool preempted = job.preempting;
  job.preempting = false;
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
  // A log line the disk had no room for, in a run that did not notice a full disk itself.
  if (result->outcome == eng::JobResult::Outcome::kCompleted &&
      job.log_failure.code() == eng::StatusCode::kResourceExhausted) {
    job.rec.reason += "; some log lines were lost (" + job.log_failure.message() + ")";
  }
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
      } else if (preempted) {
        // Stopped for a more urgent job: it waits again at its original submit time, and its
        // next run resumes from the final checkpoint the stop wrote. Neither a failure nor a
        // crash restart.
        job.rec.reason = "preempted by job " + job.rec.preempted_by + " at global step " +
                         std::to_string(result->global_step) +
                         "; resumes from its checkpoint when a slot is free";
        SetStateLocked(job, JobState::kPreempted);
        if (!shutting_down_) scheduler_.Enqueue(job_detail::Queued(job, job.rec.created_at));
      } else if (shutting_down_ &&
                 (job.rec.state == JobState::kRunning || job.rec.state == JobState::kQueued)) {
        // The daemon is going down, not the user: leave it queued so the next start resumes it
        // (or follows its cluster job again). A job the user was stopping (kStopping) ends
        // stopped: that stop was accepted.
        job.rec.reason = executor_->RunsOutliveDaemon()
                             ? result->reason
                             : "daemon shut down; resumes on the next start";
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

eng::Result<api::EvaluationInfo> JobManager::Evaluation(const std::string& id,
                                                        const std::string& split) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!FindLocked(id)) return eng::Status::NotFound("job '" + id + "' does not exist");
  }
  auto stored = store_.GetEvaluation(id, split);
  if (!stored.ok()) return stored.status();
  if (!*stored) {
    return eng::Status::NotFound("job '" + id + "' has no evaluation" +
                                 (split.empty() ? "" : " of the " + split + " split") +
                                 " yet (hooks.evaluation or hooks.final_eval record one)");
  }
  const json body = json::parse((*stored)->body_json, nullptr, /*allow_exceptions=*/false);
  api::EvaluationInfo info;
  auto parsed = api::EvaluationFromJson(body, &info.wall_time);
  if (!parsed.ok()) {
    return eng::Status::DataLoss("the stored " + (*stored)->split + " evaluation of job '" + id +
                                 "' is unreadable: " + parsed.status().message());
  }
  info.evaluation = std::move(parsed).value();
  return info;
}

}  // namespace trainingd::daemon
