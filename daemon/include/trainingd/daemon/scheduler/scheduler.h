// Scheduler: the queue's order, the decision which queued jobs start next, the users' quotas and
// fair share, and which running jobs a waiting one preempts. JobManager owns the jobs' states and
// runs; it tells the scheduler which jobs wait (Enqueue, Remove) and which runs end (Finished),
// and asks it, as slots free up, which jobs start now (Take) and, when none is free, which runs
// to stop for a more urgent job (ChooseVictims). The scheduler has no threads and does not lock:
// its owner guards it with its own lock (JobManager's mu_), so the queue and the jobs' states
// change together. Its time comes from SchedulerOptions::now, so tests drive a fake clock.
//
// Order (docs/operations.md#team-use): higher priority first; among equal priorities, the owner
// with the smaller fair-share usage (divided by its weight) first; then the earlier submit time
// (a preempted job keeps its original one, so it runs before newer jobs of its priority:
// Determined #3340); then the order of Enqueue.
//
// Fair share: each owner's usage is the slot-seconds its runs took, decayed with a half-life
// (usage halves every half_life_secs). A run is charged when it is taken, with an estimate of
// its length (the mean of the runs that ended, default_estimate_secs before any did), so a
// burst of jobs from one owner cannot take every slot that frees up before their first run ends;
// while it runs its charge grows to its run time once that passes the estimate, and when it ends
// the charge is corrected to its run time. Usage outlives a restart: its owner writes down the
// accounts each charge changed (TakeChangedUsage) and hands them back on start (RestoreUsage);
// an account holds its usage as of the time of its last charge on the scheduler's clock (the
// wall clock in the daemon), so the time the daemon was down decays it like any other time.
//
// Quotas per owner (Quota: a default and per-user entries): running_slots caps the owner's runs
// (the job waits, WaitingReason says why), queued_jobs caps its waiting jobs and max_priority
// the priority it may ask for (CheckQueue, CheckPriority refuse with ResourceExhausted whose
// message starts "quotas.<key>:").
//
// Preemption: when no slot is free, a waiting job may preempt running jobs of strictly lower
// priority, newest started first, never one that runs for less than min_run_secs nor one whose
// stop would lose work (QueuedJob::preemptible false).
//
// A job that crashed the daemon before (runs_alone) starts only when nothing else runs, and
// nothing else starts with it in the same Take; it does not hold back the jobs behind it while
// it waits (docs/architecture.md, crash containment), and never preempts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// What the scheduler knows of a queued job.
struct QueuedJob {
  std::string id;
  int64_t priority = 0;  // higher starts first (kMinJobPriority..kMaxJobPriority)
  std::string owner;
  bool runs_alone = false;   // it crashed the daemon before: it starts only when nothing runs
  double submitted_at = 0;   // orders equal priority and share: the original submit time
  bool preemptible = false;  // a stop keeps its work (it checkpoints): it may be preempted
};

// One owner's limits; unset = no limit.
struct Quota {
  std::optional<int64_t> running_slots;  // its runs at once (>= 1)
  std::optional<int64_t> queued_jobs;    // its jobs waiting at once (>= 1)
  std::optional<int64_t> max_priority;   // the highest priority its jobs may have
};

struct SchedulerOptions {
  double half_life_secs = 86400;       // fair share: usage halves in this time
  double default_estimate_secs = 300;  // the charge of a run before any run has ended
  double default_weight = 1;
  std::map<std::string, double> weights;  // per owner: a larger weight, a larger share
  Quota default_quota;
  std::map<std::string, Quota> quotas;  // per owner, instead of default_quota
  bool preemption = true;
  double min_run_secs = 120;    // a run younger than this is never preempted
  std::function<double()> now;  // seconds; null = the system clock
};

// One owner's fair-share usage: slot-seconds, decayed, as of time `at` (the scheduler's clock).
struct OwnerUsage {
  std::string owner;
  double usage = 0;
  double at = 0;
};

