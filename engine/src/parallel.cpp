#include "trainingd/engine/parallel.h"

#include <omp.h>

#include <algorithm>

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
void ParallelChunksImpl(int64_t n, int chunks, void (*call)(void*, int, int64_t, int64_t),
                        void* ctx) {
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    FlushDenormalsOnThisThread();
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    if (begin < end) call(ctx, c, begin, end);
  }
}

void ParallelForImpl(int64_t n, int threads, void (*call)(void*, int64_t, int64_t), void* ctx) {
  const int t = static_cast<int>(std::min<int64_t>(threads, n));
#pragma omp parallel num_threads(t)
  {
    FlushDenormalsOnThisThread();
    const int64_t id = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t begin = n * id / nt;
    const int64_t end = n * (id + 1) / nt;
    if (begin < end) call(ctx, begin, end);
  }
}
}  // namespace internal

}  // namespace trainingd::engine
