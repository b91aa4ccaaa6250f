// V16: sixteen floats, the unit of the engine's hand-written kernels (private to engine/src: the
// matrix products of nn/gemm.cpp and the direct convolution of nn/direct_conv.cpp). Every operation
// on it is lane by lane, and Fma is one rounding per lane on every instruction set (AVX-512, AVX2
// with FMA, or none), so a kernel computes the same bits on each. So is DotBf16: AVX512_BF16's
// instruction where the CPU has it, the same steps emulated where it does not.
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
// bfloat16 pairs (mixed precision, gemm.h's GemmBf16). A lane's 32 bits hold two bfloat16 values,
// the even element of the pair in the lower half. DotBf16 is, lane by lane, what AVX512_BF16's
// VDPBF16PS computes (measured against it bit for bit, tests/engine/gemm_test.cpp), with values
// below FLT_MIN flushed to zero, the accumulator's and each sum's:
//
//   acc = ftz(acc); acc = ftz(fma(a_odd, b_odd, acc)); acc = ftz(fma(a_even, b_even, acc))
//
// The product of two bfloat16 values is exact in float, so each fma is the sum rounded once.
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
inline uint32_t Bf16Pair(float even, float odd) {
  return static_cast<uint32_t>(ToBf16(even)) | static_cast<uint32_t>(ToBf16(odd)) << 16;
}

#if defined(__AVX512BF16__)
inline constexpr bool kBf16Instructions = true;
inline V16 DotBf16(V16 a, V16 b, V16 acc) {
  return {_mm512_dpbf16_ps(acc.v, (__m512bh)a.v, (__m512bh)b.v)};
}
#elif defined(__AVX512F__)
inline constexpr bool kBf16Instructions = false;
inline __m512 FlushTiny(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __mmask16 tiny = _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(FLT_MIN), _CMP_LT_OQ);
  return _mm512_castsi512_ps(
      _mm512_mask_and_epi32(bits, tiny, bits, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}
inline V16 DotBf16(V16 a, V16 b, V16 acc) {
  const __m512i ai = _mm512_castps_si512(a.v), bi = _mm512_castps_si512(b.v);
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  __m512 c = FlushTiny(acc.v);
  c = FlushTiny(_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(ai, high)),
                                _mm512_castsi512_ps(_mm512_and_si512(bi, high)), c));
  // The masked shift: GCC 12 warns of the undefined pass-through operand in the plain one.
  c = FlushTiny(_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, ai, 16)),
                                _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, bi, 16)), c));
  return {c};
}
#elif defined(__AVX2__) && defined(__FMA__)
inline constexpr bool kBf16Instructions = false;
inline __m256 FlushTiny(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 tiny = _mm256_cmp_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(FLT_MIN), _CMP_LT_OQ);
  return _mm256_blendv_ps(x, _mm256_and_ps(x, sign), tiny);
}
inline __m256 DotBf16(__m256 a, __m256 b, __m256 acc) {
  const __m256i ai = _mm256_castps_si256(a), bi = _mm256_castps_si256(b);
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  __m256 c = FlushTiny(acc);
  c = FlushTiny(_mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(ai, high)),
                                _mm256_castsi256_ps(_mm256_and_si256(bi, high)), c));
  return FlushTiny(_mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(ai, 16)),
                                   _mm256_castsi256_ps(_mm256_slli_epi32(bi, 16)), c));
}
inline V16 DotBf16(V16 a, V16 b, V16 acc) {
  return {DotBf16(a.lo, b.lo, acc.lo), DotBf16(a.hi, b.hi, acc.hi)};
}
#else
inline constexpr bool kBf16Instructions = false;
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
