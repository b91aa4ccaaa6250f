// Compute threads: how many cores the engine's parallel loops use.
//
// The setting is per calling thread, so the daemon's worker threads can each run a job with its
// own share of the cores: each calling thread has a team of ComputeThreads() - 1 threads of its
// own, started at its first parallel loop. A loop's chunks are handed out one at a time to
// whichever of the team and the caller asks first, so a caller never waits for a thread the
// scheduler has not run (on a machine shared with other programs). Idle threads look for work for
// up to 1 ms, yielding their core at every look after the first 10 us, then sleep.
#pragma once

#include <cstdint>
#include <utility>

namespace trainingd::engine {

// Sets the number of threads for work started from the calling thread (clamped to [1, 1024]), and
// makes the calling thread and its team flush denormal floats to zero, as TensorFlow does:
// gradients and Adam's second moments decay into the denormal range late in training, where every
// operation on them costs about a hundred times more.
void SetComputeThreads(int n);
// Flush-to-zero and denormals-are-zero for the calling thread (x86; a no-op elsewhere). Every
// ParallelFor/ParallelChunks body runs with it.
void FlushDenormalsOnThisThread();
// The number of threads work started from the calling thread will use.
int ComputeThreads();

// Splits [0, n) into ComputeThreads() contiguous chunks and calls fn(begin, end) for each chunk on
// its own thread. Runs inline when n is below `min_parallel` or one thread is configured. The split
// depends only on n and the thread count, so results are reproducible for a given thread count.
template <typename Fn>
void ParallelFor(int64_t n, int64_t min_parallel, Fn&& fn);

// Like ParallelFor, but fn(chunk, begin, end) also gets the chunk's index in [0, NumChunks(n,
// ...)), so each chunk can use its own scratch buffers or partial sums (reduced afterwards in chunk
// order, which keeps results reproducible).
template <typename Fn>
void ParallelChunks(int64_t n, int64_t min_parallel, Fn&& fn);
// How many chunks ParallelChunks(n, min_parallel, ...) uses on the calling thread.
int NumChunks(int64_t n, int64_t min_parallel);
// The same for a thread running `threads` compute threads (sizing work before it runs).
int NumChunks(int64_t n, int64_t min_parallel, int threads);

namespace internal {
void ParallelChunksImpl(int64_t n, int chunks, void (*call)(void*, int, int64_t, int64_t),
                        void* ctx);
void ParallelForImpl(int64_t n, int threads, void (*call)(void*, int64_t, int64_t), void* ctx);
}  // namespace internal

template <typename Fn>
void ParallelFor(int64_t n, int64_t min_parallel, Fn&& fn) {
  const int threads = ComputeThreads();
  if (threads <= 1 || n < min_parallel || n < 2) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  auto call = [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); };
  internal::ParallelForImpl(n, threads, call, &fn);
}

template <typename Fn>
void ParallelChunks(int64_t n, int64_t min_parallel, Fn&& fn) {
  const int chunks = NumChunks(n, min_parallel);
  if (chunks <= 1) {
    if (n > 0) fn(0, int64_t{0}, n);
    return;
  }
  auto call = [](void* ctx, int c, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(c, b, e); };
  internal::ParallelChunksImpl(n, chunks, call, &fn);
}

}  // namespace trainingd::engine
