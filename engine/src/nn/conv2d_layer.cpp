#include "trainingd/engine/nn/conv2d_layer.h"

#include <algorithm>
#include <cstring>

#include "nn/activation_kernels.h"
#include "nn/direct_conv.h"
#include "nn/fixed_point.h"
#include "nn/gemm.h"
#include "nn/winograd.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/nn/initializers.h"

namespace trainingd::engine {
namespace {
// Rows of the patch matrix per GEMM: large enough for an efficient product, small enough that the
// patch block stays in the core's L2 cache.
constexpr int64_t kTargetRowsPerBlock = 512;
// Transformed input and output of one Winograd block. Forward is fastest with blocks of a
// quarter of a core's L2 cache; Backward with larger ones, which make the sums into the
// transformed kernel gradient longer (conv_bench, one thread, the tutorial CNN's conv2d_1 on
// F(3x3, 5x5), batch 50: forward 3.9 / 4.2 / 4.8 ms at 256 KB / 512 KB / 1 MB, backward 9.0 / 8.6 /
// 8.4 ms; on F(4x4, 5x5), batch 200, 1 MB blocks forward and 2 MB backward were no faster).
constexpr int64_t kWinogradForwardBlockBytes = 1 << 18;
constexpr int64_t kWinogradBackwardBlockBytes = 1 << 20;
}  // namespace

const char* ConvAlgorithmName(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::kAuto:
      return "auto";
    case ConvAlgorithm::kIm2col:
      return "im2col";
    case ConvAlgorithm::kWinograd:
      return "winograd";
    case ConvAlgorithm::kDirect:
      return "direct";
  }
  return "?";
}

Conv2dLayer::Conv2dLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)), spec_(spec) {}

Conv2dLayer::~Conv2dLayer() = default;

ConvAlgorithm Conv2dLayer::algorithm() const {
  if (winograd_) return ConvAlgorithm::kWinograd;
  return direct_ ? ConvAlgorithm::kDirect : ConvAlgorithm::kIm2col;
}

Result<Shape> Conv2dLayer::Configure(const Shape& input) {
  if (input.rank() != 3) {
    return Status::InvalidArgument(
        "conv2d expects an input of shape [height,width,channels], got " + input.ToString());
  }
  if (spec_.filters <= 0 || spec_.filters > 65536) {
    return Status::InvalidArgument("filters must be in [1, 65536], got " +
                                   std::to_string(spec_.filters));
  }
  if (spec_.kernel <= 0 || spec_.kernel > 64) {
    return Status::InvalidArgument("kernel must be in [1, 64], got " +
                                   std::to_string(spec_.kernel));
  }
  if (spec_.stride <= 0 || spec_.stride > 64) {
    return Status::InvalidArgument("stride must be in [1, 64], got " +
                                   std::to_string(spec_.stride));
  }
  g_.h = input[0];
  g_.w = input[1];
  g_.c = input[2];
  g_.k = spec_.kernel;
  g_.stride = spec_.stride;
  g_.oc = spec_.filters;
  if (spec_.padding == Padding::kSame) {
    // TensorFlow's SAME: out = ceil(in / stride); the extra padding goes to the bottom/right.
    g_.oh = (g_.h + g_.stride - 1) / g_.stride;
    g_.ow = (g_.w + g_.stride - 1) / g_.stride;
    g_.pad_top = std::max<int64_t>((g_.oh - 1) * g_.stride + g_.k - g_.h, 0) / 2;
    g_.pad_left = std::max<int64_t>((g_.ow - 1) * g_.stride + g_.k - g_.w, 0) / 2;
  } else {
    if (g_.k > g_.h || g_.k > g_.w) {
      return Status::InvalidArgument("kernel " + std::to_string(g_.k) +
                                     " is larger than the input " + input.ToString() +
                                     " with valid padding");
    }
    g_.oh = (g_.h - g_.k) / g_.stride + 1;
    g_.ow = (g_.w - g_.k) / g_.stride + 1;
    g_.pad_top = g_.pad_left = 0;
  }
  ChooseAlgorithm();
  return Shape{g_.oh, g_.ow, g_.oc};
}

