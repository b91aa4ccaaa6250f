// The best checkpoint (best_checkpoint.h, BestCheckpointHook): the manager keeps it past
// max_to_keep and across restarts; a job keeps the checkpoint of its best evaluation; with
// restore_best its end-of-run evaluation is the best model's, while its latest checkpoint stays
// its true last state.
#include "trainingd/engine/io/best_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "session_test_util.h"
#include "test_util.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/job/job_runner.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;
using testing::ScopedDir;

CheckpointData DataAt(int64_t step) {
  CheckpointData d;
  d.global_step = step;
  d.tensors.emplace_back("w", Tensor(Shape{2}, static_cast<float>(step)));
  return d;
}

BestCheckpoint Best(int64_t step, double value) {
  BestCheckpoint b;
  b.global_step = step;
  b.metric = "validation/loss";
  b.mode = "min";
  b.value = value;
  return b;
}

TEST(BestCheckpointTest, TheBestIsKeptPastMaxToKeepAndAcrossRestarts) {
  ScopedDir dir("best-kept");
  CheckpointManagerOptions o;
  o.max_to_keep = 2;
  {
    auto m = CheckpointManager::Create(dir.path(), o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_TRUE((*m)->Save(DataAt(1)).ok());
    ASSERT_TRUE((*m)->Save(DataAt(2)).ok());
    ASSERT_TRUE((*m)->MarkBest(Best(2, 0.25)).ok());
    for (int64_t s = 3; s <= 6; ++s) ASSERT_TRUE((*m)->Save(DataAt(s)).ok());
    // Steps 5 and 6 are tracked; 2 stays, being the best; 1, 3 and 4 went.
    EXPECT_EQ((*m)->KeptCheckpoints().size(), 2u);
    EXPECT_TRUE(fs::exists(dir.path() + "/model.ckpt-2"));
    EXPECT_FALSE(fs::exists(dir.path() + "/model.ckpt-1"));
    EXPECT_FALSE(fs::exists(dir.path() + "/model.ckpt-3"));
    ASSERT_TRUE((*m)->best().has_value());
    EXPECT_TRUE((*m)->best()->retained);
  }
  auto read = ReadBestCheckpoint(dir.path());
  ASSERT_TRUE(read.ok() && *read) << read.status().ToString();
  EXPECT_EQ((*read)->global_step, 2);
  EXPECT_EQ((*read)->metric, "validation/loss");
  EXPECT_EQ((*read)->value, 0.25);
  EXPECT_TRUE((*read)->retained);
  {
    // A new manager (a restart) knows it, and a better one replaces it: the old file goes.
    auto m = CheckpointManager::Create(dir.path(), o);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE((*m)->best().has_value());
    EXPECT_EQ((*m)->best()->global_step, 2);
    ASSERT_TRUE((*m)->Save(DataAt(7)).ok());
    ASSERT_TRUE((*m)->MarkBest(Best(7, 0.125)).ok());
    EXPECT_FALSE(fs::exists(dir.path() + "/model.ckpt-2"));
    EXPECT_TRUE(fs::exists(dir.path() + "/model.ckpt-7"));
    // Only a tracked step can be the best.
    EXPECT_EQ((*m)->MarkBest(Best(3, 0.0)).code(), StatusCode::kNotFound);
    // The preserved-checkpoint cap does not count the best as a preserved one.
  }
  ASSERT_TRUE(DeleteCheckpoints(dir.path()).ok());
  EXPECT_FALSE(fs::exists(dir.path() + "/" + BestCheckpointFileName()));
  auto none = ReadBestCheckpoint(dir.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(BestCheckpointTest, AnUnreadableRecordIsAnErrorNamingTheLine) {
  ScopedDir dir("best-bad");
  fs::create_directories(dir.path());
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/best_checkpoint",
                                  "model_checkpoint_path: \"model.ckpt-3\"\nglobal_step: x\n")
                  .ok());
  auto read = ReadBestCheckpoint(dir.path());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(read.status().message().find("line 2"), std::string::npos);
}

TEST(BestCheckpointTest, IsBetterFollowsTheModeAndMinDelta) {
  EXPECT_TRUE(IsBetter(1.0, std::nullopt, "min", 0));
  EXPECT_FALSE(IsBetter(std::nan(""), std::nullopt, "min", 0));
  EXPECT_TRUE(IsBetter(0.5, 1.0, "min", 0));
  EXPECT_FALSE(IsBetter(0.95, 1.0, "min", 0.1));
  EXPECT_TRUE(IsBetter(2.0, 1.0, "max", 0));
  EXPECT_FALSE(IsBetter(1.0, 1.0, "max", 0));
}

// A table job whose validation loss is evaluated every 5 steps, with a learning rate high enough
// that it does not only improve.
JobSpec NoisyJob() {
  JobSpec spec;
  spec.name = "noisy";
  spec.model_preset = "softmax";
  spec.model = *PresetModel("softmax");
  spec.dataset.name = "two-class-table";
  spec.batch_size = 10;
  spec.max_steps = 60;
  spec.optimizer.learning_rate.learning_rate = 3.0f;
  spec.hooks.checkpoint.trigger.every_steps = 10;
  spec.hooks.checkpoint.max_to_keep = 1;
  spec.hooks.summary.enabled = false;
  spec.hooks.evaluation.enabled = true;
  spec.hooks.evaluation.trigger.every_steps = 5;
  return spec;
}

std::shared_ptr<const Datasets> NoisyData() {
  auto data = testing::TwoClassTable(7, 300, 50);
  data->validation = testing::TwoClassTable(8, 60, 1)->train;
  return data;
}

struct NoisyRun {
  JobResult result;
  std::map<int64_t, double> losses;  // the evaluations' validation/loss by step
};

NoisyRun RunNoisy(const JobSpec& spec, const std::string& dir) {
  JobRunOptions o;
  o.checkpoint_dir = dir;
  o.datasets = NoisyData();
  auto logger = std::make_shared<testing::CapturingLogger>();
  o.logger = logger;
  auto result = RunJob(spec, o);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  NoisyRun run;
  if (result.ok()) run.result = *result;
  for (const std::string& line : logger->Matching("Evaluation at global step ")) {
    const size_t at = line.find("global step ") + 12;
    const int64_t step = std::stoll(line.substr(at));
    const size_t loss = line.find("validation/loss = ");
    if (loss != std::string::npos) run.losses[step] = std::stod(line.substr(loss + 18));
  }
  return run;
}

TEST(BestCheckpointTest, AJobKeepsTheCheckpointOfItsBestEvaluation) {
  ScopedDir dir("best-job");
  const NoisyRun run = RunNoisy(NoisyJob(), dir.path());
  ASSERT_EQ(run.result.global_step, 60);
  ASSERT_GE(run.losses.size(), 10u);
  int64_t argmin = -1;
  double min = std::numeric_limits<double>::infinity();
  for (const auto& [step, loss] : run.losses) {
    if (loss < min) min = loss, argmin = step;
  }
  auto best = ReadBestCheckpoint(dir.path());
  ASSERT_TRUE(best.ok() && *best) << best.status().ToString();
  EXPECT_EQ((*best)->global_step, argmin);
  EXPECT_EQ((*best)->metric, "validation/loss");
  // The log prints float32's shortest text; the record holds the double.
  EXPECT_NEAR((*best)->value, min, 1e-6 * std::max(1.0, std::fabs(min)));
  // This job's best is not its last step, and max_to_keep 1 would have deleted it.
  ASSERT_NE(argmin, 60) << "the test needs a job whose best evaluation is not its last";
  EXPECT_TRUE(fs::exists(dir.path() + "/model.ckpt-" + std::to_string(argmin)));
  EXPECT_EQ(LatestCheckpointStep(dir.path()), 60);
}

TEST(BestCheckpointTest, KeepBestFalseKeepsNoBest) {
  ScopedDir dir("no-best");
  JobSpec spec = NoisyJob();
  spec.hooks.checkpoint.keep_best = false;
  RunNoisy(spec, dir.path());
  auto best = ReadBestCheckpoint(dir.path());
  ASSERT_TRUE(best.ok());
  EXPECT_FALSE(best->has_value());
}

// restore_best: the final evaluation is of the best checkpoint's state (its loss is the best's
// value exactly: the same weights evaluated on the same split), the run's result and its latest
// checkpoint are its true last step's.
TEST(BestCheckpointTest, RestoreBestEndsWithTheBestStateAndKeepsTheLatestCheckpoint) {
  for (const bool restore : {false, true}) {
    SCOPED_TRACE(restore ? "restore_best" : "without restore_best");
    ScopedDir dir(restore ? "restore-best" : "no-restore");
    JobSpec spec = NoisyJob();
    spec.hooks.evaluation.enabled = false;
    spec.hooks.early_stopping.enabled = true;
    spec.hooks.early_stopping.monitor = "validation/loss";
    spec.hooks.early_stopping.trigger.every_steps = 5;
    spec.hooks.early_stopping.patience = 100;  // runs to max_steps
    spec.hooks.early_stopping.restore_best = restore;
    spec.hooks.final_eval.enabled = true;
    spec.hooks.final_eval.split = "validation";
    const NoisyRun run = RunNoisy(spec, dir.path());
    ASSERT_EQ(run.result.global_step, 60);
    auto best = ReadBestCheckpoint(dir.path());
    ASSERT_TRUE(best.ok() && *best);
    ASSERT_NE((*best)->global_step, 60);
    ASSERT_EQ(run.result.final_values.count("validation/loss"), 1u);
    const double final_loss = run.result.final_values.at("validation/loss");
    if (restore) {
      EXPECT_EQ(final_loss, (*best)->value);
      EXPECT_NE(run.result.reason.find("the final state is the best checkpoint's, global step " +
                                       std::to_string((*best)->global_step)),
                std::string::npos)
          << run.result.reason;
    } else {
      EXPECT_NE(final_loss, (*best)->value);
    }
    // Resuming continues from the true last state either way.
    EXPECT_EQ(LatestCheckpointStep(dir.path()), 60);
    auto last = ReadCheckpointFile(dir.path() + "/model.ckpt-60");
    ASSERT_TRUE(last.ok());
    EXPECT_EQ(last->global_step, 60);
  }
}

TEST(BestCheckpointTest, RestoreBestNeedsTheBestCheckpoint) {
  JobSpec spec = NoisyJob();
  spec.hooks.early_stopping.enabled = true;
  spec.hooks.early_stopping.restore_best = true;
  spec.hooks.checkpoint.keep_best = false;
  EXPECT_TRUE(testing::FailsNaming(ValidateJobSpec(spec), "hooks.early_stopping.restore_best"));
}

}  // namespace
}  // namespace trainingd::engine
