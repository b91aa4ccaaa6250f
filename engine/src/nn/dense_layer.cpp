#include "trainingd/engine/nn/dense_layer.h"

#include <algorithm>
#include <numeric>

#include "nn/activation_kernels.h"
#include "nn/fixed_point.h"
#include "nn/gemm.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/nn/initializers.h"

namespace trainingd::engine {

DenseLayer::DenseLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)), spec_(spec) {}

Result<Shape> DenseLayer::Configure(const Shape& input) {
  if (input.rank() != 1) {
    return Status::InvalidArgument("dense expects a flat input [features], got " +
                                   input.ToString() + "; add a flatten layer before it");
  }
  if (spec_.units <= 0 || spec_.units > (1 << 20)) {
    return Status::InvalidArgument("units must be in [1, 1048576], got " +
                                   std::to_string(spec_.units));
  }
  in_ = input[0];
  if (in_ * spec_.units > (int64_t{1} << 30)) {
    return Status::InvalidArgument("kernel [" + std::to_string(in_) + "," +
                                   std::to_string(spec_.units) + "] exceeds 2^30 weights");
  }
  return Shape{spec_.units};
}

void DenseLayer::InitializeParameters(Rng& init_rng) {
  InitKernelAndBias(name(), spec_, Shape{in_, spec_.units}, spec_.units, in_, spec_.units, init_rng,
                    kernel_, bias_);
}

int64_t DenseLayer::RowsPerTile() const {
  // A whole number of 16-float lines per tile, so that a data-parallel rank's share of tiles
  // begins where an optimizer's chunk may (ParameterPart).
  const int64_t units = spec_.units, lines = 16 / std::gcd<int64_t>(units, 16);
  const int64_t rows = std::max<int64_t>(kTileElements / units, 1);
  return std::clamp<int64_t>((rows + lines - 1) / lines * lines, 1, in_);
}

bool DenseLayer::GatheredAt(int64_t global_batch) const {
  const int64_t weights = in_ * spec_.units, activations = global_batch * (in_ + spec_.units);
  return 2 * weights > activations || (spec_.units <= 16 && activations <= 16 * weights);
}

int64_t DenseLayer::ScratchBytes(int64_t batch, Mode mode, int threads) const {
  if (mode != Mode::kTrain) return 0;
  // Backward's masked output gradient, one block's bias partial, and per chunk one tile of
  // kernel partials; in a data-parallel step where the layer is gathered
  // (Model::MarkGatheredDenseLayers), the gathered inputs and output gradients and the ranks'
  // column parts of the wider of its output and its input gradient.
  const int64_t units = spec_.units, chunks = NumChunks(NumTiles(), 2, threads);
  const int64_t gathered =
      GatheredAt(batch) ? batch * (in_ + units) + batch * std::max(in_, units) : 0;
  // Mixed precision: the rounded operands of the largest of the step's products (the forward
  // one, the input gradient, a whole-batch kernel gradient), and per chunk those of a tile's
  // (its rows and the output gradients of at most the whole batch).
  const int64_t bf16 = mixed_ ? std::max({internal::GemmBf16Floats(batch, units, in_),
                                          internal::GemmBf16Floats(batch, in_, units),
                                          internal::GemmBf16Floats(in_, units, batch)}) +
                                    chunks * internal::GemmBf16Floats(RowsPerTile(), units, batch)
                              : 0;
  return 4 * (batch * units + units + chunks * RowsPerTile() * units + gathered + bf16);
}

