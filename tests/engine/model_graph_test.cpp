// Model graphs (model_spec.h): named layers, inputs, the merge layers (add, concat), pooling and
// the smooth activations -- forward values, gradients against finite differences, and the errors
// of a bad graph, each naming its field.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trainingd/engine/nn/avg_pool2d_layer.h"
#include "trainingd/engine/nn/elementwise_layers.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/nn/merge_layers.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::engine {
namespace {

Tensor Noise(const Shape& shape, Rng& rng) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = rng.Uniform(-1, 1);
  return t;
}

LayerSpec GraphConv(int64_t filters, int64_t kernel = 3, int64_t stride = 1) {
  return LayerSpec::Conv2d(filters, kernel, Padding::kSame, Activation::kNone, stride);
}

// A residual block: conv, relu, conv added to a 1x1 strided projection of the block's input;
// then concat of two branches, average pooling, gelu, global average pooling and dense.
ModelSpec ResidualGraph() {
  ModelSpec spec;
  spec.layers = {
      GraphConv(4).Named("stem"),
      LayerSpec::Of(LayerType::kTanh),
      GraphConv(6, 3, 2),
      LayerSpec::Relu(),
      GraphConv(6).Named("branch"),
      GraphConv(6, 1, 2).Named("shortcut", {"stem"}),
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"branch", "shortcut"}),
      LayerSpec::Of(LayerType::kSigmoid).Named("gate", {"sum"}),
      LayerSpec::Of(LayerType::kConcat).Named("joined", {"sum", "gate", "sum"}),
      LayerSpec::AvgPool2d(2, 1),
      LayerSpec::Of(LayerType::kGelu),
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(3, Activation::kNone),
  };
  return spec;
}

TEST(ModelGraphTest, ResidualGraphHasItsShapesNamesAndEdges) {
  auto built = Model::Build(ResidualGraph(), Shape{8, 8, 2}, 3, 7);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const Model& m = **built;
  EXPECT_TRUE(m.is_graph());
  const auto& shapes = m.output_shapes();
  EXPECT_EQ(shapes[2], (Shape{4, 4, 6}));
  EXPECT_EQ(shapes[5], (Shape{4, 4, 6}));
  EXPECT_EQ(shapes[8], (Shape{4, 4, 18}));
  EXPECT_EQ(shapes[9], (Shape{3, 3, 18}));
  EXPECT_EQ(shapes[11], (Shape{18}));
  EXPECT_EQ(m.layer_inputs()[0], (std::vector<int>{-1}));
  EXPECT_EQ(m.layer_inputs()[5], (std::vector<int>{0}));
  EXPECT_EQ(m.layer_inputs()[8], (std::vector<int>{6, 7, 6}));
  std::vector<std::string> names;
  for (const Parameter* p : m.parameters()) names.push_back(p->name);
  // Named layers name their parameters; the unnamed keep tf.layers' names.
  EXPECT_EQ(names,
            (std::vector<std::string>{"stem/kernel", "stem/bias", "conv2d/kernel", "conv2d/bias",
                                      "branch/kernel", "branch/bias", "shortcut/kernel",
                                      "shortcut/bias", "dense/kernel", "dense/bias"}));
  EXPECT_NE(m.Summary().find("<- branch, shortcut"), std::string::npos) << m.Summary();
}

TEST(ModelGraphTest, AutomaticNamesSkipTheNamesTheSpecGives) {
  ModelSpec spec;
  spec.layers = {LayerSpec::Flatten(), LayerSpec::Dense(5, Activation::kRelu).Named("dense"),
                 LayerSpec::Dense(3, Activation::kNone)};
  auto built = Model::Build(spec, Shape{4}, 3, 1);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ((*built)->layers()[1]->name(), "dense");
  EXPECT_EQ((*built)->layers()[2]->name(), "dense_1");
}

TEST(ModelGraphTest, SequentialStacksAreNotGraphsAndKeepTheirNames) {
  auto built = Model::Build(*PresetModel("cnn"), Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(built.ok());
  EXPECT_FALSE((*built)->is_graph());
  EXPECT_EQ((*built)->parameters()[2]->name, "conv2d_1/kernel");
}

// The loss's gradient through the whole graph -- the fan-out of "stem" and "sum", the add, the
// concat taking "sum" twice -- against central differences, for every 3rd parameter element and
// every input element (through a parameter-free first layer the model passes no input gradient,
// so the input is probed through the loss alone).
TEST(ModelGraphTest, WholeGraphGradientMatchesFiniteDifferences) {
  auto built = Model::Build(ResidualGraph(), Shape{8, 8, 2}, 3, 7);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  Model& m = **built;
  Rng rng(3);
  const Tensor x = Noise(Shape{2, 8, 8, 2}, rng);
  const std::vector<int32_t> labels{2, 0};
  Tensor dlogits;
  SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, &dlogits);
  m.Backward(dlogits);
  int checked = 0;
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
      ++checked;
    }
  }
  EXPECT_GT(checked, 150);
}

