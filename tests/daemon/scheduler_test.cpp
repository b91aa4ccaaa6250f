// The scheduler on tables of queued jobs, without a JobManager: which start, in what order.
#include "trainingd/daemon/scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
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

// --- fair share, quotas and preemption, on a fake clock ---

struct FakeClock {
  double t = 1000;
  std::function<double()> fn() {
    return [this] { return t; };
  }
};

QueuedJob Job(const std::string& id, const std::string& owner, double submitted_at,
              int64_t priority = 0) {
  QueuedJob j;
  j.id = id;
  j.owner = owner;
  j.submitted_at = submitted_at;
  j.priority = priority;
  j.preemptible = true;
  return j;
}

TEST(SchedulerFairShareTest, ABurstDoesNotTakeEveryFreedSlot) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.default_estimate_secs = 60;
  Scheduler s2(o);
  // alice submits 200 jobs while two slots are free; bob two, a second later.
  for (int i = 0; i < 200; ++i) s2.Enqueue(Job("a" + std::to_string(i), "alice", clock.t));
  EXPECT_EQ(Ids(s2.Take(1, 0)), (Ids_{"a0"}));
  EXPECT_EQ(Ids(s2.Take(1, 1)), (Ids_{"a1"}));
  EXPECT_DOUBLE_EQ(s2.Usage("alice"), 120);
  clock.t += 1;
  s2.Enqueue(Job("b0", "bob", clock.t));
  s2.Enqueue(Job("b1", "bob", clock.t));
  // The next freed slot goes to bob although alice's jobs are older: her usage is charged.
  clock.t += 10;
  s2.Finished("a0");
  EXPECT_EQ(Ids(s2.Take(1, 1)), (Ids_{"b0"}));
  // a0 ran 11 s: its charge was corrected from the estimate (60) to 11.
  EXPECT_NEAR(s2.Usage("alice"), 60 + 11, 0.05);
  // bob's run is charged the estimate: the mean run time so far (11 s).
  EXPECT_NEAR(s2.Usage("bob"), 11, 0.05);
  // a1 ran 12 s: alice 23, bob 11; the slot after that goes to bob again.
  clock.t += 1;
  s2.Finished("a1");
  EXPECT_EQ(Ids(s2.Take(1, 1)), (Ids_{"b1"}));
}

TEST(SchedulerFairShareTest, OrderIsPriorityThenShareThenSubmitTime) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.default_estimate_secs = 100;
  Scheduler s(o);
  s.Enqueue(Job("a1", "alice", 1));
  s.Enqueue(Job("a2", "alice", 2));
  s.Enqueue(Job("b1", "bob", 3));
  s.Enqueue(Job("c1", "carol", 4, /*priority=*/5));
  // Nobody used anything: priority, then submit time.
  EXPECT_EQ(Ids(s.Order()), (Ids_{"c1", "a1", "a2", "b1"}));
  EXPECT_EQ(Ids(s.Take(1, 0)), (Ids_{"c1"}));  // carol's usage does not lift her priority
  EXPECT_EQ(Ids(s.Take(1, 1)), (Ids_{"a1"}));
  // alice now has usage: bob's later job goes before her earlier one.
  EXPECT_EQ(Ids(s.Order()), (Ids_{"b1", "a2"}));
  // A higher priority still beats a smaller usage.
  s.Enqueue(Job("a3", "alice", 9, /*priority=*/1));
  EXPECT_EQ(Ids(s.Order()), (Ids_{"a3", "b1", "a2"}));
}

TEST(SchedulerFairShareTest, UsageDecaysWithTheHalfLife) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.half_life_secs = 100;
  o.default_estimate_secs = 80;
  Scheduler s(o);
  s.Enqueue(Job("a", "alice", 0));
  ASSERT_EQ(Ids(s.Take(1, 0)), (Ids_{"a"}));
  EXPECT_DOUBLE_EQ(s.Usage("alice"), 80);
  clock.t += 40;  // still within the estimate: no more is charged yet
  s.Finished("a");
  // Ran 40 s: the 80 charged 40 s ago decayed, then 40 were given back.
  EXPECT_NEAR(s.Usage("alice"), 80 * std::exp2(-0.4) - 40, 1e-9);
  const double u = s.Usage("alice");
  clock.t += 100;
  EXPECT_NEAR(s.Usage("alice"), u / 2, 1e-9);
  clock.t += 200;
  EXPECT_NEAR(s.Usage("alice"), u / 8, 1e-9);
}

