#include "trainingd/engine/nn/batch_norm_layer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "base/float_format.h"
#include "nn/fixed_point.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/gradient_blocks.h"

namespace trainingd::engine {
namespace {

// Adds every block's partial of channel c, rounded onto the grid 2^-exponents[c], to sums[c].
void AddPartials(const std::vector<double>& parts, int64_t channels, const int* exponents,
                 int64_t* sums) {
  const int64_t blocks = static_cast<int64_t>(parts.size()) / std::max<int64_t>(channels, 1);
  for (int64_t k = 0; k < blocks; ++k) {
    for (int64_t c = 0; c < channels; ++c) {
      if (exponents[c] == kNonFiniteExponent) continue;
      sums[c] +=
          std::llrint(std::ldexp(parts[static_cast<size_t>(k * channels + c)], exponents[c]));
    }
  }
}

// One pass over each block's rows (pixels of its examples) that forms what a channel statistic
// needs: parts[k * channels + c] = the sum of row's values over block k's rows, in double, in
// row order from zero (the same bits whoever forms it), and bound[c] = the largest magnitude over
// all rows (a maximum is exact and order-free, so the split changes nothing). row(r, part, most)
// adds row r's values to part[] and raises most[] (both `channels` long). One read of the rows
// instead of two (bound, then partials); the row's loops each vectorize (one fused loop mixing
// float, double and integer lanes made GCC gather).
template <typename T, typename Row>
void BlockPartialsAndBound(const GradientBlocks& b, int64_t pixels, int64_t channels, Row&& row,
                           std::vector<double>& parts, std::vector<T>& bound) {
  parts.assign(static_cast<size_t>(b.size() * channels), 0.0);
  std::vector<T> most(static_cast<size_t>(b.size() * channels), T{0});
  ParallelFor(b.size(), 2, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      double* part = parts.data() + k * channels;
      T* mk = most.data() + k * channels;
      const int64_t r1 = b.end(static_cast<int>(k)) * pixels;
      for (int64_t r = b.begin(static_cast<int>(k)) * pixels; r < r1; ++r) row(r, part, mk);
    }
  });
  bound.assign(static_cast<size_t>(channels), T{0});
  for (int64_t k = 0; k < b.size(); ++k)
    for (int64_t c = 0; c < channels; ++c)
      bound[static_cast<size_t>(c)] =
          std::max(bound[static_cast<size_t>(c)], most[static_cast<size_t>(k * channels + c)]);
}

// |x| as the integer of its bits: magnitudes order as these do; a NaN's or an infinity's are
// 0x7F800000 and up.
inline uint32_t AbsBits(float x) { return std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu; }
// The larger of two, on values: std::max's references kept GCC from vectorizing these loops.
inline uint32_t Larger(uint32_t a, uint32_t b) { return a < b ? b : a; }
// xhat = (x - mean) / sqrt(var + epsilon), as Forward computes it and Backward again from the
// layer's input: not kept, which saves a write of every activation and its memory.
inline float Normalized(float x, float mean, float inv_std) { return (x - mean) * inv_std; }
// y = gamma xhat + beta, one helper for Forward and for Backward's recomputed ReLU mask, so both
// are the same float operations (no contraction into a fused multiply-add in one and not the
// other) and so the same bits.
inline float Scaled(float h, float gamma, float beta) { return gamma * h + beta; }
// max(v, 0) with std::max's bits (NaN and -0 pass), as the relu layer computes it.
inline float Relu(float v) { return v < 0.0f ? 0.0f : v; }
// The gradient a fused ReLU passes to y = gamma h + beta: dy where y > 0 (recomputed from h as
// Forward formed it, through Scaled), else 0; without kRelu, dy. dy is read either way: a load
// under the condition did not vectorize.
template <bool kRelu>
inline float Passed(float dy, float h, float gamma, float beta) {
  if constexpr (kRelu) {
    // dy's bits and-ed with all ones or zeros: the select stays a vector operation in the
    // loops that add into doubles (as `? dy : 0.0f` GCC 12 made them scalar, with a branch).
    const uint32_t keep = 0u - static_cast<uint32_t>(Scaled(h, gamma, beta) > 0.0f);
    return std::bit_cast<float>(std::bit_cast<uint32_t>(dy) & keep);
  } else {
    return dy;
  }
}
// f(std::integral_constant<int64_t, C>) for the ResNets' channel counts (16, 32, 64), else
// f(std::integral_constant<int64_t, 0>): a row loop over a known count compiles to straight
// vector code, without the loop overhead that is much of a short row's time.
template <typename F>
void WithChannels(int64_t C, F&& f) {
  if (C == 16) return f(std::integral_constant<int64_t, 16>{});
  if (C == 32) return f(std::integral_constant<int64_t, 32>{});
  if (C == 64) return f(std::integral_constant<int64_t, 64>{});
  f(std::integral_constant<int64_t, 0>{});
}
// The bound a largest AbsBits stands for: INFINITY for a non-finite value.
inline float BoundOfBits(uint32_t m) {
  return m >= 0x7F800000u ? INFINITY : std::bit_cast<float>(m);
}

