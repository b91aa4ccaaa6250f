#include "trainingd/engine/base/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <random>
#include <stdexcept>
#include <thread>
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
  // An exception leaving a compute thread would terminate the process; bad_alloc from a chunk's
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

// Many short loops, some after pauses long enough for the team's threads to fall asleep: every
// chunk runs exactly once and every call returns (a lost wake-up would hang here).
TEST(ParallelTest, ShortLoopsAndLoopsAfterIdlePausesAllComplete) {
  SetComputeThreads(2);
  std::mt19937 rng(7);
  std::vector<int64_t> out(64);
  for (int call = 0; call < 20000; ++call) {
    const int64_t n = 2 + static_cast<int64_t>(rng() % 62);
    ParallelFor(n, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[static_cast<size_t>(i)] = call;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[static_cast<size_t>(i)], call) << i;
    if (call % 2000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Each calling thread has its own compute threads: jobs on several threads of the daemon train
// side by side, each with its own thread count.
TEST(ParallelTest, SeveralCallingThreadsEachRunTheirOwnLoops) {
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int threads : {1, 2, 3, 2}) {
    callers.emplace_back([&, threads] {
      SetComputeThreads(threads);
      if (ComputeThreads() != threads) ++wrong;
      for (int call = 0; call < 2000; ++call) {
        std::vector<int> hits(100, 0);
        ParallelChunks(100, 2, [&](int, int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits) wrong += h != 1;
        if (NumChunks(100, 2) != threads) ++wrong;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A loop started inside a chunk runs on that chunk's thread, in one piece.
TEST(ParallelTest, ALoopInsideAChunkRunsInline) {
  SetComputeThreads(2);
  std::atomic<int> inner_chunks{0}, inner_threads_seen{0};
  ParallelChunks(2, 2, [&](int, int64_t, int64_t) {
    if (ComputeThreads() == 1) ++inner_threads_seen;
    const std::thread::id me = std::this_thread::get_id();
    ParallelFor(1000, 2, [&](int64_t b, int64_t e) {
      ++inner_chunks;
      EXPECT_EQ(std::this_thread::get_id(), me);
      EXPECT_EQ(e - b, 1000);
    });
  });
  EXPECT_EQ(inner_chunks.load(), 2);
  EXPECT_EQ(inner_threads_seen.load(), 2);
  EXPECT_EQ(ComputeThreads(), 2);
}

}  // namespace
}  // namespace trainingd::engine
