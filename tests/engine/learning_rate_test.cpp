#include "trainingd/engine/optim/learning_rate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "test_util.h"

namespace trainingd::engine {
namespace {

// Not `Type`: optimizer_test.cpp has one, and unity builds may put both in one file.
using ScheduleType = LearningRateSchedule::Type;

using testing::FailsNaming;

TEST(LearningRateScheduleTest, DefaultIsAValidConstantOfAdamsDefaultRate) {
  const LearningRateSchedule s;
  EXPECT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.type, ScheduleType::kConstant);
  EXPECT_EQ(s.LearningRateAt(0), 0.001f);
  EXPECT_EQ(s.LearningRateAt(123456789), 0.001f);
}

TEST(LearningRateScheduleTest, ConstantIsTheSameAtEveryStep) {
  const auto s = LearningRateSchedule::Constant(0.25f);
  ASSERT_TRUE(s.Validate().ok());
  for (int64_t step : {0, 1, 7, 1000000}) EXPECT_EQ(s.LearningRateAt(step), 0.25f);
}

TEST(LearningRateScheduleTest, ExponentialDecayMatchesTensorFlow) {
  // tf.train.exponential_decay(0.1, step, decay_steps=10, decay_rate=0.5): 0.1 * 0.5^(step/10).
  const auto s = LearningRateSchedule::ExponentialDecay(0.1f, 10, 0.5f);
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_FLOAT_EQ(s.LearningRateAt(0), 0.1f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(5), 0.07071067811865477f);  // 0.1 * 0.5^0.5
  EXPECT_FLOAT_EQ(s.LearningRateAt(10), 0.05f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(25), 0.01767766952966369f);  // 0.1 * 0.5^2.5
  EXPECT_FLOAT_EQ(s.LearningRateAt(100), 0.1f / 1024.0f);
}

TEST(LearningRateScheduleTest, StaircaseDecaysOnlyAtMultiplesOfDecaySteps) {
  const auto s = LearningRateSchedule::ExponentialDecay(0.1f, 10, 0.5f, /*staircase=*/true);
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_FLOAT_EQ(s.LearningRateAt(0), 0.1f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(9), 0.1f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(10), 0.05f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(19), 0.05f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(20), 0.025f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(25), 0.025f);
}

TEST(LearningRateScheduleTest, ExponentialDecayIsExactAtLargeSteps) {
  // 0.96^(2e9 / 1e8) = 0.96^20, with the staircase exponent exact however large the step.
  const auto s = LearningRateSchedule::ExponentialDecay(1.0f, 100000000, 0.96f, true);
  EXPECT_FLOAT_EQ(s.LearningRateAt(2000000000), static_cast<float>(std::pow(0.96f, 20.0)));
  EXPECT_FLOAT_EQ(s.LearningRateAt(2099999999), static_cast<float>(std::pow(0.96f, 20.0)));
}

TEST(LearningRateScheduleTest, StepDecayFollowsPiecewiseConstantBoundaries) {
  // tf.train.piecewise_constant(step, [100, 200], [1.0, 0.5, 0.1]).
  const auto s = LearningRateSchedule::StepDecay({100, 200}, {1.0f, 0.5f, 0.1f});
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.LearningRateAt(0), 1.0f);
  EXPECT_EQ(s.LearningRateAt(99), 1.0f);
  EXPECT_EQ(s.LearningRateAt(100), 1.0f);  // a boundary still belongs to the interval it ends
  EXPECT_EQ(s.LearningRateAt(101), 0.5f);
  EXPECT_EQ(s.LearningRateAt(200), 0.5f);
  EXPECT_EQ(s.LearningRateAt(201), 0.1f);
  EXPECT_EQ(s.LearningRateAt(int64_t{1} << 40), 0.1f);
}

TEST(LearningRateScheduleTest, StepDecayWithNoBoundariesIsConstant) {
  const auto s = LearningRateSchedule::StepDecay({}, {0.3f});
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.LearningRateAt(0), 0.3f);
  EXPECT_EQ(s.LearningRateAt(1000), 0.3f);
}

TEST(LearningRateScheduleTest, CosineDecayWithWarmupMatchesKerasCosineDecay) {
  // keras.optimizers.schedules.CosineDecay(0.0, decay_steps=100, alpha=0.1, warmup_target=0.1,
  // warmup_steps=10): linear from 0 to 0.1 over steps 0..10, then 0.1 * (0.9 * c + 0.1) with
  // c = 0.5 * (1 + cos(pi * (s - 10) / 100)), held at 0.01 from step 110 on.
  const auto s = LearningRateSchedule::CosineDecay(0.1f, 100, 0.1f, 10);
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.LearningRateAt(0), 0.0f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(1), 0.01f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(5), 0.05f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(10), 0.1f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(35), 0.1f * (0.9f * 0.8535533905932737f + 0.1f));  // pi/4
  EXPECT_FLOAT_EQ(s.LearningRateAt(60), 0.055f);                                      // pi/2
  EXPECT_FLOAT_EQ(s.LearningRateAt(110), 0.01f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(1000000), 0.01f);
  EXPECT_EQ(s.LearningRateAt(-3), 0.0f);
}