// Batches split like a data-parallel step's: the graph's forward is per example, so the rows of
// a half batch are the whole batch's rows, bit for bit.
TEST(ModelGraphTest, ForwardOfHalfABatchIsItsRowsOfTheWholeBatch) {
  auto a = Model::Build(ResidualGraph(), Shape{8, 8, 2}, 3, 7);
  auto b = Model::Build(ResidualGraph(), Shape{8, 8, 2}, 3, 7);
  ASSERT_TRUE(a.ok() && b.ok());
  Rng rng(5);
  const Tensor x = Noise(Shape{4, 8, 8, 2}, rng);
  Tensor half(Shape{2, 8, 8, 2});
  for (int64_t i = 0; i < half.size(); ++i) half[i] = x[2 * 8 * 8 * 2 + i];
  const Tensor whole = (*a)->Forward(x, Mode::kEval);
  const Tensor part = (*b)->Forward(half, Mode::kEval);
  for (int64_t i = 0; i < part.size(); ++i) ASSERT_EQ(part[i], whole[2 * 3 + i]) << i;
}

void ExpectGraphError(const ModelSpec& spec, const Shape& input, const std::string& start) {
  auto built = Model::Build(spec, input, 3, 1);
  ASSERT_FALSE(built.ok()) << start;
  EXPECT_EQ(built.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(built.status().message().rfind(start, 0), 0u) << built.status().message();
  auto planned = Model::Plan(spec, input, 3, 1);
  ASSERT_FALSE(planned.ok());
  EXPECT_EQ(planned.status().message(), built.status().message());
}

TEST(ModelGraphTest, BadGraphsAreRefusedNamingTheField) {
  ModelSpec spec = ResidualGraph();
  // An input naming a later layer (which would close a cycle), the layer itself, or nothing.
  spec.layers[5].inputs = {"joined"};
  ExpectGraphError(spec, Shape{8, 8, 2},
                   "model.layers[5].inputs[0]: 'joined' names model.layers[8]");
  spec.layers[5].inputs = {"shortcut"};
  ExpectGraphError(spec, Shape{8, 8, 2},
                   "model.layers[5].inputs[0]: 'shortcut' is this layer itself");
  spec.layers[5].inputs = {"nowhere"};
  ExpectGraphError(spec, Shape{8, 8, 2}, "model.layers[5].inputs[0]: 'nowhere' names no layer");
  // An add of different shapes: the branch's [4,4,6] and the stem's [8,8,4].
  spec = ResidualGraph();
  spec.layers[6].inputs = {"branch", "shortcut", "stem"};
  ExpectGraphError(spec, Shape{8, 8, 2},
                   "model.layers[6].inputs: add needs inputs of one shape; input 0 is [4,4,6], "
                   "input 2 is [8,8,4]");
  // A concat of different heights.
  spec = ResidualGraph();
  spec.layers[8].inputs = {"sum", "gate", "stem"};
  ExpectGraphError(spec, Shape{8, 8, 2}, "model.layers[8].inputs: concat joins inputs");
  // An add of one input; a relu of two.
  spec = ResidualGraph();
  spec.layers[6].inputs = {"branch"};
  ExpectGraphError(spec, Shape{8, 8, 2},
                   "model.layers[6].inputs: add takes two or more inputs, got 1");
  spec = ResidualGraph();
  spec.layers[7].inputs = {"sum", "sum"};
  ExpectGraphError(spec, Shape{8, 8, 2}, "model.layers[7].inputs: sigmoid takes one input, got 2");
  // Two layers of one name; the model input's name taken; a name with a slash.
  spec = ResidualGraph();
  spec.layers[4].name = "stem";
  ExpectGraphError(spec, Shape{8, 8, 2},
                   "model.layers[4].name: 'stem' is also the name of model.layers[0]");
  spec = ResidualGraph();
  spec.layers[0].name = "input";
  ExpectGraphError(spec, Shape{8, 8, 2}, "model.layers[0].name: 'input' names the model's input");
  spec = ResidualGraph();
  spec.layers[0].name = "a/b";
  ExpectGraphError(spec, Shape{8, 8, 2}, "model.layers[0].name: 'a/b' is not a layer name");
  // A dead end: the branch's output taken by no one.
  spec = ResidualGraph();
  spec.layers[6].inputs = {"shortcut", "shortcut"};
  ExpectGraphError(spec, Shape{8, 8, 2}, "model.layers[4]: its output is taken by no later layer");
  // The pooling layers need images.
  spec.layers = {LayerSpec::Of(LayerType::kGlobalAvgPool), LayerSpec::Dense(3, Activation::kNone)};
  ExpectGraphError(spec, Shape{5}, "model.layers[0]: global_avg_pool expects an input of shape");
  spec.layers = {LayerSpec::AvgPool2d(4, 0), LayerSpec::Flatten(),
                 LayerSpec::Dense(3, Activation::kNone)};
  ExpectGraphError(spec, Shape{3, 3, 1},
                   "model.layers[0]: avg_pool2d pool 4 is larger than the input");
}

// ---------------------------------------------------------------------------------------------
// The layers one by one.

// d(sum(out * r))/d(in[k][i]) by central differences, against `analytic`.
void CheckMergeGradients(MergeLayer& layer, std::vector<Tensor> in) {
  std::vector<Shape> shapes;
  for (const Tensor& t : in)
    shapes.push_back(
        Shape(std::vector<int64_t>(t.shape().dims().begin() + 1, t.shape().dims().end())));
  ASSERT_TRUE(layer.ConfigureInputs(shapes).ok());
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : in) ptrs.push_back(&t);
  Tensor out;
  layer.ForwardInputs(ptrs, out, Mode::kTrain);
  Rng rng(9);
  const Tensor r = Noise(out.shape(), rng);
  std::vector<Tensor> din(in.size());
  std::vector<Tensor*> dptrs;
  for (Tensor& t : din) dptrs.push_back(&t);
  layer.BackwardInputs(ptrs, out, r, dptrs);
  const auto loss = [&] {
    Tensor o;
    layer.ForwardInputs(ptrs, o, Mode::kTrain);
    double s = 0;
    for (int64_t i = 0; i < o.size(); ++i) s += double(o[i]) * r[i];
    return s;
  };
  for (size_t k = 0; k < in.size(); ++k) {
    ASSERT_EQ(din[k].shape(), in[k].shape());
    for (int64_t i = 0; i < in[k].size(); ++i) {
      const float saved = in[k][i];
      in[k][i] = saved + 1e-2f;
      const double up = loss();
      in[k][i] = saved - 1e-2f;
      const double down = loss();
      in[k][i] = saved;
      EXPECT_NEAR(din[k][i], (up - down) / 2e-2, 1e-3) << "input " << k << "[" << i << "]";
    }
  }
}

