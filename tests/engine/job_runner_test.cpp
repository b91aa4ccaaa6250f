// RunJob's wiring of the spec's hooks into a session, where the hooks' own tests (hooks_test.cpp)
// cannot see it: the evaluation hook's at_end and the final values it leaves; and what the log
// says of the precision.
#include "trainingd/engine/job/job_runner.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "nn/gemm.h"
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
EvaluatedRun Evaluated(bool at_end, const std::string& dir,
                       Precision precision = Precision::kFloat32) {
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
  spec.precision = precision;
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

// A mixed-precision job's log says what computes its bfloat16 products: this CPU's own
// instructions, float32 FMAs (no faster than float32) or an emulation (slower); a float32 job's
// says nothing.
TEST(JobRunnerTest, TheLogSaysWhatComputesMixedPrecision) {
  ScopedDir mixed_dir("mixed"), float_dir("float32");
  const EvaluatedRun mixed = Evaluated(true, mixed_dir.path(), Precision::kMixedBfloat16);
  EXPECT_EQ(mixed.result.global_step, 30);
  EXPECT_EQ(mixed.logger->Matching("precision mixed_bfloat16: ").size(), 1u);
  const internal::Bf16Kernels kernels = internal::GemmBf16Kernels();
  EXPECT_EQ(mixed.logger->Matching("on this CPU's AVX512_BF16 instructions").size(),
            kernels == internal::Bf16Kernels::kInstructions ? 1u : 0u);
  EXPECT_EQ(mixed.logger->Matching("float32 FMAs take their steps").size(),
            kernels == internal::Bf16Kernels::kFloatFma ? 1u : 0u);
  EXPECT_EQ(mixed.logger->Matching("emulated").size(),
            kernels == internal::Bf16Kernels::kEmulated ? 1u : 0u);
  const EvaluatedRun float32 = Evaluated(true, float_dir.path());
  // (Its evaluations log "precision_macro", a metric: no word of the arithmetic's precision.)
  EXPECT_TRUE(float32.logger->Matching("precision mixed").empty());
  EXPECT_TRUE(float32.logger->Matching("bfloat16").empty());
}

}  // namespace
}  // namespace trainingd::engine
