// The custom hook of docs/hooks.md ("Writing a custom hook"), run for real on the small
// Fashion-MNIST. The code between the two marker lines is the doc's example, byte for byte;
// tests/tools/check_doc_examples.py (CTest docs.hooks_example_in_sync) fails when they differ.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "session_test_util.h"
#include "trainingd/engine/io/checkpoint_manager.h"

// [docs/hooks.md example begin]
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "trainingd/engine/session/hooks/stop_at_step_hook.h"
#include "trainingd/engine/session/monitored_training_session.h"

namespace example {
namespace eng = trainingd::engine;

// Stops training once the minibatch accuracy, averaged over the last `window` steps, exceeds
// `threshold`. Every `window` global steps it also records that average as the scalar
// "accuracy_avg", next to the built-in summaries.
class StopAtAccuracyHook final : public eng::SessionRunHook {
 public:
  StopAtAccuracyHook(int64_t window, double threshold, std::shared_ptr<eng::SummaryWriter> writer)
      : window_(window), threshold_(threshold), writer_(std::move(writer)) {}

  std::string name() const override { return "StopAtAccuracyHook"; }

  // Runs after the session is created, and again after every recovery. A recovery restores the
  // latest checkpoint and redoes the steps since, so the accuracies kept so far are forgotten.
  eng::Status AfterCreateSession(eng::Session& /*session*/,
                                 eng::Coordinator& /*coordinator*/) override {
    recent_.clear();
    return eng::Status::Ok();
  }

  // Asks for the step's minibatch accuracy. AfterRun gets this fetch and no other.
  eng::Status BeforeRun(eng::RunContext& /*ctx*/, eng::RunArgs& request) override {
    request.fetches.push_back(eng::kAccuracyFetch);
    return eng::Status::Ok();
  }

  eng::Status AfterRun(eng::RunContext& ctx, const eng::RunValues& values) override {
    recent_.push_back(values.get(eng::kAccuracyFetch));
    if (std::ssize(recent_) > window_) recent_.pop_front();
    if (std::ssize(recent_) < window_) return eng::Status::Ok();
    average_ = std::accumulate(recent_.begin(), recent_.end(), 0.0) / static_cast<double>(window_);
    const int64_t step = ctx.session().global_step();  // after this run's step
    if (writer_ && step % window_ == 0) {
      TRAININGD_RETURN_IF_ERROR(writer_->AddScalar("accuracy_avg", step, average_));
    }
    if (average_ > threshold_) {
      reached_at_ = step;
      ctx.session().logger().Info("Mean accuracy of the last " + std::to_string(window_) +
                                  " steps is " + std::to_string(average_) +
                                  "; stopping at global step " + std::to_string(step) + ".");
      ctx.RequestStop();  // the loop ends after this run; End() still runs on every hook
    }
    return eng::Status::Ok();
  }

  // The latest average (0 until `window` steps ran), and the step at which it asked to stop.
  double average() const { return average_; }
  std::optional<int64_t> reached_at() const { return reached_at_; }

