#include "trainingd/engine/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/optim/adam_optimizer.h"
#include "trainingd/engine/optim/momentum_optimizer.h"
#include "trainingd/engine/optim/sgd_optimizer.h"

namespace trainingd::engine {
namespace {

using Type = OptimizerOptions::Type;

Tensor MakeTensor(const Shape& shape, const std::vector<float>& values) {
  Tensor t(shape);
  EXPECT_EQ(t.size(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) t[static_cast<int64_t>(i)] = values[i];
  return t;
}

Parameter MakeParam(const std::string& name, const std::vector<float>& values) {
  const Shape shape{static_cast<int64_t>(values.size())};
  return Parameter{name, MakeTensor(shape, values), Tensor(shape)};
}

void SetGrad(Parameter& p, const std::vector<float>& g) { p.grad = MakeTensor(p.value.shape(), g); }

std::unique_ptr<Optimizer> Make(const OptimizerOptions& options) {
  auto made = MakeOptimizer(options);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return std::move(made).value();
}

OptimizerOptions MakeOptions(Type type, LearningRateSchedule lr) {
  OptimizerOptions o;
  o.type = type;
  o.learning_rate = std::move(lr);
  return o;
}

using testing::FailsNaming;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

void ExpectValues(const Tensor& t, const std::vector<double>& expected, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(t.size(), static_cast<int64_t>(expected.size())) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t[static_cast<int64_t>(i)], expected[i], tolerance) << what << " [" << i << "]";
  }
}

// The same three steps of gradients for every hand-computed test below.
const std::vector<float> kP0 = {1.0f, -2.0f, 0.5f};
const std::vector<std::vector<float>> kGrads = {
    {0.5f, -1.0f, 2.0f}, {0.25f, 0.5f, -4.0f}, {1.0f, 1.0f, 1.0f}};

// --- Options and factory ---

TEST(OptimizerOptionsTest, DefaultsAreTensorFlowsAdam) {
  const OptimizerOptions o;
  EXPECT_TRUE(o.Validate().ok());
  EXPECT_EQ(o.type, Type::kAdam);
  EXPECT_EQ(o.learning_rate.LearningRateAt(0), 0.001f);
  EXPECT_EQ(o.beta1, 0.9f);
  EXPECT_EQ(o.beta2, 0.999f);
  EXPECT_EQ(o.epsilon, 1e-8f);
  EXPECT_EQ(o.momentum, 0.9f);
  EXPECT_FALSE(o.use_nesterov);
}

TEST(OptimizerOptionsTest, ValidateNamesTheBadField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto adam = [](auto set) {
    OptimizerOptions o;
    o.type = Type::kAdam;
    set(o);
    return o.Validate();
  };
  EXPECT_TRUE(FailsNaming(adam([](auto& o) { o.beta1 = 1.0f; }), "beta1"));
  EXPECT_TRUE(FailsNaming(adam([](auto& o) { o.beta1 = -0.1f; }), "beta1"));
  EXPECT_TRUE(FailsNaming(adam([&](auto& o) { o.beta1 = nan; }), "beta1"));
  EXPECT_TRUE(FailsNaming(adam([](auto& o) { o.beta2 = 1.5f; }), "beta2"));
  EXPECT_TRUE(FailsNaming(adam([](auto& o) { o.epsilon = 0.0f; }), "epsilon"));
  EXPECT_TRUE(FailsNaming(adam([&](auto& o) { o.epsilon = inf; }), "epsilon"));
  EXPECT_TRUE(
      FailsNaming(adam([](auto& o) { o.learning_rate.learning_rate = 0.0f; }), "learning_rate"));
  EXPECT_TRUE(FailsNaming(adam([](auto& o) {
                            o.learning_rate = LearningRateSchedule::ExponentialDecay(0.1f, 0, 0.5f);
                          }),
                          "decay_steps"));

  OptimizerOptions momentum = MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.1f));
  momentum.momentum = -0.5f;
  EXPECT_TRUE(FailsNaming(momentum.Validate(), "momentum"));
  momentum.momentum = nan;
  EXPECT_TRUE(FailsNaming(momentum.Validate(), "momentum"));

  OptimizerOptions bad_type;
  bad_type.type = static_cast<Type>(9);
  EXPECT_TRUE(FailsNaming(bad_type.Validate(), "type"));
}

