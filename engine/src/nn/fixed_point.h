// Fixed-point kernels of the exact gradient sums (GradientBlocks; private to engine/src).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/gradient_blocks.h"

namespace trainingd::engine::internal {

// acc[i] += round(p[i] * 2^exponent), for |p[i] * 2^exponent| < 2^51: adding 1.5 * 2^52 to a
// double rounds it to an integer held in the low bits of its mantissa, which vectorises where a
// float-to-int64 conversion does not (AVX2). Nothing for kNonFiniteExponent.
inline void AddFixed(const float* p, int64_t n, int exponent, int64_t* acc) {
  if (exponent == kNonFiniteExponent) return;
  constexpr double kMagic = 0x1.8p52;
  constexpr int64_t kMagicBits = std::bit_cast<int64_t>(kMagic);
  const double scale = std::ldexp(1.0, exponent);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    acc[i] += std::bit_cast<int64_t>(static_cast<double>(p[i]) * scale + kMagic) - kMagicBits;
  }
}

// The largest |x[i]|; +infinity when some x[i] is not finite. On the floats' bits without the
// sign, which order as their magnitudes do, infinity and NaN above every finite value: an integer
// maximum, whose one-cycle latency lets the loop run at the speed of its loads (a float maximum
// and a NaN check chained four-cycle instructions from one iteration to the next).
inline float MaxAbs(const float* x, int64_t n) {
  uint32_t m = 0;
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::bit_cast<uint32_t>(x[i]) & 0x7FFFFFFFu);
  return m >= 0x7F800000u ? INFINITY : std::bit_cast<float>(m);
}

// MaxAbs split over the compute threads: the grids' bounds read whole layers' inputs and output
// gradients (megabytes), and a maximum is exact, so the split changes nothing.
inline float ParallelMaxAbs(const float* x, int64_t n) {
  // A few microseconds of work below 128K floats (the MLP's and the softmax's inputs): less than
  // a hand-off to the team.
  constexpr int64_t kMinParallel = int64_t{1} << 17;
  std::vector<float> maxima(static_cast<size_t>(NumChunks(n, kMinParallel)), 0.0f);
  ParallelChunks(n, kMinParallel, [&](int chunk, int64_t begin, int64_t end) {
    maxima[static_cast<size_t>(chunk)] = MaxAbs(x + begin, end - begin);
  });
  return *std::max_element(maxima.begin(), maxima.end());
}

}  // namespace trainingd::engine::internal