 private:
  const int64_t window_;
  const double threshold_;
  std::shared_ptr<eng::SummaryWriter> writer_;
  std::deque<double> recent_;
  double average_ = 0;
  std::optional<int64_t> reached_at_;
};

struct AccuracyGoal {
  int64_t window = 50;        // steps averaged
  double threshold = 0.8;     // stop once the mean training accuracy is above this
  int64_t max_steps = 20000;  // stop at this global step in any case
};

struct TrainingOutcome {
  int64_t global_step = 0;            // where training ended
  std::optional<int64_t> reached_at;  // the global step the goal was reached at, if it was
  double average_accuracy = 0;        // the hook's latest mean
};

// Trains `config` until the goal is met or max_steps is reached, as a training program would.
// `options` carries the checkpoint directory (and any other MonitoredTrainingSession option);
// calling this again with the same checkpoint_dir resumes from the latest checkpoint.
eng::Result<TrainingOutcome> TrainUntilAccurate(const eng::SessionConfig& config,
                                                std::shared_ptr<const eng::Datasets> datasets,
                                                const AccuracyGoal& goal,
                                                eng::MonitoredTrainingSessionOptions options) {
  // Hooks are built before the session exists, so they get the writer the session will use:
  // the chief adds the event file (in checkpoint_dir) and options.summary_sinks to it.
  auto writer = std::make_shared<eng::SummaryWriter>(options.session_options.env);
  options.session_options.summary_writer = writer;
  auto accurate = std::make_shared<StopAtAccuracyHook>(goal.window, goal.threshold, writer);
  auto stop_at = eng::StopAtStepHook::Create(/*num_steps=*/std::nullopt, goal.max_steps);
  if (!stop_at.ok()) return stop_at.status();
  options.hooks.push_back(accurate);
  options.hooks.push_back(*stop_at);

  // Restores the latest checkpoint in checkpoint_dir, or initialises the model from the seed.
  auto session = eng::MonitoredTrainingSession(config, std::move(datasets), std::move(options));
  if (!session.ok()) return session.status();  // e.g. a checkpoint of another model
  eng::MonitoredSession& ms = **session;

  int64_t step = ms.session().global_step();
  eng::Status run_status;
  eng::RunValues values;
  while (!ms.ShouldStop()) {
    // One training step. The hooks add their own fetches; the caller sees only its own.
    run_status = ms.Run({.fetches = {eng::kGlobalStepFetch}}, &values);
    if (!run_status.ok()) break;
    step = static_cast<int64_t>(values.get(eng::kGlobalStepFetch));
  }
  // End() on every hook: the final checkpoint is written and the summaries are flushed.
  eng::Status close_status = ms.Close();
  // OutOfRange only says the input ran out (SessionConfig::num_epochs): a normal end.
  if (!run_status.ok() && run_status.code() != eng::StatusCode::kOutOfRange) return run_status;
  if (!close_status.ok()) return close_status;
  return TrainingOutcome{step, accurate->reached_at(), accurate->average()};
}

}  // namespace example
// [docs/hooks.md example end]

namespace trainingd::engine {
namespace {

using testing::CapturingLogger;
using testing::FakeEnv;
using testing::RecordingSink;
using testing::ScopedDir;
using testing::SharedSmallData;
using testing::SmallConfig;

// Records every step's minibatch accuracy by global step, independently of the example's hook.
class AccuracyRecorder final : public SessionRunHook {
 public:
  Status BeforeRun(RunContext&, RunArgs& request) override {
    request.fetches = {kAccuracyFetch, kGlobalStepFetch};
    return Status::Ok();
  }
  Status AfterRun(RunContext&, const RunValues& values) override {
    accuracy[static_cast<int64_t>(values.get(kGlobalStepFetch))] = values.get(kAccuracyFetch);
    return Status::Ok();
  }
  std::map<int64_t, double> accuracy;
};

// The mean of accuracy[step - window + 1 .. step], summed in step order as the hook sums.
double MeanOfWindow(const std::map<int64_t, double>& accuracy, int64_t step, int64_t window) {
  double sum = 0;
  for (int64_t s = step - window + 1; s <= step; ++s) sum += accuracy.at(s);
  return sum / static_cast<double>(window);
}

class CustomHookExampleTest : public ::testing::Test {
 protected:
  MonitoredTrainingSessionOptions Options(const std::string& dir) {
    MonitoredTrainingSessionOptions o;
    o.checkpoint_dir = dir;
    o.summary_sinks = {sink_};
    o.session_options.env = &env_;
    o.session_options.logger = logger_;
    return o;
  }