TEST(OptimizerOptionsTest, ValidateIgnoresFieldsTheTypeDoesNotUse) {
  OptimizerOptions sgd = MakeOptions(Type::kSgd, LearningRateSchedule::Constant(0.1f));
  sgd.beta1 = 5.0f;
  sgd.epsilon = -1.0f;
  sgd.momentum = -1.0f;
  EXPECT_TRUE(sgd.Validate().ok());
  OptimizerOptions adam;
  adam.momentum = -1.0f;
  EXPECT_TRUE(adam.Validate().ok());
}

TEST(OptimizerTest, MakeOptimizerBuildsTheRequestedTypeWithTensorFlowsName) {
  EXPECT_STREQ(Make(MakeOptions(Type::kSgd, {}))->name(), "GradientDescent");
  EXPECT_STREQ(Make(MakeOptions(Type::kMomentum, {}))->name(), "Momentum");
  EXPECT_STREQ(Make(MakeOptions(Type::kAdam, {}))->name(), "Adam");
  EXPECT_NE(dynamic_cast<AdamOptimizer*>(Make(OptimizerOptions{}).get()), nullptr);
}

TEST(OptimizerTest, MakeOptimizerReturnsTheValidationError) {
  OptimizerOptions o;
  o.epsilon = -1.0f;
  auto made = MakeOptimizer(o);
  ASSERT_FALSE(made.ok());
  EXPECT_TRUE(FailsNaming(made.status(), "epsilon"));
}

TEST(OptimizerTest, LearningRateFollowsTheSchedule) {
  auto opt = Make(MakeOptions(Type::kSgd, LearningRateSchedule::StepDecay({10}, {0.5f, 0.05f})));
  EXPECT_EQ(opt->LearningRate(0), 0.5f);
  EXPECT_EQ(opt->LearningRate(10), 0.5f);
  EXPECT_EQ(opt->LearningRate(11), 0.05f);
}

// --- Gradient descent ---

TEST(SgdOptimizerTest, UpdatesMatchHandComputedValuesWithTheStepsLearningRate) {
  // lr = 0.1 for the update at step 0 and 0.01 from step 1 on: the step passed is the one before
  // the update.
  auto opt = Make(MakeOptions(Type::kSgd, LearningRateSchedule::StepDecay({0}, {0.1f, 0.01f})));
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};
  const std::vector<std::vector<double>> expected = {
      {1.0 - 0.1 * 0.5, -2.0 + 0.1 * 1.0, 0.5 - 0.1 * 2.0},  // 0.95, -1.9, 0.3
      {0.95 - 0.01 * 0.25, -1.9 - 0.01 * 0.5, 0.3 + 0.01 * 4.0},
      {0.9475 - 0.01, -1.905 - 0.01, 0.34 - 0.01},
  };
  for (int step = 0; step < 3; ++step) {
    SetGrad(w, kGrads[static_cast<size_t>(step)]);
    opt->Apply(params, step);
    ExpectValues(w.value, expected[static_cast<size_t>(step)], 1e-6,
                 "step " + std::to_string(step));
  }
}

TEST(SgdOptimizerTest, HasNoSlots) {
  auto opt = Make(MakeOptions(Type::kSgd, LearningRateSchedule::Constant(0.1f)));
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};
  ASSERT_TRUE(opt->CreateSlots(params).ok());
  opt->Apply(params, 0);
  EXPECT_TRUE(opt->Slots().empty());
  const Status st = opt->RestoreSlot("w/Momentum", Tensor(Shape{3}));
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(st.message(), "w/Momentum")) << st.message();
}