TEST(MergeLayersTest, AddSumsAndPassesTheGradientToEveryInput) {
  Rng rng(1);
  AddLayer add("add");
  std::vector<Tensor> in = {Noise(Shape{2, 3, 3, 2}, rng), Noise(Shape{2, 3, 3, 2}, rng),
                            Noise(Shape{2, 3, 3, 2}, rng)};
  ASSERT_TRUE(add.ConfigureInputs(std::vector<Shape>(3, Shape{3, 3, 2})).ok());
  Tensor out;
  add.ForwardInputs(std::vector<const Tensor*>{&in[0], &in[1], &in[2]}, out, Mode::kEval);
  for (int64_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], (in[0][i] + in[1][i]) + in[2][i]);
  CheckMergeGradients(add, in);
}

TEST(MergeLayersTest, ConcatJoinsChannelsInInputOrder) {
  Rng rng(2);
  ConcatLayer concat("concat");
  std::vector<Tensor> in = {Noise(Shape{2, 2, 3, 1}, rng), Noise(Shape{2, 2, 3, 3}, rng)};
  ASSERT_EQ(*concat.ConfigureInputs(std::vector<Shape>{Shape{2, 3, 1}, Shape{2, 3, 3}}),
            (Shape{2, 3, 4}));
  Tensor out;
  concat.ForwardInputs(std::vector<const Tensor*>{&in[0], &in[1]}, out, Mode::kEval);
  ASSERT_EQ(out.shape(), (Shape{2, 2, 3, 4}));
  for (int64_t p = 0; p < 2 * 2 * 3; ++p) {
    EXPECT_EQ(out[p * 4], in[0][p]);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out[p * 4 + 1 + c], in[1][p * 3 + c]);
  }
  CheckMergeGradients(concat, in);
  EXPECT_FALSE(concat.ConfigureInputs(std::vector<Shape>{Shape{2, 3, 1}, Shape{3, 2, 1}}).ok());
  EXPECT_FALSE(concat.ConfigureInputs(std::vector<Shape>{Shape{2, 3, 1}, Shape{6}}).ok());
}

