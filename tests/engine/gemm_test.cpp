// Gemm's promise (engine/src/nn/gemm.h): every element of C is the fused multiply-add chain over k,
// in order. So it equals, bit for bit, a scalar loop of std::fma -- whatever the shape of the
// call around it, the thread count, or the kernels' instruction set. Data-parallel training
// depends on it (data_parallel_test.cpp).
#include "nn/gemm.h"

#include <gtest/gtest.h>

#if defined(__SSE__)
#include <pmmintrin.h>  // _MM_DENORMALS_ZERO_ON
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "sanitized.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine::internal {
namespace {

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

// Built for a CPU without FMA (gemm_tests_x86_64), the references' std::fma is a call into libm,
// which took a third of that test's time; a clone for CPUs with FMA makes it one instruction where
// the test runs on one. The result is the same, rounded once, either way.
#if defined(__x86_64__) && !defined(__FMA__)
#define TRAININGD_REFERENCE_CLONES __attribute__((target_clones("fma", "default")))
#else
#define TRAININGD_REFERENCE_CLONES
#endif

// Op(X) as a dense rows x cols matrix: X itself, or its transpose, from rows of `ld` floats;
// `round` applied to each value (once, where the references would round it at every use).
std::vector<float> Dense(bool transposed, int64_t rows, int64_t cols, const float* x, int64_t ld,
                         float (*round)(float) = nullptr) {
  std::vector<float> d(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t q = 0; q < cols; ++q) {
      const float v = transposed ? x[q * ld + r] : x[r * ld + q];
      d[static_cast<size_t>(r * cols + q)] = round ? round(v) : v;
    }
  }
  return d;
}

// The promise: each element of C is the chain of std::fma over l = 0, 1, ..., k-1. Worked a row
// of C at a time with l outermost, so the row's n chains advance side by side, each in its own
// order (the same bits as one element after another, which waits out every FMA's latency).
TRAININGD_REFERENCE_CLONES
void Reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const std::vector<float> da = Dense(ta, m, k, a, lda), db = Dense(tb, k, n, b, ldb);
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (!accumulate) std::fill(row, row + n, 0.0f);
    for (int64_t l = 0; l < k; ++l) {
      const float x = da[static_cast<size_t>(i * k + l)];
      const float* bl = db.data() + l * n;
      for (int64_t j = 0; j < n; ++j) row[j] = std::fma(x, bl[j], row[j]);
    }
  }
}

struct Product {
  int64_t m, n, k;
};

// Shapes of the tutorial models' layers (fewer columns for the largest), and shapes
// around the kernels' tiles: rows and columns below, at and past 12, 16 and 32, k past a pass of
// 256. The last four have a large C over a short k, for which all of B's panels are packed
// first and the row tiles go outside them (a dense kernel's gradient): on one thread, in narrow
// columns, on two threads, and over two passes of k with a last panel of 26 columns.
const Product kProducts[] = {
    {50, 100, 3136}, {50, 300, 1024}, {3136, 64, 13},  {50, 10, 1024},   {100, 10, 784},
    {100, 128, 784}, {100, 784, 128}, {392, 64, 800},  {25, 32, 392},    {1, 1, 1},
    {7, 13, 5},      {12, 16, 257},   {13, 17, 256},   {16, 33, 300},    {33, 31, 512},
    {29, 64, 1},     {3, 100, 600},   {0, 5, 5},       {5, 0, 5},        {5, 5, 0},
    {520, 512, 3},   {16400, 16, 2},  {1100, 512, 20}, {2100, 250, 260},
};

using ProductFn = std::function<void(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                     const float* a, int64_t lda, const float* b, int64_t ldb,
                                     float* c, int64_t ldc, bool accumulate)>;

// A product under test, and what it runs on.
struct Kernels {
  std::string name;
  ProductFn product;
};

