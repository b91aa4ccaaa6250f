#include "nn/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "trainingd/engine/base/parallel.h"

// OpenBLAS's run-time kernel choice (a DYNAMIC_ARCH build, as Debian's). Weak: a build without it
// leaves them null and keeps its kernels.
extern "C" {
[[gnu::weak]] char* gotoblas_corename(void);
[[gnu::weak]] void gotoblas_dynamic_init(void);
[[gnu::weak]] void gotoblas_dynamic_quit(void);
}

namespace trainingd::engine::internal {
namespace {

// OpenBLAS 0.3.21 (Debian 12) picks its kernels from a table of CPU models; a model newer than
// the table (Intel's Emerald Rapids, family 6 model 207, for one) gets its last resort, the SSE3
// kernels it calls Prescott: half the CNN's speed, and products whose rows depend on the row count
// (GemmRows' promise, which the exact data-parallel sums need). Newer OpenBLAS releases fall back
// by the CPU's features instead; this does the same, once, before the first product: it names the
// kernels in OPENBLAS_CORETYPE (which child processes, the ranks among them, then read too) and
// has OpenBLAS choose again. A user's own OPENBLAS_CORETYPE is left alone.
const char* CoreForThisCpu() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return nullptr;
}

[[maybe_unused]] const bool kBlasCoreChosen = [] {
  if (!gotoblas_corename || !gotoblas_dynamic_init || !gotoblas_dynamic_quit) return false;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return false;
  if (std::strcmp(gotoblas_corename(), "Prescott") != 0) return false;
  const char* core = CoreForThisCpu();
  if (core == nullptr) return false;
  // Static initialisation: no other thread runs yet, and OpenBLAS has computed nothing.
  setenv("OPENBLAS_CORETYPE", core, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  return true;
}();

// Below this many multiply-adds a product runs on the calling thread: waking the pool costs more
// than it saves (OpenBLAS's own cut-off, 2^18, is tuned for large machines).
constexpr double kMinThreadedMacs = 4.0 * (1 << 20);
// OpenBLAS's small-matrix kernels take products of up to 100^3 multiply-adds.
constexpr double kSmallKernelMacs = 100.0 * 100.0 * 100.0;

// Runs `call` on the calling thread alone when the product is too small to pay for waking the
// pool (OpenBLAS sizes its team by the caller's nthreads ICV, which is per thread).
template <typename Call>
void RunSized(double macs, Call&& call) {
  const int threads = omp_get_max_threads();
  if (threads > 1 && !omp_in_parallel() && macs < kMinThreadedMacs) {
    omp_set_num_threads(1);
    call();
    omp_set_num_threads(threads);
    return;
  }
  call();
}
}  // namespace

const char* BlasCore() { return gotoblas_corename ? gotoblas_corename() : "unknown"; }

namespace {
void RowMajorSgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                   int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}
}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  RunSized(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
           [&] { RowMajorSgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}

void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  if (m == 0 || n == 0) return;
  RunSized(0,
           [&] { RowMajorSgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}

namespace {

// GemmRows on the calling thread alone.
void GemmRowsSingle(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc) {
  // Row-major C = A op(B) is column-major C^T = op(B)^T A^T, with the same arrays.
  const auto product = [&](int64_t rows, const float* pa, int64_t pa_ld, float* pc, int64_t pc_ld) {
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    cblas_sgemm(CblasColMajor, trans_b ? CblasTrans : CblasNoTrans, CblasNoTrans,
                static_cast<blasint>(n), static_cast<blasint>(rows), static_cast<blasint>(k), 1.0f,
                b, static_cast<blasint>(ldb), pa, static_cast<blasint>(pa_ld), 0.0f, pc,
                static_cast<blasint>(pc_ld));
    omp_set_num_threads(threads);
  };
  const double nk = static_cast<double>(n) * static_cast<double>(k);
  if (static_cast<double>(m) * nk > kSmallKernelMacs || k == 0) {
    product(m, a, lda, c, ldc);
    return;
  }
  // Small: the rows, then zero rows up to the first count past the small kernel's limit.
  const int64_t rows = GemmRowsUnpadded(n, k);
  thread_local std::vector<float> padded_a, padded_c;
  padded_a.assign(static_cast<size_t>(rows * k), 0.0f);
  padded_c.resize(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < m; ++r) std::copy_n(a + r * lda, k, padded_a.data() + r * k);
  product(rows, padded_a.data(), k, padded_c.data(), n);
  for (int64_t r = 0; r < m; ++r) std::copy_n(padded_c.data() + r * n, n, c + r * ldc);
}

}  // namespace

int64_t GemmRowsUnpadded(int64_t n, int64_t k) {
  const double nk =
      static_cast<double>(std::max<int64_t>(n, 1)) * static_cast<double>(std::max<int64_t>(k, 1));
  return static_cast<int64_t>(kSmallKernelMacs / nk) + 1;
}

void GemmRows(bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (omp_in_parallel() || ComputeThreads() <= 1 || macs < kMinThreadedMacs) {
    GemmRowsSingle(trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  // Threads take rows or columns of C, each with single-threaded calls: OpenBLAS's threaded
  // driver blocks k differently from its single-threaded one, so its results would depend on
  // the thread count.
  if (m >= n) {
    ParallelFor(m, 2, [&](int64_t begin, int64_t end) {
      GemmRowsSingle(trans_b, end - begin, n, k, a + begin * lda, lda, b, ldb, c + begin * ldc,
                     ldc);
    });
  } else {
    ParallelFor(n, 2, [&](int64_t begin, int64_t end) {
      GemmRowsSingle(trans_b, m, end - begin, k, a, lda, trans_b ? b + begin * ldb : b + begin, ldb,
                     c + begin, ldc);
    });
  }
}

}  // namespace trainingd::engine::internal