// What a restart keeps: the accounts written down (TakeChangedUsage) and handed to a new
// scheduler (RestoreUsage) decay from their last charge on, the downtime included.
TEST(SchedulerFairShareTest, UsageWrittenDownAndRestoredDecaysOverTheDowntime) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.half_life_secs = 100;
  o.default_estimate_secs = 80;
  Scheduler s(o);
  EXPECT_TRUE(s.TakeChangedUsage().empty());
  s.Enqueue(Job("a", "alice", 0));
  s.Enqueue(Job("b", "bob", 0));
  ASSERT_EQ(Ids(s.Take(2, 0)), (Ids_{"a", "b"}));
  clock.t += 50;
  s.Finished("a");  // alice ran 50 s; bob still runs
  const double alice = s.Usage("alice");
  std::vector<OwnerUsage> saved = s.TakeChangedUsage();
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].owner, "alice");
  EXPECT_DOUBLE_EQ(saved[0].usage, alice);
  EXPECT_DOUBLE_EQ(saved[0].at, clock.t);
  EXPECT_EQ(saved[1].owner, "bob");
  EXPECT_DOUBLE_EQ(saved[1].usage, 80);  // charged its estimate at the start
  EXPECT_DOUBLE_EQ(saved[1].at, clock.t - 50);
  EXPECT_TRUE(s.TakeChangedUsage().empty());  // nothing charged since

  // The daemon is down for two half-lives; a new scheduler gets the accounts back.
  clock.t += 200;
  Scheduler restarted(o);
  restarted.RestoreUsage(saved);
  EXPECT_NEAR(restarted.Usage("alice"), alice / 4, 1e-9);
  EXPECT_NEAR(restarted.Usage("bob"), 80 * std::exp2(-2.5), 1e-9);
  EXPECT_DOUBLE_EQ(restarted.Usage("carol"), 0);
  // And they order the queue: alice has used less by now, so her job goes before bob's earlier
  // one (a scheduler that forgot both would order them by submit time).
  restarted.Enqueue(Job("b2", "bob", 1));
  restarted.Enqueue(Job("a2", "alice", 2));
  EXPECT_EQ(Ids(restarted.Order()), (Ids_{"a2", "b2"}));
  Scheduler forgot(o);
  forgot.Enqueue(Job("b2", "bob", 1));
  forgot.Enqueue(Job("a2", "alice", 2));
  EXPECT_EQ(Ids(forgot.Order()), (Ids_{"b2", "a2"}));
  // Rows no scheduler writes are skipped.
  restarted.RestoreUsage({{"mallory", -1, 0}, {"eve", NAN, 0}, {"trent", 1, INFINITY}});
  EXPECT_DOUBLE_EQ(restarted.Usage("mallory"), 0);
  EXPECT_DOUBLE_EQ(restarted.Usage("eve"), 0);
  EXPECT_DOUBLE_EQ(restarted.Usage("trent"), 0);
}

TEST(SchedulerFairShareTest, ALongRunIsChargedAsItRuns) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.half_life_secs = 1e12;  // no decay: the charges alone
  o.default_estimate_secs = 10;
  Scheduler s(o);
  s.Enqueue(Job("a", "alice", 0));
  s.Enqueue(Job("b", "bob", 0));
  s.Enqueue(Job("b2", "bob", 1));
  ASSERT_EQ(Ids(s.Take(1, 0)), (Ids_{"a"}));
  clock.t += 50;
  // alice's run has run 50 s, past its estimate of 10: it is charged 50 now.
  EXPECT_EQ(Ids(s.Take(1, 1)), (Ids_{"b"}));
  EXPECT_NEAR(s.Usage("alice"), 50, 1e-6);
  EXPECT_NEAR(s.Usage("bob"), 10, 1e-6);
}

