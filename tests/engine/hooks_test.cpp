// The built-in hooks against the reference's rules: first triggers, timers, off-by-one steps.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "session_test_util.h"
#include "trainingd/engine/session/hooks/checkpoint_saver_hook.h"
#include "trainingd/engine/session/hooks/early_stopping_hook.h"
#include "trainingd/engine/session/hooks/evaluation_hook.h"
#include "trainingd/engine/session/hooks/feed_fn_hook.h"
#include "trainingd/engine/session/hooks/final_ops_hook.h"
#include "trainingd/engine/session/hooks/global_step_waiter_hook.h"
#include "trainingd/engine/session/hooks/logging_tensor_hook.h"
#include "trainingd/engine/session/hooks/nan_tensor_hook.h"
#include "trainingd/engine/session/hooks/profiler_hook.h"
#include "trainingd/engine/session/hooks/step_counter_hook.h"
#include "trainingd/engine/session/hooks/stop_at_step_hook.h"
#include "trainingd/engine/session/hooks/summary_saver_hook.h"
#include "trainingd/engine/session/monitored_session.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;
using testing::CapturingLogger;
using testing::FakeEnv;
using testing::RecordingSink;
using testing::ScopedDir;
using testing::SharedSmallData;
using testing::SmallConfig;

// Moves the fake clock forward by `secs` after every run.
class ClockTickHook final : public SessionRunHook {
 public:
  ClockTickHook(FakeEnv* env, double secs) : env_(env), secs_(secs) {}
  Status AfterRun(RunContext&, const RunValues&) override {
    env_->Advance(secs_);
    return Status::Ok();
  }

 private:
  FakeEnv* env_;
  double secs_;
};

class HooksTest : public ::testing::Test {
 protected:
  std::unique_ptr<MonitoredSession> Make(std::vector<std::shared_ptr<SessionRunHook>> hooks,
                                         const std::string& checkpoint_dir = "",
                                         SessionConfig config = SmallConfig()) {
    MonitoredSessionOptions o;
    o.env = &env_;
    o.logger = logger_;
    o.summary_writer = writer_;
    auto ms = MonitoredSession::Create(
        std::make_unique<ChiefSessionCreator>(
            SessionSource{config, SharedSmallData(), &env_, logger_}, checkpoint_dir),
        std::move(hooks), o);
    EXPECT_TRUE(ms.ok()) << ms.status().ToString();
    return ms.ok() ? std::move(ms).value() : nullptr;
  }
  // Runs until a stop is requested or `max_runs`; returns the runs made.
  int RunLoop(MonitoredSession& ms, int max_runs = 1000) {
    int n = 0;
    while (!ms.ShouldStop() && n < max_runs) {
      Status st = ms.Run({});
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) break;
      ++n;
    }
    return n;
  }
  std::shared_ptr<SummaryWriter> NewWriter() {
    auto w = std::make_shared<SummaryWriter>(&env_);
    w->AddSink(sink_);
    return w;
  }

  FakeEnv env_;
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
  std::shared_ptr<SummaryWriter> writer_ = NewWriter();
};

// ---- StopAtStepHook

TEST_F(HooksTest, StopAtStepNeedsExactlyOneOfNumStepsAndLastStep) {
  EXPECT_EQ(StopAtStepHook::Create(std::nullopt, std::nullopt).status().message(),
            "Exactly one of num_steps and last_step should be provided.");
  EXPECT_FALSE(StopAtStepHook::Create(5, 10).ok());
  EXPECT_FALSE(StopAtStepHook::Create(-1, std::nullopt).ok());
}

TEST_F(HooksTest, StopAtStepLastStepStopsAfterTheRunReachingIt) {
  auto h = *StopAtStepHook::Create(std::nullopt, 7);
  auto ms = Make({h});
  EXPECT_EQ(RunLoop(*ms), 7);
  EXPECT_EQ(ms->session().global_step(), 7);
}

TEST_F(HooksTest, StopAtStepNumStepsCountsFromTheRestoredStep) {
  ScopedDir dir("stop_at");
  {
    auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 100});
    auto ms = Make({saver, *StopAtStepHook::Create(std::nullopt, 4)}, dir.path());
    RunLoop(*ms);
    ASSERT_TRUE(ms->Close().ok());  // final checkpoint at 4
  }
  auto stop = *StopAtStepHook::Create(3, std::nullopt);
  auto ms = Make({stop}, dir.path());
  EXPECT_EQ(stop->last_step(), 7);
  EXPECT_EQ(RunLoop(*ms), 3);
  EXPECT_EQ(ms->session().global_step(), 7);
}

