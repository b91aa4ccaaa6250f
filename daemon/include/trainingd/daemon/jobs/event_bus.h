// EventBus: live events per topic (a job id, or "" for the job list) with ids that only grow,
// a bounded history for replay, and subscribers (the HTTP layer's server-sent-event streams).
//
// Ids: each topic's first id is the bus's epoch (milliseconds since 1970 at construction, times
// 1000), then +1 per event, so ids from a later daemon run are larger than any from an earlier one
// and a client resuming with Last-Event-ID after a restart gets everything newer. Replay covers
// the last `history` events of a topic; older ones are gone (scalars stay queryable in the
// database). Delivery happens under the bus lock, in id order, history first: a subscriber sees
// every event after `after_id` exactly once, as long as the history still holds it. `deliver` must
// not block (queue and return). Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>

#include "trainingd/api/job_service.h"

namespace trainingd::daemon {

class EventBus {
 public:
  using Deliver = std::function<void(const api::ServiceEvent&)>;
  using Payload =
      std::variant<api::JobStateEvent, api::ScalarEvent, api::LogEvent, api::ExperimentStateEvent>;

  explicit EventBus(size_t history_per_topic = 4096, int64_t epoch = 0);  // epoch 0 = from clock

  // Assigns the topic's next id and delivers the event to its subscribers. Returns the id.
  int64_t Publish(const std::string& topic, api::EventKind kind, Payload data);
  // Delivers the topic's history after `after_id`, then every later event until the returned
  // handle is destroyed.
  std::unique_ptr<api::Subscription> Subscribe(const std::string& topic, int64_t after_id,
                                               Deliver deliver);
  // Drops a topic (a deleted job): its history now, the topic itself once its last subscriber
  // leaves; subscribers stay subscribed and see nothing more.
  void Forget(const std::string& topic);
  // Shrinks a topic's history to its last event (a job that ended: its final "state" event), so
  // a finished job keeps no replay buffer; a client that reconnects still learns how it ended.
  void Retire(const std::string& topic);
  // Events a topic holds for replay (tests and metrics).
  size_t history_size(const std::string& topic) const;
  int64_t subscriber_count() const;

 private:
  class Handle;
  struct Topic {
    int64_t next_id = 0;
    std::deque<api::ServiceEvent> history;
    std::map<int64_t, Deliver> subscribers;  // by subscription number
    bool forgotten = false;  // Forget()ed while subscribed: erase with the last subscriber
  };
  void Unsubscribe(const std::string& topic, int64_t number);
  Topic& TopicLocked(const std::string& topic);

  const size_t history_;
  const int64_t epoch_;
  mutable std::mutex mu_;
  std::map<std::string, Topic> topics_;
  int64_t next_number_ = 0;
  int64_t subscribers_ = 0;
};

}  // namespace trainingd::daemon
