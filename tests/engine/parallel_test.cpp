#include "trainingd/engine/base/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <stdexcept>
#include <vector>

namespace trainingd::engine {
namespace {

TEST(ParallelTest, ChunksCoverTheRangeOnceAndInOrder) {
  SetComputeThreads(2);
  for (int64_t n : {1, 2, 3, 17, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    std::vector<std::pair<int64_t, int64_t>> ranges(2, {-1, -1});
    ParallelChunks(n, 2, [&](int chunk, int64_t b, int64_t e) {
      ranges[static_cast<size_t>(chunk)] = {b, e};
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    if (n >= 2) {
      EXPECT_EQ(NumChunks(n, 2), 2);
      EXPECT_EQ(ranges[0].first, 0);
      EXPECT_EQ(ranges[0].second, ranges[1].first);
      EXPECT_EQ(ranges[1].second, n);
    }
  }
  EXPECT_EQ(NumChunks(10, 100), 1);  // below the parallel threshold
  SetComputeThreads(1);
  EXPECT_EQ(NumChunks(1000, 2), 1);
  EXPECT_EQ(ComputeThreads(), 1);
  SetComputeThreads(2);
}

TEST(ParallelTest, AnExceptionOnAComputeThreadReachesTheCaller) {
  // An exception leaving an OpenMP region would terminate the process; bad_alloc from a chunk's
  // buffer must reach the job's exception boundary instead.
  SetComputeThreads(2);
  EXPECT_THROW(ParallelChunks(100, 2,
                              [](int chunk, int64_t, int64_t) {
                                if (chunk == 1) throw std::bad_alloc();
                              }),
               std::bad_alloc);
  EXPECT_THROW(ParallelFor(100, 2,
                           [](int64_t begin, int64_t) {
                             if (begin > 0) throw std::runtime_error("second thread");
                           }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  ParallelFor(100, 2, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100);
}

TEST(ParallelTest, DenormalsAreFlushedToZeroOnEveryComputeThread) {
  SetComputeThreads(2);
  volatile float tiny = 1e-39f;  // a denormal float
  EXPECT_EQ(tiny * 1.0f, 0.0f);
  std::vector<float> out(2, -1.0f);
  ParallelChunks(2, 2, [&](int chunk, int64_t, int64_t) {
    volatile float t = 1e-39f;
    out[static_cast<size_t>(chunk)] = t * 1.0f;
  });
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
}

}  // namespace
}  // namespace trainingd::engine
