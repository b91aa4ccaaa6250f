#include "trainingd/daemon/scheduler/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>

namespace trainingd::daemon {
namespace eng = trainingd::engine;

namespace {

// Runs that ended move the estimate this much toward their run time.
constexpr double kEstimateWeight = 0.2;

}  // namespace

Scheduler::Scheduler(SchedulerOptions options) : options_(std::move(options)) {}

double Scheduler::Now() const {
  if (options_.now) return options_.now();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const Quota& Scheduler::QuotaOf(const std::string& owner) const {
  auto it = options_.quotas.find(owner);
  return it == options_.quotas.end() ? options_.default_quota : it->second;
}

double Scheduler::WeightOf(const std::string& owner) const {
  auto it = options_.weights.find(owner);
  return it == options_.weights.end() ? options_.default_weight : it->second;
}

double Scheduler::Usage(const std::string& owner) const {
  auto it = accounts_.find(owner);
  if (it == accounts_.end()) return 0;
  const double dt = std::max(0.0, Now() - it->second.at);
  return it->second.usage * std::exp2(-dt / options_.half_life_secs);
}

void Scheduler::Charge(const std::string& owner, double amount, double now) {
  Account& a = accounts_[owner];
  const double dt = std::max(0.0, now - a.at);
  a.usage = std::max(0.0, a.usage * std::exp2(-dt / options_.half_life_secs) + amount);
  a.at = std::max(a.at, now);
  changed_.insert(owner);
}

std::vector<OwnerUsage> Scheduler::TakeChangedUsage() {
  std::vector<OwnerUsage> out;
  for (const std::string& owner : changed_) {
    const Account& a = accounts_[owner];
    out.push_back(OwnerUsage{owner, a.usage, a.at});
  }
  changed_.clear();
  return out;
}

void Scheduler::RestoreUsage(const std::vector<OwnerUsage>& accounts) {
  for (const OwnerUsage& u : accounts) {
    if (!std::isfinite(u.usage) || u.usage < 0 || !std::isfinite(u.at) || u.at < 0) continue;
    accounts_[u.owner] = Account{u.usage, u.at};
  }
}

void Scheduler::Accrue(double now) {
  for (auto& [id, r] : running_) {
    const double target = std::max(r.estimate, now - r.started_at);
    if (target > r.charged) {
      Charge(r.job.owner, target - r.charged, now);
      r.charged = target;
    }
  }
}

int Scheduler::RunningOf(const std::string& owner) const {
  int n = 0;
  for (const auto& [id, r] : running_) n += r.job.owner == owner;
  return n;
}

bool Scheduler::AtRunningQuota(const std::string& owner) const {
  const Quota& q = QuotaOf(owner);
  return q.running_slots && RunningOf(owner) >= *q.running_slots;
}

void Scheduler::Enqueue(QueuedJob job) {
  Remove(job.id);
  std::string id = job.id;
  queued_[id] = Waiting{std::move(job), next_seq_++};
}

bool Scheduler::Remove(const std::string& id) { return queued_.erase(id) != 0; }

bool Scheduler::SetPriority(const std::string& id, int64_t priority) {
  if (auto it = queued_.find(id); it != queued_.end()) {
    it->second.job.priority = priority;
    return true;
  }
  if (auto it = running_.find(id); it != running_.end()) {
    it->second.job.priority = priority;
    return true;
  }
  return false;
}

std::vector<const Scheduler::Waiting*> Scheduler::Sorted(double now) const {
  // The share of each owner once, as of now: usage per unit of weight.
  std::map<std::string, double> share;
  for (const auto& [id, w] : queued_) {
    const std::string& owner = w.job.owner;
    if (share.count(owner)) continue;
    auto it = accounts_.find(owner);
    double usage = 0;
    if (it != accounts_.end()) {
      usage = it->second.usage *
              std::exp2(-std::max(0.0, now - it->second.at) / options_.half_life_secs);
    }
    share[owner] = usage / WeightOf(owner);
  }
  std::vector<const Waiting*> order;
  order.reserve(queued_.size());
  for (const auto& [id, w] : queued_) order.push_back(&w);
  std::sort(order.begin(), order.end(), [&](const Waiting* a, const Waiting* b) {
    return std::make_tuple(-a->job.priority, share[a->job.owner], a->job.submitted_at, a->seq) <
           std::make_tuple(-b->job.priority, share[b->job.owner], b->job.submitted_at, b->seq);
  });
  return order;
}

std::vector<QueuedJob> Scheduler::Take(int free_slots, int running) {
  std::vector<QueuedJob> taken;
  const double now = Now();
  Accrue(now);
  while (free_slots > 0) {
    // Again after each pick: its charge may put its owner behind another.
    const Waiting* pick = nullptr;
    for (const Waiting* w : Sorted(now)) {
      // A job that runs alone waits until nothing runs; the jobs behind it may start meanwhile.
      if (w->job.runs_alone && (running > 0 || !taken.empty())) continue;
      if (AtRunningQuota(w->job.owner)) continue;
      pick = w;
      break;
    }
    if (pick == nullptr) break;
    QueuedJob job = pick->job;
    const uint64_t seq = pick->seq;
    queued_.erase(job.id);
    const double estimate = mean_run_secs_ > 0 ? mean_run_secs_ : options_.default_estimate_secs;
    Charge(job.owner, estimate, now);
    running_[job.id] = Running{job, seq, now, estimate, estimate, false};
    taken.push_back(std::move(job));
    --free_slots;
    ++running;
    if (taken.back().runs_alone) break;  // nothing starts beside it
  }
  return taken;
}

void Scheduler::Finished(const std::string& id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  const double now = Now();
  const Running& r = it->second;
  const double ran = std::max(0.0, now - r.started_at);
  Charge(r.job.owner, ran - r.charged, now);
  // A run that ended at once (it could not start) says nothing of how long runs take.
  if (ran > 0) {
    mean_run_secs_ =
        mean_run_secs_ > 0 ? mean_run_secs_ + kEstimateWeight * (ran - mean_run_secs_) : ran;
  }
  running_.erase(it);
}

std::vector<Preemption> Scheduler::ChooseVictims(
    int free_slots, const std::function<bool(const std::string&)>& running) {
  std::vector<Preemption> out;
  if (!options_.preemption || queued_.empty()) return out;
  const double now = Now();
  Accrue(now);
  // Slots about to free: the victims already stopping.
  int free = std::max(0, free_slots);
  for (const auto& [id, r] : running_) free += r.victim;
  // The candidates, newest started first (ties: the later taken first).
  std::vector<Running*> candidates;
  for (auto& [id, r] : running_) {
    if (!r.victim && r.job.preemptible && now - r.started_at >= options_.min_run_secs &&
        (!running || running(id))) {
      candidates.push_back(&r);
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Running* a, const Running* b) {
    return std::tie(a->started_at, a->seq) > std::tie(b->started_at, b->seq);
  });
  std::map<std::string, int> taking;  // runs each owner would have once the free slots are given
  for (const Waiting* w : Sorted(now)) {
    const QueuedJob& job = w->job;
    if (job.runs_alone) continue;
    const Quota& q = QuotaOf(job.owner);
    if (q.running_slots && RunningOf(job.owner) + taking[job.owner] >= *q.running_slots) continue;
    if (free > 0) {  // a slot frees (or is free) for it without preempting
      --free;
      ++taking[job.owner];
      continue;
    }
    auto victim = std::find_if(candidates.begin(), candidates.end(), [&](const Running* r) {
      return !r->victim && r->job.priority < job.priority;
    });
    // The queue is in priority order: the jobs behind this one preempt no more than it does.
    if (victim == candidates.end()) break;
    (*victim)->victim = true;
    ++taking[job.owner];
    out.push_back(Preemption{(*victim)->job.id, job.id, job.priority});
  }
  return out;
}

eng::Status Scheduler::CheckQueue(const std::string& owner) const {
  const Quota& q = QuotaOf(owner);
  if (!q.queued_jobs) return eng::Status::Ok();
  int64_t n = 0;
  for (const auto& [id, w] : queued_) n += w.job.owner == owner;
  if (n < *q.queued_jobs) return eng::Status::Ok();
  return eng::Status::ResourceExhausted("quotas.queued_jobs: user '" + owner + "' has " +
                                        std::to_string(n) + " jobs waiting, the most its quota (" +
                                        std::to_string(*q.queued_jobs) +
                                        ") allows; submit again when some have started");
}

eng::Status Scheduler::CheckPriority(const std::string& owner, int64_t priority) const {
  const Quota& q = QuotaOf(owner);
  if (!q.max_priority || priority <= *q.max_priority) return eng::Status::Ok();
  return eng::Status::ResourceExhausted(
      "quotas.max_priority: user '" + owner + "' may give its jobs a priority of at most " +
      std::to_string(*q.max_priority) + ", asked for " + std::to_string(priority));
}

std::string Scheduler::WaitingReason(const std::string& id) const {
  auto it = queued_.find(id);
  if (it == queued_.end()) return "";
  const std::string& owner = it->second.job.owner;
  if (!AtRunningQuota(owner)) return "";
  return "quotas.running_slots: user '" + owner + "' already runs " +
         std::to_string(RunningOf(owner)) + " jobs, the most its quota allows";
}

std::vector<QueuedJob> Scheduler::Order() const {
  std::vector<QueuedJob> order;
  for (const Waiting* w : Sorted(Now())) order.push_back(w->job);
  return order;
}

}  // namespace trainingd::daemon
