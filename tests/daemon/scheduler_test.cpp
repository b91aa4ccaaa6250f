// The scheduler on tables of queued jobs, without a JobManager: which start, in what order.
#include "trainingd/daemon/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainingd::daemon {
namespace {

struct Row {
  std::string id;
  int64_t priority = 0;
  std::string owner = "alice";
  bool runs_alone = false;
};

Scheduler Queue(const std::vector<Row>& rows) {
  Scheduler s;
  for (const Row& r : rows) s.Enqueue(QueuedJob{r.id, r.priority, r.owner, r.runs_alone});
  return s;
}

std::vector<std::string> Ids(const std::vector<QueuedJob>& jobs) {
  std::vector<std::string> ids;
  for (const QueuedJob& j : jobs) ids.push_back(j.id);
  return ids;
}

using Ids_ = std::vector<std::string>;

TEST(SchedulerTest, DefaultsAreArrivalOrder) {
  Scheduler s = Queue({{"a"}, {"b"}, {"c"}, {"d"}});
  EXPECT_EQ(Ids(s.Order()), (Ids_{"a", "b", "c", "d"}));
  EXPECT_EQ(Ids(s.Take(2, 0)), (Ids_{"a", "b"}));
  EXPECT_EQ(Ids(s.Take(5, 2)), (Ids_{"c", "d"}));
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(s.Take(1, 0).empty());
}

TEST(SchedulerTest, NoFreeSlotsStartsNothing) {
  Scheduler s = Queue({{"a"}, {"b"}});
  EXPECT_TRUE(s.Take(0, 4).empty());
  EXPECT_TRUE(s.Take(-1, 4).empty());
  EXPECT_EQ(s.size(), 2u);
}

TEST(SchedulerTest, HigherPriorityFirstThenArrival) {
  struct Case {
    const char* name;
    std::vector<Row> rows;
    Ids_ order;
  };
  const std::vector<Case> cases = {
      {"one urgent behind many", {{"a"}, {"b"}, {"c", 5}}, {"c", "a", "b"}},
      {"ties keep arrival", {{"a", 1}, {"b", 1}, {"c", 1}}, {"a", "b", "c"}},
      {"negative waits", {{"a", -1}, {"b"}, {"c", -1}, {"d"}}, {"b", "d", "a", "c"}},
      {"mixed", {{"a", 2}, {"b", 10}, {"c"}, {"d", 10}, {"e", 2}}, {"b", "d", "a", "e", "c"}},
  };
  for (const Case& c : cases) {
    Scheduler s = Queue(c.rows);
    EXPECT_EQ(Ids(s.Order()), c.order) << c.name;
    EXPECT_EQ(Ids(s.Take(static_cast<int>(c.rows.size()), 0)), c.order) << c.name;
  }
}

TEST(SchedulerTest, ReEnqueueJoinsTheBack) {
  Scheduler s = Queue({{"a"}, {"b"}, {"c"}});
  s.Enqueue(QueuedJob{"a", 0, "alice", false});  // e.g. resumed after a stop
  EXPECT_EQ(Ids(s.Order()), (Ids_{"b", "c", "a"}));
  EXPECT_EQ(s.size(), 3u);
}

TEST(SchedulerTest, RemoveAndUnknownIds) {
  Scheduler s = Queue({{"a"}, {"b"}, {"c"}});
  EXPECT_TRUE(s.Remove("b"));
  EXPECT_FALSE(s.Remove("b"));
  EXPECT_FALSE(s.Remove("zz"));
  EXPECT_FALSE(s.SetPriority("zz", 3));
  EXPECT_FALSE(s.Contains("b"));
  EXPECT_TRUE(s.Contains("a"));
  EXPECT_EQ(Ids(s.Order()), (Ids_{"a", "c"}));
}

TEST(SchedulerTest, SetPriorityKeepsArrivalAmongEquals) {
  Scheduler s = Queue({{"a"}, {"b", 3}, {"c"}, {"d", 3}});
  ASSERT_TRUE(s.SetPriority("c", 3));
  // c arrived before d: among the priority-3 jobs it comes after b and before d.
  EXPECT_EQ(Ids(s.Order()), (Ids_{"b", "c", "d", "a"}));
  ASSERT_TRUE(s.SetPriority("b", 0));
  EXPECT_EQ(Ids(s.Order()), (Ids_{"c", "d", "a", "b"}));
  EXPECT_EQ(s.Order()[3].priority, 0);
}

TEST(SchedulerTest, RunsAloneWaitsForAnEmptyMachineAndStartsAlone) {
  Scheduler s = Queue({{"suspect", 0, "alice", true}, {"b"}, {"c"}});
  // Something runs: the suspect waits, the jobs behind it do not.
  EXPECT_EQ(Ids(s.Take(1, 1)), (Ids_{"b"}));
  // Nothing runs: it starts, and nothing beside it in the same call.
  EXPECT_EQ(Ids(s.Take(4, 0)), (Ids_{"suspect"}));
  EXPECT_EQ(Ids(s.Order()), (Ids_{"c"}));
}

TEST(SchedulerTest, RunsAloneBehindAnotherTakenJobWaits) {
  Scheduler s = Queue({{"a"}, {"suspect", 0, "alice", true}, {"c"}});
  EXPECT_EQ(Ids(s.Take(3, 0)), (Ids_{"a", "c"}));
  EXPECT_EQ(Ids(s.Order()), (Ids_{"suspect"}));
}

}  // namespace
}  // namespace trainingd::daemon