// --- Momentum ---

TEST(MomentumOptimizerTest, UpdatesMatchHandComputedValues) {
  // accum = 0.9 * accum + g; p -= 0.1 * accum.
  //   accum: {0.5, -1, 2} -> {0.7, -0.4, -2.2} -> {1.63, 0.64, -0.98}
  auto opt = Make(MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.1f)));
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};
  const std::vector<std::vector<double>> expected_p = {
      {0.95, -1.9, 0.3}, {0.88, -1.86, 0.52}, {0.717, -1.924, 0.618}};
  const std::vector<std::vector<double>> expected_accum = {
      {0.5, -1.0, 2.0}, {0.7, -0.4, -2.2}, {1.63, 0.64, -0.98}};
  for (int step = 0; step < 3; ++step) {
    SetGrad(w, kGrads[static_cast<size_t>(step)]);
    opt->Apply(params, step);
    const std::string what = "step " + std::to_string(step);
    ExpectValues(w.value, expected_p[static_cast<size_t>(step)], 1e-6, what);
    const auto slots = opt->Slots();
    ASSERT_EQ(slots.size(), 1u);
    EXPECT_EQ(slots[0].first, "w/Momentum");
    ExpectValues(*slots[0].second, expected_accum[static_cast<size_t>(step)], 1e-6, what);
  }
}

TEST(MomentumOptimizerTest, NesterovUpdatesMatchHandComputedValues) {
  // accum as above; p -= 0.1 * (g + 0.9 * accum):
  //   step 0: 0.1 * 1.9 * g0                   = {0.095, -0.19, 0.38}
  //   step 1: 0.1 * ({0.25, 0.5, -4} + 0.9 * {0.7, -0.4, -2.2}) = {0.088, 0.014, -0.598}
  //   step 2: 0.1 * ({1, 1, 1} + 0.9 * {1.63, 0.64, -0.98})     = {0.2467, 0.1576, 0.0118}
  OptimizerOptions o = MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.1f));
  o.use_nesterov = true;
  auto opt = Make(o);
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};
  const std::vector<std::vector<double>> expected = {
      {0.905, -1.81, 0.12}, {0.817, -1.824, 0.718}, {0.5703, -1.9816, 0.7062}};
  for (int step = 0; step < 3; ++step) {
    SetGrad(w, kGrads[static_cast<size_t>(step)]);
    opt->Apply(params, step);
    ExpectValues(w.value, expected[static_cast<size_t>(step)], 1e-6,
                 "step " + std::to_string(step));
  }
}

TEST(MomentumOptimizerTest, StateFollowsTheParameterNameNotItsAddress) {
  auto opt = Make(MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.1f)));
  Parameter a = MakeParam("w", {1.0f});
  SetGrad(a, {1.0f});
  std::vector<Parameter*> first = {&a};
  opt->Apply(first, 0);  // accum 1, p 0.9
  // The same variable at another address continues its accumulator: accum 1.9, p 0.71.
  Parameter b = a;
  std::vector<Parameter*> second = {&b};
  opt->Apply(second, 1);
  EXPECT_NEAR(b.value[0], 0.71, 1e-6);
  // Another variable at the first address starts from zeros: accum 1, p 0.9 - 0.1.
  a.name = "v";
  opt->Apply(first, 2);
  EXPECT_NEAR(a.value[0], 0.8, 1e-6);
  const auto slots = opt->Slots();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].first, "v/Momentum");
  EXPECT_EQ((*slots[0].second)[0], 1.0f);
  EXPECT_EQ(slots[1].first, "w/Momentum");
  EXPECT_NEAR((*slots[1].second)[0], 1.9, 1e-6);
}

// --- Adam ---

// TensorFlow's update in double, for comparison: t = step + 1.
struct AdamReference {
  double lr, beta1, beta2, epsilon;
  std::vector<double> p, m, v;

