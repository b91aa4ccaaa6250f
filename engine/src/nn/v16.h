// V16: sixteen floats, the unit of the engine's hand-written kernels (private to engine/src: the
// matrix products of nn/gemm.cpp and the direct convolution of nn/direct_conv.cpp). Every operation
// on it is lane by lane, and Fma is one rounding per lane on every instruction set (AVX-512, AVX2
// with FMA, or none), so a kernel computes the same bits on each. So are bfloat16's steps (below):
// AVX512_BF16's instruction, float FMAs that take the same steps, or the steps written out.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

// Put before every loop over a kernel's registers (its accumulators' rows and vectors, the
// vectors of an operand's row). GCC keeps an array of V16 in registers only if every index into it
// is a constant once loops are unrolled, and it unrolls a loop early only if the loop looks cheap.
// Loops whose LoadN or StoreN have branches do not: the AVX2 build then kept the accumulators in
// memory and stored each one after each multiply-add, which halved its matrix products' speed
// (docs/benchmarks.md#avx2).
#define V16_UNROLL _Pragma("GCC unroll 16")

namespace trainingd::engine::internal::v16 {

#if defined(__AVX512F__)
constexpr const char* kKernels = "avx512";
struct V16 {
  __m512 v;
};
// The first n lanes (none for n <= 0, all for n >= 16).
inline __mmask16 Lanes(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1);
}
inline V16 Zero() { return {_mm512_setzero_ps()}; }
inline V16 Broadcast(const float* p) { return {_mm512_set1_ps(*p)}; }
inline V16 Load(const float* p) { return {_mm512_load_ps(p)}; }  // 64-byte aligned
inline V16 LoadU(const float* p) { return {_mm512_loadu_ps(p)}; }
inline V16 LoadN(const float* p, int n) { return {_mm512_maskz_loadu_ps(Lanes(n), p)}; }
inline void Store(float* p, V16 x) { _mm512_store_ps(p, x.v); }  // 64-byte aligned
inline void StoreN(float* p, V16 x, int n) { _mm512_mask_storeu_ps(p, Lanes(n), x.v); }
inline V16 Fma(V16 a, V16 b, V16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
#elif defined(__AVX2__) && defined(__FMA__)
constexpr const char* kKernels = "avx2";
struct V16 {
  __m256 lo, hi;
};
inline __m256i Lanes8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V16 Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline V16 Broadcast(const float* p) {
  const __m256 x = _mm256_broadcast_ss(p);
  return {x, x};
}
inline V16 Load(const float* p) { return {_mm256_load_ps(p), _mm256_load_ps(p + 8)}; }
inline V16 LoadU(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline V16 LoadN(const float* p, int n) {
  if (n >= 16) return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
  return {_mm256_maskload_ps(p, Lanes8(n)),
          n > 8 ? _mm256_maskload_ps(p + 8, Lanes8(n - 8)) : _mm256_setzero_ps()};
}
inline void Store(float* p, V16 x) {
  _mm256_store_ps(p, x.lo);
  _mm256_store_ps(p + 8, x.hi);
}
inline void StoreN(float* p, V16 x, int n) {
  if (n >= 16) {
    _mm256_storeu_ps(p, x.lo);
    _mm256_storeu_ps(p + 8, x.hi);
    return;
  }
  _mm256_maskstore_ps(p, Lanes8(n), x.lo);
  if (n > 8) _mm256_maskstore_ps(p + 8, Lanes8(n - 8), x.hi);
}
inline V16 Fma(V16 a, V16 b, V16 c) {
  return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
#else
constexpr const char* kKernels = "scalar";
struct V16 {
  float x[16];
};
inline V16 Zero() { return {}; }
inline V16 Broadcast(const float* p) {
  V16 r;
  std::fill(r.x, r.x + 16, *p);
  return r;
}
inline V16 LoadN(const float* p, int n) {
  V16 r{};
  std::copy_n(p, std::clamp(n, 0, 16), r.x);
  return r;
}
inline V16 Load(const float* p) { return LoadN(p, 16); }
inline V16 LoadU(const float* p) { return LoadN(p, 16); }
inline void StoreN(float* p, V16 x, int n) { std::copy_n(x.x, std::clamp(n, 0, 16), p); }
inline void Store(float* p, V16 x) { StoreN(p, x, 16); }
inline V16 Fma(V16 a, V16 b, V16 c) {
  V16 r;
  for (int i = 0; i < 16; ++i) r.x[i] = std::fma(a.x[i], b.x[i], c.x[i]);
  return r;
}
#endif

// ---------------------------------------------------------------------------------------------
// bfloat16 (mixed precision, gemm.h's GemmBf16). Every step of its chains is, lane by lane, what
// AVX512_BF16's VDPBF16PS computes (measured against it bit for bit, tests/engine/gemm_test.cpp):
// the odd element's product added, then the even one's, with values below FLT_MIN flushed to
// zero, the accumulator's and each sum's:
//
//   acc = ftz(acc); acc = ftz(fma(a_odd, b_odd, acc)); acc = ftz(fma(a_even, b_even, acc))
//
// The product of two bfloat16 values is exact in float, so each fma is the sum rounded once. On
// x86 that is also two float FMAs on the rounded values under MXCSR's flush-to-zero and
// denormals-are-zero, which is how the SIMD builds compute it without VDPBF16PS (gemm.cpp).
// ---------------------------------------------------------------------------------------------
// A float rounded to bfloat16 as VCVTNEPS2BF16 rounds it: to nearest even; a value below FLT_MIN
// to a zero of its sign; a NaN stays a NaN (made quiet).
inline uint16_t ToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0) return static_cast<uint16_t>((u & 0x80000000u) >> 16);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}
// The same value as a float (its low 16 bits zero).
inline float Bf16Float(float x) {
  const uint32_t u = static_cast<uint32_t>(ToBf16(x)) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// A lane's 32 bits as VDPBF16PS reads them: two bfloat16 values, the even one in the lower half.
inline uint32_t Bf16Pair(float even, float odd) {
  return static_cast<uint32_t>(ToBf16(even)) | static_cast<uint32_t>(ToBf16(odd)) << 16;
}

// DotBf16(a, b, acc): one step of each lane's chain on its bfloat16 pairs, where this build has
// it (V16_DOT_BF16): AVX512_BF16's instruction, or the scalar build's steps written out.
#if defined(__AVX512BF16__)
#define V16_DOT_BF16 1
inline constexpr bool kBf16Instructions = true;
inline V16 DotBf16(V16 a, V16 b, V16 acc) {
  return {_mm512_dpbf16_ps(acc.v, (__m512bh)a.v, (__m512bh)b.v)};
}
#else
inline constexpr bool kBf16Instructions = false;
#endif

// V16_FLOAT_FMA_BF16: this build's float FMAs run under MXCSR (SSE, AVX2, AVX-512), so they can
// take bfloat16's steps with its flush-to-zero and denormals-are-zero on; with RoundToBf16 and
// SwapPairs to lay the operands out.
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define V16_FLOAT_FMA_BF16 1
#else
#define V16_FLOAT_FMA_BF16 0
#endif

#if defined(__AVX512F__)
// Bf16Float, lane by lane.
inline V16 RoundToBf16(V16 x) {
#if defined(__AVX512BF16__)
  const __m256i h = (__m256i)_mm512_cvtneps_pbh(x.v);
  return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))};
