#include "trainingd/daemon/scheduler/scheduler.h"

namespace trainingd::daemon {

void Scheduler::Enqueue(QueuedJob job) {
  Remove(job.id);
  const Key key{-job.priority, next_seq_++};
  index_[job.id] = key;
  queue_.emplace(key, std::move(job));
}

bool Scheduler::Remove(const std::string& id) {
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  queue_.erase(it->second);
  index_.erase(it);
  return true;
}

bool Scheduler::SetPriority(const std::string& id, int64_t priority) {
  auto it = index_.find(id);
  if (it == index_.end()) return false;
  auto node = queue_.extract(it->second);
  node.mapped().priority = priority;
  node.key().first = -priority;
  it->second = node.key();
  queue_.insert(std::move(node));
  return true;
}

std::vector<QueuedJob> Scheduler::Take(int free_slots, int running) {
  std::vector<QueuedJob> taken;
  for (auto it = queue_.begin(); it != queue_.end() && free_slots > 0;) {
    const bool alone = it->second.runs_alone;
    // A job that runs alone waits until nothing runs; the jobs behind it may start meanwhile.
    if (alone && (running > 0 || !taken.empty())) {
      ++it;
      continue;
    }
    index_.erase(it->second.id);
    taken.push_back(std::move(it->second));
    it = queue_.erase(it);
    --free_slots;
    ++running;
    if (alone) break;  // nothing starts beside it
  }
  return taken;
}

std::vector<QueuedJob> Scheduler::Order() const {
  std::vector<QueuedJob> order;
  order.reserve(queue_.size());
  for (const auto& [key, job] : queue_) order.push_back(job);
  return order;
}

}  // namespace trainingd::daemon
