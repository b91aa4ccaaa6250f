// MonitoredSession: hook order and semantics, stop, recovery, and when End() runs.
#include "trainingd/engine/session/monitored_session.h"

#include <gtest/gtest.h>

#include <thread>

#include "session_test_util.h"
#include "trainingd/engine/session/hooks/checkpoint_saver_hook.h"

namespace trainingd::engine {
namespace {

using testing::CapturingLogger;
using testing::FakeEnv;
using testing::RecordingHook;
using testing::ScopedDir;
using testing::SharedSmallData;
using testing::SmallConfig;

class MonitoredSessionTest : public ::testing::Test {
 protected:
  std::unique_ptr<SessionCreator> Creator(const std::string& checkpoint_dir = "") {
    return std::make_unique<ChiefSessionCreator>(
        SessionSource{SmallConfig(), SharedSmallData(), &env_, logger_}, checkpoint_dir);
  }
  MonitoredSessionOptions Options() {
    MonitoredSessionOptions o;
    o.env = &env_;
    o.logger = logger_;
    o.max_recovery_attempts = 3;
    return o;
  }
  std::shared_ptr<RecordingHook> Hook(const std::string& name) {
    return std::make_shared<RecordingHook>(name, &journal_);
  }
  std::unique_ptr<MonitoredSession> Make(std::vector<std::shared_ptr<SessionRunHook>> hooks,
                                         const std::string& checkpoint_dir = "") {
    auto ms = MonitoredSession::Create(Creator(checkpoint_dir), std::move(hooks), Options());
    EXPECT_TRUE(ms.ok()) << ms.status().ToString();
    return ms.ok() ? std::move(ms).value() : nullptr;
  }

  FakeEnv env_;
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
  std::vector<std::string> journal_;
};

TEST_F(MonitoredSessionTest, HooksAreCalledInTheReferenceOrder) {
  auto ms = Make({Hook("a"), Hook("b")});
  ASSERT_TRUE(ms->Run({}).ok());
  ASSERT_TRUE(ms->Close().ok());
  const std::vector<std::string> want = {
      "a:begin",      "b:begin",     "a:after_create", "b:after_create", "a:before_run",
      "b:before_run", "a:after_run", "b:after_run",    "a:end",          "b:end"};
  EXPECT_EQ(journal_, want);
}

TEST_F(MonitoredSessionTest, EachHookSeesOnlyItsOwnFetchesAndTheCallerOnlyHis) {
  auto a = Hook("a");
  a->fetches = {"loss"};
  auto b = Hook("b");
  b->fetches = {"accuracy", "global_step"};
  auto ms = Make({a, b});
  RunValues v;
  ASSERT_TRUE(ms->Run({{"learning_rate"}, {}, {}}, &v).ok());
  ASSERT_EQ(a->seen.size(), 1u);
  EXPECT_EQ(a->seen[0].size(), 1u);
  EXPECT_TRUE(a->seen[0].count("loss"));
  EXPECT_EQ(b->seen[0].size(), 2u);
  EXPECT_EQ(b->seen[0].at("global_step"), 1);
  EXPECT_EQ(v.results.size(), 1u);
  EXPECT_TRUE(v.contains("learning_rate"));
}

TEST_F(MonitoredSessionTest, TheSameFeedFromTwoPlacesIsAnError) {
  auto a = Hook("FirstHook");
  a->feeds = {{"learning_rate", 0.1}};
  auto b = Hook("SecondHook");
  b->feeds = {{"learning_rate", 0.2}};
  auto ms = Make({a, b});
  Status st = ms->Run({});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      st.message().find("feed 'learning_rate' is given twice: by FirstHook and by SecondHook"),
      std::string::npos)
      << st.message();