// For the single-input layers: the layer's input gradient against central differences of
// sum(out * r).
void CheckLayerInputGradient(Layer& layer, const Shape& example, int64_t batch, double tol = 1e-3) {
  std::vector<int64_t> dims = {batch};
  dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  ASSERT_TRUE(layer.Configure(example).ok());
  Rng rng(4);
  Tensor in = Noise(Shape(dims), rng);
  for (int64_t i = 0; i < in.size(); ++i) in[i] *= 3.0f;  // the activations' curved part
  Tensor out;
  layer.Forward(in, out, Mode::kTrain);
  const Tensor r = Noise(out.shape(), rng);
  Tensor din;
  layer.Backward(in, out, r, &din);
  ASSERT_EQ(din.shape(), in.shape());
  const auto loss = [&] {
    Tensor o;
    layer.Forward(in, o, Mode::kTrain);
    double s = 0;
    for (int64_t i = 0; i < o.size(); ++i) s += double(o[i]) * r[i];
    return s;
  };
  for (int64_t i = 0; i < in.size(); ++i) {
    const float saved = in[i];
    in[i] = saved + 1e-2f;
    const double up = loss();
    in[i] = saved - 1e-2f;
    const double down = loss();
    in[i] = saved;
    EXPECT_NEAR(din[i], (up - down) / 2e-2, tol) << layer.type() << " input[" << i << "]";
  }
}

TEST(PoolingLayersTest, AvgPoolAveragesWindowsAndSpreadsTheGradient) {
  LayerSpec spec = LayerSpec::AvgPool2d(2, 1);
  AvgPool2dLayer pool("avg_pool2d", spec);
  ASSERT_EQ(*pool.Configure(Shape{3, 3, 1}), (Shape{2, 2, 1}));
  Tensor in(Shape{1, 3, 3, 1});
  for (int64_t i = 0; i < 9; ++i) in[i] = float(i);
  Tensor out;
  pool.Forward(in, out, Mode::kEval);
  EXPECT_EQ(out[0], (0 + 1 + 3 + 4) / 4.0f);
  EXPECT_EQ(out[3], (4 + 5 + 7 + 8) / 4.0f);
  AvgPool2dLayer overlapping("avg_pool2d", LayerSpec::AvgPool2d(3, 2));
  CheckLayerInputGradient(overlapping, Shape{7, 6, 3}, 2);
  AvgPool2dLayer tiling("avg_pool2d", LayerSpec::AvgPool2d(2, 0));
  CheckLayerInputGradient(tiling, Shape{4, 4, 5}, 2);
}

TEST(PoolingLayersTest, GlobalAvgPoolTakesEachChannelsMean) {
  GlobalAvgPoolLayer pool("global_avg_pool");
  ASSERT_EQ(*pool.Configure(Shape{2, 2, 2}), (Shape{2}));
  Tensor in(Shape{1, 2, 2, 2});
  for (int64_t i = 0; i < 8; ++i) in[i] = float(i);
  Tensor out;
  pool.Forward(in, out, Mode::kEval);
  EXPECT_EQ(out[0], (0 + 2 + 4 + 6) / 4.0f);
  EXPECT_EQ(out[1], (1 + 3 + 5 + 7) / 4.0f);
  GlobalAvgPoolLayer other("global_avg_pool_1");
  CheckLayerInputGradient(other, Shape{3, 5, 4}, 2);
}

TEST(SmoothActivationsTest, ValuesAndGradients) {
  SmoothActivationLayer sigmoid("sigmoid", LayerType::kSigmoid);
  SmoothActivationLayer tanh_layer("tanh", LayerType::kTanh);
  SmoothActivationLayer gelu("gelu", LayerType::kGelu);
  Tensor in(Shape{1, 3});
  in[0] = -2.0f;
  in[1] = 0.0f;
  in[2] = 1.5f;
  Tensor out;
  sigmoid.Forward(in, out, Mode::kEval);
  EXPECT_NEAR(out[0], 1 / (1 + std::exp(2.0)), 1e-7);
  EXPECT_EQ(out[1], 0.5f);
  tanh_layer.Forward(in, out, Mode::kEval);
  EXPECT_NEAR(out[2], std::tanh(1.5), 1e-7);
  gelu.Forward(in, out, Mode::kEval);
  // x * Phi(x): Phi(-2) = 0.02275013, Phi(1.5) = 0.93319280.
  EXPECT_NEAR(out[0], -2 * 0.02275013, 1e-6);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_NEAR(out[2], 1.5 * 0.93319280, 1e-6);
  CheckLayerInputGradient(sigmoid, Shape{4, 5}, 3);
  CheckLayerInputGradient(tanh_layer, Shape{4, 5}, 3);
  CheckLayerInputGradient(gelu, Shape{4, 5}, 3);
}

