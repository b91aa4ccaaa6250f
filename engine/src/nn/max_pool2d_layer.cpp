#include "trainingd/engine/nn/max_pool2d_layer.h"

#include <cstring>

#include "nn/pool_geometry.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine {

MaxPool2dLayer::MaxPool2dLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)),
      pool_(spec.pool),
      stride_(spec.stride > 0 ? spec.stride : spec.pool) {}

Result<Shape> MaxPool2dLayer::Configure(const Shape& input) {
  PoolGeometry g;
  Result<Shape> out = ConfigurePool("max_pool2d", input, pool_, stride_, &g);
  h_ = g.h;
  w_ = g.w;
  c_ = g.c;
  oh_ = g.oh;
  ow_ = g.ow;
  return out;
}

int64_t MaxPool2dLayer::ScratchBytes(int64_t batch, Mode /*mode*/, int /*threads*/) const {
  // Forward records the argmax of every output element, in both modes.
  return static_cast<int64_t>(sizeof(int32_t)) * batch * oh_ * ow_ * c_;
}

namespace {

// One register of channels, read and written at any float (GCC's vector extensions): sixteen
// lanes with AVX-512, eight with AVX2, four with SSE. GCC 12 compiled a vector wider than the
// target's registers (sixteen lanes on AVX2) to scalar code through the stack: the CNN's first
// pooling took 6.7 ms at batch 200 instead of 2.5 (docs/benchmarks.md#avx2).
#if defined(__AVX512F__)
constexpr int64_t kWidth = 16;
#elif defined(__AVX2__)
constexpr int64_t kWidth = 8;
#else
constexpr int64_t kWidth = 4;
#endif
typedef float FV __attribute__((vector_size(kWidth * 4), aligned(4), may_alias));
typedef int32_t IV __attribute__((vector_size(kWidth * 4), aligned(4), may_alias));
constexpr int32_t kLaneIndex[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static_assert(kWidth <= 16);

// One output pixel's window maxima for channels [c0, c0 + kWidth): the first largest value in
// the window's (ky, kx) order and its offset, kept in registers until both are stored once. (A
// NaN first in the window stays; one after it never wins, as `v > best` is false for it.)
void PoolLanes(const float* x, const int32_t* offsets, int64_t taps, int64_t c0, float* y,
               int32_t* argmax) {
  const IV lanes = *reinterpret_cast<const IV*>(kLaneIndex) + static_cast<int32_t>(c0);
  FV best = *reinterpret_cast<const FV*>(x + offsets[0] + c0);
  IV arg = lanes + offsets[0];
  for (int64_t t = 1; t < taps; ++t) {
    const FV v = *reinterpret_cast<const FV*>(x + offsets[t] + c0);
    const IV gt = v > best;
    best = gt ? v : best;
    arg = gt ? lanes + offsets[t] : arg;
  }
  *reinterpret_cast<FV*>(y + c0) = best;
  *reinterpret_cast<IV*>(argmax + c0) = arg;
}

// The same for the one channel c.
void PoolOne(const float* x, const int32_t* offsets, int64_t taps, int64_t c, float* y,
             int32_t* argmax) {
  float best = x[offsets[0] + c];
  int32_t arg = offsets[0] + static_cast<int32_t>(c);
  for (int64_t t = 1; t < taps; ++t) {
    const float v = x[offsets[t] + c];
    if (v > best) {
      best = v;
      arg = offsets[t] + static_cast<int32_t>(c);
    }
  }
  y[c] = best;
  argmax[c] = arg;
}

}  // namespace

void MaxPool2dLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in.shape()[0];
  out.Resize(Shape{batch, oh_, ow_, c_});
  argmax_.resize(static_cast<size_t>(out.size()));
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_, taps = pool_ * pool_;
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> offsets(static_cast<size_t>(taps));  // the window's pixels in x
    for (int64_t n = begin; n < end; ++n) {
      const float* x = in.data() + n * in_size;
      for (int64_t oy = 0; oy < oh_; ++oy) {
        for (int64_t ox = 0; ox < ow_; ++ox) {
          for (int64_t ky = 0; ky < pool_; ++ky)
            for (int64_t kx = 0; kx < pool_; ++kx)
              offsets[static_cast<size_t>(ky * pool_ + kx)] =
                  static_cast<int32_t>(((oy * stride_ + ky) * w_ + ox * stride_ + kx) * c_);
          const int64_t o = n * out_size + (oy * ow_ + ox) * c_;
          float* y = out.data() + o;
          int32_t* am = argmax_.data() + o;
          int64_t c0 = 0;
          for (; c0 + kWidth <= c_; c0 += kWidth) PoolLanes(x, offsets.data(), taps, c0, y, am);
          for (; c0 < c_; ++c0) PoolOne(x, offsets.data(), taps, c0, y, am);
        }
      }
    }
  });
}

void MaxPool2dLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                              Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  const int64_t batch = in.shape()[0];
  din->Resize(in.shape());
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  // Non-overlapping windows that tile the input exactly: every input element belongs to one
  // window, so each is written once (its gradient or zero) and no zeroing pass is needed.
  const bool tiles = pool_ == stride_ && oh_ * pool_ == h_ && ow_ * pool_ == w_;
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    if (!tiles)
      std::memset(din->data() + begin * in_size, 0, sizeof(float) * (end - begin) * in_size);
    for (int64_t n = begin; n < end; ++n) {
      float* dx = din->data() + n * in_size;
      const float* dy = dout.data() + n * out_size;
      const int32_t* am = argmax_.data() + n * out_size;
      if (!tiles) {
        for (int64_t i = 0; i < out_size; ++i) dx[am[i]] += dy[i];
        continue;
      }
      for (int64_t oy = 0; oy < oh_; ++oy) {
        for (int64_t ox = 0; ox < ow_; ++ox) {
          const int64_t o = (oy * ow_ + ox) * c_;
          for (int64_t ky = 0; ky < pool_; ++ky) {
            for (int64_t kx = 0; kx < pool_; ++kx) {
              const int32_t off =
                  static_cast<int32_t>(((oy * pool_ + ky) * w_ + ox * pool_ + kx) * c_);
#pragma omp simd
              for (int64_t c = 0; c < c_; ++c) {
                dx[off + c] = am[o + c] == off + static_cast<int32_t>(c) ? dy[o + c] : 0.0f;
              }
            }
          }
        }
      }
    }
  });
}

}  // namespace trainingd::engine