TEST_F(HooksTest, StopAtStepAlreadyReachedRunsNoStep) {
  ScopedDir dir("stop_reached");
  {
    auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 100});
    auto ms = Make({saver, *StopAtStepHook::Create(std::nullopt, 3)}, dir.path());
    RunLoop(*ms);
  }  // the destructor closes: final checkpoint at 3
  auto ms = Make({*StopAtStepHook::Create(std::nullopt, 3)}, dir.path());
  EXPECT_EQ(ms->session().global_step(), 3);
  EXPECT_TRUE(ms->ShouldStop());
  EXPECT_EQ(RunLoop(*ms), 0);
}

// ---- CheckpointSaverHook

class RecordingListener final : public CheckpointSaverListener {
 public:
  Status Begin() override {
    calls.push_back("begin");
    return Status::Ok();
  }
  Status BeforeSave(Session&, int64_t step) override {
    calls.push_back("before_save:" + std::to_string(step));
    return Status::Ok();
  }
  Result<bool> AfterSave(Session&, int64_t step) override {
    calls.push_back("after_save:" + std::to_string(step));
    return step == stop_after;
  }
  Status End(Session&, int64_t step) override {
    calls.push_back("end:" + std::to_string(step));
    return Status::Ok();
  }
  std::vector<std::string> calls;
  int64_t stop_after = -1;
};

TEST_F(HooksTest, CheckpointSaverSavesAtCreationEveryNStepsAndAtEnd) {
  ScopedDir dir("ckpt_steps");
  auto listener = std::make_shared<RecordingListener>();
  auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(),
                                             .save_steps = 3,
                                             .max_to_keep = 10,
                                             .listeners = {listener},
                                             .summary_writer = writer_});
  auto ms = Make({saver, *StopAtStepHook::Create(std::nullopt, 7)}, dir.path());
  RunLoop(*ms);
  ASSERT_TRUE(ms->Close().ok());
  std::vector<std::string> want;
  for (int s : {0, 3, 6, 7}) want.push_back(dir.path() + "/model.ckpt-" + std::to_string(s));
  EXPECT_EQ(saver->KeptCheckpoints(), want);
  EXPECT_EQ(listener->calls,
            std::vector<std::string>({"begin", "before_save:0", "after_save:0", "before_save:3",
                                      "after_save:3", "before_save:6", "after_save:6",
                                      "before_save:7", "after_save:7", "end:7"}));
  EXPECT_EQ(
      logger_->Matching("Saving checkpoints for 3 into " + dir.path() + "/model.ckpt.").size(), 1u);
  // A CHECKPOINT session log per save.
  int checkpoint_events = 0;
  for (const auto& r : sink_->records) {
    if (r.session_log == static_cast<int>(SessionLogStatus::kCheckpoint)) ++checkpoint_events;
  }
  EXPECT_EQ(checkpoint_events, 4);
}

TEST_F(HooksTest, CheckpointSaverDoesNotSaveTwiceWhenTheLastStepWasSaved) {
  ScopedDir dir("ckpt_nodup");
  auto listener = std::make_shared<RecordingListener>();
  auto saver = *CheckpointSaverHook::Create(
      {.checkpoint_dir = dir.path(), .save_steps = 3, .listeners = {listener}});
  auto ms = Make({saver, *StopAtStepHook::Create(std::nullopt, 6)}, dir.path());
  RunLoop(*ms);
  ASSERT_TRUE(ms->Close().ok());
  EXPECT_EQ(std::count(listener->calls.begin(), listener->calls.end(), "before_save:6"), 1);
}

TEST_F(HooksTest, CheckpointSaverInSecondsFollowsTheClock) {
  ScopedDir dir("ckpt_secs");
  auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_secs = 10});
  auto ms = Make({std::make_shared<ClockTickHook>(&env_, 4.0), saver,
                  *StopAtStepHook::Create(std::nullopt, 8)},
                 dir.path());
  RunLoop(*ms);
  ASSERT_TRUE(ms->Close().ok());
  // Created at t=0 (saved), +4 s per step: t=12 at step 3, t=24 at step 6, then the end at 8.
  std::vector<std::string> want;
  for (int s : {0, 3, 6, 8}) want.push_back(dir.path() + "/model.ckpt-" + std::to_string(s));
  EXPECT_EQ(saver->KeptCheckpoints(), want);
}