  auto c = Hook("c");
  c->feeds = {{"learning_rate", 0.2}};
  auto ms2 = Make({c});
  st = ms2->Run({{}, {{"learning_rate", 0.1}}, {}});
  EXPECT_NE(st.message().find("by the caller and by c"), std::string::npos) << st.message();
  EXPECT_EQ(ms2->session().global_step(), 0);
}

TEST_F(MonitoredSessionTest, StopRequestedInAfterRunEndsTheLoop) {
  auto a = Hook("a");
  a->stop_at_step = 3;
  auto ms = Make({a});
  int runs = 0;
  while (!ms->ShouldStop()) {
    ASSERT_TRUE(ms->Run({}).ok());
    ++runs;
  }
  EXPECT_EQ(runs, 3);
  Status st = ms->Run({});
  EXPECT_EQ(st.message(), "Run called even after should_stop requested.");
  EXPECT_TRUE(ms->Close().ok());
  EXPECT_EQ(a->end_step, 3);
}

TEST_F(MonitoredSessionTest, StopRequestedInBeforeRunStillRunsThatStep) {
  auto a = Hook("a");
  a->stop_in_before_run = true;
  auto ms = Make({a});
  ASSERT_FALSE(ms->ShouldStop());
  ASSERT_TRUE(ms->Run({}).ok());
  EXPECT_EQ(ms->session().global_step(), 1);
  EXPECT_TRUE(ms->ShouldStop());
}

TEST_F(MonitoredSessionTest, RequestStopFromAnotherThread) {
  auto ms = Make({});
  std::thread t([&] { ms->RequestStop(); });
  t.join();
  EXPECT_TRUE(ms->ShouldStop());
}

// A stop from another thread can land between the loop's ShouldStop() and its Run() (the
// daemon's stop button, seen failing a stopped job under ASan): that run takes its step, and
// only a Run after one that returned with ShouldStop() true is refused.
TEST_F(MonitoredSessionTest, AStopBetweenTheLoopsCheckAndItsRunLetsThatStepRun) {
  for (bool use_flag : {true, false}) {
    SCOPED_TRACE(use_flag ? "stop_flag" : "RequestStop");
    std::atomic<bool> stop{false};
    auto o = Options();
    o.stop_flag = &stop;
    auto created = MonitoredSession::Create(Creator(), {Hook("a")}, o);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    MonitoredSession& ms = **created;
    ASSERT_TRUE(ms.Run({}).ok());
    ASSERT_FALSE(ms.ShouldStop());  // the loop's check
    std::thread t([&] { use_flag ? stop.store(true) : ms.RequestStop(); });
    t.join();
    EXPECT_TRUE(ms.ShouldStop());
    EXPECT_TRUE(ms.Run({}).ok());  // the step the loop had decided on
    EXPECT_EQ(ms.global_step(), 2);
    EXPECT_EQ(ms.Run({}).message(), "Run called even after should_stop requested.");
    EXPECT_EQ(ms.global_step(), 2);
    EXPECT_TRUE(ms.failure().ok());
    EXPECT_TRUE(ms.Close().ok());
  }
}

TEST_F(MonitoredSessionTest, CloseTwiceIsHarmlessAndRunAfterCloseFails) {
  auto a = Hook("a");
  auto ms = Make({a});
  ASSERT_TRUE(ms->Close().ok());
  ASSERT_TRUE(ms->Close().ok());
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "a:end"), 1);
  EXPECT_TRUE(ms->ShouldStop());
  EXPECT_EQ(ms->Run({}).code(), StatusCode::kFailedPrecondition);
}

TEST_F(MonitoredSessionTest, TransientFailureRecreatesTheSessionFromTheLatestCheckpoint) {
  ScopedDir dir("ms_recover");
  auto saver = CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 4});
  ASSERT_TRUE(saver.ok());
  auto flaky = Hook("flaky");
  flaky->fetches = {"loss"};
  flaky->fail_after_run_at = 6;  // after the checkpoint at 4
  flaky->fail_times = 1;
  auto ms = Make({*saver, flaky}, dir.path());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(ms->Run({}).ok()) << i;
  // Run 6 fails after its step; the session comes back at step 4 and the retried run makes 5.
  EXPECT_EQ(ms->session().global_step(), 5);
  EXPECT_EQ(ms->sessions_created(), 2);
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "flaky:begin"), 1);
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "flaky:after_create"), 2);
  EXPECT_EQ(env_.sleeps, std::vector<double>({1.0}));
  EXPECT_EQ(logger_->Matching("recreating the session").size(), 1u);
  EXPECT_EQ(logger_->Matching("Restoring parameters from").size(), 1u);
  // The redone steps repeat the first attempt exactly: losses at steps 5 and 6 match.
  ASSERT_TRUE(ms->Run({}).ok());
  ASSERT_EQ(flaky->seen.size(), 8u);
  EXPECT_EQ(flaky->seen[4].at("loss"), flaky->seen[6].at("loss"));  // step 5, twice
  EXPECT_EQ(flaky->seen[5].at("loss"), flaky->seen[7].at("loss"));  // step 6, twice
}

