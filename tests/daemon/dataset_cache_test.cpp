// DatasetCache: one copy of a dataset while jobs hold it, kept for keep_idle after the last lets
// go, freed first when another dataset is wanted or FreeIdle is called, and freed by the sweeper
// once keep_idle passes.
#include "trainingd/daemon/datasets/dataset_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace trainingd::daemon {
namespace {
using namespace std::chrono_literals;

engine::DatasetSpec Small(int64_t train_examples) {
  engine::DatasetSpec d;  // fashion-mnist under /usr/share/datasets
  d.validation_size = 100;
  d.max_train_examples = train_examples;
  d.max_test_examples = 100;
  return d;
}

// Waits up to 10 s for the cache to hold `n` datasets.
bool WaitForResident(const DatasetCache& cache, int n) {
  for (int i = 0; i < 1000 && cache.resident() != n; ++i) std::this_thread::sleep_for(10ms);
  return cache.resident() == n;
}

TEST(DatasetCacheTest, JobsAtTheSameTimeShareOneCopy) {
  DatasetCache cache("/usr/share/datasets", "", 0ms);
  auto a = cache.Load(Small(1000));
  auto b = cache.Load(Small(1000));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.loads(), 1);
  auto other = cache.Load(Small(2000));  // other split options: another dataset
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->get(), a->get());
  EXPECT_EQ(cache.loads(), 2);
  EXPECT_EQ(cache.resident(), 2);
}

TEST(DatasetCacheTest, WithoutKeepIdleTheLastJobToLetGoFreesIt) {
  DatasetCache cache("/usr/share/datasets", "", 0ms);
  {
    auto a = cache.Load(Small(1000));
    ASSERT_TRUE(a.ok());
    auto b = *a;  // a second holder of the same handle
    a = engine::Status::Internal("let go");
    EXPECT_EQ(cache.resident(), 1);
  }
  EXPECT_EQ(cache.resident(), 0);
  ASSERT_TRUE(cache.Load(Small(1000)).ok());
  EXPECT_EQ(cache.loads(), 2);
}

TEST(DatasetCacheTest, TheNextJobWithinKeepIdleFindsItLoaded) {
  DatasetCache cache("/usr/share/datasets", "", 1h);
  const engine::Datasets* first = nullptr;
  {
    auto a = cache.Load(Small(1000));
    ASSERT_TRUE(a.ok());
    first = a->get();
  }
  EXPECT_EQ(cache.resident(), 1);  // idle, kept
  auto again = cache.Load(Small(1000));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), first);
  EXPECT_EQ(cache.loads(), 1);
}

TEST(DatasetCacheTest, AnIdleDatasetIsFreedBeforeAnotherLoads) {
  DatasetCache cache("/usr/share/datasets", "", 1h);
  auto held = cache.Load(Small(1000));
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(cache.Load(Small(2000)).ok());  // loaded, then idle at once
  EXPECT_EQ(cache.resident(), 2);
  ASSERT_TRUE(cache.Load(Small(3000)).ok());  // the idle one goes first; the held one stays
  EXPECT_EQ(cache.resident(), 2);
  auto again = cache.Load(Small(1000));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), held->get());
  EXPECT_EQ(cache.loads(), 3);
}

TEST(DatasetCacheTest, FreeIdleFreesTheIdleOnesAtOnceAndKeepsTheHeld) {
  DatasetCache cache("/usr/share/datasets", "", 1h);
  auto held = cache.Load(Small(1000));
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(cache.Load(Small(2000)).ok());  // idle at once
  EXPECT_EQ(cache.resident(), 2);
  cache.FreeIdle();
  EXPECT_EQ(cache.resident(), 1);
  auto again = cache.Load(Small(1000));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), held->get());
  EXPECT_EQ(cache.loads(), 2);
}

TEST(DatasetCacheTest, KeepIdleAfterTheLastJobTheSweeperFreesIt) {
  DatasetCache cache("/usr/share/datasets", "", 50ms);
  {
    auto a = cache.Load(Small(1000));
    ASSERT_TRUE(a.ok());
    std::this_thread::sleep_for(100ms);  // held past keep_idle: still there
    EXPECT_EQ(cache.resident(), 1);
  }
  EXPECT_TRUE(WaitForResident(cache, 0));
}

TEST(DatasetCacheTest, AFailedLoadKeepsNothing) {
  DatasetCache cache("/usr/share/datasets", "", 1h);
  engine::DatasetSpec missing = Small(1000);
  missing.name = "no-such-dataset";
  auto r = cache.Load(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no-such-dataset"), std::string::npos);
  EXPECT_EQ(cache.resident(), 0);
  EXPECT_EQ(cache.loads(), 0);
}

}  // namespace
}  // namespace trainingd::daemon
