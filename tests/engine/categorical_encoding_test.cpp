// A table's categorical features in a model (categorical_encoding_layer.h): one-hot and learned
// embeddings of the codes, their exact gradients, the layer FitModelToData puts first, and what
// a model of them records (model_input.h).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/job/model_input.h"
#include "trainingd/engine/nn/categorical_encoding_layer.h"
#include "trainingd/engine/nn/gradient_blocks.h"

namespace trainingd::engine {
namespace {

// Two numbers, then a 4-code column (one-hot) and a 6-code column embedded in 3 values.
LayerSpec TwoColumns() {
  LayerSpec s = LayerSpec::Of(LayerType::kCategoricalEncoding);
  s.category_codes = {4, 6};
  s.embedding_dims = {0, 3};
  return s;
}

Tensor Rows(const std::vector<std::vector<float>>& rows) {
  Tensor t(Shape{static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r].begin(), rows[r].end(), t.data() + r * rows[0].size());
  }
  return t;
}

TEST(CategoricalEncodingTest, OneHotAndEmbeddingRowsAfterTheNumbers) {
  CategoricalEncodingLayer layer("categorical_encoding", TwoColumns());
  Rng rng(1);
  auto shape = layer.Build(Shape{4}, rng);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(*shape, Shape{2 + 4 + 3});
  EXPECT_EQ(layer.numbers(), 2);
  EXPECT_EQ(layer.NumParameters(), 6 * 3);
  ASSERT_EQ(layer.parameters().size(), 1u);
  const Parameter& table = *layer.parameters()[0];
  EXPECT_EQ(table.name, "categorical_encoding/embedding_1/embeddings");
  EXPECT_EQ(table.value.shape(), (Shape{6, 3}));
  for (int64_t i = 0; i < table.value.size(); ++i) {
    EXPECT_GE(table.value[i], -0.05f);
    EXPECT_LT(table.value[i], 0.05f);
  }
  // A code out of range (no loader writes one) reads as unknown.
  const Tensor x = Rows({{0.5f, -2, 3, 5}, {7, 8, 0, 1}, {1, 1, 9, 2.5f}});
  Tensor y;
  layer.Forward(x, y, Mode::kEval);
  ASSERT_EQ(y.shape(), (Shape{3, 9}));
  const auto row = [&](int64_t r) {
    return std::vector<float>(y.data() + r * 9, y.data() + r * 9 + 9);
  };
  const float* t = table.value.data();
  EXPECT_EQ(row(0), (std::vector<float>{0.5f, -2, 0, 0, 0, 1, t[15], t[16], t[17]}));
  EXPECT_EQ(row(1), (std::vector<float>{7, 8, 1, 0, 0, 0, t[3], t[4], t[5]}));
  EXPECT_EQ(row(2), (std::vector<float>{1, 1, 0, 1, 0, 0, t[3], t[4], t[5]}));
}

TEST(CategoricalEncodingTest, EmbeddingGradientsAreTheSumsOfTheirRowsAndExactOverBlocks) {
  CategoricalEncodingLayer one("categorical_encoding", TwoColumns());
  Rng rng(2);
  ASSERT_TRUE(one.Build(Shape{4}, rng).ok());
  const Tensor x = Rows({{0, 0, 1, 2},
                         {0, 0, 2, 5},
                         {0, 0, 3, 2},
                         {0, 0, 0, 0},
                         {0, 0, 1, 2},
                         {0, 0, 2, 5},
                         {0, 0, 3, 3}});
  Tensor y;
  one.Forward(x, y, Mode::kTrain);
  Tensor dy(y.shape());
  Rng g(3);
  for (int64_t i = 0; i < dy.size(); ++i) dy[i] = g.Uniform(-1, 1);
  Tensor dx;
  one.Backward(x, y, dy, &dx);
  // dx: the numbers' gradients, nothing for a code.
  for (int64_t r = 0; r < 7; ++r) {
    EXPECT_EQ(dx[r * 4], dy[r * 9]);
    EXPECT_EQ(dx[r * 4 + 1], dy[r * 9 + 1]);
    EXPECT_EQ(dx[r * 4 + 2], 0.0f);
    EXPECT_EQ(dx[r * 4 + 3], 0.0f);
  }
  // The table's row k: the sum of dy's embedding values over the examples of code k.
  const Tensor& grad = one.parameters()[0]->grad;
  const std::vector<std::vector<int>> examples = {{3}, {}, {0, 2, 4}, {6}, {}, {1, 5}};
  for (int64_t k = 0; k < 6; ++k) {
    for (int64_t j = 0; j < 3; ++j) {
      double want = 0;
      for (int e : examples[static_cast<size_t>(k)]) want += dy[e * 9 + 6 + j];
      EXPECT_NEAR(grad[k * 3 + j], want, 1e-6) << k << " " << j;
    }
  }
  // The blocks a data-parallel step cuts the batch into give the same bits.
  CategoricalEncodingLayer split("categorical_encoding", TwoColumns());
  Rng rng2(2);
  ASSERT_TRUE(split.Build(Shape{4}, rng2).ok());
  split.Forward(x, y, Mode::kTrain);
  split.Backward(x, y, dy, nullptr);  // sizes the sums
  GradientBlocks b = GradientBlocks::ForRank(7, 3, 0, 1, nullptr);
  split.Backward(x, y, dy, nullptr, b);
  FinishGradients(split.parameters());
  one.Backward(x, y, dy, nullptr, b);
  FinishGradients(one.parameters());
  EXPECT_EQ(std::memcmp(split.parameters()[0]->grad.data(), one.parameters()[0]->grad.data(),
                        sizeof(float) * 18),
            0);
}

TEST(CategoricalEncodingTest, BadGeometryIsRefused) {
  Rng rng(1);
  LayerSpec s = TwoColumns();
  EXPECT_FALSE(CategoricalEncodingLayer("c", s).Build(Shape{1}, rng).ok());        // 2 codes
  EXPECT_FALSE(CategoricalEncodingLayer("c", s).Build(Shape{2, 2, 1}, rng).ok());  // an image
  s.category_codes = {1, 6};
  EXPECT_FALSE(CategoricalEncodingLayer("c", s).Build(Shape{4}, rng).ok());
  s = TwoColumns();
  s.embedding_dims = {0};
  EXPECT_FALSE(CategoricalEncodingLayer("c", s).Build(Shape{4}, rng).ok());
  s = TwoColumns();
  s.category_codes = {kMaxOneHotLevels + 1, 6};
  EXPECT_FALSE(CategoricalEncodingLayer("c", s).Build(Shape{4}, rng).ok());
}

std::vector<CategoricalFeature> Features() {
  CategoricalFeature small{"contract", {"month", "one_year", "two_year"}};
  CategoricalFeature large{"city", {}};
  for (int i = 0; i < 40; ++i) large.levels.push_back("c" + std::to_string(100 + i));
  return {small, large};
}

TEST(CategoricalEncodingTest, FitModelToDataPutsTheEncodingFirstOnceWhateverTheModel) {
  JobSpec spec;
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  ASSERT_TRUE(FitModelToData(&spec, Shape{7}, 3, Features()).ok());
  const LayerSpec& first = spec.model.layers[0];
  EXPECT_EQ(first.type, LayerType::kCategoricalEncoding);
  EXPECT_EQ(first.category_codes, (std::vector<int64_t>{5, 42}));
  EXPECT_EQ(first.embedding_dims, (std::vector<int64_t>{0, EmbeddingDimFor(42)}));
  EXPECT_EQ(spec.model.layers.back().units, 3);
  // Fitting again (the daemon's canonical spec, then the run) changes nothing.
  const ModelSpec fitted = spec.model;
  ASSERT_TRUE(FitModelToData(&spec, Shape{7}, 3, Features()).ok());
  EXPECT_EQ(spec.model, fitted);
  // The job's options: everything one-hot, or embeddings of a given size.
  spec.categorical.one_hot_max_levels = 64;
  ASSERT_TRUE(FitModelToData(&spec, Shape{7}, 3, Features()).ok());
  EXPECT_EQ(spec.model.layers[0].embedding_dims, (std::vector<int64_t>{0, 0}));
  spec.categorical = {.one_hot_max_levels = 0, .embedding_dim = 8};
  ASSERT_TRUE(FitModelToData(&spec, Shape{7}, 3, Features()).ok());
  EXPECT_EQ(spec.model.layers[0].embedding_dims, (std::vector<int64_t>{8, 8}));
  // Without categorical features, none.
  ASSERT_TRUE(FitModelToData(&spec, Shape{7}, 3).ok());
  EXPECT_NE(spec.model.layers[0].type, LayerType::kCategoricalEncoding);

  // A graph: the encoding is named, and takes the place of "input".
  JobSpec graph;
  graph.model.layers = {LayerSpec::Dense(8, Activation::kRelu).Named("a", {"input"}),
                        LayerSpec::Dense(8, Activation::kNone).Named("b", {"input"}),
                        LayerSpec::Of(LayerType::kAdd).Named("sum", {"a", "b"}),
                        LayerSpec::Dense(3, Activation::kNone)};
  ASSERT_TRUE(FitModelToData(&graph, Shape{7}, 3, Features()).ok());
  EXPECT_EQ(graph.model.layers[0].name, kCategoricalEncodingName);
  EXPECT_EQ(graph.model.layers[1].inputs, (std::vector<std::string>{kCategoricalEncodingName}));
  EXPECT_EQ(graph.model.layers[2].inputs, (std::vector<std::string>{kCategoricalEncodingName}));
  EXPECT_TRUE(ResolveModelGraph(graph.model).ok());
}

TEST(CategoricalEncodingTest, AModelInputsCategoricalFeaturesMustMatchItsModel) {
  JobSpec spec;
  spec.model_preset = "softmax";
  spec.model = *PresetModel("softmax");
  ASSERT_TRUE(FitModelToData(&spec, Shape{7}, 3, Features()).ok());
  ModelInput in;
  in.example_shape = Shape{7};
  in.num_classes = 3;
  in.class_names = {"a", "b", "c"};
  in.feature_names = {"x1", "x2", "x3", "x4", "x5"};
  in.categorical = Features();
  in.model = spec.model;
  EXPECT_TRUE(ValidateModelInput(in).ok()) << ValidateModelInput(in).ToString();
  ModelInput bad = in;
  bad.categorical[1].levels.pop_back();
  EXPECT_EQ(ValidateModelInput(bad).message(),
            "model.layers[0].category_codes[1]: 42, but categorical[1] has 41 codes");
  bad = in;
  std::swap(bad.categorical[0].levels[0], bad.categorical[0].levels[1]);
  EXPECT_EQ(ValidateModelInput(bad).message().rfind("categorical[0].levels[1]: ", 0), 0u);
  bad = in;
  bad.categorical[0].name = "x2";
  EXPECT_EQ(ValidateModelInput(bad).message(), "categorical[0].name: empty or named twice");
  bad = in;
  bad.feature_names.pop_back();
  EXPECT_FALSE(ValidateModelInput(bad).ok());
}

}  // namespace
}  // namespace trainingd::engine