  void Step(const std::vector<float>& g, int64_t step) {
    const double t = static_cast<double>(step + 1);
    const double lr_t = lr * std::sqrt(1 - std::pow(beta2, t)) / (1 - std::pow(beta1, t));
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      p[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
    }
  }
};

TEST(AdamOptimizerTest, BiasCorrectionAtTheFirstTwoSteps) {
  auto opt = Make(MakeOptions(Type::kAdam, LearningRateSchedule::Constant(0.01f)));
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};

  // t = 1: m = 0.1 g and v = 0.001 g^2, so the bias-corrected step is lr * g / |g| = 0.01 * sign(g)
  // (up to epsilon); without the correction it would be 0.01 * 0.1 / sqrt(0.001) = 0.0316.
  SetGrad(w, kGrads[0]);
  opt->Apply(params, 0);
  ExpectValues(w.value, {0.99, -1.99, 0.49}, 1e-6, "t=1");
  // The moments use the float betas exactly: 1 - 0.999f is 0.00099998713, not 0.001, as in
  // TensorFlow (0.9f and 0.999f are 0.89999998 and 0.99900001).
  const double b1 = 0.9f;
  const double b2 = 0.999f;
  const auto slots = opt->Slots();
  ASSERT_EQ(slots.size(), 2u);
  ExpectValues(*slots[0].second, {(1 - b1) * 0.5, (1 - b1) * -1.0, (1 - b1) * 2.0}, 1e-8,
               "m at t=1");
  ExpectValues(*slots[1].second, {(1 - b2) * 0.25, (1 - b2) * 1.0, (1 - b2) * 4.0}, 1e-9,
               "v at t=1");

  // t = 2: lr_t = 0.01 * sqrt(1 - 0.999^2) / (1 - 0.9^2) = 0.00235339..., m = {0.07, -0.04, -0.22},
  // v = {0.00031225, 0.001249, 0.019996}.
  SetGrad(w, kGrads[1]);
  opt->Apply(params, 1);
  ExpectValues(w.value, {0.9806782152, -1.987336634, 0.4936610366}, 1e-6, "t=2");
  ExpectValues(*slots[0].second, {0.07, -0.04, -0.22}, 1e-7, "m at t=2");
  ExpectValues(*slots[1].second,
               {b2 * (1 - b2) * 0.25 + (1 - b2) * 0.0625, b2 * (1 - b2) * 1.0 + (1 - b2) * 0.25,
                b2 * (1 - b2) * 4.0 + (1 - b2) * 16.0},
               4e-9, "v at t=2");
  ExpectValues(*slots[1].second, {0.00031225, 0.001249, 0.019996}, 1e-6, "v at t=2, roughly");

  SetGrad(w, kGrads[2]);
  opt->Apply(params, 2);
  ExpectValues(w.value, {0.9715873541, -1.990063601, 0.4950279431}, 1e-6, "t=3");
}

TEST(AdamOptimizerTest, MatchesADoubleReferenceWithADecayingRateAndCustomBetas) {
  OptimizerOptions o =
      MakeOptions(Type::kAdam, LearningRateSchedule::ExponentialDecay(0.05f, 2, 0.5f));
  o.beta1 = 0.8f;
  o.beta2 = 0.99f;
  o.epsilon = 1e-3f;  // large enough to matter
  auto opt = Make(o);
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};
  AdamReference ref{0.05, 0.8f, 0.99f, 1e-3f, {1.0, -2.0, 0.5}, {0, 0, 0}, {0, 0, 0}};
  // Start at step 4, as a resumed job would with fresh slots: t = 5 for the first update.
  for (int64_t step = 4; step < 7; ++step) {
    const auto& g = kGrads[static_cast<size_t>(step - 4)];
    SetGrad(w, g);
    opt->Apply(params, step);
    ref.lr = 0.05 * std::pow(0.5, static_cast<double>(step) / 2.0);
    ref.Step(g, step);
    ExpectValues(w.value, ref.p, 1e-6, "step " + std::to_string(step));
  }
}

