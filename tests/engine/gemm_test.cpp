// GemmRows' promise (engine/src/nn/gemm.h): each row of a product comes out bit for bit the same
// however many rows the call has, where the row sits, and how many threads run it; and
// GemmSerial's: the same result whatever the thread count. A plain
// cblas_sgemm breaks it for small products on AVX-512 machines (the first test shows where,
// when it does), and data-parallel training depends on it (data_parallel_test.cpp).
#include "nn/gemm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine::internal {
namespace {

struct Product {
  int64_t n, k;
  bool trans_b;
};

// The layer shapes of the tests' small CNN and of the tutorial CNN, forward (NN) and input
// gradient (NT), and a few more around OpenBLAS's small-kernel and direct-kernel limits.
const Product kProducts[] = {
    {32, 392, false},   {392, 32, true}, {10, 32, false},   {32, 10, true},  {1024, 3136, false},
    {3136, 1024, true}, {8, 100, false}, {100, 8, true},    {32, 25, false}, {64, 800, false},
    {800, 64, true},    {16, 16, false}, {512, 512, false}, {7, 13, true},
};

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(GemmRowsTest, ARowDoesNotDependOnTheOtherRowsOrTheThreads) {
  constexpr int64_t kRows = 12;
  for (const Product& p : kProducts) {
    SCOPED_TRACE("n " + std::to_string(p.n) + " k " + std::to_string(p.k) +
                 (p.trans_b ? " NT" : " NN"));
    const std::vector<float> a = Random(kRows * p.k, 1), b = Random(p.k * p.n, 2);
    const int64_t ldb = p.trans_b ? p.k : p.n;
    SetComputeThreads(1);
    std::vector<float> whole(static_cast<size_t>(kRows * p.n));
    GemmRows(p.trans_b, kRows, p.n, p.k, a.data(), p.k, b.data(), ldb, whole.data(), p.n);
    for (int threads : {1, 2}) {
      SetComputeThreads(threads);
      for (int64_t per_call = 1; per_call <= kRows; ++per_call) {
        std::vector<float> parts(whole.size());
        for (int64_t r0 = 0; r0 < kRows; r0 += per_call) {
          const int64_t m = std::min(per_call, kRows - r0);
          GemmRows(p.trans_b, m, p.n, p.k, a.data() + r0 * p.k, p.k, b.data(), ldb,
                   parts.data() + r0 * p.n, p.n);
        }
        EXPECT_EQ(std::memcmp(parts.data(), whole.data(), 4 * whole.size()), 0)
            << per_call << " rows per call, " << threads << " threads";
      }
    }
  }
  SetComputeThreads(1);
}

TEST(GemmRowsTest, ALargeProductDoesNotDependOnTheThreads) {
  for (const Product& p : kProducts) {
    SCOPED_TRACE("n " + std::to_string(p.n) + " k " + std::to_string(p.k) +
                 (p.trans_b ? " NT" : " NN"));
    const int64_t m = 1000;  // an evaluation batch
    const std::vector<float> a = Random(m * p.k, 5), b = Random(p.k * p.n, 6);
    const int64_t ldb = p.trans_b ? p.k : p.n;
    std::vector<float> one(static_cast<size_t>(m * p.n)), two(one.size());
    SetComputeThreads(1);
    GemmRows(p.trans_b, m, p.n, p.k, a.data(), p.k, b.data(), ldb, one.data(), p.n);
    SetComputeThreads(2);
    GemmRows(p.trans_b, m, p.n, p.k, a.data(), p.k, b.data(), ldb, two.data(), p.n);
    SetComputeThreads(1);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), 4 * one.size()), 0);
  }
}

// The sums over a block of examples (a kernel gradient: patches^T * dY, k = the block's rows).
TEST(GemmSerialTest, ASumOverManyRowsDoesNotDependOnTheThreads) {
  const int64_t m = 392, n = 32, k = 2000;
  const std::vector<float> a = Random(k * m, 7), b = Random(k * n, 8);
  std::vector<float> one(static_cast<size_t>(m * n)), two(one.size());
  SetComputeThreads(1);
  GemmSerial(true, false, m, n, k, 1.0f, a.data(), m, b.data(), n, 0.0f, one.data(), n);
  SetComputeThreads(2);
  GemmSerial(true, false, m, n, k, 1.0f, a.data(), m, b.data(), n, 0.0f, two.data(), n);
  SetComputeThreads(1);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), 4 * one.size()), 0);
}

TEST(GemmRowsTest, ComputesTheProduct) {
  for (const Product& p : kProducts) {
    const int64_t m = 3;
    const std::vector<float> a = Random(m * p.k, 3), b = Random(p.k * p.n, 4);
    const int64_t ldb = p.trans_b ? p.k : p.n;
    std::vector<float> c(static_cast<size_t>(m * p.n));
    GemmRows(p.trans_b, m, p.n, p.k, a.data(), p.k, b.data(), ldb, c.data(), p.n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        double want = 0;
        for (int64_t l = 0; l < p.k; ++l) {
          want +=
              static_cast<double>(a[i * p.k + l]) * (p.trans_b ? b[j * p.k + l] : b[l * p.n + j]);
        }
        ASSERT_NEAR(c[i * p.n + j], want, 1e-4 * (1 + std::abs(want)))
            << "n " << p.n << " k " << p.k << " at " << i << "," << j;
      }
    }
  }
}

// OpenBLAS 0.3.21 runs its SSE3 kernels ("Prescott") on a CPU newer than its model table; the
// engine has it choose by the CPU's features instead (gemm.cpp).
TEST(BlasCoreTest, OpenBlasRunsKernelsForThisCpusVectorUnits) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx")) GTEST_SKIP() << "a CPU without AVX";
  EXPECT_STRNE(BlasCore(), "Prescott");
  EXPECT_STRNE(BlasCore(), "unknown");
}

}  // namespace
}  // namespace trainingd::engine::internal
