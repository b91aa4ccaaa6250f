// MonitoredTrainingSession: TF's defaults and automatic hooks, the non-chief's wait, and that
// stopping and resuming gives the same run as never stopping.
#include "trainingd/engine/session/monitored_training_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "session_test_util.h"
#include "trainingd/engine/session/hooks/stop_at_step_hook.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;
using testing::CapturingLogger;
using testing::FakeEnv;
using testing::RecordingHook;
using testing::RecordingSink;
using testing::ScopedDir;
using testing::SharedSmallData;
using testing::SmallConfig;

// Remembers the loss of every step by global step.
class LossRecorder final : public SessionRunHook {
 public:
  Status BeforeRun(RunContext&, RunArgs& request) override {
    request.fetches = {"loss", "global_step"};
    return Status::Ok();
  }
  Status AfterRun(RunContext&, const RunValues& v) override {
    losses[static_cast<int64_t>(v.get("global_step"))] = v.get("loss");
    return Status::Ok();
  }
  std::map<int64_t, double> losses;
};

class MonitoredTrainingSessionTest : public ::testing::Test {
 protected:
  MonitoredTrainingSessionOptions Options(const std::string& dir) {
    MonitoredTrainingSessionOptions o;
    o.checkpoint_dir = dir;
    o.session_options.env = &env_;
    o.session_options.logger = logger_;
    return o;
  }
  std::unique_ptr<MonitoredSession> Make(MonitoredTrainingSessionOptions o,
                                         SessionConfig config = SmallConfig()) {
    auto ms = MonitoredTrainingSession(config, SharedSmallData(), std::move(o));
    EXPECT_TRUE(ms.ok()) << ms.status().ToString();
    return ms.ok() ? std::move(ms).value() : nullptr;
  }
  static int RunToEnd(MonitoredSession& ms) {
    int n = 0;
    while (!ms.ShouldStop()) {
      Status st = ms.Run({});
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) break;
      ++n;
    }
    return n;
  }

  FakeEnv env_;
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
};

TEST_F(MonitoredTrainingSessionTest, ChiefDefaultsCheckpointSummariesAndStepCounter) {
  ScopedDir dir("mts_defaults");
  auto sink = std::make_shared<RecordingSink>();
  auto o = Options(dir.path());
  o.summary_sinks = {sink};
  o.hooks = {*StopAtStepHook::Create(std::nullopt, 250)};
  auto ms = Make(std::move(o));
  EXPECT_EQ(RunToEnd(*ms), 250);
  ASSERT_TRUE(ms->Close().ok());
  // Checkpoints: at creation (0); 600 s never pass on the fake clock; at the end (250).
  EXPECT_TRUE(fs::exists(dir.path() + "/model.ckpt-0"));
  EXPECT_TRUE(fs::exists(dir.path() + "/model.ckpt-250"));
  EXPECT_TRUE(fs::exists(dir.path() + "/checkpoint"));
  // Summaries every 100 steps from the first run.
  EXPECT_EQ(sink->StepsOf("loss"), std::vector<int64_t>({1, 101, 201}));
  // The step counter triggers at 1 (baseline), 101, 201, but the fake clock never moves, so no
  // rate can be computed and none is written.
  EXPECT_TRUE(sink->StepsOf("global_step/sec").empty());
  // One event file in checkpoint_dir (the summary_dir default).
  int event_files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().filename().string().find("tfevents") != std::string::npos) ++event_files;
  }
  EXPECT_EQ(event_files, 1);
  EXPECT_NE(ms->summary_writer(), nullptr);
}

TEST_F(MonitoredTrainingSessionTest, ChiefOnlyHooksComeFirstAndUserHooksLast) {
  ScopedDir dir("mts_order");
  std::vector<std::string> journal;
  auto o = Options(dir.path());
  o.chief_only_hooks = {std::make_shared<RecordingHook>("chief_only", &journal)};
  o.hooks = {std::make_shared<RecordingHook>("user", &journal)};
  auto ms = Make(std::move(o));
  ASSERT_TRUE(ms->Run({}).ok());
  const auto first = std::find(journal.begin(), journal.end(), "chief_only:after_create");
  const auto user = std::find(journal.begin(), journal.end(), "user:after_create");
  ASSERT_NE(first, journal.end());
  ASSERT_NE(user, journal.end());
  EXPECT_LT(first, user);
  // The CheckpointSaverHook sits between them: its save at creation is logged before the user's
  // hook is told about the session. The saver's log line comes after chief_only's call.
  EXPECT_EQ(logger_->Matching("Saving checkpoints for 0").size(), 1u);
}

