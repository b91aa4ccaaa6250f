// Conv2dLayer: 2-D convolution over NHWC inputs (tf.layers.conv2d), optionally fused with ReLU.
//
// Kernel layout is TensorFlow's HWIO ([k, k, in_channels, filters]), which is exactly the row-major
// [k*k*in_channels, filters] matrix that multiplies an im2col patch matrix. The batch is split
// across ComputeThreads(); each thread lowers a few examples at a time into a cache-sized patch
// buffer and multiplies it with one single-threaded GEMM, so the patch matrix of the whole batch is
// never materialised. Backward recomputes the patches instead of storing them.
//
// A 1x1 convolution of stride 1 skips the lowering: its input is already the patch matrix, so
// forward and both gradients are plain GEMMs on it (a strided 1x1, ResNet's projection shortcut,
// lowers by picking every stride-th pixel, which im2col does).
//
// A convolution of one input channel with stride 1 (the first layer over grey images) is computed
// directly from the zero-padded image instead (engine/src/nn/direct_conv.h), with im2col's bits.
//
// Stride-1 3x3 and 5x5 convolutions with at least kWinogradMinChannels input channels use
// Winograd's minimal filtering instead (F(4x4, 3x3) and F(4x4, 5x5), engine/src/nn/winograd.h),
// which needs 6.25x (5x5) and 4x (3x3) fewer multiplications; the tutorial CNN's second
// convolution is one. Its forward and backward passes are exact adjoints of each other, so the
// gradients are those of the function computed, and they are checked like im2col's.
#pragma once

#include <memory>
#include <vector>

#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

namespace internal {
class WinogradConv;
struct WinogradWorkspace;
struct DirectConvShape;
}  // namespace internal

enum class ConvAlgorithm {
  kAuto,      // direct for one input channel (stride 1), else Winograd where it applies and pays,
              // else im2col + GEMM
  kIm2col,    // always im2col + GEMM
  kWinograd,  // Winograd wherever it applies (stride 1, 3x3 or 5x5), im2col otherwise
  kDirect,    // direct wherever it applies (one input channel, stride 1), im2col otherwise
};
// "auto", "im2col", "winograd" or "direct".
const char* ConvAlgorithmName(ConvAlgorithm algorithm);

class Conv2dLayer final : public Layer {
 public:
  // Below this many input channels the Winograd products are too thin to beat im2col's.
  static constexpr int64_t kWinogradMinChannels = 8;

  Conv2dLayer(std::string name, const LayerSpec& spec);
  ~Conv2dLayer() override;

  // Overrides the choice of algorithm (tests and benchmarks), before or after Build.
  void set_algorithm(ConvAlgorithm algorithm);
  // The algorithm Build chose: kIm2col, kWinograd or kDirect.
  ConvAlgorithm algorithm() const;

  const char* type() const override { return "conv2d"; }
  Result<Shape> Configure(const Shape& input) override;
  void InitializeParameters(Rng& init_rng) override;
  int64_t NumParameters() const override { return g_.patch() * g_.oc + g_.oc; }
  int64_t ScratchBytes(int64_t batch, Mode mode, int threads) const override;
  void Forward(const Tensor& in, Tensor& out, Mode mode) override;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) override;
  std::vector<Parameter*> parameters() override { return {&kernel_, &bias_}; }
  int64_t ForwardFlopsPerExample() const override;
  // Winograd: transforms the kernel once, which kEval Forward then reuses instead of
  // transforming it on every call (no extra memory: Forward's own buffer).
  void PrepareForInference() override;

 private:
  struct Geometry {
    int64_t h = 0, w = 0, c = 0;     // input
    int64_t oh = 0, ow = 0, oc = 0;  // output
    int64_t k = 0, stride = 1, pad_top = 0, pad_left = 0;
    int64_t patch() const { return k * k * c; }
    int64_t out_pixels() const { return oh * ow; }
  };
  // Rows [p0, p1) of one example's patch matrix (all of them by default).
  // A 1x1 convolution of stride 1: its patch matrix is its input, so im2col is a plain GEMM.
  bool Pointwise() const { return g_.k == 1 && g_.stride == 1; }
  void Im2Col(const float* x, float* col, int64_t p0 = 0, int64_t p1 = -1) const;
  void Col2ImAdd(const float* col, float* dx) const;
  int64_t ExamplesPerBlock() const;
  void ChooseAlgorithm();  // sets winograd_ and direct_ from requested_ and the geometry
  internal::DirectConvShape DirectShape() const;

  LayerSpec spec_;
  Geometry g_;
  Parameter kernel_;
  Parameter bias_;
  // Per-chunk scratch: patch matrix (the direct convolution's padded image: padded), masked
  // output gradient, one block's kernel and bias gradients (kpart, dbias; Winograd's transformed
  // kernel gradient in dkernel), and the chunk's exact sums of them.
  struct Scratch {
    Tensor col, padded, dy, dkernel, kpart, dbias;
    std::vector<int64_t> ksum, bsum;
    std::unique_ptr<internal::WinogradWorkspace> winograd;
  };
  std::vector<Scratch> scratch_;
  void WinogradForward(const Tensor& in, Tensor& out, Mode mode);
  void WinogradBackward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                        GradientBlocks& blocks);
  void DirectForward(const Tensor& in, Tensor& out);
  // Agrees the grids, then calls block_fn(scratch, begin, end) for each of the blocks, chunks of
  // them in parallel; block_fn leaves the block's kernel gradient in scratch.kpart and adds its
  // bias gradient to scratch.dbias (zeroed). The partials are summed into the parameters' sums.
  template <typename BlockFn>
  void SumBlocks(const Tensor& in, const Tensor& dout, GradientBlocks& blocks, BlockFn&& block_fn);

  ConvAlgorithm requested_ = ConvAlgorithm::kAuto;
  std::unique_ptr<internal::WinogradConv> winograd_;  // set when Build chose Winograd
  bool direct_ = false;                               // Build chose the direct convolution
  Tensor winograd_kernel_, winograd_kernel_t_;        // the transformed kernel, transposed
  bool inference_kernel_ = false;  // winograd_kernel_ holds PrepareForInference's transform
};

}  // namespace trainingd::engine
