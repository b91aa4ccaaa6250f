#include "trainingd/daemon/jobs/event_bus.h"

#include <chrono>

namespace trainingd::daemon {

class EventBus::Handle final : public api::Subscription {
 public:
  Handle(EventBus* bus, std::string topic, int64_t number)
      : bus_(bus), topic_(std::move(topic)), number_(number) {}
  ~Handle() override { bus_->Unsubscribe(topic_, number_); }

 private:
  EventBus* bus_;
  std::string topic_;
  int64_t number_;
};

EventBus::EventBus(size_t history_per_topic, int64_t epoch)
    : history_(history_per_topic),
      epoch_(epoch > 0 ? epoch
                       : std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                                 .count() *
                             1000) {}

EventBus::Topic& EventBus::TopicLocked(const std::string& topic) {
  auto [it, inserted] = topics_.try_emplace(topic);
  if (inserted) it->second.next_id = epoch_ + 1;
  return it->second;
}

int64_t EventBus::Publish(const std::string& topic, api::EventKind kind, Payload data) {
  std::lock_guard<std::mutex> lock(mu_);
  Topic& t = TopicLocked(topic);
  api::ServiceEvent e{t.next_id++, kind, std::move(data)};
  for (auto& [number, deliver] : t.subscribers) deliver(e);
  t.history.push_back(std::move(e));
  if (t.history.size() > history_) t.history.pop_front();
  return t.next_id - 1;
}

std::unique_ptr<api::Subscription> EventBus::Subscribe(const std::string& topic, int64_t after_id,
                                                       Deliver deliver) {
  std::lock_guard<std::mutex> lock(mu_);
  Topic& t = TopicLocked(topic);
  for (const auto& e : t.history) {
    if (e.id > after_id) deliver(e);
  }
  const int64_t number = next_number_++;
  t.subscribers.emplace(number, std::move(deliver));
  ++subscribers_;
  return std::make_unique<Handle>(this, topic, number);
}

void EventBus::Unsubscribe(const std::string& topic, int64_t number) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  if (it->second.subscribers.erase(number)) --subscribers_;
  if (it->second.forgotten && it->second.subscribers.empty()) topics_.erase(it);
}

void EventBus::Forget(const std::string& topic) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  if (it->second.subscribers.empty()) {
    topics_.erase(it);
    return;
  }
  it->second.history.clear();
  it->second.forgotten = true;  // erased with its last subscriber
}

void EventBus::Retire(const std::string& topic) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  std::deque<api::ServiceEvent>& h = it->second.history;
  if (h.size() > 1) h.erase(h.begin(), h.end() - 1);
  h.shrink_to_fit();
}

size_t EventBus::history_size(const std::string& topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topics_.find(topic);
  return it == topics_.end() ? 0 : it->second.history.size();
}

int64_t EventBus::subscriber_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return subscribers_;
}

}  // namespace trainingd::daemon