  FakeEnv env_;
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
  const SessionConfig config_ = SmallConfig(*PresetModel("softmax"));
  const example::AccuracyGoal goal_{.window = 20, .threshold = 0.7, .max_steps = 2000};
};

TEST_F(CustomHookExampleTest, StopsAtTheFirstStepWhoseMovingAverageExceedsTheThreshold) {
  ScopedDir dir("custom_hook");
  auto outcome =
      example::TrainUntilAccurate(config_, SharedSmallData(), goal_, Options(dir.path()));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->reached_at.has_value()) << "the goal was never reached";
  const int64_t stop = *outcome->reached_at;
  EXPECT_EQ(outcome->global_step, stop);
  EXPECT_GE(stop, goal_.window);
  EXPECT_LT(stop, goal_.max_steps);
  EXPECT_GT(outcome->average_accuracy, goal_.threshold);

  // The same model and seed again, recorded by an independent hook: the moving average first
  // exceeds the threshold exactly at the step the example stopped at.
  auto recorder = std::make_shared<AccuracyRecorder>();
  {
    MonitoredSessionOptions o;
    o.env = &env_;
    o.logger = logger_;
    auto ms =
        MonitoredSession::Create(std::make_unique<ChiefSessionCreator>(
                                     SessionSource{config_, SharedSmallData(), &env_, logger_}, ""),
                                 {recorder, *StopAtStepHook::Create(std::nullopt, stop)}, o);
    ASSERT_TRUE(ms.ok()) << ms.status().ToString();
    while (!(*ms)->ShouldStop()) ASSERT_TRUE((*ms)->Run({}).ok());
  }
  ASSERT_EQ(recorder->accuracy.size(), static_cast<size_t>(stop));
  for (int64_t s = goal_.window; s < stop; ++s) {
    EXPECT_LE(MeanOfWindow(recorder->accuracy, s, goal_.window), goal_.threshold) << "step " << s;
  }
  EXPECT_DOUBLE_EQ(MeanOfWindow(recorder->accuracy, stop, goal_.window), outcome->average_accuracy);

  // The custom scalar: every `window` steps once the window is full, with the window's mean.
  std::vector<int64_t> want_steps;
  for (int64_t s = goal_.window; s <= stop; s += goal_.window) want_steps.push_back(s);
  EXPECT_EQ(sink_->StepsOf("accuracy_avg"), want_steps);
  for (const auto& r : sink_->records) {
    if (r.tag != "accuracy_avg") continue;
    EXPECT_DOUBLE_EQ(r.value, MeanOfWindow(recorder->accuracy, r.step, goal_.window))
        << "step " << r.step;
  }
  // The built-in summaries went to the same writer.
  EXPECT_FALSE(sink_->StepsOf("loss").empty());

  // The hook's log line, and the final checkpoint End() wrote at the stop.
  EXPECT_EQ(logger_->Matching("; stopping at global step " + std::to_string(stop) + ".").size(),
            1u);
  auto manager = CheckpointManager::Create(dir.path());
  ASSERT_TRUE(manager.ok());
  EXPECT_EQ((*manager)->LatestCheckpointPath(), dir.path() + "/model.ckpt-" + std::to_string(stop));
}

TEST_F(CustomHookExampleTest, RunningItAgainResumesAndRefillsTheWindow) {
  ScopedDir dir("custom_hook_resume");
  auto first = example::TrainUntilAccurate(config_, SharedSmallData(), goal_, Options(dir.path()));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->reached_at.has_value());

  auto second = example::TrainUntilAccurate(config_, SharedSmallData(), goal_, Options(dir.path()));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(logger_
                ->Matching("Restoring parameters from " + dir.path() + "/model.ckpt-" +
                           std::to_string(first->global_step))
                .size(),
            1u);
  // A new hook starts with an empty window: at least `window` more steps before it can stop.
  ASSERT_TRUE(second->reached_at.has_value());
  EXPECT_GE(second->global_step, first->global_step + goal_.window);
  EXPECT_GT(second->average_accuracy, goal_.threshold);
}

}  // namespace
}  // namespace trainingd::engine