double FromFixed(int64_t sum, int exponent) {
  return exponent == kNonFiniteExponent ? NAN : std::ldexp(static_cast<double>(sum), -exponent);
}

}  // namespace

BatchNormLayer::BatchNormLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)), momentum_(spec.momentum), epsilon_(spec.epsilon) {}

Result<Shape> BatchNormLayer::Configure(const Shape& input) {
  if (input.rank() != 1 && input.rank() != 3) {
    return Status::InvalidArgument("batch_norm normalizes [H, W, C] or [F] inputs, got " +
                                   input.ToString());
  }
  if (!(momentum_ >= 0.0f && momentum_ <= 1.0f)) {
    return Status::InvalidArgument("momentum must be in [0, 1], got " +
                                   internal::FloatToString(momentum_));
  }
  if (!(epsilon_ > 0.0f && std::isfinite(epsilon_))) {
    return Status::InvalidArgument("epsilon must be positive and finite, got " +
                                   internal::FloatToString(epsilon_));
  }
  channels_ = input[input.rank() - 1];
  pixels_ = input.num_elements() / channels_;
  return input;
}

void BatchNormLayer::InitializeParameters(Rng& /*init_rng*/) {
  const Shape shape{channels_};
  gamma_ = {this->name() + "/gamma", Tensor(shape, 1.0f), Tensor(shape), {}, 0};
  beta_ = {this->name() + "/beta", Tensor(shape, 0.0f), Tensor(shape), {}, 0};
  moving_mean_ = {this->name() + "/moving_mean", Tensor(shape, 0.0f), Tensor(), {}, 0};
  moving_variance_ = {this->name() + "/moving_variance", Tensor(shape, 1.0f), Tensor(), {}, 0};
}

int64_t BatchNormLayer::ScratchBytes(int64_t /*batch*/, Mode mode, int /*threads*/) const {
  // The moving statistics, and in training the per-channel statistics (xhat is recomputed in
  // Backward, not kept).
  const int64_t stats = 2 * 4 * channels_;
  if (mode == Mode::kEval) return stats;
  return stats + (2 * 4 + 2 * 8) * channels_;
}

void BatchNormLayer::ExactChannelSums(GradientBlocks& b, std::vector<float> bound,
                                      const std::vector<double>& parts, std::vector<double>& sums) {
  b.AgreeMax(bound);
  std::vector<int> exponents(static_cast<size_t>(channels_));
  for (int64_t c = 0; c < channels_; ++c) {
    exponents[static_cast<size_t>(c)] =
        FixedPointExponent(static_cast<double>(b.largest()) * static_cast<double>(pixels_) *
                           static_cast<double>(bound[static_cast<size_t>(c)]));
  }
  std::vector<int64_t> fixed(static_cast<size_t>(channels_), 0);
  AddPartials(parts, channels_, exponents.data(), fixed.data());
  b.AgreeSum(fixed);
  sums.resize(static_cast<size_t>(channels_));
  for (int64_t c = 0; c < channels_; ++c) {
    sums[static_cast<size_t>(c)] =
        FromFixed(fixed[static_cast<size_t>(c)], exponents[static_cast<size_t>(c)]);
  }
}

