// Decoupled weight decay (Keras' weight_decay, tf.keras.optimizers.AdamW): before each type's own
// update a decayed parameter shrinks by p -= p * (lr * weight_decay), with the step's rate; the
// slots never see it. Hand-computed steps for each optimizer, and which parameters decay.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#include "trainingd/engine/optim/optimizer.h"

namespace trainingd::engine {
// Named, not anonymous: unity builds put the test files side by side.
namespace weight_decay_test {

using OptType = OptimizerOptions::Type;
using Decayed = OptimizerOptions::DecayedParameters;

// A kernel [3, 1] (rank 2, decayed by default) or a bias [3] (rank 1, not decayed by default).
Parameter MakeWeight(const std::string& name, const std::vector<float>& values, bool kernel) {
  const Shape shape = kernel ? Shape{static_cast<int64_t>(values.size()), 1}
                             : Shape{static_cast<int64_t>(values.size())};
  Parameter p{name, Tensor(shape), Tensor(shape)};
  for (size_t i = 0; i < values.size(); ++i) p.value[static_cast<int64_t>(i)] = values[i];
  return p;
}

void SetGrad(Parameter& p, const std::vector<float>& g) {
  for (size_t i = 0; i < g.size(); ++i) p.grad[static_cast<int64_t>(i)] = g[i];
}

void ExpectValues(const Tensor& t, const std::vector<double>& expected, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(t.size(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t[static_cast<int64_t>(i)], expected[i], tolerance) << what << " [" << i << "]";
  }
}

// auto: trainer_checkpoint_test.cpp's Optimizer() shares a unity file with this one.
auto Make(OptType type, LearningRateSchedule lr, float weight_decay,
          Decayed decayed = Decayed::kKernels) {
  OptimizerOptions o;
  o.type = type;
  o.learning_rate = std::move(lr);
  o.weight_decay = weight_decay;
  o.weight_decay_parameters = decayed;
  auto made = MakeOptimizer(o);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return std::move(made).value();
}

const std::vector<float> kP0 = {1.0f, -2.0f, 0.5f};
const std::vector<std::vector<float>> kGrads = {{0.5f, -1.0f, 2.0f}, {0.25f, 0.5f, -4.0f}};

TEST(WeightDecayTest, SgdShrinksTheKernelByTheStepsRateTimesTheDecay) {
  // lr 0.1 at step 0 and 0.2 after (piecewise constant), weight_decay 0.5:
  //   step 0: p *= 1 - 0.05 -> {0.95, -1.9, 0.475}; p -= 0.1 g -> {0.9, -1.8, 0.275}
  //   step 1: p *= 1 - 0.1  -> {0.81, -1.62, 0.2475}; p -= 0.2 g -> {0.76, -1.72, 1.0475}
  auto opt = Make(OptType::kSgd, LearningRateSchedule::StepDecay({0}, {0.1f, 0.2f}), 0.5f);
  Parameter w = MakeWeight("dense/kernel", kP0, true);
  Parameter b = MakeWeight("dense/bias", kP0, false);
  std::vector<Parameter*> params = {&w, &b};
  SetGrad(w, kGrads[0]);
  SetGrad(b, kGrads[0]);
  opt->Apply(params, 0);
  ExpectValues(w.value, {0.9, -1.8, 0.275}, 1e-6, "kernel, step 0");
  ExpectValues(b.value, {0.95, -1.9, 0.3}, 1e-6, "bias (not decayed), step 0");
  SetGrad(w, kGrads[1]);
  SetGrad(b, kGrads[1]);
  opt->Apply(params, 1);
  ExpectValues(w.value, {0.76, -1.72, 1.0475}, 1e-6, "kernel, step 1");
  ExpectValues(b.value, {0.9, -2.0, 1.1}, 1e-6, "bias (not decayed), step 1");
}

TEST(WeightDecayTest, AllDecaysBiasesToo) {
  auto opt = Make(OptType::kSgd, LearningRateSchedule::Constant(0.1f), 0.5f, Decayed::kAll);
  Parameter b = MakeWeight("dense/bias", kP0, false);
  std::vector<Parameter*> params = {&b};
  SetGrad(b, kGrads[0]);
  opt->Apply(params, 0);
  ExpectValues(b.value, {0.9, -1.8, 0.275}, 1e-6, "bias with kAll");
}

TEST(WeightDecayTest, MomentumDecaysTheWeightsNotTheAccumulator) {
  // lr 0.1, momentum 0.9, weight_decay 0.5 (p *= 0.95 before each update):
  //   step 0: p -> {0.95, -1.9, 0.475}; accum = g = {0.5, -1, 2}; p -= 0.1 accum -> {0.9, -1.8,
  //           0.275}
  //   step 1: p -> {0.855, -1.71, 0.26125}; accum = {0.7, -0.4, -2.2}; p -> {0.785, -1.67, 0.48125}
  // The accumulator is plain momentum's: PyTorch's SGD(weight_decay) would add 0.5 p to g first.
  auto opt = Make(OptType::kMomentum, LearningRateSchedule::Constant(0.1f), 0.5f);
  Parameter w = MakeWeight("conv/kernel", kP0, true);
  std::vector<Parameter*> params = {&w};
  SetGrad(w, kGrads[0]);
  opt->Apply(params, 0);
  ExpectValues(w.value, {0.9, -1.8, 0.275}, 1e-6, "step 0");
  SetGrad(w, kGrads[1]);
  opt->Apply(params, 1);
  ExpectValues(w.value, {0.785, -1.67, 0.48125}, 1e-6, "step 1");
  ExpectValues(*opt->Slots()[0].second, {0.7, -0.4, -2.2}, 1e-6, "accum, step 1");
}

TEST(WeightDecayTest, AdamWIsAdamOnTheDecayedWeightsWithAdamsSlots) {
  // lr 0.01, weight_decay 0.5 (p *= 0.995): at t = 1 Adam's step is 0.01 * sign(g), so
  // p -> {0.995, -1.99, 0.4975} - 0.01 * {1, -1, 1} = {0.985, -1.98, 0.4875}.
  auto adamw = Make(OptType::kAdamW, LearningRateSchedule::Constant(0.01f), 0.5f);
  auto adam = Make(OptType::kAdam, LearningRateSchedule::Constant(0.01f), 0.0f);
  EXPECT_STREQ(adamw->name(), "AdamW");
  EXPECT_STREQ(adam->name(), "Adam");
  Parameter w = MakeWeight("dense/kernel", kP0, true);
  Parameter plain = MakeWeight("dense/kernel", kP0, true);
  std::vector<Parameter*> params = {&w};
  std::vector<Parameter*> plain_params = {&plain};
  for (int step = 0; step < 2; ++step) {
    SetGrad(w, kGrads[static_cast<size_t>(step)]);
    SetGrad(plain, kGrads[static_cast<size_t>(step)]);
    adamw->Apply(params, step);
    adam->Apply(plain_params, step);
    if (step == 0) ExpectValues(w.value, {0.985, -1.98, 0.4875}, 1e-6, "t=1");
  }
  // The moments depend on the gradients only, so they are Adam's, under Adam's slot names.
  const auto a = adamw->Slots();
  const auto b = adam->Slots();
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].first, b[k].first);
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ((*a[k].second)[i], (*b[k].second)[i]);
  }
  EXPECT_EQ(a[0].first, "dense/kernel/Adam");
  // And the weights are smaller in magnitude than Adam's by about the decay.
  for (int64_t i = 0; i < 3; ++i) EXPECT_LT(std::abs(w.value[i]), std::abs(plain.value[i]));
}

