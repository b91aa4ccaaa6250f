// Fusion of a relu layer into the layer below it (Layer::FuseRelu, Model::set_fusion): batch norm
// and add apply the ReLU in their own passes, forward and backward. The fused layers give the
// unfused layers' bits (outputs, input and parameter gradients, moving statistics), in training
// and in evaluation; fusion applies only where the relu layer alone takes the layer's output.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "test_util.h"
#include "trainingd/engine/nn/batch_norm_layer.h"
#include "trainingd/engine/nn/elementwise_layers.h"
#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/nn/merge_layers.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::engine {
namespace {

using testing::RandomTensor;

// Bit for bit (a NaN's bits too), naming the first element that differs.
void ExpectFusionSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::memcmp(&a.data()[i], &b.data()[i], sizeof(float)), 0)
        << what << "[" << i << "]: " << a[i] << " against " << b[i];
  }
}

std::unique_ptr<BatchNormLayer> FusionBatchNorm(const Shape& example) {
  auto bn = std::make_unique<BatchNormLayer>("batch_norm", LayerSpec::BatchNorm(0.9f));
  Rng rng(1);
  EXPECT_TRUE(bn->Build(example, rng).ok());
  // gamma and beta away from 1 and 0, some gamma negative, so the ReLU cuts on either side.
  for (int64_t c = 0; c < example[example.rank() - 1]; ++c) {
    bn->parameters()[0]->value[c] = c % 3 == 1 ? -0.7f : 1.3f;
    bn->parameters()[1]->value[c] = 0.25f * static_cast<float>(c % 4) - 0.3f;
  }
  return bn;
}

// Batch norm then a relu layer, against batch norm with the ReLU fused: the same output, input
// gradient, gamma and beta gradients and moving statistics, for images and table rows, whole or
// cut into blocks; and in evaluation the same output.
TEST(LayerFusionTest, FusedBatchNormIsBatchNormThenReluBitForBit) {
  for (const Shape& example : {Shape{5, 3, 8}, Shape{12}}) {
    for (int blocks : {1, 3}) {
      SCOPED_TRACE(example.ToString() + ", " + std::to_string(blocks) + " blocks");
      Rng rng(7);
      const Tensor x = RandomTensor(example.with_batch(6), rng, -3, 5);
      const Tensor r = RandomTensor(x.shape(), rng, -1, 1);
      auto plain = FusionBatchNorm(example);
      auto fused = FusionBatchNorm(example);
      ASSERT_TRUE(fused->FuseRelu(true));
      ReluLayer relu("relu");
      ASSERT_TRUE(relu.Configure(example).ok());
      const auto channels = static_cast<size_t>(example[example.rank() - 1]);
      std::vector<std::vector<int64_t>> sums(4, std::vector<int64_t>(channels));
      for (size_t i = 0; i < 2; ++i) {
        plain->parameters()[i]->sum = sums[i];
        fused->parameters()[i]->sum = sums[2 + i];
      }
      GradientBlocks b1 = GradientBlocks::ForRank(6, blocks, 0, 1, nullptr);
      GradientBlocks b2 = GradientBlocks::ForRank(6, blocks, 0, 1, nullptr);
      plain->set_step_blocks(&b1);
      fused->set_step_blocks(&b2);
      Tensor z, y, yf, dz, dx, dxf;
      plain->Forward(x, z, Mode::kTrain);
      relu.Forward(z, y, Mode::kTrain);
      fused->Forward(x, yf, Mode::kTrain);
      ExpectFusionSameBits(y, yf, "output");
      int cut = 0;
      for (int64_t i = 0; i < z.size(); ++i) cut += z[i] < 0.0f;
      EXPECT_GT(cut, z.size() / 5);  // the ReLU does cut
      EXPECT_LT(cut, z.size() * 4 / 5);
      relu.Backward(z, y, r, &dz, b1);
      plain->Backward(x, z, dz, &dx, b1);
      fused->Backward(x, yf, r, &dxf, b2);
      ExpectFusionSameBits(dx, dxf, "input gradient");
      for (size_t p = 0; p < 2; ++p) {
        ExpectFusionSameBits(plain->parameters()[p]->grad, fused->parameters()[p]->grad,
                             plain->parameters()[p]->name);
      }
      for (size_t v = 0; v < 2; ++v) {
        ExpectFusionSameBits(plain->variables()[v]->value, fused->variables()[v]->value,
                             plain->variables()[v]->name);
      }
      plain->Forward(x, z, Mode::kEval);
      relu.Forward(z, y, Mode::kEval);
      fused->Forward(x, yf, Mode::kEval);
      ExpectFusionSameBits(y, yf, "evaluation output");
      // Undone, the layer is plain batch norm again.
      fused->FuseRelu(false);
      fused->Forward(x, yf, Mode::kEval);
      ExpectFusionSameBits(z, yf, "unfused evaluation output");
    }
  }
}

