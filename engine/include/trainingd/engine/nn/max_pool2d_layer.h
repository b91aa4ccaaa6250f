// MaxPool2dLayer: max pooling over NHWC inputs with valid padding (tf.layers.max_pooling2d).
// Forward remembers the arg-max of every window; Backward routes each gradient to it.
#pragma once

#include <vector>

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

class MaxPool2dLayer final : public Layer {
 public:
  MaxPool2dLayer(std::string name, const LayerSpec& spec);

  const char* type() const override { return "max_pool2d"; }
  Result<Shape> Configure(const Shape& input) override;
  int64_t ScratchBytes(int64_t batch, Mode mode, int threads) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;

 private:
  int64_t pool_, stride_;
  int64_t h_ = 0, w_ = 0, c_ = 0, oh_ = 0, ow_ = 0;
  std::vector<int32_t> argmax_;  // per output element: offset within its example's input
};

}  // namespace trainingd::engine