// Every shape of `products` as NN, TN and NT, written and accumulated, on two threads, with
// leading dimensions past the matrices' widths (as the layers' views have) and operands from
// random(n, seed): each of `kernels` gives `reference`'s bits.
void ExpectTheReferencesBits(std::span<const Product> products,
                             std::vector<float> (*random)(int64_t, uint32_t),
                             const ProductFn& reference, std::span<const Kernels> kernels) {
  SetComputeThreads(2);
  for (const Product& p : products) {
    // Under the sanitizers, whose unoptimised reference takes most of the time, the shapes around
    // the tiles only; the models' largest (over 4M multiply-adds) run in the Release build.
    if (test_support::kSanitized && p.m * p.n * p.k > (4 << 20)) continue;
    for (int mode = 0; mode < 3; ++mode) {
      const bool ta = mode == 1, tb = mode == 2;
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
                     (ta   ? " TN"
                      : tb ? " NT"
                           : " NN") +
                     (accumulate ? " accumulate" : ""));
        const int64_t lda = (ta ? p.m : p.k) + 3, ldb = (tb ? p.k : p.n) + 5, ldc = p.n + 2;
        const std::vector<float> a = random((ta ? p.k : p.m) * lda + 1, 1);
        const std::vector<float> b = random((tb ? p.n : p.k) * ldb + 1, 2);
        const std::vector<float> c0 = random(p.m * ldc + 1, 3);
        std::vector<float> want = c0;
        reference(ta, tb, p.m, p.n, p.k, a.data(), lda, b.data(), ldb, want.data(), ldc,
                  accumulate);
        for (const Kernels& k : kernels) {
          std::vector<float> got = c0;
          k.product(ta, tb, p.m, p.n, p.k, a.data(), lda, b.data(), ldb, got.data(), ldc,
                    accumulate);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), 4 * want.size()), 0) << k.name;
        }
      }
    }
  }
  SetComputeThreads(1);
}

TEST(GemmTest, EveryElementIsTheFusedMultiplyAddChainOverK) {
  const Kernels gemm[] = {{std::string(GemmKernels()) + " kernels", Gemm}};
  ExpectTheReferencesBits(kProducts, Random, Reference, gemm);
}

// B packed once (PackB) gives every element the same chain as B itself, on one thread and on two:
// one row (batch-1 inference, one pass over k), a few, and many (passes of 256), with a last
// panel of fewer columns.
TEST(GemmTest, PackedBGivesTheSameBitsAsBItself) {
  const Product products[] = {{1, 1024, 3136}, {1, 33, 5},    {1, 128, 784},   {2, 100, 600},
                              {13, 17, 256},   {29, 64, 257}, {64, 1000, 300}, {300, 40, 20},
                              {3, 5, 0},       {0, 40, 7}};
  for (int threads : {1, 2}) {
    SetComputeThreads(threads);
    for (const Product& p : products) {
      if (test_support::kSanitized && p.m * p.n * p.k > (4 << 20)) continue;
      SCOPED_TRACE(std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) +
                   ", " + std::to_string(threads) + " threads");
      const int64_t lda = p.k + 3, ldb = p.n + 5, ldc = p.n + 2;
      const std::vector<float> a = Random(p.m * lda + 1, 6), b = Random(p.k * ldb + 1, 7);
      std::vector<float> packed(static_cast<size_t>(PackedBFloats(p.k, p.n) + 16));
      // PackB's floats are 64-byte aligned.
      float* aligned =
          packed.data() + (16 - reinterpret_cast<uintptr_t>(packed.data()) / 4 % 16) % 16;
      PackB(p.k, p.n, b.data(), ldb, aligned);
      const std::vector<float> c0 = Random(p.m * ldc + 1, 8);
      std::vector<float> want = c0, got = c0;
      Gemm(false, false, p.m, p.n, p.k, a.data(), lda, b.data(), ldb, want.data(), ldc);
      GemmPackedB(p.m, p.n, p.k, a.data(), lda, aligned, got.data(), ldc);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), 4 * want.size()), 0) << GemmKernels();
    }
  }
  SetComputeThreads(1);
}

