// RunJob's wiring of the spec's hooks into a session, where the hooks' own tests (hooks_test.cpp)
// cannot see it: the evaluation hook's at_end and the final values it leaves.
#include "trainingd/engine/job/job_runner.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "session_test_util.h"
#include "test_util.h"

namespace trainingd::engine {
namespace {

using testing::ScopedDir;

struct EvaluatedRun {
  JobResult result;
  std::shared_ptr<testing::CapturingLogger> logger;
};

// 30 steps with the test split evaluated every 20.
EvaluatedRun Evaluated(bool at_end, const std::string& dir) {
  JobSpec spec;
  spec.name = "evaluated";
  spec.model_preset = "softmax";
  spec.model = *PresetModel("softmax");
  spec.dataset.name = "two-class-table";
  spec.batch_size = 20;
  spec.max_steps = 30;
  spec.hooks.evaluation.enabled = true;
  spec.hooks.evaluation.split = "test";
  spec.hooks.evaluation.trigger.every_steps = 20;
  spec.hooks.evaluation.at_end = at_end;
  JobRunOptions o;
  o.checkpoint_dir = dir;
  o.datasets = testing::TwoClassTable(5, 300, 100);
  auto logger = std::make_shared<testing::CapturingLogger>();
  o.logger = logger;
  auto result = RunJob(spec, o);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return {result.ok() ? *result : JobResult{}, logger};
}

TEST(JobRunnerTest, TheEvaluationAtTheEndIsTheFinalValue) {
  ScopedDir dir("at-end");
  const EvaluatedRun run = Evaluated(true, dir.path());
  EXPECT_EQ(run.logger->Matching("Evaluation at global step 20: test/accuracy").size(), 1u);
  EXPECT_EQ(run.logger->Matching("Evaluation at global step 30: test/accuracy").size(), 1u);
  EXPECT_EQ(run.result.global_step, 30);
  EXPECT_EQ(run.result.final_values.count("test/accuracy"), 1u);
  EXPECT_EQ(run.result.final_values.count("test/loss"), 1u);
}

TEST(JobRunnerTest, WithoutAtEndOnlyThePeriodicEvaluationsRunAndNoneIsAFinalValue) {
  ScopedDir dir("not-at-end");
  const EvaluatedRun run = Evaluated(false, dir.path());
  EXPECT_EQ(run.logger->Matching("Evaluation at global step").size(), 1u);
  EXPECT_EQ(run.logger->Matching("Evaluation at global step 20: test/accuracy").size(), 1u);
  EXPECT_EQ(run.result.global_step, 30);
  // Step 20's evaluation is not step 30's value.
  EXPECT_EQ(run.result.final_values.count("test/accuracy"), 0u);
  EXPECT_EQ(run.result.final_values.count("test/loss"), 0u);
}

}  // namespace
}  // namespace trainingd::engine