void Conv2dLayer::InitializeParameters(Rng& init_rng) {
  // TF's fans for a convolution: receptive field size times input / output channels.
  InitKernelAndBias(name(), spec_, Shape{g_.k, g_.k, g_.c, g_.oc}, g_.oc, g_.k * g_.k * g_.c,
                    g_.k * g_.k * g_.oc, init_rng, kernel_, bias_);
}

int64_t Conv2dLayer::ScratchBytes(int64_t batch, Mode mode, int threads) const {
  const bool train = mode == Mode::kTrain;
  const int64_t f = sizeof(float);
  // Backward, per chunk: one block's kernel and bias gradients and the chunk's exact (64-bit)
  // sums of them. Chunks own blocks, at most one per example.
  const int64_t kernel = g_.patch() * g_.oc;
  const int64_t block_sums = (f + 8) * (kernel + g_.oc);
  const int backward_chunks = NumChunks(batch, 2, threads);
  if (winograd_) {
    // The transformed kernel (and its transpose for Backward); per chunk a workspace for one
    // block of tiles (Forward chunks tiles, Backward blocks: the chunks share workspaces), and
    // in Backward the block's transformed kernel gradient.
    // (The workspaces only grow: in training they reach Backward's larger blocks.)
    const int64_t per_block =
        winograd_->TilesPerBlock(train ? kWinogradBackwardBlockBytes : kWinogradForwardBlockBytes);
    const int64_t workspace = winograd_->WorkspaceBytes(per_block);
    int chunks = NumChunks(batch * winograd_->tiles_per_example(), 2, threads);
    int64_t bytes = f * winograd_->kernel_size();
    if (train) {
      chunks = std::max(chunks, backward_chunks);
      bytes += f * winograd_->kernel_t_size() +
               backward_chunks * (f * winograd_->kernel_size() + block_sums);
    }
    return bytes + chunks * workspace;
  }
  if (direct_) {
    // Per chunk the padded image; in Backward also the block sums, one example's masked output
    // gradient and, for an input gradient, its patch gradients.
    const int64_t chunks = train ? backward_chunks : NumChunks(batch, 2, threads);
    int64_t per_chunk = f * DirectShape().padded_size();
    if (train)
      per_chunk += block_sums + f * ExamplesPerBlock() * g_.out_pixels() * (g_.oc + g_.patch());
    return chunks * per_chunk;
  }
  // Per chunk one patch block; in Backward also the block sums and, with the fused ReLU, the
  // masked output gradient of one patch block.
  const int64_t chunks = train ? backward_chunks : NumChunks(batch, 2, threads);
  const int64_t rows = ExamplesPerBlock() * g_.out_pixels();
  int64_t per_chunk = Pointwise() ? 0 : f * rows * g_.patch();
  if (train) {
    per_chunk += block_sums;
    if (spec_.activation == Activation::kRelu) per_chunk += f * rows * g_.oc;
  }
  return chunks * per_chunk;
}

void Conv2dLayer::set_algorithm(ConvAlgorithm algorithm) {
  requested_ = algorithm;
  if (g_.c > 0) ChooseAlgorithm();  // already built
}

void Conv2dLayer::ChooseAlgorithm() {
  winograd_.reset();
  direct_ = g_.c == 1 && g_.stride == 1 &&
            (requested_ == ConvAlgorithm::kAuto || requested_ == ConvAlgorithm::kDirect);
  if (direct_) return;
  const bool applies = g_.stride == 1 && internal::WinogradConv::TileSizeFor(g_.k) != 0;
  if (applies && (requested_ == ConvAlgorithm::kWinograd ||
                  (requested_ == ConvAlgorithm::kAuto && g_.c >= kWinogradMinChannels))) {
    winograd_ = std::make_unique<internal::WinogradConv>(internal::WinogradShape{
        g_.h, g_.w, g_.c, g_.oh, g_.ow, g_.oc, g_.k, g_.pad_top, g_.pad_left});
  }
}

internal::DirectConvShape Conv2dLayer::DirectShape() const {
  return {g_.h, g_.w, g_.oh, g_.ow, g_.oc, g_.k, g_.pad_top, g_.pad_left};
}

int64_t Conv2dLayer::ForwardFlopsPerExample() const {
  return 2 * g_.out_pixels() * g_.patch() * g_.oc;
}