// Two users with work queued all the time, one slot: the slot-seconds each gets, run by run.
std::map<std::string, double> Simulate(const SchedulerOptions& base, FakeClock& clock,
                                       double run_secs, int slots, int jobs_each) {
  SchedulerOptions o = base;
  o.now = clock.fn();
  Scheduler s(o);
  for (int i = 0; i < jobs_each; ++i) s.Enqueue(Job("a" + std::to_string(i), "alice", clock.t));
  clock.t += 1;  // bob a second later
  for (int i = 0; i < jobs_each; ++i) s.Enqueue(Job("b" + std::to_string(i), "bob", clock.t));
  clock.t -= 1;
  std::map<std::string, double> got;
  std::map<std::string, std::pair<std::string, double>> running;  // id -> owner, end
  // Time moves in steps of run_secs / 10; stop counting when a user has nothing queued.
  bool both = true;
  while (both && (s.size() > 0 || !running.empty())) {
    for (auto it = running.begin(); it != running.end();) {
      if (it->second.second <= clock.t + 1e-9) {
        s.Finished(it->first);
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    for (const QueuedJob& j :
         s.Take(slots - static_cast<int>(running.size()), static_cast<int>(running.size()))) {
      running[j.id] = {j.owner, clock.t + run_secs};
    }
    int a = 0, b = 0;
    for (const QueuedJob& j : s.Order()) (j.owner == "alice" ? a : b)++;
    both = a > 0 && b > 0;
    const double dt = run_secs / 10;
    for (const auto& [id, r] : running) got[r.first] += dt;
    clock.t += dt;
  }
  return got;
}

TEST(SchedulerFairShareTest, TwoUsersGetHalfEach) {
  FakeClock clock;
  SchedulerOptions o;
  o.default_estimate_secs = 5;
  const auto got = Simulate(o, clock, /*run_secs=*/3, /*slots=*/2, /*jobs_each=*/20);
  const double total = got.at("alice") + got.at("bob");
  EXPECT_NEAR(got.at("alice") / total, 0.5, 0.1) << got.at("alice") << " " << got.at("bob");
}

TEST(SchedulerFairShareTest, WeightsThreeToOneGiveThreeQuarters) {
  FakeClock clock;
  SchedulerOptions o;
  o.default_estimate_secs = 5;
  o.weights = {{"alice", 3}, {"bob", 1}};
  const auto got = Simulate(o, clock, /*run_secs=*/3, /*slots=*/2, /*jobs_each=*/20);
  const double total = got.at("alice") + got.at("bob");
  EXPECT_NEAR(got.at("alice") / total, 0.75, 0.1) << got.at("alice") << " " << got.at("bob");
}

// --- quotas ---

TEST(SchedulerQuotaTest, RunningSlotsHoldTheOwnersJobsOnly) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.quotas["alice"].running_slots = 1;
  Scheduler s(o);
  s.Enqueue(Job("a1", "alice", 1));
  s.Enqueue(Job("a2", "alice", 2));
  s.Enqueue(Job("b1", "bob", 3));
  EXPECT_EQ(Ids(s.Take(3, 0)), (Ids_{"a1", "b1"}));
  EXPECT_NE(s.WaitingReason("a2").find("quotas.running_slots"), std::string::npos)
      << s.WaitingReason("a2");
  EXPECT_TRUE(s.Take(1, 2).empty());
  s.Finished("a1");
  EXPECT_EQ(s.WaitingReason("a2"), "");
  EXPECT_EQ(Ids(s.Take(1, 1)), (Ids_{"a2"}));
}

TEST(SchedulerQuotaTest, QueuedJobsAndPriorityRefusedNamingTheQuota) {
  SchedulerOptions o;
  o.default_quota.queued_jobs = 2;
  o.default_quota.max_priority = 10;
  o.quotas["root"].max_priority = 1000;  // root has no queued_jobs limit of its own
  Scheduler s(o);
  EXPECT_TRUE(s.CheckQueue("alice").ok());
  s.Enqueue(Job("a1", "alice", 1));
  s.Enqueue(Job("a2", "alice", 2));
  const engine::Status full = s.CheckQueue("alice");
  EXPECT_EQ(full.code(), engine::StatusCode::kResourceExhausted);
  EXPECT_EQ(full.message().rfind("quotas.queued_jobs: ", 0), 0u) << full.message();
  EXPECT_TRUE(s.CheckQueue("bob").ok());
  for (int i = 0; i < 5; ++i) s.Enqueue(Job("r" + std::to_string(i), "root", 1));
  EXPECT_TRUE(s.CheckQueue("root").ok());
  EXPECT_TRUE(s.CheckPriority("alice", 10).ok());
  const engine::Status high = s.CheckPriority("alice", 11);
  EXPECT_EQ(high.message().rfind("quotas.max_priority: ", 0), 0u) << high.message();
  EXPECT_TRUE(s.CheckPriority("root", 1000).ok());
}

// --- preemption: the victim choice ---

TEST(SchedulerPreemptionTest, NewestStartedLowerPriorityOldEnoughIsTheVictim) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.min_run_secs = 60;
  Scheduler s(o);
  // Three runs on three slots: started at 1000, 1100 and 1150.
  s.Enqueue(Job("old", "alice", 1));
  ASSERT_EQ(Ids(s.Take(1, 0)), (Ids_{"old"}));
  clock.t += 100;
  s.Enqueue(Job("mid", "alice", 2));
  ASSERT_EQ(Ids(s.Take(1, 1)), (Ids_{"mid"}));
  clock.t += 50;
  s.Enqueue(Job("young", "alice", 3));
  ASSERT_EQ(Ids(s.Take(1, 2)), (Ids_{"young"}));
  clock.t += 20;  // young has run 20 s, mid 70 s, old 170 s
  // An equal priority preempts nothing.
  s.Enqueue(Job("same", "bob", 4, 0));
  EXPECT_TRUE(s.ChooseVictims(0).empty());
  // A higher one preempts the newest that has run min_run_secs: mid, not young (too young) nor
  // old (older).
  s.Enqueue(Job("urgent", "bob", 5, 10));
  auto v = s.ChooseVictims(0);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].victim, "mid");
  EXPECT_EQ(v[0].by, "urgent");
  EXPECT_EQ(v[0].by_priority, 10);
  // Chosen once: asked again, the stopping victim's slot is already promised to urgent.
  EXPECT_TRUE(s.ChooseVictims(0).empty());
  // A second urgent job takes the next one: old (young is still too young).
  s.Enqueue(Job("urgent2", "bob", 6, 10));
  v = s.ChooseVictims(0);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].victim, "old");
  // Once young is old enough, a third preempts it.
  clock.t += 60;
  s.Enqueue(Job("urgent3", "bob", 7, 10));
  v = s.ChooseVictims(0);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].victim, "young");
  EXPECT_TRUE(s.ChooseVictims(0).empty());
}