void DenseLayer::Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                         const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                         int64_t ldc, FloatBuffer& bf16) const {
  if (!mixed_) {
    internal::Gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  const auto floats = static_cast<size_t>(internal::GemmBf16Floats(m, n, k));
  if (bf16.size() < floats) bf16.resize(floats);
  internal::GemmBf16(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, bf16.data());
}

void DenseLayer::PrepareForInference() {
  const int64_t units = spec_.units;
  if (units <= 16) return;
  packed_kernel_.assign(static_cast<size_t>(internal::PackedBFloats(in_, units)), 0.0f);
  internal::PackB(in_, units, kernel_.value.data(), units, packed_kernel_.data());
}

void DenseLayer::Forward(const Tensor& in, Tensor& out, Mode mode) {
  const int64_t batch = in.shape()[0], units = spec_.units;
  out.Resize(Shape{batch, units});
  const bool relu = spec_.activation == Activation::kRelu;
  if (step_) {
    // This rank's columns of the output, for the whole batch, then every rank's columns of its
    // own examples.
    step_->GatherRows(in.data(), in_, all_x_);
    const Shard c = step_->ColumnsOf(units, step_->rank());
    const int64_t all = step_->global();
    parts_by_rank_.resize(static_cast<size_t>(all * units));
    float* part = parts_by_rank_.data() + all * c.begin;
    Product(false, false, all, c.count, in_, all_x_.data(), in_, kernel_.value.data() + c.begin,
            units, part, c.count, bf16_);
    internal::AddBiasActivation(part, all, c.count, bias_.value.data() + c.begin, relu);
    step_->ShareColumns(parts_by_rank_, units, out.data());
    return;
  }
  if (mode == Mode::kEval && !packed_kernel_.empty()) {
    internal::GemmPackedB(batch, units, in_, in.data(), in_, packed_kernel_.data(), out.data(),
                          units);
  } else if (mode == Mode::kTrain) {
    Product(false, false, batch, units, in_, in.data(), in_, kernel_.value.data(), units,
            out.data(), units, bf16_);
  } else {
    internal::Gemm(false, false, batch, units, in_, in.data(), in_, kernel_.value.data(), units,
                   out.data(), units);
  }
  const float* b = bias_.value.data();
  // Rows in parallel only when there are many elements: the softmax's 100 x 10 outputs cost less
  // than a hand-off to the team.
  constexpr int64_t kMinParallelOutputs = int64_t{1} << 15;
  const int64_t min_rows = std::max<int64_t>(64, kMinParallelOutputs / std::max<int64_t>(units, 1));
  ParallelFor(batch, min_rows, [&](int64_t begin, int64_t end) {
    internal::AddBiasActivation(out.data() + begin * units, end - begin, units, b, relu);
  });
}

void DenseLayer::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                          GradientBlocks& blocks) {
  const int64_t batch = in.shape()[0], units = spec_.units;
  const float* g = dout.data();
  if (spec_.activation == Activation::kRelu) {
    dy_.Resize(dout.shape());
    internal::ReluGrad(out.data(), g, dy_.data(), dout.size());
    g = dy_.data();
  }
  if (din) din->Resize(in.shape());
  if (step_) {
    // The output gradients of the whole batch (kept for GatheredGradients), then this rank's
    // columns of the input gradient dx = dY * W^T for the whole batch, then every rank's
    // columns of its own examples.
    step_->GatherRows(g, units, all_dy_);
    if (!din) return;
    const Shard c = step_->ColumnsOf(in_, step_->rank());
    const int64_t all = step_->global();
    parts_by_rank_.resize(static_cast<size_t>(all * in_));
    float* part = parts_by_rank_.data() + all * c.begin;
    Product(false, true, all, c.count, units, all_dy_.data(), units,
            kernel_.value.data() + c.begin * units, units, part, c.count, bf16_);
    step_->ShareColumns(parts_by_rank_, in_, din->data());
    return;
  }
  if (gathered_) {
    WholeBatchGradients(in.data(), g, batch, 0, in_);
  } else {
    SumGradients(in.data(), g, batch, blocks, 0, NumTiles());
    if (blocks.whole()) FinishGradients(parameters());
  }
  // dx = dY * W^T
  if (din) {
    Product(false, true, batch, in_, units, g, units, kernel_.value.data(), units, din->data(), in_,
            bf16_);
  }
}

void DenseLayer::set_step(GradientBlocks* step) {
  step_ = step;
  if (step) step_global_ = step->global();
}

void DenseLayer::GatheredGradients(int64_t t0, int64_t t1) {
  WholeBatchGradients(all_x_.data(), all_dy_.data(), step_global_, FirstRowOfTile(t0),
                      FirstRowOfTile(t1));
}

