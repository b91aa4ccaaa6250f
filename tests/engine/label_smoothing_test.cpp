// Label smoothing in the softmax cross-entropy (Keras' CategoricalCrossentropy(label_smoothing)):
// hand-computed loss and gradient, eps = 0 bitwise the plain loss, and the bad values refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "test_util.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
// Named, not anonymous: unity builds put the test files side by side.
namespace label_smoothing_test {

Tensor Logits(int64_t batch, int64_t classes, const std::vector<float>& values) {
  Tensor t(Shape{batch, classes});
  for (size_t i = 0; i < values.size(); ++i) t[static_cast<int64_t>(i)] = values[i];
  return t;
}

TEST(LabelSmoothingTest, LossAndGradientMatchHandComputedValues) {
  // Two classes, logits {0, ln 3}: softmax {0.25, 0.75}. Label 0, eps 0.2: targets {0.9, 0.1}.
  // loss = -(0.9 ln 0.25 + 0.1 ln 0.75) = 1.2764327; gradient = softmax - targets = {-0.65, 0.65}.
  // The second row, label 1 with logits {0, 0}: targets {0.1, 0.9}, loss ln 2, gradient {0.4,
  // -0.4}. The mean over the batch of 2 halves the gradients.
  const Tensor z = Logits(2, 2, {0.0f, std::log(3.0f), 0.0f, 0.0f});
  const std::vector<int32_t> labels = {0, 1};
  Tensor d;
  const LossAndAccuracy r = SoftmaxCrossEntropy(z, labels, &d, 0, 0.2f);
  EXPECT_NEAR(r.loss_sum, 1.2764327 + std::log(2.0), 1e-6);
  EXPECT_NEAR(r.loss, (1.2764327 + std::log(2.0)) / 2, 1e-6);
  EXPECT_EQ(r.correct, 0);  // row 0 predicts class 1; row 1 ties, and a tie picks class 0
  EXPECT_NEAR(d[0], -0.325, 1e-6);
  EXPECT_NEAR(d[1], 0.325, 1e-6);
  EXPECT_NEAR(d[2], 0.2, 1e-6);
  EXPECT_NEAR(d[3], -0.2, 1e-6);
}

TEST(LabelSmoothingTest, ZeroIsBitwiseThePlainLoss) {
  const Tensor z = Logits(2, 3, {0.3f, -1.2f, 2.5f, 1.0f, 0.1f, -0.7f});
  const std::vector<int32_t> labels = {2, 0};
  Tensor a, b;
  const LossAndAccuracy ra = SoftmaxCrossEntropy(z, labels, &a, 4);
  const LossAndAccuracy rb = SoftmaxCrossEntropy(z, labels, &b, 4, 0.0f);
  EXPECT_EQ(ra.loss_sum, rb.loss_sum);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.size())), 0);
  // And smoothing changes both: the loss grows (the targets are no longer the argmax's).
  Tensor c;
  const LossAndAccuracy rc = SoftmaxCrossEntropy(z, labels, &c, 4, 0.1f);
  EXPECT_GT(rc.loss_sum, ra.loss_sum);
  EXPECT_NE(c[2], a[2]);
}

TEST(LabelSmoothingTest, JobSpecRefusesValuesOutsideZeroToOne) {
  JobSpec spec;
  spec.name = "ls";
  spec.model = *PresetModel("softmax");
  spec.max_steps = 1;
  for (float bad : {-0.1f, 1.0f, 2.0f, std::nanf("")}) {
    spec.label_smoothing = bad;
    EXPECT_TRUE(testing::FailsNaming(ValidateJobSpec(spec), "label_smoothing")) << bad;
  }
  spec.label_smoothing = 0.1f;
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec).ToString();
}

TEST(LabelSmoothingTest, TrainerRefusesValuesOutsideZeroToOne) {
  const Datasets& data = testing::SmallFashionMnist();
  for (float bad : {-0.5f, 1.0f}) {
    auto t = Trainer::Create(*PresetModel("softmax"), OptimizerOptions(), data.train,
                             data.num_classes, {.batch_size = 20, .label_smoothing = bad});
    EXPECT_TRUE(testing::FailsNaming(t.status(), "label_smoothing")) << bad;
  }
}

}  // namespace label_smoothing_test
}  // namespace trainingd::engine