TEST(LearningRateScheduleTest, CosineDecayWithoutWarmupStartsAtTheRateAndEndsAtZero) {
  // keras.optimizers.schedules.CosineDecay(0.2, decay_steps=4): alpha 0, no warmup.
  const auto s = LearningRateSchedule::CosineDecay(0.2f, 4);
  ASSERT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.LearningRateAt(0), 0.2f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(1), 0.2f * 0.8535533905932737f);
  EXPECT_FLOAT_EQ(s.LearningRateAt(2), 0.1f);
  EXPECT_NEAR(s.LearningRateAt(4), 0.0f, 1e-9f);
  EXPECT_NEAR(s.LearningRateAt(5), 0.0f, 1e-9f);
}

TEST(LearningRateScheduleTest, CosineDecayValidateNamesTheBadField) {
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::CosineDecay(0.0f, 10).Validate(), "learning_rate"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::CosineDecay(0.1f, 0).Validate(), "decay_steps"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::CosineDecay(0.1f, 10, 0.0f, -1).Validate(),
                          "warmup_steps"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::CosineDecay(0.1f, 10, 1.5f).Validate(), "alpha"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::CosineDecay(0.1f, 10, -0.1f).Validate(), "alpha"));
  EXPECT_TRUE(FailsNaming(
      LearningRateSchedule::CosineDecay(0.1f, 10, std::numeric_limits<float>::quiet_NaN())
          .Validate(),
      "alpha"));
  EXPECT_TRUE(LearningRateSchedule::CosineDecay(0.1f, 10, 1.0f, 0).Validate().ok());
}

TEST(LearningRateScheduleTest, NegativeStepCountsAsZero) {
  EXPECT_FLOAT_EQ(LearningRateSchedule::ExponentialDecay(0.1f, 10, 0.5f).LearningRateAt(-5), 0.1f);
  EXPECT_EQ(LearningRateSchedule::StepDecay({0}, {1.0f, 2.0f}).LearningRateAt(-5), 1.0f);
}

TEST(LearningRateScheduleTest, ValidateNamesTheBadField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::Constant(0.0f).Validate(), "learning_rate"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::Constant(-0.1f).Validate(), "learning_rate"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::Constant(nan).Validate(), "learning_rate"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::Constant(inf).Validate(), "learning_rate"));

  EXPECT_TRUE(FailsNaming(LearningRateSchedule::ExponentialDecay(0.0f, 10, 0.5f).Validate(),
                          "learning_rate"));
  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::ExponentialDecay(0.1f, 0, 0.5f).Validate(), "decay_steps"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::ExponentialDecay(0.1f, -3, 0.5f).Validate(),
                          "decay_steps"));
  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::ExponentialDecay(0.1f, 10, 0.0f).Validate(), "decay_rate"));
  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::ExponentialDecay(0.1f, 10, inf).Validate(), "decay_rate"));
  // Exponential decay with only the type set must not pass on the zero defaults.
  LearningRateSchedule unset;
  unset.type = ScheduleType::kExponentialDecay;
  EXPECT_TRUE(FailsNaming(unset.Validate(), "decay_steps"));

  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::StepDecay({100, 100}, {1, 2, 3}).Validate(), "boundaries"));
  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::StepDecay({200, 100}, {1, 2, 3}).Validate(), "boundaries"));
  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::StepDecay({100, 200}, {1, 2}).Validate(), "values"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::StepDecay({100}, {1, 2, 3}).Validate(), "values"));
  EXPECT_TRUE(FailsNaming(LearningRateSchedule::StepDecay({}, {}).Validate(), "values"));
  EXPECT_TRUE(
      FailsNaming(LearningRateSchedule::StepDecay({100}, {1.0f, -0.5f}).Validate(), "values[1]"));

  LearningRateSchedule bad_type;
  bad_type.type = static_cast<ScheduleType>(42);
  EXPECT_TRUE(FailsNaming(bad_type.Validate(), "type"));
}

TEST(LearningRateScheduleTest, ValidateIgnoresFieldsTheTypeDoesNotUse) {
  LearningRateSchedule s = LearningRateSchedule::StepDecay({10}, {0.1f, 0.01f});
  s.learning_rate = -1.0f;  // unused by step decay
  s.decay_steps = -1;
  EXPECT_TRUE(s.Validate().ok());
  LearningRateSchedule c = LearningRateSchedule::Constant(0.1f);
  c.decay_rate = -1.0f;  // unused by a constant
  c.boundaries = {3, 2, 1};
  EXPECT_TRUE(c.Validate().ok());
}

}  // namespace
}  // namespace trainingd::engine
