// RunJob's wiring of the spec's hooks into a session, where the hooks' own tests (hooks_test.cpp)
// cannot see it: the evaluation hook's at_end and the final values it leaves.
#include "trainingd/engine/job/job_runner.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "session_test_util.h"
#include "test_util.h"
#include "trainingd/engine/base/random.h"

namespace trainingd::engine {
namespace {

using testing::ScopedDir;

// Two classes of 3 features, apart enough to learn.
std::shared_ptr<Datasets> TwoClasses() {
  auto data = std::make_shared<Datasets>();
  Rng rng(5);
  const auto split = [&](int64_t n) {
    Split s;
    s.images = Tensor(Shape{n, 3});
    for (int64_t e = 0; e < n; ++e) {
      const int label = static_cast<int>(rng.UniformInt(2));
      s.labels.push_back(label);
      for (int f = 0; f < 3; ++f) s.images[e * 3 + f] = (f == label ? 2.0f : 0.0f) + rng.Normal();
    }
    return s;
  };
  data->train = split(300);
  data->test = split(100);
  data->num_classes = 2;
  data->class_names = {"a", "b"};
  return data;
}

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
  spec.dataset.name = "two-classes";
  spec.batch_size = 20;
  spec.max_steps = 30;
  spec.hooks.evaluation.enabled = true;
  spec.hooks.evaluation.split = "test";
  spec.hooks.evaluation.trigger.every_steps = 20;
  spec.hooks.evaluation.at_end = at_end;
  JobRunOptions o;
  o.checkpoint_dir = dir;
  o.datasets = TwoClasses();
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
