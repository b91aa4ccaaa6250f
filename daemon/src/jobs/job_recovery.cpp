// JobManager's start: the jobs a previous daemon left, loaded and put back in the queue (crash
// containment: job_manager.h).
#include <algorithm>

#include "jobs/job.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/daemon/jobs/job_manager.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
using api::JobState;
using job_detail::kPreemptingReason;
using job_detail::Queued;

eng::Status JobManager::Recover() {
  // The users' fair-share usage as the previous daemon left it; it decays from the time of each
  // user's last charge, the downtime included.
  auto usage = store_.ListFairShareUsage();
  if (!usage.ok()) return usage.status();
  std::vector<OwnerUsage> accounts;
  for (const FairShareUsageRecord& u : *usage) accounts.push_back({u.owner, u.usage, u.at});
  scheduler_.RestoreUsage(accounts);
  // Load every job; the oldest unfinished ones go back in the queue first.
  std::vector<JobRecord> all;
  std::string cursor;
  for (;;) {
    auto page = store_.ListJobs(std::nullopt, 1000, cursor);
    if (!page.ok()) return page.status();
    if (page->empty()) break;
    all.insert(all.end(), page->begin(), page->end());
    cursor = page->back().id;
  }
  std::reverse(all.begin(), all.end());  // oldest first
  auto attempts = store_.ListAttempts();
  if (!attempts.ok()) return attempts.status();
  for (JobRecord& r : all) {
    auto job = std::make_shared<Job>();
    bool enqueue = false;
    auto spec = api::ParseJobSpec(r.spec_json);
    if (!spec.ok()) {
      r.state = JobState::kFailed;
      r.error = "stored spec no longer valid: " + spec.status().message();
    } else {
      job->spec = std::move(spec).value();
    }
    job->slurm.job_id = r.slurm_job_id;
    if ((r.state == JobState::kRunning || r.state == JobState::kStopping) &&
        executor_->RunsOutliveDaemon()) {
      // Its run goes on without the daemon (a cluster job): not a suspect; its new Start
      // reattaches to it (and a stop under way is asked for again).
      job->stop_on_start = r.state == JobState::kStopping;
      r.state = JobState::kQueued;
      r.reason = "the daemon restarted while it ran; following its run again";
      enqueue = true;
    } else if (r.state == JobState::kRunning) {
      // Marked running before it trained and not ended: the daemon died under it.
      ++r.crash_count;
      if (r.crash_count > options_.limits.max_crash_restarts) {
        r.state = JobState::kFailed;
        r.error = "Aborted: the daemon died while this job ran, " + std::to_string(r.crash_count) +
                  " times in a row";
        r.reason = "crashed the daemon: it was running each of the last " +
                   std::to_string(r.crash_count) +
                   " times the daemon died, so it is not restarted again (max_crash_restarts " +
                   std::to_string(options_.limits.max_crash_restarts) + "); resume it to try again";
        r.finished_at = env_->NowSeconds();
      } else {
        r.state = JobState::kQueued;
        r.reason = "the daemon died while it ran; resumes from its latest checkpoint (restart " +
                   std::to_string(r.crash_count) + " of at most " +
                   std::to_string(options_.limits.max_crash_restarts) + ")";
        enqueue = true;
      }
      store_.UpdateJobCrashCount(r.id, r.crash_count);
    } else if (r.state == JobState::kQueued || r.state == JobState::kPreempted) {
      // A preempted job waits as it did, at its original submit time.
      enqueue = true;
    } else if (r.state == JobState::kStopping && r.reason.starts_with(kPreemptingReason)) {
      // Its preemption was under way: it waits again, and resumes from its latest checkpoint.
      r.state = JobState::kPreempted;
      enqueue = true;
    } else if (r.state == JobState::kStopping) {
      r.state = JobState::kStopped;
      r.reason = "stop requested";
    }
    job->rec = r;
    if (enqueue) scheduler_.Enqueue(Queued(*job, r.created_at));
    store_.UpdateJobState(r.id, r.state, r.started_at, r.finished_at, r.error, r.reason);
    auto latest = store_.LatestScalars(r.id);
    if (latest.ok()) job->latest = *latest;
    job->attempts = std::move((*attempts)[r.id]);
    for (api::AttemptInfo& a : job->attempts) {
      // It was running when the daemon died (a cluster job's goes on).
      if (a.ended_at == 0 && !executor_->RunsOutliveDaemon()) {
        a.ended_at = env_->NowSeconds();
        a.end = "the daemon died";
        store_.PutAttempt(r.id, a);
      }
    }
    jobs_.emplace(r.id, std::move(job));
  }
  return eng::Status::Ok();
}

}  // namespace trainingd::daemon