TEST_F(HooksTest, CheckpointListenerCanStopTraining) {
  ScopedDir dir("ckpt_listener_stop");
  auto listener = std::make_shared<RecordingListener>();
  listener->stop_after = 4;
  auto saver = *CheckpointSaverHook::Create(
      {.checkpoint_dir = dir.path(), .save_steps = 2, .listeners = {listener}});
  auto ms = Make({saver}, dir.path());
  EXPECT_EQ(RunLoop(*ms, 100), 4);
}

TEST_F(HooksTest, BadCheckpointSaverOptionsAreRefused) {
  EXPECT_FALSE(CheckpointSaverHook::Create({.checkpoint_dir = "/tmp/x"}).ok());
  EXPECT_FALSE(
      CheckpointSaverHook::Create({.checkpoint_dir = "/tmp/x", .save_secs = 1, .save_steps = 1})
          .ok());
  EXPECT_FALSE(CheckpointSaverHook::Create({.save_steps = 1}).ok());
}

// ---- SummarySaverHook

TEST_F(HooksTest, SummarySaverWritesTheFirstRunThenEveryNStepsAtThePostStepGlobalStep) {
  auto h = *SummarySaverHook::Create({.save_steps = 3, .summary_writer = writer_});
  auto ms = Make({h, *StopAtStepHook::Create(std::nullopt, 8)});
  RunLoop(*ms);
  ASSERT_TRUE(ms->Close().ok());
  const std::vector<int64_t> want = {1, 4, 7};
  EXPECT_EQ(sink_->StepsOf("loss"), want);
  EXPECT_EQ(sink_->StepsOf("accuracy"), want);
  EXPECT_EQ(sink_->StepsOf("learning_rate"), want);
  ASSERT_FALSE(sink_->records.empty());
  EXPECT_EQ(sink_->records[0].session_log, static_cast<int>(SessionLogStatus::kStart));
  EXPECT_EQ(sink_->records[0].step, 1);
  EXPECT_GE(sink_->flushes, 1);
  for (const auto& r : sink_->records) {
    if (r.tag == "learning_rate") {
      EXPECT_FLOAT_EQ(r.value, 1e-3f);
    }
  }
}

TEST_F(HooksTest, SummarySaverInSeconds) {
  auto h = *SummarySaverHook::Create({.save_secs = 5, .summary_writer = writer_});
  auto ms = Make(
      {h, *StopAtStepHook::Create(std::nullopt, 8), std::make_shared<ClockTickHook>(&env_, 2.0)});
  RunLoop(*ms);
  // Runs start at t = 0, 2, 4, ...: the first run writes (step 1, timer at t=0), then the run
  // starting at t=6 >= 0+5 (step 4, timer at 6), then the one at t=12 >= 11 (step 7).
  EXPECT_EQ(sink_->StepsOf("loss"), std::vector<int64_t>({1, 4, 7}));
}

// ---- LoggingTensorHook

TEST_F(HooksTest, LoggingTensorCountsItsOwnIterationsAndUsesTfsLineFormat) {
  auto h = *LoggingTensorHook::Create(std::vector<std::string>{"global_step", "learning_rate"},
                                      {.every_n_iter = 2});
  auto ms = Make(
      {std::make_shared<ClockTickHook>(&env_, 0.25), h, *StopAtStepHook::Create(std::nullopt, 5)});
  RunLoop(*ms);
  ASSERT_TRUE(ms->Close().ok());
  const auto lines = logger_->Matching("global_step = ");
  EXPECT_EQ(lines,
            std::vector<std::string>({"INFO:global_step = 1, learning_rate = 0.001",
                                      "INFO:global_step = 3, learning_rate = 0.001 (0.500 sec)",
                                      "INFO:global_step = 5, learning_rate = 0.001 (0.500 sec)"}));
}