int64_t Conv2dLayer::ExamplesPerBlock() const {
  const int64_t rows = kTargetRowsPerBlock;
  const int64_t pix = std::max<int64_t>(1, g_.out_pixels());
  return std::max<int64_t>(1, (rows + pix - 1) / pix);
}

// Lowers one example [h,w,c] into its patch matrix [oh*ow, k*k*c] (row: (ky, kx, c)), the rows
// of output pixels [p0, p1). For each output pixel and kernel row, the k*c values come from one
// contiguous run of the input row.
void Conv2dLayer::Im2Col(const float* x, float* col, int64_t p0, int64_t p1) const {
  const int64_t P = g_.patch(), kc = g_.k * g_.c;
  if (p1 < 0) p1 = g_.out_pixels();
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t oy = p / g_.ow, ox = p % g_.ow;
    float* row = col + p * P;
    const int64_t ix0 = ox * g_.stride - g_.pad_left;
    const int64_t kx_lo = std::max<int64_t>(0, -ix0);
    const int64_t kx_hi = std::min<int64_t>(g_.k, g_.w - ix0);
    for (int64_t ky = 0; ky < g_.k; ++ky) {
      float* dst = row + ky * kc;
      const int64_t iy = oy * g_.stride - g_.pad_top + ky;
      if (iy < 0 || iy >= g_.h || kx_lo >= kx_hi) {
        std::memset(dst, 0, sizeof(float) * kc);
        continue;
      }
      if (kx_lo > 0) std::memset(dst, 0, sizeof(float) * kx_lo * g_.c);
      std::memcpy(dst + kx_lo * g_.c, x + (iy * g_.w + ix0 + kx_lo) * g_.c,
                  sizeof(float) * (kx_hi - kx_lo) * g_.c);
      if (kx_hi < g_.k) std::memset(dst + kx_hi * g_.c, 0, sizeof(float) * (g_.k - kx_hi) * g_.c);
    }
  }
}

// The adjoint of Im2Col: adds every patch value back onto the input position it came from.
void Conv2dLayer::Col2ImAdd(const float* col, float* dx) const {
  const int64_t P = g_.patch(), kc = g_.k * g_.c;
  for (int64_t oy = 0; oy < g_.oh; ++oy) {
    for (int64_t ox = 0; ox < g_.ow; ++ox) {
      const float* row = col + (oy * g_.ow + ox) * P;
      const int64_t ix0 = ox * g_.stride - g_.pad_left;
      const int64_t kx_lo = std::max<int64_t>(0, -ix0);
      const int64_t kx_hi = std::min<int64_t>(g_.k, g_.w - ix0);
      if (kx_lo >= kx_hi) continue;
      const int64_t n = (kx_hi - kx_lo) * g_.c;
      for (int64_t ky = 0; ky < g_.k; ++ky) {
        const int64_t iy = oy * g_.stride - g_.pad_top + ky;
        if (iy < 0 || iy >= g_.h) continue;
        const float* src = row + ky * kc + kx_lo * g_.c;
        float* dst = dx + (iy * g_.w + ix0 + kx_lo) * g_.c;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      }
    }
  }
}

void Conv2dLayer::PrepareForInference() {
  if (!winograd_) return;
  winograd_kernel_.Resize(Shape{winograd_->kernel_size()});
  winograd_->TransformKernel(kernel_.value.data(), winograd_kernel_.data(), nullptr);
  inference_kernel_ = true;
}

void Conv2dLayer::WinogradForward(const Tensor& in, Tensor& out, Mode mode) {
  const int64_t batch = in.shape()[0], tiles = batch * winograd_->tiles_per_example();
  const int64_t per_block = winograd_->TilesPerBlock(kWinogradForwardBlockBytes);
  if (mode != Mode::kEval || !inference_kernel_) {
    inference_kernel_ = false;
    winograd_kernel_.Resize(Shape{winograd_->kernel_size()});
    winograd_->TransformKernel(kernel_.value.data(), winograd_kernel_.data(), nullptr);
  }
  scratch_.resize(static_cast<size_t>(NumChunks(tiles, 2)));
  const bool relu = spec_.activation == Activation::kRelu;
  ParallelChunks(tiles, 2, [&](int chunk, int64_t begin, int64_t end) {
    auto& ws = scratch_[static_cast<size_t>(chunk)].winograd;
    if (!ws) ws = std::make_unique<internal::WinogradWorkspace>();
    for (int64_t t0 = begin; t0 < end; t0 += per_block) {
      winograd_->Forward(in.data(), t0, std::min(end, t0 + per_block), winograd_kernel_.data(),
                         bias_.value.data(), relu, out.data(), *ws);
    }
  });
}