#else
  const __m512i u = _mm512_castps_si512(x.v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_and_si512(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))),
                       _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  const __m512i magnitude = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
  r = _mm512_mask_mov_epi32(r, nan,
                            _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(0x00400000)),
                                             _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  const __mmask16 tiny = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7F800000));
  r = _mm512_mask_mov_epi32(r, tiny,
                            _mm512_and_si512(u, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  return {_mm512_castsi512_ps(r)};
#endif
}
// Lanes (0, 1, 2, 3, ...) as (1, 0, 3, 2, ...).
inline V16 SwapPairs(V16 x) { return {_mm512_permute_ps(x.v, 0xB1)}; }
#elif defined(__AVX2__) && defined(__FMA__)
inline __m256 RoundToBf16(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r =
      _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))),
                       _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)));
  const __m256i magnitude = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  r = _mm256_blendv_epi8(r,
                         _mm256_and_si256(_mm256_or_si256(u, _mm256_set1_epi32(0x00400000)),
                                          _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))),
                         nan);
  const __m256i tiny = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7F800000)),
                                          _mm256_setzero_si256());
  r = _mm256_blendv_epi8(r, _mm256_and_si256(u, _mm256_set1_epi32(static_cast<int>(0x80000000u))),
                         tiny);
  return _mm256_castsi256_ps(r);
}
inline V16 RoundToBf16(V16 x) { return {RoundToBf16(x.lo), RoundToBf16(x.hi)}; }
inline V16 SwapPairs(V16 x) {
  return {_mm256_permute_ps(x.lo, 0xB1), _mm256_permute_ps(x.hi, 0xB1)};
}
#else
// The scalar build has neither VDPBF16PS nor MXCSR-governed FMAs (std::fma may be libm's own):
// the steps written out.
#define V16_DOT_BF16 1
inline float FlushTiny(float x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }
inline V16 DotBf16(V16 a, V16 b, V16 acc) {
  V16 r;
  for (int i = 0; i < 16; ++i) {
    uint32_t ai, bi;
    std::memcpy(&ai, &a.x[i], 4);
    std::memcpy(&bi, &b.x[i], 4);
    const auto half = [](uint32_t bits) {
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    };
    float c = FlushTiny(acc.x[i]);
    c = FlushTiny(std::fma(half(ai & 0xFFFF0000u), half(bi & 0xFFFF0000u), c));
    r.x[i] = FlushTiny(std::fma(half(ai << 16), half(bi << 16), c));
  }
  return r;
}
#endif

}  // namespace trainingd::engine::internal::v16
