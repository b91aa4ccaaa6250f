// The layers without parameters that act element by element or only reshape:
// ReluLayer, SmoothActivationLayer (sigmoid, tanh, gelu), DropoutLayer (tf.layers.dropout) and
// FlattenLayer (tf.layers.flatten).
#pragma once

#include <vector>

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

class ReluLayer final : public Layer {
 public:
  explicit ReluLayer(std::string name) : Layer(std::move(name)) {}
  const char* type() const override { return "relu"; }
  Result<Shape> Configure(const Shape& input) override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
};

// y = f(x) element by element, for f one of (LayerType):
//   kSigmoid: 1 / (1 + exp(-x)), whose derivative is y (1 - y);
//   kTanh:    tanh(x), whose derivative is 1 - y^2;
//   kGelu:    x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 (the exact form, tf.nn.gelu's default),
//             whose derivative is Phi(x) + x phi(x), phi the standard normal density.
class SmoothActivationLayer final : public Layer {
 public:
  // `kind` must be kSigmoid, kTanh or kGelu.
  SmoothActivationLayer(std::string name, LayerType kind) : Layer(std::move(name)), kind_(kind) {}
  const char* type() const override { return LayerTypeName(kind_); }
  Result<Shape> Configure(const Shape& input) override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;

 private:
  LayerType kind_;
};

// In training, zeroes each unit with probability `rate` and scales the rest by 1 / (1 - rate);
// in evaluation it is the identity. Its mask stream is seeded by the model and checkpointable.
class DropoutLayer final : public Layer {
 public:
  DropoutLayer(std::string name, float rate, uint64_t seed);
  const char* type() const override { return "dropout"; }
  Result<Shape> Configure(const Shape& input) override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  Rng* rng() override { return &rng_; }
  void set_example_offset(int64_t offset) override { example_offset_ = offset; }
  int64_t ScratchBytes(int64_t batch, Mode mode, int threads) const override;

 private:
  float rate_;
  // Advances by one draw per training forward pass, whatever the batch: the draw keys that
  // pass's masks, and example g of the global batch takes its mask from Rng::ForStream(key, g).
  // So the masks depend on the global example index alone, not on how the batch is split.
  Rng rng_;
  int64_t example_offset_ = 0;
  int64_t elements_ = 0;  // per example
  Mode last_mode_ = Mode::kEval;
  std::vector<float> mask_;  // 0 or 1 / (1 - rate), per element of the latest training forward
};

// [batch, ...] -> [batch, features]. Forward's output is a view of its input, not a copy.
class FlattenLayer final : public Layer {
 public:
  explicit FlattenLayer(std::string name) : Layer(std::move(name)) {}
  const char* type() const override { return "flatten"; }
  Result<Shape> Configure(const Shape& input) override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  bool OutputViewsInput() const override { return true; }
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
};

}  // namespace trainingd::engine