void Conv2dLayer::WinogradBackward(const Tensor& in, const Tensor& out, const Tensor& dout,
                                   Tensor* din, GradientBlocks& blocks) {
  const int64_t tpe = winograd_->tiles_per_example();
  const int64_t per_block = winograd_->TilesPerBlock(kWinogradBackwardBlockBytes);
  // Transformed again rather than trusting the forward pass's copy: it is cheap (about 0.1% of the
  // layer's work for the tutorial CNN) and keeps Backward correct whatever ran in between.
  inference_kernel_ = false;
  winograd_kernel_.Resize(Shape{winograd_->kernel_size()});
  winograd_kernel_t_.Resize(Shape{winograd_->kernel_t_size()});
  winograd_->TransformKernel(kernel_.value.data(), winograd_kernel_.data(),
                             winograd_kernel_t_.data());
  if (din) din->Resize(in.shape());
  const bool relu = spec_.activation == Activation::kRelu;
  const int64_t in_size = g_.h * g_.w * g_.c;
  SumBlocks(in, dout, blocks, [&](Scratch& s, int64_t b0, int64_t b1) {
    if (!s.winograd) s.winograd = std::make_unique<internal::WinogradWorkspace>();
    s.dkernel.Resize(Shape{winograd_->kernel_size()});
    s.dkernel.SetZero();
    float* dx = nullptr;
    if (din) {
      dx = din->data() + b0 * in_size;
      std::memset(dx, 0, sizeof(float) * static_cast<size_t>((b1 - b0) * in_size));
    }
    const float* x = in.data() + b0 * in_size;
    const int64_t out_offset = b0 * g_.out_pixels() * g_.oc;
    const int64_t tiles = (b1 - b0) * tpe;
    for (int64_t t0 = 0; t0 < tiles; t0 += per_block) {
      winograd_->Backward(x, out.data() + out_offset, dout.data() + out_offset, t0,
                          std::min(tiles, t0 + per_block), winograd_kernel_t_.data(), relu,
                          s.dkernel.data(), s.dbias.data(), dx, *s.winograd);
    }
    // The block's kernel gradient, back from the transformed domain.
    winograd_->KernelGradient(s.dkernel.data(), s.kpart.data());
  });
}

void Conv2dLayer::DirectForward(const Tensor& in, Tensor& out) {
  const internal::DirectConvShape d = DirectShape();
  const int64_t batch = in.shape()[0], in_size = g_.h * g_.w, out_size = g_.out_pixels() * g_.oc;
  const float* w = kernel_.value.data();
  const float* b = bias_.value.data();
  const bool relu = spec_.activation == Activation::kRelu;
  scratch_.resize(static_cast<size_t>(std::max(NumChunks(batch, 2), 1)));
  if (batch == 1 && ComputeThreads() > 1) {
    // One example (batch-1 inference): the threads take its output rows.
    Tensor& padded = scratch_[0].padded;
    padded.Resize(Shape{d.padded_size()});
    internal::PadImage(d, in.data(), padded.data());
    ParallelFor(g_.oh, 2, [&](int64_t oy0, int64_t oy1) {
      internal::DirectConvForward(d, padded.data(), w, b, relu, out.data(), oy0, oy1);
    });
    return;
  }
  ParallelChunks(batch, 2, [&](int chunk, int64_t begin, int64_t end) {
    Tensor& padded = scratch_[static_cast<size_t>(chunk)].padded;
    padded.Resize(Shape{d.padded_size()});
    for (int64_t e = begin; e < end; ++e) {
      internal::PadImage(d, in.data() + e * in_size, padded.data());
      internal::DirectConvForward(d, padded.data(), w, b, relu, out.data() + e * out_size, 0,
                                  g_.oh);
    }
  });
}