TEST_F(HooksTest, LoggingTensorWithTagsSortsThemAndFormatterReplacesTheLine) {
  auto sorted = *LoggingTensorHook::Create(
      std::map<std::string, std::string>{{"z_step", "global_step"}, {"a_rate", "learning_rate"}},
      {.every_n_iter = 10});
  auto custom = *LoggingTensorHook::Create(
      std::vector<std::string>{"global_step"},
      {.every_n_iter = 10, .formatter = [](const auto& values) {
         return "custom " + values[0].first + "=" + std::to_string(int(values[0].second));
       }});
  auto ms = Make({sorted, custom});
  ASSERT_TRUE(ms->Run({}).ok());
  EXPECT_EQ(logger_->Matching("a_rate").size(), 1u);
  EXPECT_EQ(logger_->Matching("a_rate")[0], "INFO:a_rate = 0.001, z_step = 1");
  EXPECT_EQ(logger_->Matching("custom")[0], "INFO:custom global_step=1");
}

TEST_F(HooksTest, LoggingTensorAtEndOnlyAndBadOptions) {
  auto h = *LoggingTensorHook::Create(std::vector<std::string>{"global_step"}, {.at_end = true});
  auto ms = Make({h});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ms->Run({}).ok());
  EXPECT_TRUE(logger_->Matching("global_step").empty());
  ASSERT_TRUE(ms->Close().ok());
  EXPECT_EQ(logger_->Matching("global_step = 3").size(), 1u);

  EXPECT_EQ(LoggingTensorHook::Create(std::vector<std::string>{"loss"}, {}).status().message(),
            "either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.");
  EXPECT_FALSE(LoggingTensorHook::Create(std::vector<std::string>{"loss"},
                                         {.every_n_iter = 1, .every_n_secs = 1})
                   .ok());
  EXPECT_FALSE(
      LoggingTensorHook::Create(std::vector<std::string>{"lost"}, {.every_n_iter = 1}).ok());
}

TEST_F(HooksTest, LoggingTensorEveryNSecs) {
  auto h =
      *LoggingTensorHook::Create(std::vector<std::string>{"global_step"}, {.every_n_secs = 1.0});
  auto ms = Make(
      {h, *StopAtStepHook::Create(std::nullopt, 7), std::make_shared<ClockTickHook>(&env_, 0.4)});
  RunLoop(*ms);
  // Iterations start at t = 0, 0.4, 0.8, 1.2, ...: logs at iterations 0, 3 (t=1.2), 6 (t=2.4).
  EXPECT_EQ(logger_->Matching("global_step = ").size(), 3u);
  EXPECT_EQ(logger_->Matching("global_step = 4 (1.200 sec)").size(), 1u);
}

// ---- NanTensorHook

std::shared_ptr<FeedFnHook> NanBatchAt(int64_t step) {
  auto batch = std::make_shared<Batch>();
  CopyRange(testing::SmallFashionMnist().train, 0, 4, batch->images, batch->labels);
  batch->images.data()[5] = std::numeric_limits<float>::quiet_NaN();
  return std::make_shared<FeedFnHook>([batch, step, n = int64_t{0}]() mutable -> Result<Feeds> {
    ++n;
    if (n == step) return Feeds{{"batch", std::shared_ptr<const Batch>(batch)}};
    return Feeds{};
  });
}

TEST_F(HooksTest, NanTensorFailsTheRunAndEndIsSkipped) {
  ScopedDir dir("nan_fail");
  auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 100});
  auto ms = Make({NanBatchAt(3), saver, std::make_shared<NanTensorHook>(true)}, dir.path());
  ASSERT_TRUE(ms->Run({}).ok());
  ASSERT_TRUE(ms->Run({}).ok());
  Status st = ms->Run({});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "NaN loss during training.");
  EXPECT_EQ(logger_->Matching("ERROR:Model diverged with loss = NaN.").size(), 1u);
  ASSERT_TRUE(ms->Close().ok());
  // Only the checkpoint at creation: no final save of NaN weights.
  EXPECT_EQ(saver->KeptCheckpoints(), std::vector<std::string>({dir.path() + "/model.ckpt-0"}));
}

TEST_F(HooksTest, NanTensorCanStopCleanlyAndTheNanModelIsStillNotSaved) {
  ScopedDir dir("nan_stop");
  auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 100});
  auto ms = Make({NanBatchAt(2), saver, std::make_shared<NanTensorHook>(false)}, dir.path());
  EXPECT_EQ(RunLoop(*ms), 2);
  EXPECT_EQ(logger_->Matching("WARNING:Model diverged with loss = NaN.").size(), 1u);
  ASSERT_TRUE(ms->Close().ok());
  EXPECT_EQ(saver->KeptCheckpoints(), std::vector<std::string>({dir.path() + "/model.ckpt-0"}));
  EXPECT_EQ(logger_->Matching("Not saving a checkpoint for 2").size(), 1u);
}