TEST_F(MonitoredTrainingSessionTest, OptionsGivenTwiceOrTurnedOff) {
  auto o = Options("");
  o.save_checkpoint_secs = 10;
  o.save_checkpoint_steps = 10;
  auto ms = MonitoredTrainingSession(SmallConfig(), SharedSmallData(), o);
  EXPECT_EQ(ms.status().code(), StatusCode::kInvalidArgument);
  o = Options("");
  o.save_summaries_secs = 10;
  o.save_summaries_steps = 10;
  EXPECT_FALSE(MonitoredTrainingSession(SmallConfig(), SharedSmallData(), o).ok());

  ScopedDir dir("mts_off");
  o = Options(dir.path());
  o.save_checkpoint_steps = 0;  // off
  auto sink = std::make_shared<RecordingSink>();
  o.summary_sinks = {sink};
  o.save_summaries_steps = -1;  // off
  auto on = Make(o);
  ASSERT_TRUE(on->Run({}).ok());
  ASSERT_TRUE(on->Close().ok());
  EXPECT_FALSE(fs::exists(dir.path() + "/checkpoint"));
  EXPECT_TRUE(sink->StepsOf("loss").empty());
}

TEST_F(MonitoredTrainingSessionTest, NonChiefWaitsWithItsOwnPollAndGivesUp) {
  ScopedDir dir("mts_worker");
  auto o = Options(dir.path());
  o.is_chief = false;
  o.worker_poll_secs = 2;
  o.max_wait_secs = 7;
  auto ms = MonitoredTrainingSession(SmallConfig(), SharedSmallData(), o);
  ASSERT_FALSE(ms.ok());
  EXPECT_EQ(ms.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ms.status().message(), "Session was not ready after waiting 7 secs.");
  EXPECT_EQ(env_.sleeps, std::vector<double>({2, 2, 2, 1}));
  EXPECT_FALSE(fs::exists(dir.path()));  // a worker never creates or writes the directory
}

TEST_F(MonitoredTrainingSessionTest, AStopFlagEndsANonChiefsWait) {
  ScopedDir dir("mts_worker_stop");
  std::atomic<bool> stop{true};
  auto o = Options(dir.path());
  o.is_chief = false;
  o.session_options.stop_flag = &stop;
  auto ms = MonitoredTrainingSession(SmallConfig(), SharedSmallData(), o);
  ASSERT_FALSE(ms.ok());
  EXPECT_EQ(ms.status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(env_.sleeps.empty());
}

TEST_F(MonitoredTrainingSessionTest, NonChiefStartsOnceTheChiefSavedAndNeverSaves) {
  ScopedDir dir("mts_worker_ready");
  {
    auto o = Options(dir.path());
    o.hooks = {*StopAtStepHook::Create(std::nullopt, 2)};
    auto chief = Make(o);
    RunToEnd(*chief);
  }
  const auto before = fs::last_write_time(dir.path() + "/checkpoint");
  auto o = Options(dir.path());
  o.is_chief = false;
  o.hooks = {*StopAtStepHook::Create(3, std::nullopt)};
  auto worker = Make(o);
  EXPECT_EQ(worker->session().global_step(), 0);  // never restores
  EXPECT_EQ(RunToEnd(*worker), 3);
  ASSERT_TRUE(worker->Close().ok());
  EXPECT_EQ(fs::last_write_time(dir.path() + "/checkpoint"), before);
  EXPECT_FALSE(fs::exists(dir.path() + "/model.ckpt-3"));
}

// The acceptance test: stop at step k, resume, and every loss equals the uninterrupted
// run's within 1e-6 -- with dropout, Adam and a shuffled input pipeline in the state.
TEST_F(MonitoredTrainingSessionTest, StopAndResumeEqualsAnUninterruptedRun) {
  constexpr int64_t kLast = 30;
  SessionConfig config = SmallConfig();
  config.batch_size = 64;  // 5000 / 64 is not whole: the resume point lies inside an epoch
  ScopedDir straight_dir("mts_straight");
  auto straight = std::make_shared<LossRecorder>();
  {
    auto o = Options(straight_dir.path());
    o.hooks = {straight, *StopAtStepHook::Create(std::nullopt, kLast)};
    auto ms = Make(o, config);
    RunToEnd(*ms);
  }
  ScopedDir dir("mts_resumed");
  auto first = std::make_shared<LossRecorder>();
  {
    auto o = Options(dir.path());
    o.hooks = {first, *StopAtStepHook::Create(std::nullopt, kLast)};
    auto ms = Make(o, config);
    for (int i = 0; i < 13; ++i) ASSERT_TRUE(ms->Run({}).ok());
    ms->RequestStop();  // as Ctrl-C does
    ASSERT_TRUE(ms->Close().ok());
  }
  auto second = std::make_shared<LossRecorder>();
  {
    auto o = Options(dir.path());
    o.hooks = {second, *StopAtStepHook::Create(std::nullopt, kLast)};
    auto ms = Make(o, config);
    EXPECT_EQ(ms->session().global_step(), 13);
    RunToEnd(*ms);
  }
  ASSERT_EQ(straight->losses.size(), static_cast<size_t>(kLast));
  ASSERT_EQ(first->losses.size() + second->losses.size(), static_cast<size_t>(kLast));
  for (const auto& [step, loss] : straight->losses) {
    const double resumed = step <= 13 ? first->losses.at(step) : second->losses.at(step);
    EXPECT_NEAR(resumed, loss, 1e-6) << "step " << step;
  }
}

}  // namespace
}  // namespace trainingd::engine