TEST(SchedulerPreemptionTest, NoVictimWhenASlotIsFreeOffOrNotPreemptible) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.min_run_secs = 0;
  // `low` (after `first`, if given) runs on the slots there are; then bob's priority-5 job
  // arrives with `free` slots left, and finds no victim.
  const auto expect_no_victim = [](const SchedulerOptions& options, const QueuedJob& low, int free,
                                   const char* first = nullptr) {
    Scheduler s(options);
    Ids_ running;
    if (first) {
      s.Enqueue(Job(first, "bob", 0, 5));
      running.push_back(first);
    }
    s.Enqueue(low);
    running.push_back(low.id);
    ASSERT_EQ(Ids(s.Take(static_cast<int>(running.size()), 0)), running);
    s.Enqueue(Job("high", "bob", 2, 5));
    EXPECT_TRUE(s.ChooseVictims(free).empty());
  };
  expect_no_victim(o, Job("low", "alice", 1), 1);  // a free slot is enough
  QueuedJob unpreemptible = Job("low", "alice", 1);
  unpreemptible.preemptible = false;  // e.g. it writes no checkpoints
  expect_no_victim(o, unpreemptible, 0);
  SchedulerOptions off = o;
  off.preemption = false;
  expect_no_victim(off, Job("low", "alice", 1), 0);
  // A job held by its owner's running quota preempts nobody.
  SchedulerOptions q = o;
  q.quotas["bob"].running_slots = 1;
  expect_no_victim(q, Job("low", "alice", 1), 0, "b-run");
}

TEST(SchedulerPreemptionTest, ARunStillWaitingInAClustersQueueIsNoVictim) {
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.min_run_secs = 0;
  Scheduler s(o);
  s.Enqueue(Job("trains", "alice", 1));
  s.Enqueue(Job("pending", "alice", 2));
  ASSERT_EQ(Ids(s.Take(2, 0)), (Ids_{"trains", "pending"}));
  s.Enqueue(Job("urgent", "bob", 3, 5));
  // The newest is still pending in Slurm: the one that trains is the victim.
  auto v = s.ChooseVictims(0, [](const std::string& id) { return id == "trains"; });
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].victim, "trains");
}

TEST(SchedulerPreemptionTest, APreemptedJobRunsBeforeNewerJobsOfItsPriority) {
  // Determined #3340: after the preemptor ends, the victim (queued again at its original submit
  // time) starts, not a newer job of its priority.
  FakeClock clock;
  SchedulerOptions o;
  o.now = clock.fn();
  o.min_run_secs = 0;
  Scheduler s(o);
  s.Enqueue(Job("victim", "alice", 1));
  ASSERT_EQ(Ids(s.Take(1, 0)), (Ids_{"victim"}));
  clock.t += 10;
  s.Enqueue(Job("newer", "alice", clock.t));
  s.Enqueue(Job("urgent", "bob", clock.t, 10));
  ASSERT_EQ(s.ChooseVictims(0).size(), 1u);
  s.Finished("victim");
  s.Enqueue(Job("victim", "alice", 1));  // back at its original submit time
  EXPECT_EQ(Ids(s.Take(1, 0)), (Ids_{"urgent"}));
  EXPECT_EQ(Ids(s.Order()), (Ids_{"victim", "newer"}));
}

}  // namespace
}  // namespace trainingd::daemon
