// Batch normalization (batch_norm_layer.h): Keras' training and inference semantics, gradients
// against finite differences, exact statistics whatever the split of the batch into blocks, and
// the moving statistics through a checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"
#include "trainingd/engine/nn/batch_norm_layer.h"
#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/train/trainer.h"
#include "trainingd/engine/train/trainer_checkpoint.h"

namespace trainingd::engine {
namespace {

using testing::RandomTensor;

std::unique_ptr<BatchNormLayer> BuiltBatchNorm(const Shape& example, float momentum = 0.99f) {
  auto bn = std::make_unique<BatchNormLayer>("batch_norm", LayerSpec::BatchNorm(momentum));
  Rng rng(1);
  EXPECT_TRUE(bn->Build(example, rng).ok());
  return bn;
}

TEST(BatchNormTest, TrainingNormalizesByTheBatchAndMovesTheStatistics) {
  auto bn = BuiltBatchNorm(Shape{3, 2, 2}, 0.9f);
  ASSERT_EQ(bn->parameters().size(), 2u);
  EXPECT_EQ(bn->parameters()[0]->name, "batch_norm/gamma");
  EXPECT_EQ(bn->parameters()[1]->name, "batch_norm/beta");
  ASSERT_EQ(bn->variables().size(), 2u);
  EXPECT_EQ(bn->variables()[0]->name, "batch_norm/moving_mean");
  EXPECT_EQ(bn->variables()[1]->name, "batch_norm/moving_variance");
  bn->parameters()[0]->value[1] = 2.0f;  // gamma of channel 1
  bn->parameters()[1]->value[1] = 0.5f;  // beta of channel 1
  Rng rng(2);
  Tensor x = RandomTensor(Shape{4, 3, 2, 2}, rng, -1, 3);
  Tensor y;
  bn->Forward(x, y, Mode::kTrain);
  for (int64_t c = 0; c < 2; ++c) {
    double mean = 0, var = 0, ym = 0, yv = 0;
    const int64_t n = 4 * 3 * 2;  // rows: examples x pixels
    for (int64_t r = 0; r < n; ++r) mean += x[r * 2 + c];
    mean /= n;
    for (int64_t r = 0; r < n; ++r) var += (x[r * 2 + c] - mean) * (x[r * 2 + c] - mean);
    var /= n;
    for (int64_t r = 0; r < n; ++r) ym += y[r * 2 + c];
    ym /= n;
    for (int64_t r = 0; r < n; ++r) yv += (y[r * 2 + c] - ym) * (y[r * 2 + c] - ym);
    yv /= n;
    const double gamma = c == 1 ? 2.0 : 1.0, beta = c == 1 ? 0.5 : 0.0;
    EXPECT_NEAR(ym, beta, 1e-5) << c;
    EXPECT_NEAR(yv, gamma * gamma * var / (var + 1e-3), 1e-4) << c;
    // moving = 0.9 moving + 0.1 batch, from 0 and 1.
    EXPECT_NEAR(bn->variables()[0]->value[c], 0.1 * mean, 1e-6) << c;
    EXPECT_NEAR(bn->variables()[1]->value[c], 0.9 + 0.1 * var, 1e-6) << c;
  }
  // Evaluation uses the moving statistics, and moves nothing.
  const float mm = bn->variables()[0]->value[1], mv = bn->variables()[1]->value[1];
  bn->Forward(x, y, Mode::kEval);
  EXPECT_NEAR(y[1], 2.0f * (x[1] - mm) / std::sqrt(mv + 1e-3f) + 0.5f, 1e-5);
  EXPECT_EQ(bn->variables()[0]->value[1], mm);
  EXPECT_EQ(bn->variables()[1]->value[1], mv);
}

// d(sum(y * r)) by central differences, for the input and for gamma and beta, on images and on
// table rows.
TEST(BatchNormTest, GradientsMatchFiniteDifferences) {
  for (const Shape& example : {Shape{3, 2, 4}, Shape{5}}) {
    SCOPED_TRACE(example.ToString());
    auto bn = BuiltBatchNorm(example);
    Rng rng(3);
    for (Parameter* p : bn->parameters()) {
      for (int64_t i = 0; i < p->value.size(); ++i) p->value[i] += rng.Uniform(-0.5f, 0.5f);
    }
    std::vector<int64_t> dims = {6};
    dims.insert(dims.end(), example.dims().begin(), example.dims().end());
    Tensor x = RandomTensor(Shape(dims), rng, -2, 2);
    Tensor y;
    bn->Forward(x, y, Mode::kTrain);
    const Tensor r = RandomTensor(y.shape(), rng, -1, 1);
    Tensor dx;
    bn->Backward(x, y, r, &dx);
    const auto loss = [&] {
      Tensor o;
      bn->Forward(x, o, Mode::kTrain);
      double s = 0;
      for (int64_t i = 0; i < o.size(); ++i) s += double(o[i]) * r[i];
      return s;
    };
    const auto numeric = [&](float* v) {
      const float saved = *v;
      *v = saved + 1e-2f;
      const double up = loss();
      *v = saved - 1e-2f;
      const double down = loss();
      *v = saved;
      return (up - down) / 2e-2;
    };
    for (int64_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(dx[i], numeric(&x[i]), 2e-3) << "input[" << i << "]";
    }
    for (Parameter* p : bn->parameters()) {
      const Tensor grad = p->grad;
      for (int64_t i = 0; i < p->value.size(); ++i) {
        EXPECT_NEAR(grad[i], numeric(&p->value[i]), 2e-3) << p->name << "[" << i << "]";
      }
    }
  }
}

// The statistics and the gradients are exact sums: a batch cut into 1, 3 or 7 blocks gives the
// same bits (the blocks are what a data-parallel step gives each rank; data_parallel_test.cpp runs
// the ranks).
TEST(BatchNormTest, AnySplitIntoBlocksGivesTheSameBits) {
  Rng rng(4);
  const Tensor x = RandomTensor(Shape{7, 3, 3, 4}, rng, -5, 40);
  const Tensor r = RandomTensor(x.shape(), rng, -1, 1);
  std::vector<Tensor> outs, dxs, grads;
  std::vector<std::vector<float>> moving;
  for (int blocks : {1, 3, 7}) {
    auto bn = BuiltBatchNorm(Shape{3, 3, 4});
    std::vector<std::vector<int64_t>> sums(2, std::vector<int64_t>(4, 0));
    for (size_t i = 0; i < 2; ++i) bn->parameters()[i]->sum = sums[i];
    GradientBlocks b = GradientBlocks::ForRank(7, blocks, 0, 1, nullptr);
    bn->set_step_blocks(&b);
    Tensor y, dx;
    bn->Forward(x, y, Mode::kTrain);
    bn->Backward(x, y, r, &dx, b);
    outs.push_back(y);
    dxs.push_back(dx);
    grads.push_back(bn->parameters()[0]->grad);
    moving.push_back({bn->variables()[0]->value[0], bn->variables()[1]->value[3]});
  }
  for (size_t k = 1; k < outs.size(); ++k) {
    for (int64_t i = 0; i < outs[0].size(); ++i) {
      ASSERT_EQ(outs[k][i], outs[0][i]) << i;
      ASSERT_EQ(dxs[k][i], dxs[0][i]) << i;
    }
    for (int64_t i = 0; i < 4; ++i) ASSERT_EQ(grads[k][i], grads[0][i]);
    EXPECT_EQ(moving[k], moving[0]);
  }
}

TEST(BatchNormTest, BadShapesAndFieldsAreRefused) {
  BatchNormLayer bn("batch_norm", LayerSpec::BatchNorm());
  EXPECT_FALSE(bn.Configure(Shape{2, 3}).ok());
  BatchNormLayer bad("batch_norm", LayerSpec::BatchNorm(1.5f));
  EXPECT_EQ(bad.Configure(Shape{3}).status().message(), "momentum must be in [0, 1], got 1.5");
  BatchNormLayer eps("batch_norm", LayerSpec::BatchNorm(0.9f, 0.0f));
  EXPECT_EQ(eps.Configure(Shape{3}).status().message(),
            "epsilon must be positive and finite, got 0");
}

ModelSpec ResidualBatchNormModel() {
  ModelSpec spec;
  spec.layers = {
      LayerSpec::Conv2d(4, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu().Named("a"),
      LayerSpec::Conv2d(4, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm().Named("bn_b"),
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"a", "bn_b"}),
      LayerSpec::Relu(),
      LayerSpec::MaxPool2d(2, 2),
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(10, Activation::kNone),
  };
  return spec;
}

// The moving statistics are saved under TF's names and restored exactly: a resumed trainer
// evaluates and trains as the one it was captured from.
TEST(BatchNormTest, MovingStatisticsGoThroughACheckpoint) {
  const Datasets& data = testing::SmallFashionMnist();
  OptimizerOptions opt;
  opt.type = OptimizerOptions::Type::kAdam;
  opt.learning_rate = LearningRateSchedule::Constant(1e-3f);
  auto make = [&] {
    auto t = Trainer::Create(ResidualBatchNormModel(), opt, data.train, data.num_classes, {16, 3});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  };
  auto a = make();
  for (int i = 0; i < 3; ++i) a->Step();
  Result<CheckpointData> saved = CaptureTrainer(*a);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  std::map<std::string, const Tensor*> tensors;
  for (const auto& [name, t] : saved->tensors) tensors[name] = &t;
  for (const char* name :
       {"batch_norm/gamma", "batch_norm/beta", "batch_norm/moving_mean",
        "batch_norm/moving_variance", "bn_b/moving_mean", "bn_b/moving_variance"}) {
    ASSERT_TRUE(tensors.count(name)) << name;
  }
  EXPECT_NE((*tensors["bn_b/moving_mean"])[0], 0.0f);          // moved from its initial 0
  EXPECT_NE((*tensors["bn_b/moving_variance"])[0], 1.0f);      // and 1
  EXPECT_FALSE(tensors.count("batch_norm/moving_mean/Adam"));  // not trained: no slots
  auto b = make();
  ASSERT_TRUE(RestoreTrainer(*b, *saved).ok());
  for (size_t i = 0; i < a->model().variables().size(); ++i) {
    const Tensor& va = a->model().variables()[i]->value;
    const Tensor& vb = b->model().variables()[i]->value;
    for (int64_t k = 0; k < va.size(); ++k) ASSERT_EQ(va[k], vb[k]);
  }
  const Tensor& batch = data.test.images;
  Tensor first(Shape{8, 28, 28, 1});
  std::copy_n(batch.data(), first.size(), first.data());
  const Tensor ya = a->model().Forward(first, Mode::kEval);
  const Tensor yb = b->model().Forward(first, Mode::kEval);
  for (int64_t i = 0; i < ya.size(); ++i) ASSERT_EQ(ya[i], yb[i]);
  EXPECT_EQ(a->Step().loss, b->Step().loss);
  // A checkpoint without the moving statistics is refused naming the variable.
  CheckpointData missing = *saved;
  std::erase_if(missing.tensors, [](const auto& t) { return t.first == "bn_b/moving_variance"; });
  auto c = make();
  const Status st = RestoreTrainer(*c, missing);
  EXPECT_EQ(st.message(), "bn_b/moving_variance: missing from the checkpoint");
}

}  // namespace
}  // namespace trainingd::engine
