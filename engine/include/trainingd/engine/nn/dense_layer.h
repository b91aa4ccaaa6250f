// DenseLayer: y = x * W + b on [batch, in] inputs (tf.layers.dense), optionally fused with ReLU.
// Kernel shape [in, units], as in TensorFlow. Forward and the input gradient run as one
// multi-threaded product each (gemm.h). The kernel gradient of a wide layer (set_gathered) is one
// product over the whole batch; of any other, one product per batch block and tile of kernel
// rows, summed exactly (gradient_blocks.h).
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

  // A gathered layer (GatheredAt: a wide one, most of a model's weights, or a narrow one, a
  // classifier's head): its gradient is summed over the whole batch in float, every element in
  // the examples' order, in one process and in a data-parallel step alike; so no fixed point and
  // no blocks. A data-parallel step splits its work over the ranks by columns, as the threads of
  // one process do, so each reads a share of the kernel instead of all of it: during a step
  // (set_step, null otherwise) Forward gathers the inputs of the global batch, forms its share of
  // the output columns for every example and shares them (GradientBlocks::ShareColumns); Backward
  // gathers the output gradients and forms its share of the input gradient's columns the same
  // way. GatheredGradients then forms the gradient of any tiles of kernel rows, and the bias's,
  // from the gathered inputs and output gradients. Every element is formed as one process forms
  // it (gemm.h), so the results are the same bits.
  void set_gathered(bool gathered) { gathered_ = gathered; }
  // Whether the layer is gathered at this global batch (Model::MarkGatheredDenseLayers): when it
  // has more weights than its inputs and outputs over the batch (2 * in * units > batch * (in +
  // units): gathering those costs a data-parallel step less than reducing the weights' sums); or
  // when it has at most 16 units (a classifier's head) and its inputs and outputs over the batch
  // are at most 16 times its weights: one product over the batch then costs one process less
  // than a product per block, each transposed and rounded into fixed point after a pass over
  // every input for its bound (the softmax's backward took twice the time that way), and a
  // data-parallel step gathers a few hundred kilobytes at most (the softmax up to batch 157, the
  // CNN's head up to batch 158); with a larger global batch, a step over many machines would
  // send more than the sums it saves.
  bool GatheredAt(int64_t global_batch) const;
  bool gathered() const { return gathered_; }
  void set_step(GradientBlocks* step);
  // The gradients (Parameter::grad) of the bias and of the kernel rows of tiles [t0, t1), from the
  // inputs and output gradients the latest step gathered.
  void GatheredGradients(int64_t t0, int64_t t1);
  // Keeps a copy of the kernel packed as the matrix products read it (gemm.h's PackB), 4 bytes
  // per kernel element, which kEval Forward then streams, instead of reading the kernel a
  // 32-column strip of every row at a time. A layer of at most 16 units (the narrow kernel)
  // keeps no copy.
  void PrepareForInference() override;
  // Mixed precision: every product of a training step (forward, input gradient, kernel gradient)
  // is gemm.h's GemmBf16, whose rounded operands take scratch (ScratchBytes).
  void set_precision(Precision precision) override {
    mixed_ = precision == Precision::kMixedBfloat16;
  }
  int64_t in() const { return in_; }
  int64_t units() const { return spec_.units; }
  // The kernel's gradient is formed by tiles of whole rows; every tile but the last is a multiple
  // of 16 elements.
  int64_t RowsPerTile() const;
  int64_t NumTiles() const { return (in_ + RowsPerTile() - 1) / RowsPerTile(); }
  // The first kernel row of tile t (t = NumTiles(): in()).
  int64_t FirstRowOfTile(int64_t t) const;

 private:
  // The exponents and the exact sums over `blocks` of `batch` examples of the bias and of the
  // kernel rows of tiles [t0, t1).
  void SumGradients(const float* x, const float* g, int64_t batch, GradientBlocks& blocks,
                    int64_t t0, int64_t t1);
  // A wide layer's gradients over `batch` examples: the kernel rows [r0, r1) and the bias.
  void WholeBatchGradients(const float* x, const float* g, int64_t batch, int64_t r0, int64_t r1);
  // C = op(A) * op(B) in a training step: Gemm, or in mixed precision GemmBf16 with its rounded
  // operands in `bf16`.
  void Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
               int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
               FloatBuffer& bf16) const;

  LayerSpec spec_;
  int64_t in_ = 0;
  Parameter kernel_;
  Parameter bias_;
  // Elements of one tile of kernel-gradient partials: small enough to stay in cache with its sums.
  static constexpr int64_t kTileElements = 16384;
  bool gathered_ = false;
  bool mixed_ = false;  // Precision::kMixedBfloat16
  GradientBlocks* step_ = nullptr;
  int64_t step_global_ = 0;  // the latest step's global batch
  // Gathered: the global batch's inputs and output gradients, and the ranks' column parts.
  std::vector<float> all_x_, all_dy_, parts_by_rank_;
  // PackKernelForInference's copy of the kernel; empty when there is none.
  FloatBuffer packed_kernel_;

  Tensor dy_;                  // output gradient masked by the ReLU
  Tensor dbias_part_;          // one block's bias gradient
  std::vector<Tensor> parts_;  // per chunk: one tile of one block's kernel gradient
  // Mixed precision: the rounded operands of the step's products, and of each chunk's tiles.
  FloatBuffer bf16_;
  std::vector<FloatBuffer> bf16_parts_;
};

}  // namespace trainingd::engine