TEST(WeightDecayTest, AdamWithoutDecayIsBitwiseAdamW0) {
  auto adamw = Make(OptType::kAdamW, LearningRateSchedule::Constant(0.01f), 0.0f);
  auto adam = Make(OptType::kAdam, LearningRateSchedule::Constant(0.01f), 0.0f);
  Parameter w = MakeWeight("k", kP0, true);
  Parameter v = MakeWeight("k", kP0, true);
  std::vector<Parameter*> pw = {&w}, pv = {&v};
  SetGrad(w, kGrads[0]);
  SetGrad(v, kGrads[0]);
  adamw->Apply(pw, 0);
  adam->Apply(pv, 0);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(w.value[i], v.value[i]);
}

TEST(WeightDecayTest, ValidateNamesTheField) {
  for (OptType type : {OptType::kSgd, OptType::kMomentum, OptType::kAdam, OptType::kAdamW}) {
    OptimizerOptions o;
    o.type = type;
    o.learning_rate = LearningRateSchedule::Constant(0.1f);
    for (float bad :
         {-0.1f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      o.weight_decay = bad;
      EXPECT_TRUE(testing::FailsNaming(o.Validate(), "weight_decay"));
    }
    o.weight_decay = 0.01f;
    o.weight_decay_parameters = static_cast<Decayed>(7);
    EXPECT_TRUE(testing::FailsNaming(o.Validate(), "weight_decay_parameters"));
    o.weight_decay_parameters = Decayed::kAll;
    EXPECT_TRUE(o.Validate().ok());
  }
}

}  // namespace weight_decay_test
}  // namespace trainingd::engine