// What data-parallel ranks do: some of the rows or columns of a product, with another thread
// count; they get the same bits as the whole product on one thread.
TEST(GemmTest, PartsOfAProductEqualTheWhole) {
  const int64_t m = 50, n = 200, k = 300;
  const std::vector<float> a = Random(m * k, 4), b = Random(k * n, 5);
  std::vector<float> whole(static_cast<size_t>(m * n));
  SetComputeThreads(1);
  Gemm(false, false, m, n, k, a.data(), k, b.data(), n, whole.data(), n);
  SetComputeThreads(2);
  for (int64_t per_call : {1, 7, 13, 50}) {
    std::vector<float> rows(whole.size()), cols(whole.size());
    for (int64_t r0 = 0; r0 < m; r0 += per_call) {
      Gemm(false, false, std::min(per_call, m - r0), n, k, a.data() + r0 * k, k, b.data(), n,
           rows.data() + r0 * n, n);
    }
    for (int64_t c0 = 0; c0 < n; c0 += per_call) {
      Gemm(false, false, m, std::min(per_call, n - c0), k, a.data(), k, b.data() + c0, n,
           cols.data() + c0, n);
    }
    EXPECT_EQ(std::memcmp(rows.data(), whole.data(), 4 * whole.size()), 0) << per_call;
    EXPECT_EQ(std::memcmp(cols.data(), whole.data(), 4 * whole.size()), 0) << per_call;
  }
  SetComputeThreads(1);
}

// GemmBf16's promise (gemm.h), written out from the definitions of AVX512_BF16's instructions:
// VCVTNEPS2BF16 rounds to nearest even, flushes values below FLT_MIN to zero and keeps NaNs;
// VDPBF16PS adds the odd element's product, then the even one's, each sum rounded once and
// flushed. The test holds every kernel of the build to this (gemm.h's Bf16Kernels): on a CPU
// with those instructions, the instructions themselves and the float FMAs.
float RoundToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0) {
    u &= 0x80000000u;
  } else if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    u = (u | 0x00400000u) & 0xFFFF0000u;
  } else {
    u = (u + 0x7FFFu + ((u >> 16) & 1)) & 0xFFFF0000u;
  }
  std::memcpy(&x, &u, 4);
  return x;
}
float Flush(float x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }

// As Reference, with the operands rounded to bfloat16 and k taken in pairs (an odd k's last pair
// completed by a zero), the odd element's product first, every sum flushed.
TRAININGD_REFERENCE_CLONES
void ReferenceBf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const std::vector<float> da = Dense(ta, m, k, a, lda, RoundToBf16),
                           db = Dense(tb, k, n, b, ldb, RoundToBf16);
  const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (!accumulate) std::fill(row, row + n, 0.0f);
    for (int64_t l = 0; l < k; l += 2) {
      const float x0 = da[static_cast<size_t>(i * k + l)];
      const float x1 = l + 1 < k ? da[static_cast<size_t>(i * k + l + 1)] : 0.0f;
      const float* b0 = db.data() + l * n;
      const float* b1 = l + 1 < k ? b0 + n : zeros.data();
      for (int64_t j = 0; j < n; ++j) {
        float acc = Flush(row[j]);
        acc = Flush(std::fma(x1, b1[j], acc));
        row[j] = Flush(std::fma(x0, b0[j], acc));
      }
    }
  }
}

// Values that find the corners: ties of the rounding to bfloat16 (either way), values that round
// to or from the smallest normal, that overflow, whose products are tiny, and denormals.
std::vector<float> RandomWithCorners(int64_t n, uint32_t seed) {
  std::vector<float> v = Random(n, seed);
  std::mt19937 rng(seed + 100);
  std::uniform_int_distribution<int> pick(0, 15);
  for (float& x : v) {
    switch (pick(rng)) {
      case 0:
        x = 1.0f + std::ldexp(1.0f, -8);
        break;  // a tie, rounds down
      case 1:
        x = -(1.0f + 3 * std::ldexp(1.0f, -8));
        break;  // a tie, rounds up
      case 2:
        x = std::ldexp(x, -63);
        break;  // tiny products
      case 3:
        x = std::ldexp(1.0f, -126) * (1 - std::ldexp(1.0f, -20));
        break;  // a denormal
      case 4:
        x = std::ldexp(0.99999f, -126);
        break;  // just under FLT_MIN
      case 5:
        x = std::ldexp(x, 60);
        break;  // large products
      default:
        break;
    }
  }
  return v;
}