TEST(AdamOptimizerTest, SlotsAreCreatedLazilyNamedLikeTensorFlowAndSorted) {
  auto opt = Make(OptimizerOptions{});
  Parameter kernel{"dense/kernel", Tensor(Shape{2, 3}, 1.0f), Tensor(Shape{2, 3}, 0.5f)};
  Parameter bias{"conv2d/bias", Tensor(Shape{3}, 1.0f), Tensor(Shape{3}, -2.0f)};
  Parameter dotted{"dense.x/bias", Tensor(Shape{1}, 1.0f), Tensor(Shape{1}, 1.0f)};
  EXPECT_TRUE(opt->Slots().empty());

  std::vector<Parameter*> only_kernel = {&kernel};
  opt->Apply(only_kernel, 0);
  auto slots = opt->Slots();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].first, "dense/kernel/Adam");
  EXPECT_EQ(slots[1].first, "dense/kernel/Adam_1");
  EXPECT_EQ(slots[0].second->shape(), (Shape{2, 3}));
  ExpectValues(*slots[0].second, std::vector<double>(6, (1 - double(0.9f)) * 0.5), 1e-8, "m");
  ExpectValues(*slots[1].second, std::vector<double>(6, (1 - double(0.999f)) * 0.25), 1e-9, "v");

  std::vector<Parameter*> all = {&kernel, &bias, &dotted};
  ASSERT_TRUE(opt->CreateSlots(all).ok());
  slots = opt->Slots();
  std::vector<std::string> names;
  for (const auto& [name, tensor] : slots) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv2d/bias/Adam", "conv2d/bias/Adam_1",
                                             "dense.x/bias/Adam", "dense.x/bias/Adam_1",
                                             "dense/kernel/Adam", "dense/kernel/Adam_1"}));
  EXPECT_EQ(slots[0].second->shape(), (Shape{3}));
  ExpectValues(*slots[0].second, {0, 0, 0}, 0, "fresh m");
  // The kernel's slots were kept, not recreated.
  ExpectValues(*slots[4].second, std::vector<double>(6, 0.05), 1e-7, "kept m");
}

// --- Slots: restore and errors ---

// An optimizer restored from another's slots continues with bitwise identical updates.
void ExpectRestoredOptimizerContinuesIdentically(const OptimizerOptions& options) {
  auto original = Make(options);
  Parameter w = MakeParam("dense/kernel", kP0);
  Parameter b = MakeParam("dense/bias", {0.1f, 0.2f, 0.3f});
  std::vector<Parameter*> params = {&w, &b};
  for (int64_t step = 0; step < 2; ++step) {
    SetGrad(w, kGrads[static_cast<size_t>(step)]);
    SetGrad(b, kGrads[static_cast<size_t>(2 - step)]);
    original->Apply(params, step);
  }

  auto restored = Make(options);
  for (const auto& [name, tensor] : original->Slots()) {
    ASSERT_TRUE(restored->RestoreSlot(name, *tensor).ok()) << name;
  }
  Parameter w2 = w;
  Parameter b2 = b;
  std::vector<Parameter*> params2 = {&w2, &b2};
  ASSERT_TRUE(restored->CreateSlots(params2).ok());
  ASSERT_EQ(restored->Slots().size(), original->Slots().size());

  for (int64_t step = 2; step < 4; ++step) {
    for (Parameter* p : {&w, &w2}) SetGrad(*p, kGrads[static_cast<size_t>(step - 2)]);
    for (Parameter* p : {&b, &b2}) SetGrad(*p, kGrads[2]);
    original->Apply(params, step);
    restored->Apply(params2, step);
    EXPECT_EQ(std::memcmp(w.value.data(), w2.value.data(), 3 * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(b.value.data(), b2.value.data(), 3 * sizeof(float)), 0);
  }
  const auto a = original->Slots();
  const auto r = restored->Slots();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, r[i].first);
    EXPECT_EQ(std::memcmp(a[i].second->data(), r[i].second->data(), 3 * sizeof(float)), 0)
        << a[i].first;
  }
}

