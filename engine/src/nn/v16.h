// V16: sixteen floats, the unit of the engine's hand-written kernels (private to engine/src: the
// matrix products of nn/gemm.cpp and the direct convolution of nn/direct_conv.cpp). Every operation
// on it is lane by lane, and Fma is one rounding per lane on every instruction set (AVX-512, AVX2
// with FMA, or none), so a kernel computes the same bits on each.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

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

}  // namespace trainingd::engine::internal::v16