TEST(GemmTest, Bf16ProductsAreTheChainOfPairedBf16Steps) {
  const Product products[] = {{50, 100, 3136}, {200, 160, 256}, {256, 96, 200}, {3136, 64, 13},
                              {50, 10, 1024},  {100, 128, 783}, {7, 13, 5},     {12, 16, 257},
                              {13, 17, 256},   {16, 33, 300},   {29, 64, 1},    {3, 100, 600},
                              {0, 5, 5},       {5, 0, 5},       {5, 5, 0},      {520, 512, 3},
                              {1100, 40, 20},  {2100, 250, 65}};
  // Every kernel this build has, whichever GemmBf16 would choose here, against one reference.
  const Bf16Kernels chosen = GemmBf16Kernels();
  std::vector<float> scratch;
  std::vector<Kernels> kernels;
  for (Bf16Kernels bf16 :
       {Bf16Kernels::kInstructions, Bf16Kernels::kFloatFma, Bf16Kernels::kEmulated}) {
    if (!Bf16KernelsAvailable(bf16)) continue;
    kernels.push_back(
        {std::string(GemmKernels()) + " kernels, bfloat16 on " + Bf16KernelsName(bf16),
         [&scratch, bf16](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                          int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                          bool accumulate) {
           ASSERT_TRUE(SetGemmBf16Kernels(bf16));
           scratch.resize(static_cast<size_t>(GemmBf16Floats(m, n, k)));
           GemmBf16(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, scratch.data(), accumulate);
         }});
  }
  const int tested = static_cast<int>(kernels.size());
  ExpectTheReferencesBits(products, RandomWithCorners, ReferenceBf16, kernels);
  // Every product below FLT_MIN (about 2^-128), so that every chain meets the flushes: the shapes
  // around the tiles and an odd k.
  const auto tiny = [](int64_t n, uint32_t seed) {
    std::vector<float> v = Random(n, seed);
    for (float& x : v) x = std::ldexp(x, -64);
    return v;
  };
  ExpectTheReferencesBits(std::span(products).subspan(5, 7), tiny, ReferenceBf16, kernels);
  ASSERT_TRUE(SetGemmBf16Kernels(chosen));
  // The instructions where the build has them, and one of the others.
  EXPECT_EQ(tested, Bf16KernelsAvailable(Bf16Kernels::kInstructions) ? 2 : 1);
}

// Float FMAs take VDPBF16PS's steps only with denormals flushed, as inputs and results
// (MXCSR's flags). GemmBf16 sets them on the calling thread, as SetComputeThreads does, so a
// thread that never called that gets the same bits.
TEST(GemmTest, Bf16OnFloatFmasFlushesDenormalsOnAThreadThatDidNot) {
  const Bf16Kernels chosen = GemmBf16Kernels();
  if (!SetGemmBf16Kernels(Bf16Kernels::kFloatFma)) GTEST_SKIP() << "no float FMA kernels";
  // Products about 2^-127, below FLT_MIN: flushed or not, every chain ends elsewhere.
  const int64_t m = 29, n = 40, k = 257;
  std::vector<float> a = Random(m * k, 11), b = Random(k * n, 12);
  for (float& x : a) x = std::ldexp(x, -63);
  for (float& x : b) x = std::ldexp(x, -64);
  std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
  std::vector<float> scratch(static_cast<size_t>(GemmBf16Floats(m, n, k)));
  ReferenceBf16(false, false, m, n, k, a.data(), k, b.data(), n, want.data(), n, false);
  bool denormals_kept = false;
  std::thread([&] {
#if defined(__SSE__)
    _mm_setcsr(_mm_getcsr() & ~(_MM_FLUSH_ZERO_ON | _MM_DENORMALS_ZERO_ON));
#endif
    volatile float tiny = FLT_MIN;
    denormals_kept = tiny / 2 > 0.0f;
    GemmBf16(false, false, m, n, k, a.data(), k, b.data(), n, got.data(), n, scratch.data());
  }).join();
  EXPECT_TRUE(denormals_kept);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), 4 * want.size()), 0);
  ASSERT_TRUE(SetGemmBf16Kernels(chosen));
}

}  // namespace
}  // namespace trainingd::engine::internal