TEST(OptimizerTest, RestoreSlotRoundTripContinuesIdenticallyForAdam) {
  ExpectRestoredOptimizerContinuesIdentically(
      MakeOptions(Type::kAdam, LearningRateSchedule::Constant(0.01f)));
}

TEST(OptimizerTest, RestoreSlotRoundTripContinuesIdenticallyForMomentum) {
  OptimizerOptions o = MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.1f));
  o.use_nesterov = true;
  ExpectRestoredOptimizerContinuesIdentically(o);
}

TEST(OptimizerTest, RestoreSlotRejectsUnknownSlotKindsAndNamesTheSlot) {
  auto adam = Make(OptimizerOptions{});
  for (const std::string name : {"w/Momentum", "w/Adam_2", "w", "w/adam"}) {
    const Status st = adam->RestoreSlot(name, Tensor(Shape{3}));
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << name;
    EXPECT_TRUE(Contains(st.message(), "'" + name + "'")) << st.message();
  }
  const Status empty = adam->RestoreSlot("/Adam", Tensor(Shape{3}));
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(adam->Slots().empty());

  auto momentum = Make(MakeOptions(Type::kMomentum, {}));
  EXPECT_EQ(momentum->RestoreSlot("w/Adam", Tensor(Shape{3})).code(), StatusCode::kNotFound);
  EXPECT_TRUE(momentum->RestoreSlot("w/Momentum", Tensor(Shape{3})).ok());
}

TEST(OptimizerTest, RestoreSlotRejectsAShapeMismatchNamingBothShapes) {
  auto opt = Make(OptimizerOptions{});
  Parameter w{"w", Tensor(Shape{2, 3}), Tensor(Shape{2, 3})};
  std::vector<Parameter*> params = {&w};
  opt->Apply(params, 0);
  const Status st = opt->RestoreSlot("w/Adam_1", Tensor(Shape{3, 2}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.message(), "'w/Adam_1'")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "[3,2]")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "[2,3]")) << st.message();

  // A param known only from a restored slot has that slot's shape.
  ASSERT_TRUE(opt->RestoreSlot("u/Adam", Tensor(Shape{4}, 1.0f)).ok());
  EXPECT_EQ(opt->RestoreSlot("u/Adam_1", Tensor(Shape{5})).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(opt->RestoreSlot("u/Adam_1", Tensor(Shape{4}, 2.0f)).ok());
}

TEST(OptimizerTest, CreateSlotsReportsARestoredSlotThatDoesNotFitItsParam) {
  auto opt = Make(MakeOptions(Type::kMomentum, {}));
  ASSERT_TRUE(opt->RestoreSlot("w/Momentum", Tensor(Shape{4}, 1.0f)).ok());
  Parameter w = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&w};
  const Status st = opt->CreateSlots(params);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.message(), "'w/Momentum'")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "[4]")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "[3]")) << st.message();

  // Apply never reads past the param: it resets the misfit slot to zeros.
  SetGrad(w, {1.0f, 1.0f, 1.0f});
  opt->Apply(params, 0);
  EXPECT_EQ(opt->Slots()[0].second->shape(), (Shape{3}));
  ExpectValues(*opt->Slots()[0].second, {1, 1, 1}, 0, "accum");
}

TEST(OptimizerTest, CreateSlotsRejectsDuplicateNames) {
  auto opt = Make(OptimizerOptions{});
  Parameter a = MakeParam("w", kP0);
  Parameter b = MakeParam("w", kP0);
  std::vector<Parameter*> params = {&a, &b};
  const Status st = opt->CreateSlots(params);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.message(), "'w'")) << st.message();
}

// --- Threads ---