// ---- StepCounterHook

TEST_F(HooksTest, StepCounterFirstTriggerIsABaselineThenWritesStepsPerSecond) {
  auto h = *StepCounterHook::Create({.every_n_steps = 4, .summary_writer = writer_});
  auto ms = Make(
      {std::make_shared<ClockTickHook>(&env_, 0.5), h, *StopAtStepHook::Create(std::nullopt, 10)});
  RunLoop(*ms);
  // Baseline at step 1, then steps 5 and 9: 4 steps in 2 s each time.
  EXPECT_EQ(sink_->StepsOf("global_step/sec"), std::vector<int64_t>({5, 9}));
  for (const auto& r : sink_->records) {
    if (r.tag == "global_step/sec") {
      EXPECT_DOUBLE_EQ(r.value, 2.0);
    }
  }
  EXPECT_EQ(logger_->Matching("INFO:global_step/sec: 2").size(), 2u);
}

// ---- FeedFnHook

TEST_F(HooksTest, FeedFnSuppliesEveryRunsFeeds) {
  int calls = 0;
  auto feed = std::make_shared<FeedFnHook>([&]() -> Result<Feeds> {
    ++calls;
    return Feeds{{"learning_rate", 0.5}};
  });
  auto ms = Make({feed});
  RunValues v;
  ASSERT_TRUE(ms->Run({{"learning_rate"}, {}, {}}, &v).ok());
  ASSERT_TRUE(ms->Run({{"learning_rate"}, {}, {}}, &v).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_FLOAT_EQ(v.get("learning_rate"), 0.5f);
}

// ---- FinalOpsHook

TEST_F(HooksTest, FinalOpsEvaluatesAtEndAndRecordsSummaries) {
  auto h = *FinalOpsHook::Create({"test/loss", "test/accuracy"}, writer_);
  auto ms = Make({h, *StopAtStepHook::Create(std::nullopt, 3)});
  RunLoop(*ms);
  EXPECT_TRUE(h->final_ops_values().empty());
  auto expected = ms->session().trainer().Evaluate(testing::SmallFashionMnist().test);
  ASSERT_TRUE(ms->Close().ok());
  ASSERT_EQ(h->final_ops_values().size(), 2u);
  EXPECT_EQ(h->final_ops_values().at("test/accuracy"), expected->accuracy);
  EXPECT_DOUBLE_EQ(h->final_ops_values().at("test/loss"), expected->loss);
  EXPECT_EQ(sink_->StepsOf("test/accuracy"), std::vector<int64_t>({3}));
  EXPECT_FALSE(FinalOpsHook::Create({"test/recall"}).ok());
}

// ---- GlobalStepWaiterHook

TEST_F(HooksTest, GlobalStepWaiterPollsUntilTheStepIsReached) {
  int64_t observed = 0;
  auto h = *GlobalStepWaiterHook::Create(
      {.wait_until_step = 10, .poll_secs = 0.5, .global_step_source = [&]() -> Result<int64_t> {
         observed += 4;
         return observed;
       }});
  auto ms = Make({h});
  ASSERT_TRUE(ms->Run({}).ok());
  EXPECT_EQ(env_.sleeps, std::vector<double>({0.5, 0.5}));  // 4, 8, then 12 >= 10
  ASSERT_TRUE(ms->Run({}).ok());
  EXPECT_EQ(env_.sleeps.size(), 2u);  // only the first run waits
  EXPECT_EQ(logger_->Matching("Waiting for global step 10 before starting training.").size(), 1u);
}

TEST_F(HooksTest, GlobalStepWaiterEndsOnStopOrDeadlineAndRefusesToHang) {
  auto never = [] { return Result<int64_t>(int64_t{0}); };
  auto stop_hook =
      *GlobalStepWaiterHook::Create({.wait_until_step = 5, .global_step_source = never});
  auto ms = Make({stop_hook});
  ms->RequestStop();  // from no run: the next run still starts, and the wait ends at once
  const Status stopped = ms->Run({});
  EXPECT_EQ(stopped.code(), StatusCode::kCancelled);
  EXPECT_EQ(stopped.message(), "stop requested while waiting for global step 5");
  EXPECT_TRUE(env_.sleeps.empty());

  auto deadline = *GlobalStepWaiterHook::Create(
      {.wait_until_step = 5, .poll_secs = 1, .max_wait_secs = 3, .global_step_source = never});
  auto ms2 = Make({deadline});
  EXPECT_EQ(ms2->Run({}).code(), StatusCode::kDeadlineExceeded);

  auto no_source = *GlobalStepWaiterHook::Create({.wait_until_step = 5});
  auto ms3 = Make({no_source});
  Status st = ms3->Run({});
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("nothing else advances"), std::string::npos);
}