// A run to stop so that job `by` can start.
struct Preemption {
  std::string victim;
  std::string by;
  int64_t by_priority = 0;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options = {});

  // Queues the job. A job already queued is replaced (with the new fields, at its new place).
  void Enqueue(QueuedJob job);
  // Takes the job out of the queue; false if it was not queued.
  bool Remove(const std::string& id);
  // Changes a queued or running job's priority (a queued one takes its new place now). False if
  // the scheduler does not know the job.
  bool SetPriority(const std::string& id, int64_t priority);
  bool Contains(const std::string& id) const { return queued_.count(id) != 0; }
  size_t size() const { return queued_.size(); }
  bool empty() const { return queued_.empty(); }

  // The queued jobs that start now, in the order to start them, taken out of the queue and
  // counted as running (their owners charged the estimate): at most `free_slots` of them, given
  // that `running` runs are under way. Empty when none may start.
  std::vector<QueuedJob> Take(int free_slots, int running);
  // A run Take handed out ended (or never started): its owner's charge becomes its run time.
  void Finished(const std::string& id);
  // The runs to stop now so that more urgent queued jobs can start, given `free_slots` free
  // slots; each victim is chosen once (until it is Finished), and only among the runs for which
  // `running(id)` is true (a run still waiting in a cluster's queue holds a slot but does not
  // run: null = all). Empty when preemption is off.
  std::vector<Preemption> ChooseVictims(
      int free_slots, const std::function<bool(const std::string&)>& running = nullptr);

  // ResourceExhausted "quotas.queued_jobs: ..." when `owner` may not queue one more job.
  engine::Status CheckQueue(const std::string& owner) const;
  // ResourceExhausted "quotas.max_priority: ..." when `owner` may not ask for `priority`.
  engine::Status CheckPriority(const std::string& owner, int64_t priority) const;
  // Why a queued job does not start although it may be next (a quota); "" if nothing of the
  // scheduler's holds it.
  std::string WaitingReason(const std::string& id) const;

  // The owner's decayed usage in slot-seconds, as of now.
  double Usage(const std::string& owner) const;
  // The accounts charged since the last call (each as of its last charge), by owner: for the
  // owner of the scheduler to write down.
  std::vector<OwnerUsage> TakeChangedUsage();
  // Sets the owners' accounts as written down before (by TakeChangedUsage, before a restart).
  // Each decays from its `at` on. Entries with a negative or non-finite usage or time are
  // skipped; an owner's account already charged here is replaced.
  void RestoreUsage(const std::vector<OwnerUsage>& accounts);
  // The queued jobs in the order they would start now (for tests and lists); nothing changes.
  std::vector<QueuedJob> Order() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Waiting {
    QueuedJob job;
    uint64_t seq = 0;
  };
  struct Running {
    QueuedJob job;
    uint64_t seq = 0;
    double started_at = 0;
    double estimate = 0;
    double charged = 0;  // slot-seconds charged to the owner so far
    bool victim = false;
  };
  struct Account {
    double usage = 0;  // as of `at`
    double at = 0;
  };

  double Now() const;
  const Quota& QuotaOf(const std::string& owner) const;
  double WeightOf(const std::string& owner) const;
  // Adds `amount` (may be negative) to the owner's usage, decayed to `now` first.
  void Charge(const std::string& owner, double amount, double now);
  // Grows the charge of each run that has run longer than its estimate.
  void Accrue(double now);
  int RunningOf(const std::string& owner) const;
  bool AtRunningQuota(const std::string& owner) const;
  // The queued jobs in start order as of `now`.
  std::vector<const Waiting*> Sorted(double now) const;

  SchedulerOptions options_;
  std::map<std::string, Waiting> queued_;
  std::map<std::string, Running> running_;
  mutable std::map<std::string, Account> accounts_;
  std::set<std::string> changed_;  // owners charged since TakeChangedUsage
  double mean_run_secs_ = 0;       // of the runs that ended; 0 = none yet
  uint64_t next_seq_ = 0;
};

}  // namespace trainingd::daemon