// Restores the calling thread's compute threads when a test ends.
class ComputeThreadsGuard {
 public:
  ComputeThreadsGuard() : saved_(ComputeThreads()) {}
  ~ComputeThreadsGuard() { SetComputeThreads(saved_); }

 private:
  int saved_;
};

// Three steps on a large param (and a small one) with `threads` compute threads.
std::vector<Tensor> RunLarge(const OptimizerOptions& options, int threads) {
  SetComputeThreads(threads);
  // 1M elements plus a tail that is not a multiple of any vector width; under the sanitizers 128K
  // (4 of ParallelUpdate's smallest chunks), which the test's own loops fill 8 times sooner.
  const int64_t n = (int64_t{1} << (testing::kSanitized ? 17 : 20)) + 7;
  Rng rng(17);
  Parameter big{"dense/kernel", Tensor(Shape{n}), Tensor(Shape{n})};
  for (int64_t i = 0; i < n; ++i) big.value[i] = rng.Uniform(-1.0f, 1.0f);
  Parameter small = MakeParam("dense/bias", kP0);
  std::vector<Parameter*> params = {&big, &small};
  auto opt = Make(options);
  for (int64_t step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < n; ++i) big.grad[i] = rng.Normal();
    SetGrad(small, kGrads[static_cast<size_t>(step)]);
    opt->Apply(params, step);
  }
  std::vector<Tensor> out = {big.value, small.value};
  for (const auto& [name, tensor] : opt->Slots()) out.push_back(*tensor);
  return out;
}

void ExpectBitwiseEqual(const std::vector<Tensor>& a, const std::vector<Tensor>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].size(), b[k].size()) << what;
    EXPECT_EQ(
        std::memcmp(a[k].data(), b[k].data(), sizeof(float) * static_cast<size_t>(a[k].size())), 0)
        << what << ", tensor " << k;
  }
}

TEST(OptimizerTest, LargeParamsUpdateBitwiseTheSameOnOneTwoOrThreeThreads) {
  ComputeThreadsGuard guard;
  OptimizerOptions nesterov = MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.01f));
  nesterov.use_nesterov = true;
  // RunLarge's params are vectors: decay them all.
  OptimizerOptions adamw = MakeOptions(Type::kAdamW, LearningRateSchedule::Constant(0.001f));
  adamw.weight_decay = 0.1f;
  adamw.weight_decay_parameters = OptimizerOptions::DecayedParameters::kAll;
  OptimizerOptions decayed_momentum = adamw;
  decayed_momentum.type = Type::kMomentum;
  const std::vector<std::pair<std::string, OptimizerOptions>> cases = {
      {"sgd", MakeOptions(Type::kSgd, LearningRateSchedule::Constant(0.01f))},
      {"momentum", MakeOptions(Type::kMomentum, LearningRateSchedule::Constant(0.01f))},
      {"nesterov", nesterov},
      {"adam", MakeOptions(Type::kAdam, LearningRateSchedule::Constant(0.001f))},
      {"adamw", adamw},
      {"momentum with weight decay", decayed_momentum},
  };
  for (const auto& [what, options] : cases) {
    const auto one = RunLarge(options, 1);
    ExpectBitwiseEqual(one, RunLarge(options, 2), what + " with 2 threads");
    ExpectBitwiseEqual(one, RunLarge(options, 3), what + " with 3 threads");
    // And the update did something: the first element is no longer its initial value.
    EXPECT_NE(one[0][0], Rng(17).Uniform(-1.0f, 1.0f)) << what;
  }
}