template <typename BlockFn>
void Conv2dLayer::SumBlocks(const Tensor& in, const Tensor& dout, GradientBlocks& blocks,
                            BlockFn&& block_fn) {
  // The grids (gradient_blocks.h): a block's kernel partial is a sum of at most largest() *
  // out_pixels products x * dy, its bias partial of as many dy. (dy through the ReLU is at most
  // dout, which is the one array to read.)
  float maxima[2] = {internal::ParallelMaxAbs(in.data(), in.size()),
                     internal::ParallelMaxAbs(dout.data(), dout.size())};
  blocks.AgreeMax(maxima);
  const double dy_bound =
      static_cast<double>(blocks.largest()) * static_cast<double>(g_.out_pixels()) * maxima[1];
  kernel_.sum_exponent = FixedPointExponent(dy_bound * maxima[0]);
  bias_.sum_exponent = FixedPointExponent(dy_bound);
  // Chunks own whole blocks: each chunk sums its blocks' partials into its own integer sums,
  // which are then added up (exactly, so in any order).
  const int chunks = NumChunks(blocks.size(), 2);
  scratch_.resize(static_cast<size_t>(std::max(chunks, 1)));
  ParallelChunks(blocks.size(), 2, [&](int chunk, int64_t k0, int64_t k1) {
    Scratch& s = scratch_[static_cast<size_t>(chunk)];
    s.kpart.Resize(kernel_.value.shape());
    s.dbias.Resize(Shape{g_.oc});
    s.ksum.assign(static_cast<size_t>(kernel_.value.size()), 0);
    s.bsum.assign(static_cast<size_t>(g_.oc), 0);
    for (int64_t k = k0; k < k1; ++k) {
      s.dbias.SetZero();
      block_fn(s, blocks.begin(static_cast<int>(k)), blocks.end(static_cast<int>(k)));
      internal::AddFixed(s.kpart.data(), s.kpart.size(), kernel_.sum_exponent, s.ksum.data());
      internal::AddFixed(s.dbias.data(), g_.oc, bias_.sum_exponent, s.bsum.data());
    }
  });
  std::fill(kernel_.sum.begin(), kernel_.sum.end(), 0);
  std::fill(bias_.sum.begin(), bias_.sum.end(), 0);
  for (int c = 0; c < std::min<int>(chunks, blocks.size()); ++c) {
    const Scratch& s = scratch_[static_cast<size_t>(c)];
    for (size_t i = 0; i < kernel_.sum.size(); ++i) kernel_.sum[i] += s.ksum[i];
    for (size_t i = 0; i < bias_.sum.size(); ++i) bias_.sum[i] += s.bsum[i];
  }
  if (blocks.whole()) FinishGradients(parameters());
}

void Conv2dLayer::Forward(const Tensor& in, Tensor& out, Mode mode) {
  const int64_t batch = in.shape()[0];
  out.Resize(Shape{batch, g_.oh, g_.ow, g_.oc});
  if (winograd_) return WinogradForward(in, out, mode);
  if (direct_) return DirectForward(in, out);
  const int64_t in_size = g_.h * g_.w * g_.c, pix = g_.out_pixels(), P = g_.patch();
  const int64_t per_block = ExamplesPerBlock();
  scratch_.resize(static_cast<size_t>(NumChunks(batch, 2)));
  const float* w = kernel_.value.data();
  const float* b = bias_.value.data();
  const bool relu = spec_.activation == Activation::kRelu;
  if (batch == 1 && ComputeThreads() > 1) {
    // One example (batch-1 inference): the threads take its output pixels, each lowering and
    // multiplying its rows of the one patch matrix; every element is the same fma chain.
    Tensor& col = scratch_[0].col;
    if (!Pointwise()) col.Resize(Shape{per_block * pix, P});
    ParallelFor(pix, 64, [&](int64_t p0, int64_t p1) {
      const float* a = in.data();
      if (!Pointwise()) {
        Im2Col(in.data(), col.data(), p0, p1);
        a = col.data();
      }
      float* y = out.data() + p0 * g_.oc;
      internal::Gemm(false, false, p1 - p0, g_.oc, P, a + p0 * P, P, w, g_.oc, y, g_.oc);
      internal::AddBiasActivation(y, p1 - p0, g_.oc, b, relu);
    });
    return;
  }
  ParallelChunks(batch, 2, [&](int chunk, int64_t begin, int64_t end) {
    Tensor& col = scratch_[static_cast<size_t>(chunk)].col;
    if (!Pointwise()) col.Resize(Shape{per_block * pix, P});
    for (int64_t e0 = begin; e0 < end; e0 += per_block) {
      const int64_t ne = std::min(per_block, end - e0);
      // A 1x1 stride-1 convolution's patch matrix is its input: a plain product.
      const float* a = in.data() + e0 * in_size;
      if (!Pointwise()) {
        for (int64_t e = 0; e < ne; ++e)
          Im2Col(in.data() + (e0 + e) * in_size, col.data() + e * pix * P);
        a = col.data();
      }
      float* y = out.data() + e0 * pix * g_.oc;
      internal::Gemm(false, false, ne * pix, g_.oc, P, a, P, w, g_.oc, y, g_.oc);
      internal::AddBiasActivation(y, ne * pix, g_.oc, b, relu);
    }
  });
}

