#include "nn/direct_conv.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "nn/activation_kernels.h"
#include "nn/v16.h"

namespace trainingd::engine::internal {
namespace {
using namespace v16;  // the kernels' vocabulary (nn/v16.h)

// A tile is kVectors vectors of output channels by up to kPixels output pixels (forward) or
// kTaps taps (the kernel gradient): its accumulators, the vectors of one row of the other
// operand and a broadcast fit the vector registers (32 with AVX-512, 16 with AVX2).
#if defined(__AVX512F__)
constexpr int kVectors = 2;
constexpr int kPixels = 12;  // 24 accumulators, 2 kernel vectors, 1 broadcast
constexpr int kTaps = 12;
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kVectors = 1;  // a V16 is two registers here
constexpr int kPixels = 6;
constexpr int kTaps = 6;
#else
constexpr int kVectors = 1;
constexpr int kPixels = 4;
constexpr int kTaps = 4;
#endif
constexpr int kPanel = 16 * kVectors;  // output channels per tile

// n items in tiles of at most `most`, as even as can be: tile t is [first(t), first(t + 1)).
struct Tiles {
  int64_t n, count;
  Tiles(int64_t n_, int most) : n(n_), count((n_ + most - 1) / most) {}
  int64_t first(int64_t t) const { return n * t / count; }
};

// Vector v of a row of a tile's nr columns: whole tiles load without masks, which inside a loop
// would cost a branch per load and make GCC store the accumulators on every pass.
template <bool kWhole>
inline V16 LoadColumns(const float* row, int v, int nr) {
  if constexpr (kWhole) return LoadU(row + 16 * v);
  return LoadN(row + 16 * v, nr - 16 * v);
}

// Output pixels [0, R) from xq (the padded image at the first one's window), output channels
// [0, nr) of a panel: each a chain over the taps in order, from zero.
template <int R, bool kWhole>
void ForwardTile(const DirectConvShape& s, const float* xq, const float* kernel, int nr, float* y) {
  V16 acc[R][kVectors];
  V16_UNROLL
  for (int i = 0; i < R; ++i) {
    V16_UNROLL
    for (int v = 0; v < kVectors; ++v) acc[i][v] = Zero();
  }
  // One loop over the taps, stepping (ky, kx) by hand.
  const int64_t k = s.k, oc = s.oc, taps = k * k, row_step = s.padded_w() - k;
  const float* xt = xq;
  for (int64_t t = 0, kx = 0; t < taps; ++t) {
    const float* kt = kernel + t * oc;
    V16 kv[kVectors];
    V16_UNROLL
    for (int v = 0; v < kVectors; ++v) kv[v] = LoadColumns<kWhole>(kt, v, nr);
    V16_UNROLL
    for (int i = 0; i < R; ++i) {
      const V16 x = Broadcast(xt + i);
      V16_UNROLL
      for (int v = 0; v < kVectors; ++v) acc[i][v] = Fma(x, kv[v], acc[i][v]);
    }
    ++xt;
    if (++kx == k) {
      kx = 0;
      xt += row_step;
    }
  }
  V16_UNROLL
  for (int i = 0; i < R; ++i) {
    V16_UNROLL
    for (int v = 0; v < kVectors; ++v) StoreN(y + i * s.oc + 16 * v, acc[i][v], nr - 16 * v);
  }
}

// Taps [t0, t0 + T), output channels [0, nr) of a panel: each chain continues from dkernel's
// value over the output pixels in order.
template <int T, bool kWhole>
void GradientTile(const DirectConvShape& s, const float* xp, const float* dy, int nr, int64_t t0,
                  float* dkernel) {
  const int64_t pw = s.padded_w();
  int64_t offset[T];
  V16 acc[T][kVectors];
  V16_UNROLL
  for (int j = 0; j < T; ++j) {
    offset[j] = (t0 + j) / s.k * pw + (t0 + j) % s.k;
    V16_UNROLL
    for (int v = 0; v < kVectors; ++v)
      acc[j][v] = LoadN(dkernel + (t0 + j) * s.oc + 16 * v, nr - 16 * v);
  }
  // One loop over the pixels, as in ForwardTile.
  const int64_t pixels = s.oh * s.ow;
  const float* xq = xp;
  for (int64_t p = 0, ox = 0; p < pixels; ++p) {
    const float* g = dy + p * s.oc;
    V16 gv[kVectors];
    V16_UNROLL
    for (int v = 0; v < kVectors; ++v) gv[v] = LoadColumns<kWhole>(g, v, nr);
    V16_UNROLL
    for (int j = 0; j < T; ++j) {
      const V16 x = Broadcast(xq + offset[j]);
      V16_UNROLL
      for (int v = 0; v < kVectors; ++v) acc[j][v] = Fma(x, gv[v], acc[j][v]);
    }
    ++xq;
    if (++ox == s.ow) {
      ox = 0;
      xq += s.k - 1;
    }
  }
  V16_UNROLL
  for (int j = 0; j < T; ++j) {
    V16_UNROLL
    for (int v = 0; v < kVectors; ++v)
      StoreN(dkernel + (t0 + j) * s.oc + 16 * v, acc[j][v], nr - 16 * v);
  }
}

using ForwardFn = void (*)(const DirectConvShape&, const float*, const float*, int, float*);
using GradientFn = void (*)(const DirectConvShape&, const float*, const float*, int, int64_t,
                            float*);

// The tiles' functions by size - 1, for whole (kWhole) or partial panels of columns.
template <bool kWhole, int... R>
constexpr std::array<ForwardFn, sizeof...(R)> ForwardTable(std::integer_sequence<int, R...>) {
  return {&ForwardTile<R + 1, kWhole>...};
}
template <bool kWhole, int... T>
constexpr std::array<GradientFn, sizeof...(T)> GradientTable(std::integer_sequence<int, T...>) {
  return {&GradientTile<T + 1, kWhole>...};
}
constexpr std::array<ForwardFn, kPixels> kForward[2] = {
    ForwardTable<false>(std::make_integer_sequence<int, kPixels>{}),
    ForwardTable<true>(std::make_integer_sequence<int, kPixels>{})};
constexpr std::array<GradientFn, kTaps> kGradient[2] = {
    GradientTable<false>(std::make_integer_sequence<int, kTaps>{}),
    GradientTable<true>(std::make_integer_sequence<int, kTaps>{})};

}  // namespace

void PadImage(const DirectConvShape& s, const float* x, float* xp) {
  const int64_t pw = s.padded_w();
  std::fill_n(xp, s.padded_size(), 0.0f);
  // The image's rows and columns that some window reaches (valid padding may leave some out).
  const int64_t rows = std::min(s.h, s.padded_h() - s.pad_top);
  const int64_t cols = std::min(s.w, pw - s.pad_left);
  for (int64_t y = 0; y < rows; ++y)
    std::memcpy(xp + (y + s.pad_top) * pw + s.pad_left, x + y * s.w, sizeof(float) * cols);
}

void DirectConvForward(const DirectConvShape& s, const float* xp, const float* kernel,
                       const float* bias, bool relu, float* y, int64_t oy0, int64_t oy1) {
  const Tiles tiles(s.ow, kPixels);
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    float* row = y + oy * s.ow * s.oc;
    for (int64_t o0 = 0; o0 < s.oc; o0 += kPanel) {
      const int nr = static_cast<int>(std::min<int64_t>(kPanel, s.oc - o0));
      for (int64_t t = 0; t < tiles.count; ++t) {
        const int64_t ox = tiles.first(t), n = tiles.first(t + 1) - ox;
        kForward[nr == kPanel][static_cast<size_t>(n - 1)](s, xp + oy * s.padded_w() + ox,
                                                           kernel + o0, nr, row + ox * s.oc + o0);
      }
    }
    AddBiasActivation(row, s.ow, s.oc, bias, relu);
  }
}

void DirectConvKernelGradient(const DirectConvShape& s, const float* xp, const float* dy,
                              float* dkernel) {
  const Tiles tiles(s.k * s.k, kTaps);
  for (int64_t o0 = 0; o0 < s.oc; o0 += kPanel) {
    const int nr = static_cast<int>(std::min<int64_t>(kPanel, s.oc - o0));
    for (int64_t t = 0; t < tiles.count; ++t) {
      const int64_t t0 = tiles.first(t), n = tiles.first(t + 1) - t0;
      kGradient[nr == kPanel][static_cast<size_t>(n - 1)](s, xp, dy + o0, nr, t0, dkernel + o0);
    }
  }
}

}  // namespace trainingd::engine::internal
