// DenseLayer: y = x * W + b on [batch, in] inputs (tf.layers.dense), optionally fused with ReLU.
// Kernel shape [in, units], as in TensorFlow. Forward and the input gradient run as one
// multi-threaded GEMM each; the kernel gradient as one small GEMM per batch block and tile of
// kernel rows, summed exactly (gradient_blocks.h).
#pragma once

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

class DenseLayer final : public Layer {
 public:
  DenseLayer(std::string name, const LayerSpec& spec);

  const char* type() const override { return "dense"; }
  Result<Shape> Configure(const Shape& input) override;
  void InitializeParameters(Rng& init_rng) override;
  int64_t NumParameters() const override { return in_ * spec_.units + spec_.units; }
  int64_t ScratchBytes(int64_t batch, Mode mode, int threads) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  std::vector<Parameter*> parameters() override { return {&kernel_, &bias_}; }
  int64_t ForwardFlopsPerExample() const override { return 2 * in_ * spec_.units; }

 private:
  LayerSpec spec_;
  int64_t in_ = 0;
  Parameter kernel_;
  Parameter bias_;
  // Elements of one tile of kernel-gradient partials: small enough to stay in cache with its sums.
  static constexpr int64_t kTileElements = 16384;
  int64_t RowsPerTile() const;

  Tensor dy_;                  // output gradient masked by the ReLU
  Tensor dbias_part_;          // one block's bias gradient
  std::vector<Tensor> parts_;  // per chunk: one tile of one block's kernel gradient
};

}  // namespace trainingd::engine