void BatchNormLayer::Forward(const Tensor& in, Tensor& out, Mode mode) {
  out.Resize(in.shape());
  last_mode_ = mode;
  const int64_t batch = in.shape()[0];
  const int64_t rows = batch * pixels_, C = channels_;
  const float* x = in.data();
  float* y = out.data();
  const float* gamma = gamma_.value.data();
  const float* beta = beta_.value.data();
  if (mode == Mode::kEval) {
    std::vector<float> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      const float s = gamma[c] / std::sqrt(moving_variance_.value[c] + epsilon_);
      scale[static_cast<size_t>(c)] = s;
      shift[static_cast<size_t>(c)] = beta[c] - moving_mean_.value[c] * s;
    }
    const bool relu = relu_;
    ParallelFor(rows, 1024, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        if (relu) {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) y[r * C + c] = Relu(x[r * C + c] * scale[c] + shift[c]);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) y[r * C + c] = x[r * C + c] * scale[c] + shift[c];
        }
      }
    });
    return;
  }
  GradientBlocks* step = step_ && step_->examples() == batch ? step_ : nullptr;
  GradientBlocks whole = GradientBlocks::Whole(batch);
  GradientBlocks& b = step ? *step : whole;
  const double n = static_cast<double>(b.global()) * pixels_;
  // The mean, then the variance about it (two passes: no cancellation). Each pass forms the block
  // partials and the bound their grid is fitted to at once.
  std::vector<double> parts;
  std::vector<uint32_t> most;
  WithChannels(C, [&](auto channels) {
    constexpr int64_t kC = decltype(channels)::value;
    const int64_t Cn = kC ? kC : C;
    BlockPartialsAndBound(
        b, pixels_, Cn,
        [&](int64_t r, double* part, uint32_t* m) {
          const float* xr = x + r * Cn;
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c) part[c] += static_cast<double>(xr[c]);
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c) m[c] = Larger(m[c], AbsBits(xr[c]));
        },
        parts, most);
  });
  std::vector<float> bound(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) bound[c] = BoundOfBits(most[c]);
  ExactChannelSums(b, bound, parts, mean_);
  for (double& m : mean_) m /= n;
  const double* mu_d = mean_.data();
  // The squares' bound passes NaNs over, as std::max(bound, NaN) does (a NaN input already made
  // the mean's bound infinite).
  WithChannels(C, [&](auto channels) {
    constexpr int64_t kC = decltype(channels)::value;
    const int64_t Cn = kC ? kC : C;
    BlockPartialsAndBound(
        b, pixels_, Cn,
        [&](int64_t r, double* part, float* m) {
          const float* xr = x + r * Cn;
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c) {
            const double d = xr[c] - mu_d[c];
            part[c] += d * d;
          }
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c) {
            const double d = xr[c] - mu_d[c];
            const float q = static_cast<float>(d * d);
            m[c] = m[c] < q ? q : m[c];
          }
        },
        parts, bound);
  });
  ExactChannelSums(b, bound, parts, var_);
  for (double& v : var_) v /= n;
  inv_std_.resize(static_cast<size_t>(C));
  mean_f_.resize(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    inv_std_[c] = static_cast<float>(1.0 / std::sqrt(var_[c] + static_cast<double>(epsilon_)));
    mean_f_[c] = static_cast<float>(mean_[c]);
  }
  const float* inv = inv_std_.data();
  const float* mu = mean_f_.data();
  const bool relu = relu_;
  WithChannels(C, [&](auto channels) {
    constexpr int64_t kC = decltype(channels)::value;
    const int64_t Cn = kC ? kC : C;
    ParallelFor(rows, 1024, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * Cn;
        float* yr = y + r * Cn;
        if (relu) {
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c)
            yr[c] = Relu(Scaled(Normalized(xr[c], mu[c], inv[c]), gamma[c], beta[c]));
        } else {
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c)
            yr[c] = Scaled(Normalized(xr[c], mu[c], inv[c]), gamma[c], beta[c]);
        }
      }
    });
  });
  // Keras: moving = moving * momentum + batch * (1 - momentum).
  for (int64_t c = 0; c < C; ++c) {
    float& mm = moving_mean_.value[c];
    float& mv = moving_variance_.value[c];
    mm = mm * momentum_ + mean_f_[c] * (1.0f - momentum_);
    mv = mv * momentum_ + static_cast<float>(var_[c]) * (1.0f - momentum_);
  }
}

void BatchNormLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                              Tensor* din, GradientBlocks& blocks) {
  const int64_t batch = in.shape()[0];
  const int64_t rows = batch * pixels_, C = channels_;
  const float* dy = dout.data();
  const float* x = in.data();
  const float* mu = mean_f_.data();
  const float* inv = inv_std_.data();
  const float* gamma = gamma_.value.data();
  const float* beta = beta_.value.data();
  // A fused ReLU (FuseRelu) passes dy where Forward's gamma xhat + beta > 0, recomputed here.
  const bool relu = relu_;
  // The grids: a block's partial of dy or dy * xhat per channel is a sum of largest() * pixels
  // terms of at most max|dy| (times max|xhat|). One pass forms both maxima and both partials.
  std::vector<double> dbeta_parts, dgamma_parts;
  float maxima[2];
  {
    const int64_t nb = blocks.size();
    dbeta_parts.assign(static_cast<size_t>(nb * C), 0.0);
    dgamma_parts.assign(static_cast<size_t>(nb * C), 0.0);
    // Per block and channel the largest |dy| and |xhat| bits, for the whole-array maxima.
    std::vector<uint32_t> most(static_cast<size_t>(2 * nb * C), 0);
    // One instance per kRelu, so each loop stays a plain vector loop (the masked dy is formed
    // again in each loop), and per channel count (WithChannels; kC 0: any other, C). Either way
    // each channel's operations are the same, in the same order.
    const auto block_partials = [&](auto relu_tag, auto channels_tag) {
      constexpr bool kRelu = decltype(relu_tag)::value;
      constexpr int64_t kC = decltype(channels_tag)::value;
      const int64_t Cn = kC ? kC : C;
      ParallelFor(nb, 2, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
          double* pb = dbeta_parts.data() + k * Cn;
          double* pg = dgamma_parts.data() + k * Cn;
          uint32_t* mdy = most.data() + 2 * k * Cn;
          uint32_t* mxh = mdy + Cn;
          std::vector<float> row(static_cast<size_t>(2 * Cn));
          float* h = row.data();
          float* gr = h + Cn;
          const int64_t r1 = blocks.end(static_cast<int>(k)) * pixels_;
          for (int64_t r = blocks.begin(static_cast<int>(k)) * pixels_; r < r1; ++r) {
            const float* g = dy + r * Cn;
            const float* xr = x + r * Cn;
#pragma omp simd
            for (int64_t c = 0; c < Cn; ++c) h[c] = Normalized(xr[c], mu[c], inv[c]);
            if constexpr (kRelu) {
              // dy's row read in full into L1 first: GCC turns the masking below into loads
              // under the mask, which wait for the mask and then for memory.
#pragma omp simd
              for (int64_t c = 0; c < Cn; ++c) gr[c] = g[c];
              g = gr;
            }
#pragma omp simd
            for (int64_t c = 0; c < Cn; ++c)
              pb[c] += static_cast<double>(Passed<kRelu>(g[c], h[c], gamma[c], beta[c]));
#pragma omp simd
            for (int64_t c = 0; c < Cn; ++c) {
              pg[c] += static_cast<double>(Passed<kRelu>(g[c], h[c], gamma[c], beta[c])) *
                       static_cast<double>(h[c]);
            }
#pragma omp simd
            for (int64_t c = 0; c < Cn; ++c)
              mdy[c] = Larger(mdy[c], AbsBits(Passed<kRelu>(g[c], h[c], gamma[c], beta[c])));
#pragma omp simd
            for (int64_t c = 0; c < Cn; ++c) mxh[c] = Larger(mxh[c], AbsBits(h[c]));
          }
        }
      });
    };
    if (relu) {
      WithChannels(C, [&](auto channels) { block_partials(std::true_type{}, channels); });
    } else {
      WithChannels(C, [&](auto channels) { block_partials(std::false_type{}, channels); });
    }
    uint32_t mdy = 0, mxh = 0;
    for (int64_t k = 0; k < nb; ++k)
      for (int64_t c = 0; c < C; ++c) {
        mdy = std::max(mdy, most[static_cast<size_t>(2 * k * C + c)]);
        mxh = std::max(mxh, most[static_cast<size_t>((2 * k + 1) * C + c)]);
      }
    maxima[0] = BoundOfBits(mdy);
    maxima[1] = BoundOfBits(mxh);
  }
  blocks.AgreeMax(maxima);
  const double dy_bound =
      static_cast<double>(blocks.largest()) * static_cast<double>(pixels_) * maxima[0];
  beta_.sum_exponent = FixedPointExponent(dy_bound);
  gamma_.sum_exponent = FixedPointExponent(dy_bound * maxima[1]);
  const std::vector<int> beta_exp(static_cast<size_t>(C), beta_.sum_exponent);
  const std::vector<int> gamma_exp(static_cast<size_t>(C), gamma_.sum_exponent);
  std::fill(beta_.sum.begin(), beta_.sum.end(), 0);
  std::fill(gamma_.sum.begin(), gamma_.sum.end(), 0);
  AddPartials(dbeta_parts, C, beta_exp.data(), beta_.sum.data());
  AddPartials(dgamma_parts, C, gamma_exp.data(), gamma_.sum.data());
  if (din) {
    // dx = gamma / sqrt(var + eps) / n * (n dy - sum(dy) - xhat sum(dy xhat)), the sums over the
    // global batch: this rank's integer sums added up over the ranks.
    std::vector<int64_t> global(static_cast<size_t>(2 * C));
    std::copy(beta_.sum.begin(), beta_.sum.end(), global.begin());
    std::copy(gamma_.sum.begin(), gamma_.sum.end(), global.begin() + C);
    blocks.AgreeSum(global);
    const double n = static_cast<double>(blocks.global()) * static_cast<double>(pixels_);
    std::vector<float> a(static_cast<size_t>(C)), sdy(static_cast<size_t>(C)),
        sdyx(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      a[c] = static_cast<float>(gamma_.value[c] * inv_std_[c] / n);
      sdy[c] = static_cast<float>(FromFixed(global[c], beta_.sum_exponent));
      sdyx[c] = static_cast<float>(FromFixed(global[C + c], gamma_.sum_exponent));
    }
    din->Resize(in.shape());
    float* dx = din->data();
    const float nf = static_cast<float>(n);
    // Specialized as the partials above are; with a fused ReLU dy's row is read into L1 first.
    const auto input_gradient = [&](auto relu_tag, auto channels_tag) {
      constexpr bool kRelu = decltype(relu_tag)::value;
      constexpr int64_t kC = decltype(channels_tag)::value;
      const int64_t Cn = kC ? kC : C;
      ParallelFor(rows, 1024, [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<size_t>(Cn));
        float* gr = row.data();
        for (int64_t r = r0; r < r1; ++r) {
          const float* g = dy + r * Cn;
          const float* xr = x + r * Cn;
          float* dr = dx + r * Cn;
          if constexpr (kRelu) {
#pragma omp simd
            for (int64_t c = 0; c < Cn; ++c) gr[c] = g[c];
            g = gr;
          }
#pragma omp simd
          for (int64_t c = 0; c < Cn; ++c) {
            const float h = Normalized(xr[c], mu[c], inv[c]);
            dr[c] = a[c] * (nf * Passed<kRelu>(g[c], h, gamma[c], beta[c]) - sdy[c] - h * sdyx[c]);
          }
        }
      });
    };
    if (relu) {
      WithChannels(C, [&](auto channels) { input_gradient(std::true_type{}, channels); });
    } else {
      WithChannels(C, [&](auto channels) { input_gradient(std::false_type{}, channels); });
    }
  }
  if (blocks.whole()) FinishGradients(parameters());
}

}  // namespace trainingd::engine
