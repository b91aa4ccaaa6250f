#include "trainingd/engine/nn/model.h"

#include <gtest/gtest.h>

#include "trainingd/engine/nn/dense_layer.h"
#include "trainingd/engine/nn/loss.h"

namespace trainingd::engine {
namespace {

TEST(ModelTest, CnnPresetHasTheTutorialShapesAndParameterNames) {
  auto spec = PresetModel("cnn");
  ASSERT_TRUE(spec.ok());
  auto m = Model::Build(*spec, Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& shapes = (*m)->output_shapes();
  ASSERT_EQ(shapes.size(), 8u);
  EXPECT_EQ(shapes[0], (Shape{28, 28, 32}));
  EXPECT_EQ(shapes[1], (Shape{14, 14, 32}));
  EXPECT_EQ(shapes[2], (Shape{14, 14, 64}));
  EXPECT_EQ(shapes[3], (Shape{7, 7, 64}));
  EXPECT_EQ(shapes[4], (Shape{3136}));
  EXPECT_EQ(shapes[5], (Shape{1024}));
  EXPECT_EQ(shapes[7], (Shape{10}));
  // 5*5*1*32+32 + 5*5*32*64+64 + 3136*1024+1024 + 1024*10+10
  EXPECT_EQ((*m)->num_parameters(), 832 + 51264 + 3212288 + 10250);
  std::vector<std::string> names;
  for (Parameter* p : (*m)->parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv2d/kernel", "conv2d/bias", "conv2d_1/kernel",
                                             "conv2d_1/bias", "dense/kernel", "dense/bias",
                                             "dense_1/kernel", "dense_1/bias"}));
  // ~27.8 MFLOP forward and ~83 MFLOP per training example (the reference's numbers).
  EXPECT_NEAR((*m)->ForwardFlopsPerExample() / 1e6, 27.8, 0.1);
  EXPECT_NEAR((*m)->TrainingFlopsPerExample() / 1e6, 82.2, 1.0);
}

TEST(ModelTest, MlpAndSoftmaxPresets) {
  auto mlp = Model::Build(*PresetModel("mlp"), Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ((*mlp)->num_parameters(), 784 * 128 + 128 + 128 * 32 + 32 + 32 * 10 + 10);
  auto sm = Model::Build(*PresetModel("softmax"), Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(sm.ok());
  EXPECT_EQ((*sm)->num_parameters(), 7850);
  EXPECT_FALSE(PresetModel("vgg").ok());
  EXPECT_NE(PresetModel("vgg").status().message().find("cnn"), std::string::npos);
}

// The dense layers whose kernel gradient is one product over the whole batch: the wide ones
// and the narrow heads; the rest are summed by blocks.
TEST(ModelTest, GathersTheWideAndTheNarrowDenseLayers) {
  auto mlp = Model::Build(*PresetModel("mlp"), Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(mlp.ok());
  const auto names = [](const std::vector<DenseLayer*>& layers) {
    std::vector<std::string> n;
    for (const DenseLayer* l : layers) n.push_back(l->name());
    return n;
  };
  // 784 x 128 and 128 x 32 are wide at batch 50 (2 x 128 x 32 > 50 x 160); 32 x 10 is narrow.
  EXPECT_EQ(names((*mlp)->MarkGatheredDenseLayers(50)),
            (std::vector<std::string>{"dense", "dense_1", "dense_2"}));
  // At batch 100, 128 x 32 is neither (2 x 8,192 weights against 16,000 inputs and outputs).
  EXPECT_EQ(names((*mlp)->MarkGatheredDenseLayers(100)),
            (std::vector<std::string>{"dense", "dense_2"}));
  EXPECT_FALSE(dynamic_cast<const DenseLayer&>(*(*mlp)->layers()[2]).gathered());
  // At batch 1000 none: 784 x 128 is not wide (200,704 against 912,000), and the head's inputs
  // and outputs over the batch (42,000) are more than 16 times its 320 weights.
  EXPECT_TRUE((*mlp)->MarkGatheredDenseLayers(1000).empty());
  ModelSpec spec;
  spec.layers = {LayerSpec::Flatten(), LayerSpec::Dense(17, Activation::kRelu),
                 LayerSpec::Dense(10, Activation::kNone)};
  auto m = Model::Build(spec, Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(m.ok());
  // 784 x 17 at batch 100: 26,656 weights against 80,100 inputs and outputs, 17 units.
  EXPECT_EQ(names((*m)->MarkGatheredDenseLayers(100)), (std::vector<std::string>{"dense_1"}));
}

TEST(ModelTest, BuildErrorsNameTheLayerAndTheShapes) {
  ModelSpec spec;
  spec.layers = {LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kRelu),
                 LayerSpec::Dense(10, Activation::kNone)};
  auto m = Model::Build(spec, Shape{28, 28, 1}, 10, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("model.layers[1]: dense "), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("[28,28,8]"), std::string::npos) << m.status().message();

  spec.layers = {LayerSpec::Flatten(), LayerSpec::Dense(5, Activation::kNone)};
  m = Model::Build(spec, Shape{28, 28, 1}, 10, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("10 classes"), std::string::npos) << m.status().message();

  spec.layers = {LayerSpec::MaxPool2d(2, 2), LayerSpec::MaxPool2d(2, 2), LayerSpec::MaxPool2d(2, 2),
                 LayerSpec::MaxPool2d(2, 2), LayerSpec::MaxPool2d(2, 2)};
  m = Model::Build(spec, Shape{28, 28, 1}, 10, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("model.layers[4]: max_pool2d "), std::string::npos)
      << m.status().message();

  EXPECT_FALSE(Model::Build(ModelSpec{}, Shape{28, 28, 1}, 10, 1).ok());
}

TEST(ModelTest, SameSeedSameWeightsDifferentSeedDifferentWeights) {
  auto a = Model::Build(*PresetModel("mlp"), Shape{28, 28, 1}, 10, 7);
  auto b = Model::Build(*PresetModel("mlp"), Shape{28, 28, 1}, 10, 7);
  auto c = Model::Build(*PresetModel("mlp"), Shape{28, 28, 1}, 10, 8);
  const Tensor& wa = (*a)->parameters()[0]->value;
  const Tensor& wb = (*b)->parameters()[0]->value;
  const Tensor& wc = (*c)->parameters()[0]->value;
  int64_t differ = 0;
  for (int64_t i = 0; i < wa.size(); ++i) {
    ASSERT_EQ(wa[i], wb[i]);
    differ += wa[i] != wc[i];
  }
  EXPECT_GT(differ, wa.size() / 2);
  // Glorot uniform bound for 784 -> 128.
  const float limit = std::sqrt(6.0f / (784 + 128));
  for (int64_t i = 0; i < wa.size(); ++i) ASSERT_LE(std::fabs(wa[i]), limit);
}

TEST(ModelTest, TruncatedNormalInitialiserUsesTheTutorialBias) {
  ModelSpec spec;
  LayerSpec dense = LayerSpec::Dense(10, Activation::kNone);
  dense.initializer = Initializer::kTruncatedNormal;
  dense.bias_init = 0.1f;
  spec.layers = {LayerSpec::Flatten(), dense};
  auto m = Model::Build(spec, Shape{4, 4, 1}, 10, 3);
  ASSERT_TRUE(m.ok());
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ((*m)->parameters()[1]->value[i], 0.1f);
  for (int64_t i = 0; i < 160; ++i) ASSERT_LE(std::fabs((*m)->parameters()[0]->value[i]), 0.2f);
}

// End-to-end gradient check of a small conv net through Model::Backward and the loss.
TEST(ModelTest, WholeModelGradientMatchesFiniteDifferences) {
  ModelSpec spec;
  spec.layers = {LayerSpec::Conv2d(3, 3, Padding::kSame, Activation::kNone),
                 LayerSpec::MaxPool2d(2, 2), LayerSpec::Flatten(),
                 LayerSpec::Dense(4, Activation::kNone)};
  auto built = Model::Build(spec, Shape{6, 6, 2}, 4, 5);
  ASSERT_TRUE(built.ok());
  Model& m = **built;
  Rng rng(1);
  Tensor x(Shape{3, 6, 6, 2});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = rng.Uniform(-1, 1);
  const std::vector<int32_t> labels{0, 3, 1};
  Tensor dlogits;
  SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, &dlogits);
  m.Backward(dlogits);
  for (Parameter* p : m.parameters()) {
    const Tensor grad = p->grad;
    for (int64_t i = 0; i < p->value.size(); i += 3) {
      const float saved = p->value[i];
      p->value[i] = saved + 1e-2f;
      const double up = SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, nullptr).loss;
      p->value[i] = saved - 1e-2f;
      const double down = SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, nullptr).loss;
      p->value[i] = saved;
      EXPECT_NEAR(grad[i], (up - down) / 2e-2, 2e-3) << p->name << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace trainingd::engine