TEST(AdamOptimizerTest, LargeParamMatchesTheDoubleReference) {
  // Every element of a param split across two threads, including the vector bodies and the scalar
  // tail, against the reference.
  ComputeThreadsGuard guard;
  SetComputeThreads(2);
  const int64_t n = (int64_t{1} << 16) + 13;
  Rng rng(3);
  Parameter w{"w", Tensor(Shape{n}), Tensor(Shape{n})};
  AdamReference ref{0.001, 0.9f, 0.999f, 1e-8f, {}, std::vector<double>(n), std::vector<double>(n)};
  for (int64_t i = 0; i < n; ++i) {
    w.value[i] = rng.Uniform(-1.0f, 1.0f);
    ref.p.push_back(w.value[i]);
  }
  auto opt = Make(MakeOptions(Type::kAdam, LearningRateSchedule::Constant(0.001f)));
  std::vector<Parameter*> params = {&w};
  std::vector<float> g(static_cast<size_t>(n));
  for (int64_t step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < n; ++i) g[static_cast<size_t>(i)] = w.grad[i] = rng.Normal();
    opt->Apply(params, step);
    ref.Step(g, step);
  }
  ExpectValues(w.value, ref.p, 1e-6, "p");
}

// A data-parallel rank updates its own part of a large kernel (ParameterPart). Parts that cover
// a parameter between them, applied by different optimizers, give the whole update's bits, and
// each leaves the elements outside its part, value and slots, as they were. The parts end
// anywhere (here inside a vector of 16 floats, the last one in the scalar tail) but begin on
// multiples of 16.
TEST(OptimizerTest, PartsOfAParameterAreUpdatedAsTheWholeIs) {
  constexpr int64_t kN = 100003;  // parallel chunks, and a scalar tail
  Rng rng(7);
  std::vector<float> p0(kN), g(kN);
  for (int64_t i = 0; i < kN; ++i) {
    p0[static_cast<size_t>(i)] = rng.Normal();
    g[static_cast<size_t>(i)] = rng.Normal();
  }
  for (Type type : {Type::kSgd, Type::kMomentum, Type::kAdam, Type::kAdamW}) {
    SCOPED_TRACE(static_cast<int>(type));
    OptimizerOptions options = MakeOptions(type, LearningRateSchedule::Constant(0.01f));
    if (type == Type::kAdamW) {  // the decay of a vector, part by part
      options.weight_decay = 0.1f;
      options.weight_decay_parameters = OptimizerOptions::DecayedParameters::kAll;
    }
    auto whole = Make(options);
    Parameter w = MakeParam("w", p0);
    SetGrad(w, g);
    for (int64_t step = 0; step < 3; ++step) whole->Apply(std::vector<Parameter*>{&w}, step);
    // Two "ranks", each with its own copy of the parameter and its own optimizer.
    const int64_t cut = 50000 / 16 * 16;
    const std::pair<int64_t, int64_t> parts[] = {{0, cut}, {cut, kN}};
    Tensor merged(w.value.shape());
    std::vector<Tensor> merged_slots(static_cast<size_t>(whole->slots_per_parameter()),
                                     Tensor(w.value.shape()));
    for (const auto& [begin, end] : parts) {
      auto part = Make(options);
      Parameter mine = MakeParam("w", p0);
      SetGrad(mine, g);
      const ParameterPart update{&mine, begin, end};
      for (int64_t step = 0; step < 3; ++step) part->ApplyParts({&update, 1}, step);
      std::span<Tensor> slots = part->SlotsOf(mine);
      for (int64_t i = 0; i < kN; ++i) {
        const bool in = i >= begin && i < end;
        if (!in) {
          ASSERT_EQ(mine.value[i], p0[static_cast<size_t>(i)]) << "value " << i;
          for (const Tensor& slot : slots) ASSERT_EQ(slot[i], 0.0f) << "slot " << i;
          continue;
        }
        merged[i] = mine.value[i];
        for (size_t k = 0; k < slots.size(); ++k) merged_slots[k][i] = slots[k][i];
      }
    }
    EXPECT_EQ(std::memcmp(merged.data(), w.value.data(), 4 * kN), 0);
    std::span<Tensor> want = whole->SlotsOf(w);
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_EQ(std::memcmp(merged_slots[k].data(), want[k].data(), 4 * kN), 0) << "slot " << k;
  }
}

}  // namespace
}  // namespace trainingd::engine