TEST_F(MonitoredSessionTest, RecoveryIsBoundedWithExponentialBackoff) {
  auto flaky = Hook("flaky");
  flaky->fail_after_run_at = 1;
  flaky->fail_times = 100;
  auto ms = Make({flaky});
  Status st = ms->Run({});
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(env_.sleeps, std::vector<double>({1.0, 2.0, 4.0}));
  EXPECT_EQ(ms->sessions_created(), 4);
  // The failure sticks.
  EXPECT_EQ(ms->Run({}).code(), StatusCode::kFailedPrecondition);
}

TEST_F(MonitoredSessionTest, NonTransientFailureStillRunsEndSoNoWorkIsLost) {
  ScopedDir dir("ms_fail");
  auto saver = CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 100});
  ASSERT_TRUE(saver.ok());
  auto broken = Hook("broken");
  broken->fail_after_run_at = 7;
  broken->fail_times = 1;
  broken->fail_with = Status::Internal("a bug in user code");
  auto ms = Make({*saver, broken}, dir.path());
  Status st;
  while (!ms->ShouldStop() && st.ok()) st = ms->Run({});
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(ms->sessions_created(), 1);
  ASSERT_TRUE(ms->Close().ok());
  EXPECT_EQ(broken->end_step, 7);
  const auto kept = (*saver)->KeptCheckpoints();
  ASSERT_FALSE(kept.empty());
  EXPECT_EQ(kept.back(), dir.path() + "/model.ckpt-7");
}

TEST_F(MonitoredSessionTest, OutOfRangeIsLoggedAndEndsNormally) {
  SessionConfig c = SmallConfig();
  c.batch_size = 2500;
  c.num_epochs = 1;
  auto a = Hook("a");
  auto ms = MonitoredSession::Create(std::make_unique<ChiefSessionCreator>(
                                         SessionSource{c, SharedSmallData(), &env_, logger_}, ""),
                                     {a}, Options());
  ASSERT_TRUE(ms.ok());
  Status st;
  int steps = 0;
  while (!(*ms)->ShouldStop()) {
    st = (*ms)->Run({});
    if (st.ok()) ++steps;
  }
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(logger_->Matching("input exhausted: 1 epoch(s)").size(), 1u);
  EXPECT_TRUE((*ms)->failure().ok());
  ASSERT_TRUE((*ms)->Close().ok());
  EXPECT_EQ(a->end_step, 2);
}

TEST_F(MonitoredSessionTest, AddHookJoinsALiveSession) {
  auto ms = Make({Hook("a")});
  ASSERT_TRUE(ms->Run({}).ok());
  auto late = Hook("late");
  late->fetches = {"global_step"};
  ASSERT_TRUE(ms->AddHook(late).ok());
  ASSERT_TRUE(ms->Run({}).ok());
  ASSERT_TRUE(ms->Close().ok());
  ASSERT_EQ(late->seen.size(), 1u);
  EXPECT_EQ(late->seen[0].at("global_step"), 2);
  EXPECT_EQ(late->end_step, 2);
  EXPECT_NE(std::find(journal_.begin(), journal_.end(), "late:after_create"), journal_.end());
}

TEST_F(MonitoredSessionTest, FetchSkipsTheHooks) {
  auto a = Hook("a");
  auto ms = Make({a});
  RunValues v;
  ASSERT_TRUE(ms->Fetch({"validation/accuracy", "global_step"}, &v).ok());
  EXPECT_EQ(v.get("global_step"), 0);
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "a:before_run"), 0);
}

TEST_F(MonitoredSessionTest, FailingBeginOrCreationReturnsTheErrorAndCallsNoEnd) {
  auto a = Hook("a");
  SessionConfig bad = SmallConfig();
  bad.batch_size = 0;
  auto ms = MonitoredSession::Create(std::make_unique<ChiefSessionCreator>(
                                         SessionSource{bad, SharedSmallData(), &env_, logger_}, ""),
                                     {a}, Options());
  ASSERT_FALSE(ms.ok());
  EXPECT_NE(ms.status().message().find("batch_size"), std::string::npos);
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "a:end"), 0);
}

}  // namespace
}  // namespace trainingd::engine