// add then a relu layer, against add with the ReLU fused: the same output and input gradients.
TEST(LayerFusionTest, FusedAddIsAddThenReluBitForBit) {
  Rng rng(8);
  const Shape shape{4, 6, 6, 3};
  const Tensor a = RandomTensor(shape, rng, -2, 1), b = RandomTensor(shape, rng, -1, 2);
  const Tensor r = RandomTensor(shape, rng, -1, 1);
  AddLayer plain("add"), fused("add");
  const std::vector<Shape> shapes(2, Shape{6, 6, 3});
  ASSERT_TRUE(plain.ConfigureInputs(shapes).ok());
  ASSERT_TRUE(fused.ConfigureInputs(shapes).ok());
  ASSERT_TRUE(fused.FuseRelu(true));
  ReluLayer relu("relu");
  const std::vector<const Tensor*> in = {&a, &b};
  Tensor z, y, yf, dz, dp[2], df[2];
  plain.ForwardInputs(in, z, Mode::kTrain);
  relu.Forward(z, y, Mode::kTrain);
  fused.ForwardInputs(in, yf, Mode::kTrain);
  ExpectFusionSameBits(y, yf, "output");
  relu.Backward(z, y, r, &dz);
  std::vector<Tensor*> dplain = {&dp[0], &dp[1]}, dfused = {&df[0], &df[1]};
  plain.BackwardInputs(in, z, dz, dplain);
  fused.BackwardInputs(in, yf, r, dfused);
  for (int k = 0; k < 2; ++k) ExpectFusionSameBits(dp[k], df[k], "gradient " + std::to_string(k));
  // Only the second input wants a gradient: it still gets the masked one.
  Tensor only;
  std::vector<Tensor*> second = {nullptr, &only};
  fused.BackwardInputs(in, yf, r, second);
  ExpectFusionSameBits(dp[1], only, "second input alone");
}

// A residual model with both fusions, as a graph, and a stack with batch norm then relu: fused
// and unfused (set_fusion(false)) models from one seed train to the same bits, step after step,
// whole or cut into blocks, and evaluate to the same logits.
ModelSpec FusionResidualSpec() {
  ModelSpec spec;
  spec.layers = {
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu().Named("a"),  // fused into the batch norm
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm().Named("bn_b"),
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"a", "bn_b"}),
      LayerSpec::Relu().Named("out"),  // fused into the add
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone, 2).Named("down", {"out"}),
      LayerSpec::BatchNorm().Named("bn_c"),
      LayerSpec::Relu().Named("c"),  // fused
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(10, Activation::kNone),
  };
  return spec;
}