// The CIFAR ResNets of He et al.: 6n + 2 weighted layers, option B projection shortcuts at the
// stage starts, sized to the examples and classes; a table is refused.
TEST(ResNetPresetTest, ResNet20HasItsShapesAndParameterCount) {
  auto spec = PresetModel("resnet20", Shape{32, 32, 3}, 10);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(*spec, *PresetModel("resnet", Shape{32, 32, 3}, 10));
  EXPECT_TRUE(IsPresetModel("resnet", *spec));
  auto built = Model::Plan(*spec, Shape{32, 32, 3}, 10, 1);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const Model& m = **built;
  int convs = 0;
  for (const auto& l : m.layers()) convs += std::string(l->type()) == "conv2d";
  EXPECT_EQ(convs, 19 + 2);  // 19 of the 3x3 path and 2 projections; + dense = 20 + 2
  // stem 3x3x3x16 + bias + bn; stage 1: 3 blocks of 2 x (3x3x16x16 + 16 + 32); stages 2 and 3:
  // a first block with a strided conv and a 1x1 projection, then 2 blocks; dense 64 x 10.
  EXPECT_EQ(m.num_parameters(), 273258);
  const auto& shapes = m.output_shapes();
  EXPECT_EQ(shapes[2], (Shape{32, 32, 16}));
  EXPECT_EQ(shapes[shapes.size() - 3], (Shape{8, 8, 64}));
  EXPECT_EQ(shapes.back(), (Shape{10}));
  auto fashion = PresetModel("resnet", Shape{28, 28, 1}, 10);
  ASSERT_TRUE(fashion.ok());
  auto f = Model::Plan(*fashion, Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->num_parameters(), 273258 - 2 * 9 * 16);  // one input channel, not three
  EXPECT_EQ((*f)->output_shapes()[(*f)->output_shapes().size() - 3], (Shape{7, 7, 64}));
  for (const auto& [name, n] : {std::pair{"resnet32", 5}, std::pair{"resnet56", 9}}) {
    auto deeper = PresetModel(name, Shape{32, 32, 3}, 100);
    ASSERT_TRUE(deeper.ok());
    auto d = Model::Plan(*deeper, Shape{32, 32, 3}, 100, 1);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    int k = 0;
    for (const auto& l : (*d)->layers()) k += std::string(l->type()) == "conv2d";
    EXPECT_EQ(k, 6 * n + 1 + 2) << name;
  }
  const auto table = PresetModel("resnet", Shape{13}, 3);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().message(),
            "model: the resnet preset needs images [H, W, C]; the dataset's examples are [13] (a "
            "table): use mlp or softmax");
}

// A few training steps of ResNet-20 on small images: forward and backward through every block.
TEST(ResNetPresetTest, ResNet20TrainsOnSmallImages) {
  auto spec = PresetModel("resnet", Shape{8, 8, 3}, 4);
  ASSERT_TRUE(spec.ok());
  auto built = Model::Build(*spec, Shape{8, 8, 3}, 4, 2);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  Model& m = **built;
  Rng rng(8);
  Tensor x(Shape{6, 8, 8, 3});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = rng.Uniform(-1, 1);
  const std::vector<int32_t> labels{0, 1, 2, 3, 0, 1};
  Tensor dlogits;
  const double before = SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, &dlogits).loss;
  for (int step = 0; step < 30; ++step) {
    SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, &dlogits);
    m.Backward(dlogits);
    for (Parameter* p : m.parameters()) {
      for (int64_t i = 0; i < p->value.size(); ++i) p->value[i] -= 0.05f * p->grad[i];
    }
  }
  const double after = SoftmaxCrossEntropy(m.Forward(x, Mode::kTrain), labels, nullptr).loss;
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

TEST(ResNetPresetTest, DeeperResNetsHaveTheirParameterCounts) {
  for (const auto& [name, count] : {std::pair{"resnet32", 468138}, std::pair{"resnet56", 857898}}) {
    auto spec = PresetModel(name, Shape{32, 32, 3}, 10);
    ASSERT_TRUE(spec.ok());
    auto m = Model::Plan(*spec, Shape{32, 32, 3}, 10, 1);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ((*m)->num_parameters(), count) << name;
  }
}

}  // namespace
}  // namespace trainingd::engine
