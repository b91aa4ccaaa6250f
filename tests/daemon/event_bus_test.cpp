// EventBus: ids only grow, replay after an id, live delivery in order, bounded history.
#include "trainingd/daemon/jobs/event_bus.h"

#include <gtest/gtest.h>

#include <thread>

namespace trainingd::daemon {
namespace {

std::vector<int64_t> Ids(const std::vector<api::ServiceEvent>& events) {
  std::vector<int64_t> out;
  for (const auto& e : events) out.push_back(e.id);
  return out;
}

TEST(EventBusTest, IdsStartAtTheEpochAndGrowPerTopic) {
  EventBus bus(100, /*epoch=*/1000);
  EXPECT_EQ(bus.Publish("a", api::EventKind::kState, api::JobStateEvent{}), 1001);
  EXPECT_EQ(bus.Publish("a", api::EventKind::kState, api::JobStateEvent{}), 1002);
  EXPECT_EQ(bus.Publish("b", api::EventKind::kState, api::JobStateEvent{}), 1001);
  EventBus later(100);  // from the clock: far beyond any small epoch
  EXPECT_GT(later.Publish("a", api::EventKind::kLog, api::LogEvent{}), 1'000'000'000'000'000);
}

TEST(EventBusTest, ReplaysAfterAnIdThenDeliversLiveWithoutGapsOrDuplicates) {
  EventBus bus(100, 0 + 1);
  for (int i = 0; i < 5; ++i) bus.Publish("job", api::EventKind::kScalar, api::ScalarEvent{"t", i});
  std::vector<api::ServiceEvent> got;
  auto sub = bus.Subscribe("job", 3, [&](const api::ServiceEvent& e) { got.push_back(e); });
  EXPECT_EQ(Ids(got), std::vector<int64_t>({4, 5, 6}));
  bus.Publish("job", api::EventKind::kScalar, api::ScalarEvent{"t", 5});
  bus.Publish("other", api::EventKind::kScalar, api::ScalarEvent{"x"});
  EXPECT_EQ(Ids(got), std::vector<int64_t>({4, 5, 6, 7}));
  EXPECT_EQ(std::get<api::ScalarEvent>(got.back().data).step, 5);
  sub.reset();
  bus.Publish("job", api::EventKind::kScalar, api::ScalarEvent{"t", 6});
  EXPECT_EQ(got.size(), 4u);
  EXPECT_EQ(bus.subscriber_count(), 0);
}

TEST(EventBusTest, HistoryIsBoundedAndForgetDropsItButKeepsIdsGrowing) {
  EventBus bus(3, 1);
  for (int i = 0; i < 10; ++i) bus.Publish("j", api::EventKind::kLog, api::LogEvent{});
  std::vector<api::ServiceEvent> got;
  auto sub = bus.Subscribe("j", 0, [&](const api::ServiceEvent& e) { got.push_back(e); });
  EXPECT_EQ(Ids(got), std::vector<int64_t>({9, 10, 11}));
  bus.Forget("j");
  got.clear();
  auto sub2 = bus.Subscribe("j", 0, [&](const api::ServiceEvent& e) { got.push_back(e); });
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(bus.Publish("j", api::EventKind::kLog, api::LogEvent{}), 12);
}

TEST(EventBusTest, ConcurrentPublishersAreSeenInIdOrder) {
  EventBus bus(100000, 1);
  std::vector<int64_t> seen;
  auto sub = bus.Subscribe("j", 0, [&](const api::ServiceEvent& e) { seen.push_back(e.id); });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) bus.Publish("j", api::EventKind::kLog, api::LogEvent{});
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(seen.size(), 4000u);
  for (size_t i = 1; i < seen.size(); ++i) ASSERT_EQ(seen[i], seen[i - 1] + 1);
}

}  // namespace
}  // namespace trainingd::daemon
