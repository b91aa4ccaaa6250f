// Average pooling over NHWC inputs: AvgPool2dLayer (valid padding,
// keras.layers.AveragePooling2D) and GlobalAvgPoolLayer ([H, W, C] -> [C],
// keras.layers.GlobalAveragePooling2D). Both are the same per example whatever the batch.
#pragma once

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

// Each output is the mean of its pool x pool window: the window's values summed in (ky, kx)
// order, times 1 / (pool * pool).
class AvgPool2dLayer final : public Layer {
 public:
  AvgPool2dLayer(std::string name, const LayerSpec& spec);

  const char* type() const override { return "avg_pool2d"; }
  Result<Shape> Configure(const Shape& input) override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  int64_t ForwardFlopsPerExample() const override { return h_ * w_ * c_; }

 private:
  int64_t pool_, stride_;
  int64_t h_ = 0, w_ = 0, c_ = 0, oh_ = 0, ow_ = 0;
};

// Each channel's mean over the H x W pixels, summed in pixel order, times 1 / (H * W).
class GlobalAvgPoolLayer final : public Layer {
 public:
  explicit GlobalAvgPoolLayer(std::string name) : Layer(std::move(name)) {}

  const char* type() const override { return "global_avg_pool"; }
  Result<Shape> Configure(const Shape& input) override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  int64_t ForwardFlopsPerExample() const override { return pixels_ * c_; }

 private:
  int64_t pixels_ = 0, c_ = 0;
};

}  // namespace trainingd::engine
