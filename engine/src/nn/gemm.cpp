#include "nn/gemm.h"

#include <cblas.h>
#include <omp.h>

namespace trainingd::engine::internal {
namespace {
// Below this many multiply-adds a product runs on the calling thread: waking the pool costs more
// than it saves (OpenBLAS's own cut-off, 2^18, is tuned for large machines).
constexpr double kMinThreadedMacs = 4.0 * (1 << 20);
}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
  };
  const int threads = omp_get_max_threads();
  if (threads > 1 && !omp_in_parallel() &&
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < kMinThreadedMacs) {
    // OpenBLAS (OpenMP build) sizes its team by the caller's nthreads ICV, which is per thread.
    omp_set_num_threads(1);
    call();
    omp_set_num_threads(threads);
    return;
  }
  call();
}

}  // namespace trainingd::engine::internal
