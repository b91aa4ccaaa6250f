#include "trainingd/engine/base/parallel.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <mutex>

#if defined(__SSE__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

namespace trainingd::engine {

void FlushDenormalsOnThisThread() {
#if defined(__SSE__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

void SetComputeThreads(int n) {
  omp_set_num_threads(std::max(1, n));
  FlushDenormalsOnThisThread();
  // The same for the OpenMP pool threads that the engine's loops and OpenBLAS will run on.
#pragma omp parallel num_threads(std::max(1, n))
  FlushDenormalsOnThisThread();
}

int ComputeThreads() { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

int NumChunks(int64_t n, int64_t min_parallel) {
  return NumChunks(n, min_parallel, ComputeThreads());
}

int NumChunks(int64_t n, int64_t min_parallel, int threads) {
  if (threads <= 1 || n < min_parallel || n < 2) return 1;
  return static_cast<int>(std::min<int64_t>(threads, n));
}

namespace internal {
namespace {
// An exception may not leave an OpenMP region (the runtime would terminate the process), so each
// thread's is caught and the first one rethrown on the calling thread once the region is done:
// std::bad_alloc from a chunk's buffer then reaches the job's own exception boundary.
class FirstException {
 public:
  template <typename Fn>
  void Run(Fn&& fn) {
    try {
      fn();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void Rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mu_;
  std::exception_ptr error_;
};
}  // namespace

void ParallelChunksImpl(int64_t n, int chunks, void (*call)(void*, int, int64_t, int64_t),
                        void* ctx) {
  FirstException error;
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    FlushDenormalsOnThisThread();
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    if (begin < end) error.Run([&] { call(ctx, c, begin, end); });
  }
  error.Rethrow();
}

void ParallelForImpl(int64_t n, int threads, void (*call)(void*, int64_t, int64_t), void* ctx) {
  const int t = static_cast<int>(std::min<int64_t>(threads, n));
  FirstException error;
#pragma omp parallel num_threads(t)
  {
    FlushDenormalsOnThisThread();
    const int64_t id = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t begin = n * id / nt;
    const int64_t end = n * (id + 1) / nt;
    if (begin < end) error.Run([&] { call(ctx, begin, end); });
  }
  error.Rethrow();
}
}  // namespace internal

}  // namespace trainingd::engine
