// The CPU's multiply-add peak, measured: independent chains of FP32 FMAs, and of BF16 dot
// products (VDPBF16PS: two bfloat16 products added into each FP32 lane) where the build's CPU has
// them, on 1 and 2 threads. What the engine's kernels are measured against
// (docs/benchmarks.md#what-0916-costs-about-225000-examples-of-the-full-model-70-s-of-this-cpu).
//
//   build/bench/peak_flops [--seconds 2] [--rounds 3]
//
// Prints one JSON line per kind, thread count and round: GFLOP/s counting 2 per multiply-add.
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kInner = 1 << 16;
volatile float sink;

// Independent accumulators: more than latency x throughput needs, fewer than the registers.
#if defined(__AVX512F__)
constexpr int kChains = 16;
constexpr int kLanes = 16;
using VecF = __m512;
inline VecF Set1(float x) { return _mm512_set1_ps(x); }
inline VecF Fma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline float Sum(VecF v) {  // not _mm512_reduce_add_ps: GCC 12 warns in its header
  float f[16];
  _mm512_storeu_ps(f, v);
  float s = 0;
  for (float x : f) s += x;
  return s;
}
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kChains = 12;
constexpr int kLanes = 8;
using VecF = __m256;
inline VecF Set1(float x) { return _mm256_set1_ps(x); }
inline VecF Fma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline float Sum(VecF v) {
  float f[8];
  _mm256_storeu_ps(f, v);
  float s = 0;
  for (float x : f) s += x;
  return s;
}
#endif

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
// Multiply-adds done in `seconds` by one thread running kChains independent chains of
// acc = step(acc), each step `madds` multiply-adds.
template <typename Step>
int64_t Chains(double seconds, Step step, int64_t madds) {
  VecF acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Set1(0);
  int64_t n = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int64_t i = 0; i < kInner; ++i) {
#pragma GCC unroll 16  // the chains in registers, not in memory, at any -O
      for (int c = 0; c < kChains; ++c) acc[c] = step(acc[c]);
    }
    n += kInner * kChains * madds;
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += Sum(acc[c]);
  sink = s;
  return n;
}
#endif

// FP32 FMAs.
int64_t Fp32(double seconds) {
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
  const VecF a = Set1(0.999999f), b = Set1(1e-7f);
  return Chains(
      seconds, [=](VecF acc) { return Fma(acc, a, b); }, kLanes);
#else
  (void)seconds;
  return 0;
#endif
}

// BF16 dot products: two multiply-adds per FP32 lane.
int64_t Bf16(double seconds) {
#if defined(__AVX512BF16__) && defined(__AVX512F__)
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  return Chains(
      seconds, [=](VecF acc) { return _mm512_dpbf16_ps(acc, a, b); }, 2 * kLanes);
#else
  (void)seconds;
  return 0;
#endif
}

double Gflops(int64_t (*kernel)(double), int threads, double seconds) {
  std::atomic<int64_t> total{0};
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back([&] { total += kernel(seconds); });
  for (auto& th : pool) th.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 2.0 * static_cast<double>(total.load()) / elapsed / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 2;
  int rounds = 3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: peak_flops [--seconds 2] [--rounds 3]\n");
      return 2;
    }
  }
  if (seconds <= 0 || rounds <= 0) {
    std::fprintf(stderr, "peak_flops: --seconds and --rounds must be positive\n");
    return 2;
  }
  struct Kind {
    const char* name;
    int64_t (*kernel)(double);
  };
  std::vector<Kind> kinds;
  if (Fp32(1e-3) > 0) kinds.push_back({"fp32_fma", Fp32});
  if (Bf16(1e-3) > 0) kinds.push_back({"bf16_dot", Bf16});
  if (kinds.empty()) {
    std::fprintf(stderr, "peak_flops: built without AVX2/FMA or AVX-512\n");
    return 1;
  }
  // A B A B: each kind in turn, round after round, so a drift of the machine's speed hits both.
  for (int r = 1; r <= rounds; ++r) {
    for (int threads : {1, 2}) {
      for (const Kind& k : kinds) {
        std::printf("{\"kind\": \"%s\", \"threads\": %d, \"round\": %d, \"gflops\": %.1f}\n",
                    k.name, threads, r, Gflops(k.kernel, threads, seconds));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
