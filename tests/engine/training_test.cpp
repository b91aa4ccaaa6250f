// Learning on real Fashion-MNIST, in seconds: proof that the whole step (data, model, loss,
// backward, optimizer) works, not a benchmark.
#include <gtest/gtest.h>

#include "test_util.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {

using testing::kSanitized;
using testing::SmallFashionMnist;

OptimizerOptions MakeOptimizer(OptimizerOptions::Type type, float lr) {
  OptimizerOptions o;
  o.type = type;
  o.learning_rate = LearningRateSchedule::Constant(lr);
  return o;
}

TEST(TrainingTest, SoftmaxRegressionBeats75PercentTestAccuracyOnAFewThousandExamples) {
  const Datasets& data = SmallFashionMnist();
  ASSERT_EQ(data.train.size(), 5000);
  auto t =
      Trainer::Create(*PresetModel("softmax"), MakeOptimizer(OptimizerOptions::Type::kSgd, 0.5f),
                      data.train, data.num_classes, {100, 1});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const double before = (*t)->Evaluate(data.test)->accuracy;
  for (int i = 0; i < 500; ++i) (void)(*t)->Step();  // 10 epochs of 5000 examples
  const LossAndAccuracy after = *(*t)->Evaluate(data.test);
  EXPECT_LT(before, 0.3);
  EXPECT_GT(after.accuracy, 0.75) << "test loss " << after.loss;
  EXPECT_EQ((*t)->global_step(), 500);
}

TEST(TrainingTest, CnnLossFallsOverItsFirstSteps) {
  if (kSanitized) {
    GTEST_SKIP() << "learning over 50 CNN steps (43 s under ASan) is the Release run's check; "
                    "the CNN's layers run under the sanitizers in SameSeedGivesTheSameLosses";
  }
  const Datasets& data = SmallFashionMnist();
  auto t = Trainer::Create(*PresetModel("cnn"), MakeOptimizer(OptimizerOptions::Type::kAdam, 1e-3f),
                           data.train, data.num_classes, {50, 2});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) {
    const StepResult r = (*t)->Step();
    ASSERT_TRUE(std::isfinite(r.loss));
    if (i == 0) first = r.loss;
    if (i >= 40) last += r.loss / 10;
  }
  EXPECT_NEAR(first, std::log(10.0), 0.5);  // starts near chance
  EXPECT_LT(last, first - 0.8) << "first " << first << " last " << last;
}

TEST(TrainingTest, SameSeedGivesTheSameLosses) {
  const Datasets& data = SmallFashionMnist();
  auto run = [&](uint64_t seed) {
    auto t =
        Trainer::Create(*PresetModel("cnn"), MakeOptimizer(OptimizerOptions::Type::kAdam, 1e-3f),
                        data.train, data.num_classes, {20, seed});
    std::vector<double> losses;
    for (int i = 0; i < (kSanitized ? 4 : 8); ++i) losses.push_back((*t)->Step().loss);
    return losses;
  };
  const auto a = run(11), b = run(11), c = run(12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(TrainingTest, MlpLearnsWithMomentum) {
  const Datasets& data = SmallFashionMnist();
  auto t =
      Trainer::Create(*PresetModel("mlp"), MakeOptimizer(OptimizerOptions::Type::kMomentum, 0.05f),
                      data.train, data.num_classes, {100, 3});
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 300; ++i) (void)(*t)->Step();
  EXPECT_GT((*t)->Evaluate(data.test)->accuracy, 0.72);
}

TEST(TrainingTest, CreateRejectsABadBatchSizeAndOptimizer) {
  const Datasets& data = SmallFashionMnist();
  auto t =
      Trainer::Create(*PresetModel("softmax"), MakeOptimizer(OptimizerOptions::Type::kSgd, 0.5f),
                      data.train, data.num_classes, {0, 1});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("batch_size"), std::string::npos);
  t = Trainer::Create(*PresetModel("softmax"), MakeOptimizer(OptimizerOptions::Type::kSgd, -1.0f),
                      data.train, data.num_classes, {10, 1});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("learning_rate"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace trainingd::engine
