// BatchNormLayer: batch normalization over the last axis (the channels of [H, W, C], the features
// of [F]) with Keras' semantics (keras.layers.BatchNormalization, tf.layers.batch_normalization).
//
// Training (kTrain): y = gamma (x - mean) / sqrt(var + epsilon) + beta, with mean and var the
// statistics of the step's GLOBAL batch (every example and pixel of it, the variance biased, as
// tf.nn.moments), and moving_mean = momentum moving_mean + (1 - momentum) mean (the same for
// moving_variance). Evaluation and inference (kEval) use the moving statistics instead.
//
// The statistics are exact sums, as the gradients are (gradient_blocks.h): each block of the
// global batch forms its partial sums in double, always the same way; they are rounded onto a
// fixed-point grid agreed over the ranks and added as 64-bit integers, then summed over the ranks
// (GradientBlocks::AgreeSum). So N ranks compute the same mean and variance as one process, bit
// for bit, and the moving statistics stay the same on every rank without being exchanged. The
// backward pass needs the global sums of dy and dy * xhat per channel: they are the beta and gamma
// gradient sums, reduced the same way.
//
// Variables: trainable `<name>/gamma` (1) and `<name>/beta` (0); not trainable (Layer::variables,
// saved in checkpoints) `<name>/moving_mean` (0) and `<name>/moving_variance` (1).
#pragma once

#include <vector>

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

class BatchNormLayer final : public Layer {
 public:
  BatchNormLayer(std::string name, const LayerSpec& spec);

  const char* type() const override { return "batch_norm"; }
  Result<Shape> Configure(const Shape& input) override;
  void InitializeParameters(Rng& init_rng) override;
  int64_t NumParameters() const override { return 2 * channels_; }
  int64_t ScratchBytes(int64_t batch, Mode mode, int threads) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  std::vector<Parameter*> parameters() override { return {&gamma_, &beta_}; }
  std::vector<Parameter*> variables() override { return {&moving_mean_, &moving_variance_}; }
  void set_step_blocks(GradientBlocks* blocks) override { step_ = blocks; }
  int64_t ForwardFlopsPerExample() const override { return 4 * pixels_ * channels_; }
  // Batch norm and the ReLU after it in one pass each way: the ReLU applied as each output is
  // written, and its mask recomputed in Backward from the layer's input (y = gamma xhat + beta,
  // the same float operations as Forward's, so the same bits) rather than read.
  bool FuseRelu(bool fuse) override {
    relu_ = fuse;
    return true;
  }

  float momentum() const { return momentum_; }
  float epsilon() const { return epsilon_; }

 private:
  // The exact sum over the global batch of f(example e, pixel p, channel c) for every channel,
  // from `parts`, the blocks' partials of f in double, in example and pixel order: summed on a
  // grid of 2^-exponent[c] fitted to |f| <= bound[c], then over the ranks.
  void ExactChannelSums(GradientBlocks& blocks, std::vector<float> bound,
                        const std::vector<double>& parts, std::vector<double>& sums);

  float momentum_, epsilon_;
  int64_t pixels_ = 0, channels_ = 0;
  Parameter gamma_, beta_;
  Parameter moving_mean_, moving_variance_;  // value only
  GradientBlocks* step_ = nullptr;
  bool relu_ = false;  // FuseRelu
  // The latest training forward pass: its mean and 1/sqrt(var + epsilon) in float, from which
  // Backward recomputes xhat = (x - mean) / sqrt(var + epsilon) bit for bit.
  Mode last_mode_ = Mode::kEval;
  std::vector<float> mean_f_;
  std::vector<float> inv_std_;
  std::vector<double> mean_, var_;
};

}  // namespace trainingd::engine