int64_t DenseLayer::FirstRowOfTile(int64_t t) const { return std::min(t * RowsPerTile(), in_); }

void DenseLayer::WholeBatchGradients(const float* x, const float* g, int64_t batch, int64_t r0,
                                     int64_t r1) {
  const int64_t units = spec_.units;
  // dW[r0:r1] = x[:, r0:r1]^T * dY, every element a sum over the batch in the examples' order.
  Product(true, false, r1 - r0, units, batch, x + r0, in_, g, units,
          kernel_.grad.data() + r0 * units, units, bf16_);
  // db = the column sums of dY, in the same order.
  bias_.grad.SetZero();
  internal::AddColumnSums(g, batch, units, bias_.grad.data());
}

void DenseLayer::SumGradients(const float* x, const float* g, int64_t batch, GradientBlocks& blocks,
                              int64_t t0, int64_t t1) {
  const int64_t units = spec_.units;
  // The grids (gradient_blocks.h): a block's partial of dW is a sum of at most largest()
  // products x * dy, and of db a sum of as many dy.
  float maxima[2] = {internal::ParallelMaxAbs(x, batch * in_),
                     internal::ParallelMaxAbs(g, batch * units)};
  blocks.AgreeMax(maxima);
  const double dy_bound = static_cast<double>(blocks.largest()) * maxima[1];
  kernel_.sum_exponent = FixedPointExponent(dy_bound * maxima[0]);
  bias_.sum_exponent = FixedPointExponent(dy_bound);

  // dW = sum over blocks of x_block^T * dY_block, by tiles of kernel rows: each tile's block
  // partials come from one small GEMM per block and are added to the tile's sums while both are
  // in cache.
  const int64_t rows_per_tile = RowsPerTile();
  // The tiles on the calling thread alone when the product is small (the softmax's 784 x 10 over
  // a batch of 100): each tile's sums are the same bits either way.
  const double macs = static_cast<double>(std::min(in_, (t1 - t0) * rows_per_tile)) *
                      static_cast<double>(units) * static_cast<double>(batch);
  const int64_t min_tiles = macs < internal::kMinThreadedMacs ? t1 - t0 + 1 : 2;
  parts_.resize(static_cast<size_t>(NumChunks(t1 - t0, min_tiles)));
  bf16_parts_.resize(parts_.size());
  int64_t* kernel_sum = kernel_.sum.data();
  ParallelChunks(t1 - t0, min_tiles, [&](int chunk, int64_t c0, int64_t c1) {
    Tensor& part = parts_[static_cast<size_t>(chunk)];
    part.Resize(Shape{rows_per_tile, units});
    for (int64_t t = t0 + c0; t < t0 + c1; ++t) {
      const int64_t r0 = t * rows_per_tile, rows = std::min(rows_per_tile, in_ - r0);
      int64_t* sum = kernel_sum + r0 * units;
      std::fill(sum, sum + rows * units, 0);
      for (int k = 0; k < blocks.size(); ++k) {
        const int64_t b0 = blocks.begin(k), n = blocks.end(k) - b0;
        Product(true, false, rows, units, n, x + b0 * in_ + r0, in_, g + b0 * units, units,
                part.data(), units, bf16_parts_[static_cast<size_t>(chunk)]);
        internal::AddFixed(part.data(), rows * units, kernel_.sum_exponent, sum);
      }
    }
  });
  // db = sum over blocks of the column sums of dY_block.
  std::fill(bias_.sum.begin(), bias_.sum.end(), 0);
  dbias_part_.Resize(Shape{units});
  for (int k = 0; k < blocks.size(); ++k) {
    dbias_part_.SetZero();
    internal::AddColumnSums(g + blocks.begin(k) * units, blocks.end(k) - blocks.begin(k), units,
                            dbias_part_.data());
    internal::AddFixed(dbias_part_.data(), units, bias_.sum_exponent, bias_.sum.data());
  }
}

}  // namespace trainingd::engine