void Conv2dLayer::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                           GradientBlocks& blocks) {
  if (winograd_) return WinogradBackward(in, out, dout, din, blocks);
  const int64_t in_size = g_.h * g_.w * g_.c, pix = g_.out_pixels(), P = g_.patch(), oc = g_.oc;
  const int64_t per_block = ExamplesPerBlock();
  if (din) din->Resize(in.shape());
  const float* w = kernel_.value.data();
  const bool relu = spec_.activation == Activation::kRelu;
  const internal::DirectConvShape d = DirectShape();
  SumBlocks(in, dout, blocks, [&](Scratch& s, int64_t b0, int64_t b1) {
    if (!Pointwise() && (!direct_ || din)) s.col.Resize(Shape{per_block * pix, P});
    if (direct_) s.padded.Resize(Shape{d.padded_size()});
    s.kpart.SetZero();
    if (relu) s.dy.Resize(Shape{per_block * pix, oc});
    for (int64_t e0 = b0; e0 < b1; e0 += per_block) {
      const int64_t ne = std::min(per_block, b1 - e0), rows = ne * pix;
      const float* g = dout.data() + e0 * pix * oc;
      if (relu) {
        internal::ReluGrad(out.data() + e0 * pix * oc, g, s.dy.data(), rows * oc);
        g = s.dy.data();
      }
      internal::AddColumnSums(g, rows, oc, s.dbias.data());
      if (direct_) {
        // dK += patches^T * dY, from the padded images: the same chains as the product's.
        for (int64_t e = 0; e < ne; ++e) {
          internal::PadImage(d, in.data() + (e0 + e) * in_size, s.padded.data());
          internal::DirectConvKernelGradient(d, s.padded.data(), g + e * pix * oc, s.kpart.data());
        }
      } else {
        const float* a = in.data() + e0 * in_size;
        if (!Pointwise()) {
          for (int64_t e = 0; e < ne; ++e)
            Im2Col(in.data() + (e0 + e) * in_size, s.col.data() + e * pix * P);
          a = s.col.data();
        }
        // dK += patches^T * dY
        internal::Gemm(true, false, P, oc, rows, a, P, g, oc, s.kpart.data(), oc,
                       /*accumulate=*/true);
      }
      if (din && Pointwise()) {
        // dX = dY * K^T is the input gradient itself.
        internal::Gemm(false, true, rows, P, oc, g, oc, w, oc, din->data() + e0 * in_size, P);
      } else if (din) {
        // dPatches = dY * K^T, then scatter back onto the input positions.
        internal::Gemm(false, true, rows, P, oc, g, oc, w, oc, s.col.data(), P);
        float* dx = din->data() + e0 * in_size;
        std::memset(dx, 0, sizeof(float) * ne * in_size);
        for (int64_t e = 0; e < ne; ++e) Col2ImAdd(s.col.data() + e * pix * P, dx + e * in_size);
      }
    }
  });
}

}  // namespace trainingd::engine
