// Scheduler: the queue's order and the decision which queued jobs start next. JobManager owns
// the jobs' states and runs; it tells the scheduler which jobs wait (Enqueue, Remove) and asks
// it, as slots free up, which of them start now (Take). The scheduler holds no job state beyond
// what ordering needs, has no threads and does not lock: its owner guards it with its own lock
// (JobManager's mu_), so the queue and the jobs' states change together.
//
// Order: higher priority first; among equal priorities, the order of Enqueue (a resumed or
// recovered job joins at the back, as a submitted one does). With every priority 0 (the
// default), that is arrival order.
//
// A job that crashed the daemon before (runs_alone) starts only when nothing else runs, and
// nothing else starts with it in the same Take; it does not hold back the jobs behind it while
// it waits (docs/architecture.md, crash containment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace trainingd::daemon {

// What the scheduler knows of a queued job.
struct QueuedJob {
  std::string id;
  int64_t priority = 0;  // higher starts first (kMinJobPriority..kMaxJobPriority)
  std::string owner;
  bool runs_alone = false;  // it crashed the daemon before: it starts only when nothing runs
};

class Scheduler {
 public:
  // Puts the job at the back of the jobs of its priority. A job already queued is moved there
  // (with the new fields).
  void Enqueue(QueuedJob job);
  // Takes the job out of the queue; false if it was not queued.
  bool Remove(const std::string& id);
  // Changes a queued job's priority; it keeps its place among the jobs of its new priority by
  // its original Enqueue. False if it is not queued.
  bool SetPriority(const std::string& id, int64_t priority);
  bool Contains(const std::string& id) const { return index_.count(id) != 0; }
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }

  // The queued jobs that start now, in the order to start them, taken out of the queue: at most
  // `free_slots` of them, given that `running` runs are under way. Empty when none may start.
  std::vector<QueuedJob> Take(int free_slots, int running);
  // The queued jobs in the order they would start (for tests and lists); the queue is unchanged.
  std::vector<QueuedJob> Order() const;

 private:
  // (-priority, sequence of Enqueue): a map's order is the start order.
  using Key = std::pair<int64_t, uint64_t>;
  std::map<Key, QueuedJob> queue_;
  std::unordered_map<std::string, Key> index_;
  uint64_t next_seq_ = 0;
};

}  // namespace trainingd::daemon