TEST_F(HooksTest, GlobalStepWaiterFollowsTheChiefsCheckpoints) {
  ScopedDir dir("waiter");
  {
    auto saver = *CheckpointSaverHook::Create({.checkpoint_dir = dir.path(), .save_steps = 100});
    auto chief = Make({saver, *StopAtStepHook::Create(std::nullopt, 6)}, dir.path());
    RunLoop(*chief);
  }  // checkpoint at 6
  auto h = *GlobalStepWaiterHook::Create({.wait_until_step = 5, .checkpoint_dir = dir.path()});
  auto ms = Make({h});
  ASSERT_TRUE(ms->Run({}).ok());
  EXPECT_TRUE(env_.sleeps.empty());
}

// ---- ProfilerHook

TEST_F(HooksTest, ProfilerWritesChromeTraceTimelinesOnTfsSchedule) {
  ScopedDir dir("profiler");
  auto h = *ProfilerHook::Create({.save_steps = 3, .output_dir = dir.path()});
  auto ms = Make({h, *StopAtStepHook::Create(std::nullopt, 7)});
  RunLoop(*ms);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path())) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, std::vector<std::string>({"timeline-3.json", "timeline-6.json"}));

  std::ifstream in(dir.path() + "/timeline-6.json");
  const nlohmann::json trace = nlohmann::json::parse(in);
  EXPECT_EQ(trace["otherData"]["global_step"], 6);
  std::set<std::string> seen;
  double last_end = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    seen.insert(e["cat"].get<std::string>() + ":" + e["name"].get<std::string>());
    EXPECT_GE(e["ts"].get<double>(), last_end - 1e-3);  // one after another
    EXPECT_GE(e["dur"].get<double>(), 0);
    last_end = e["ts"].get<double>() + e["dur"].get<double>();
  }
  for (const auto& layer : ms->session().trainer().model().layers()) {
    EXPECT_TRUE(seen.count("forward:" + layer->name())) << layer->name();
  }
  for (const char* want : {"backward:conv2d", "backward:dense", "backward:dense_1",
                           "optimizer:Adam", "input:input", "loss:softmax_cross_entropy"}) {
    EXPECT_TRUE(seen.count(want)) << want;
  }
}

TEST_F(HooksTest, ProfilerKeepsAtMostMaxTracesCountingEarlierRuns) {
  ScopedDir dir("profiler-capped");
  {
    std::ofstream(dir.path() + "/timeline-1.json") << "{}";  // an earlier run's
  }
  auto h = *ProfilerHook::Create({.save_steps = 2, .output_dir = dir.path(), .max_traces = 2});
  auto ms = Make({h, *StopAtStepHook::Create(std::nullopt, 9)});
  RunLoop(*ms);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path())) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, std::vector<std::string>({"timeline-6.json", "timeline-8.json"}));
}

// ---- EvaluationHook

