// CategoricalEncodingLayer: the first layer of a model of a table with categorical columns
// (table_columns.h, CategoricalFeature). Its input row [F] holds the number features, then one
// code per categorical column; its output holds the same numbers, then each column's encoding:
//   one-hot (LayerSpec::embedding_dims[c] == 0): `codes` values, 1 at the code and 0 elsewhere
//     (tf.feature_column.indicator_column, keras.layers.CategoryEncoding(output_mode="one_hot"));
//   embedding: the code's row of a learned [codes, dim] table (tf.feature_column.
//     embedding_column, keras.layers.Embedding), initialized uniform in [-0.05, 0.05] as Keras.
// A code is an integer in [0, codes); anything else (which no dataset gives) reads as
// CategoricalFeature::kUnknownLevel. Codes have no gradient: Backward's din (a layer taking this
// one's input from a graph) is dout for the numbers and 0 for the codes.
//
// The embedding gradients are exact sums over the blocks of the global batch (gradient_blocks.h):
// a block's partial of a table row adds the rows of dout of the block's examples with that code,
// in example order, in float; the partials are rounded onto the grid and added as integers, so
// N ranks agree with one process bit for bit. The gradient is dense (the whole table, mostly 0),
// as Keras' Embedding with a dense optimizer.
//
// Parameters: `<name>/embedding_<c>/embeddings` [codes, dim] for each embedded column c (its index
// among the categorical columns).
#pragma once

#include <cstdint>
#include <vector>

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

class CategoricalEncodingLayer final : public Layer {
 public:
  CategoricalEncodingLayer(std::string name, const LayerSpec& spec);

  const char* type() const override { return "categorical_encoding"; }
  Result<Shape> Configure(const Shape& input) override;
  void InitializeParameters(Rng& init_rng) override;
  int64_t NumParameters() const override;
  int64_t ScratchBytes(int64_t batch, Mode mode, int threads) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  std::vector<Parameter*> parameters() override;

  // The number features at the front of a row (after Configure).
  int64_t numbers() const { return numbers_; }
  // Per categorical column: its codes, its embedding size (0: one-hot) and the parameter holding
  // its table (null when one-hot).
  int64_t codes(size_t c) const { return codes_[c]; }
  int64_t embedding_dim(size_t c) const { return dims_[c]; }
  const Parameter* table(size_t c) const;
  size_t columns() const { return codes_.size(); }

 private:
  // The code of example e's column c: an integer in [0, codes), else kUnknownLevel.
  int64_t CodeAt(const float* row, size_t c) const;

  std::vector<int64_t> codes_, dims_;
  int64_t numbers_ = 0, in_width_ = 0, out_width_ = 0;
  std::vector<Parameter> tables_;                   // one per embedded column, in column order
  std::vector<int> table_of_;                       // per column: its index in tables_, or -1
  std::vector<float> partial_;                      // Backward: one table row's block partial
  std::vector<std::pair<int64_t, int64_t>> order_;  // Backward: (code, example) of a block
};

}  // namespace trainingd::engine