ModelSpec FusionStackSpec() {
  ModelSpec spec;
  spec.layers = {
      LayerSpec::Conv2d(6, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu(),  // fused
      LayerSpec::MaxPool2d(2, 2),
      LayerSpec::Flatten(),
      LayerSpec::Dense(16, Activation::kNone),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu(),  // fused
      LayerSpec::Dense(10, Activation::kNone),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu(),  // fused, the last layer: its gradient is the loss's
  };
  return spec;
}

void ExpectFusedModelIsUnfusedModel(const ModelSpec& spec, const std::vector<size_t>& fused_relus,
                                    int blocks) {
  const Shape example{8, 8, 2};
  auto fused = Model::Build(spec, example, 10, 11);
  auto plain = Model::Build(spec, example, 10, 11);
  ASSERT_TRUE(fused.ok() && plain.ok());
  (*plain)->set_fusion(false);
  std::vector<size_t> seen;
  for (size_t i = 0; i < (*fused)->layers().size(); ++i) {
    if ((*fused)->relu_fused(i)) seen.push_back(i);
    EXPECT_FALSE((*plain)->relu_fused(i)) << i;
  }
  EXPECT_EQ(seen, fused_relus);
  Rng rng(12);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor x = RandomTensor(example.with_batch(9), rng, -1, 2);
    const Tensor dlogits = RandomTensor(Shape{9, 10}, rng, -0.1f, 0.1f);
    std::vector<Tensor> grads[2];
    int m = 0;
    for (Model* model : {fused->get(), plain->get()}) {
      GradientBlocks b = GradientBlocks::ForRank(9, blocks, 0, 1, nullptr);
      model->set_step_blocks(&b);
      const Tensor logits = model->Forward(x, Mode::kTrain);
      grads[m].push_back(logits);
      model->Backward(dlogits, b);
      model->set_step_blocks(nullptr);
      for (Parameter* p : model->parameters()) {
        grads[m].push_back(p->grad);
        // A plain SGD step, so the next step starts from new values.
        for (int64_t i = 0; i < p->value.size(); ++i) p->value[i] -= 0.5f * p->grad[i];
      }
      for (Parameter* v : model->variables()) grads[m].push_back(v->value);
      grads[m].push_back(model->Forward(x, Mode::kEval));
      ++m;
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (size_t k = 0; k < grads[0].size(); ++k) {
      ExpectFusionSameBits(grads[0][k], grads[1][k], "tensor " + std::to_string(k));
    }
  }
}

TEST(LayerFusionTest, FusedGraphTrainsAsTheUnfusedOneBitForBit) {
  for (int blocks : {1, 4}) {
    SCOPED_TRACE(std::to_string(blocks) + " blocks");
    ExpectFusedModelIsUnfusedModel(FusionResidualSpec(), {2, 6, 9}, blocks);
  }
}

TEST(LayerFusionTest, FusedStackTrainsAsTheUnfusedOneBitForBit) {
  for (int blocks : {1, 4}) {
    SCOPED_TRACE(std::to_string(blocks) + " blocks");
    ExpectFusedModelIsUnfusedModel(FusionStackSpec(), {2, 7, 10}, blocks);
  }
}

// Fusion only where the relu layer is the one layer taking the output below it, and only into
// batch norm and add; a fused relu layer keeps no output of its own.
TEST(LayerFusionTest, OnlyWhereTheReluIsTheOnlyConsumer) {
  ModelSpec spec;
  spec.layers = {
      LayerSpec::Conv2d(4, 3, Padding::kSame, Activation::kNone),
      LayerSpec::Relu(),  // 1: after a convolution: not fused
      LayerSpec::BatchNorm().Named("bn"),
      LayerSpec::Relu().Named("r"),  // 3: the add takes bn too: not fused
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"bn", "r"}),
      LayerSpec::Relu().Named("s"),  // 5: fused
      LayerSpec::Of(LayerType::kConcat).Named("cat", {"s", "sum"}),
      LayerSpec::Relu(),  // 7: after a concat: not fused
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(10, Activation::kNone),
  };
  // sum's output goes to s and to cat: s is not fused either.
  for (const bool planned : {false, true}) {
    auto m = planned ? Model::Plan(spec, Shape{6, 6, 2}, 10, 1)
                     : Model::Build(spec, Shape{6, 6, 2}, 10, 1);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (size_t i = 0; i < (*m)->layers().size(); ++i) EXPECT_FALSE((*m)->relu_fused(i)) << i;
  }
  spec.layers[6] = LayerSpec::Of(LayerType::kConcat).Named("cat", {"s", "r"});
  auto m = Model::Build(spec, Shape{6, 6, 2}, 10, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  for (size_t i = 0; i < (*m)->layers().size(); ++i) EXPECT_EQ((*m)->relu_fused(i), i == 5) << i;
  // The fused relu layer's output is the add's: no memory of its own, and the add keeps no
  // output gradient (it takes the relu layer's).
  const std::vector<ModelMemory> fused = (*m)->LayerMemoryUse(16, 0, 2);
  const int64_t fused_total = (*m)->MemoryUse(16, 0, 2).total();
  (*m)->set_fusion(false);
  const std::vector<ModelMemory> plain = (*m)->LayerMemoryUse(16, 0, 2);
  const int64_t plain_total = (*m)->MemoryUse(16, 0, 2).total();
  const int64_t output = 4 * 16 * 6 * 6 * 4;  // floats of the add's output, batch 16
  EXPECT_EQ(plain[5].activations, output);
  EXPECT_EQ(fused[5].activations, 0);
  // The add's own output gradient (plus the buffers of its input slots) is not kept.
  EXPECT_EQ(plain[4].gradients - fused[4].gradients, output);
  EXPECT_GE(plain_total - fused_total, 2 * output);
  // And it runs either way, with the fused relu layer's output a view of the add's.
  Rng rng(3);
  const Tensor x = RandomTensor(Shape{16, 6, 6, 2}, rng, -1, 1);
  const Tensor y_plain = (*m)->Forward(x, Mode::kEval);
  (*m)->set_fusion(true);
  const Tensor y_fused = (*m)->Forward(x, Mode::kEval);
  ExpectFusionSameBits(y_plain, y_fused, "logits");
}

}  // namespace
}  // namespace trainingd::engine