TEST_F(HooksTest, EvaluationEveryNStepsRecordsValidationSummariesAndEvaluatesAtEnd) {
  auto h = *EvaluationHook::Create({.every_steps = 3, .summary_writer = writer_});
  auto ms = Make({h, *StopAtStepHook::Create(std::nullopt, 7)});
  RunLoop(*ms);
  ASSERT_TRUE(ms->Close().ok());
  EXPECT_EQ(sink_->StepsOf("validation/loss"), std::vector<int64_t>({3, 6, 7}));
  EXPECT_EQ(sink_->StepsOf("validation/accuracy"), std::vector<int64_t>({3, 6, 7}));
  EXPECT_EQ(h->evaluations(), 3);
  EXPECT_EQ(logger_->Matching("Evaluation at global step 6: validation/accuracy = ").size(), 1u);
  EXPECT_FALSE(EvaluationHook::Create({.every_steps = 3, .split = "dev"}).ok());
  // Every classification metric is a series, and each evaluation is recorded whole after its
  // scalars: the confusion matrix of every validation example, with the dataset's classes.
  for (const char* m : {"precision_macro", "recall_macro", "f1_macro", "auc", "log_loss"}) {
    EXPECT_EQ(sink_->StepsOf(std::string("validation/") + m), std::vector<int64_t>({3, 6, 7})) << m;
  }
  ASSERT_EQ(sink_->evaluations.size(), 3u);
  const EvaluationSummary& e = sink_->evaluations.back();
  EXPECT_EQ(e.split, "validation");
  EXPECT_EQ(e.step, 7);
  EXPECT_EQ(e.metrics.num_classes, 10);
  ASSERT_EQ(e.class_names.size(), 10u);
  EXPECT_EQ(e.class_names[3], "3");  // the dataset names no classes
  double total = 0;
  for (double v : e.metrics.confusion) total += v;
  EXPECT_EQ(total, static_cast<double>(testing::SmallFashionMnist().validation.size()));
  EXPECT_EQ(h->last_evaluation()->values.at("validation/auc"), e.metrics.auc);
  EXPECT_EQ(e.loss, h->last_evaluation()->loss);
}

// ---- EarlyStoppingHook

TEST_F(HooksTest, EarlyStoppingStopsAfterPatienceEvaluationsWithoutImprovement) {
  // A zero learning rate: the metric never changes, so only the first evaluation "improves".
  auto frozen = std::make_shared<FeedFnHook>([] {
    return Result<Feeds>(Feeds{{"learning_rate", 0.0}});
  });
  auto h =
      *EarlyStoppingHook::Create({.monitor = "validation/loss", .patience = 2, .every_steps = 2});
  auto ms = Make({frozen, h});
  EXPECT_EQ(RunLoop(*ms, 100), 6);  // evaluations at 2 (best), 4, 6 (patience reached)
  EXPECT_EQ(h->stopped_step(), 6);
  EXPECT_EQ(h->best_step(), 2);
  EXPECT_EQ(logger_->Matching("Early stopping at global step 6: validation/loss").size(), 1u);
}

TEST_F(HooksTest, EarlyStoppingKeepsGoingWhileTheMetricImproves) {
  auto h = *EarlyStoppingHook::Create({.monitor = "train/accuracy",
                                       .mode = EarlyStoppingHook::Mode::kMax,
                                       .patience = 3,
                                       .every_steps = 10});
  auto ms = Make({h, *StopAtStepHook::Create(std::nullopt, 40)});
  EXPECT_EQ(RunLoop(*ms, 100), 40);  // accuracy climbs early in training
  EXPECT_FALSE(h->stopped_step().has_value());
  EXPECT_GE(h->best_step(), 20);
  EXPECT_LT(h->evaluations_without_improvement(), 3);
  EXPECT_FALSE(EarlyStoppingHook::Create({.monitor = "loss", .every_steps = 1}).ok());
  EXPECT_FALSE(EarlyStoppingHook::Create({.patience = 0, .every_steps = 1}).ok());
  auto bad = EarlyStoppingHook::Create({.monitor = "validation/f1", .every_steps = 1});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("f1_macro"), std::string::npos) << bad.status().message();
}

// Any classification metric can be monitored; the macro F1 climbs early in training as accuracy
// does, and a frozen model's log loss stops at patience.
TEST_F(HooksTest, EarlyStoppingMonitorsTheNewMetrics) {
  auto f1 = *EarlyStoppingHook::Create({.monitor = "train/f1_macro",
                                        .mode = EarlyStoppingHook::Mode::kMax,
                                        .patience = 3,
                                        .every_steps = 10});
  auto ms = Make({f1, *StopAtStepHook::Create(std::nullopt, 30)});
  EXPECT_EQ(RunLoop(*ms, 100), 30);
  EXPECT_FALSE(f1->stopped_step().has_value());
  EXPECT_GE(f1->best_step(), 20);
  auto frozen = std::make_shared<FeedFnHook>([] {
    return Result<Feeds>(Feeds{{"learning_rate", 0.0}});
  });
  auto log_loss = *EarlyStoppingHook::Create(
      {.monitor = "validation/log_loss", .patience = 2, .every_steps = 2});
  auto ms2 = Make({frozen, log_loss});
  EXPECT_EQ(RunLoop(*ms2, 100), 6);
  EXPECT_EQ(log_loss->best_step(), 2);
}

}  // namespace
}  // namespace trainingd::engine
