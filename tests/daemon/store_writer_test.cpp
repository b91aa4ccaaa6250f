// Store: the writer's batching and Flush barrier, concurrent readers, and durability across
// stores, a backup taken while running, and a crashed process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store_fixture.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {
namespace {

using api::JobState;
using api::ScalarPoint;
using api::ScalarQuery;

// ---- the writer ---------------------------------------------------------------------------------

TEST_F(StoreTest, FlushIsABarrier) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  int64_t total = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 50; ++i) {
      store->AddScalars({{"a", "loss", total, 1.0, 1.0 * total}});
      ++total;
    }
    store->UpdateJobStep("a", total);
    ASSERT_TRUE(store->Flush().ok());
    // No waiting: Flush returned, so every write before it is visible.
    EXPECT_EQ((*store->GetJob("a"))->global_step, total);
    EXPECT_EQ(*store->LatestScalars("a"), (std::map<std::string, double>{{"loss", total - 1.0}}));
    EXPECT_EQ(store->stats().queued_writes, 0);
  }
  EXPECT_EQ(store->stats().committed_scalars, total);
  EXPECT_EQ(Query(*store, "a", {.tag = "loss", .max_points = 5000}).size(),
            static_cast<size_t>(total));
}

TEST_F(StoreTest, ConcurrentFlushesEachSeeTheirOwnWrites) {
  auto store = OpenStore();
  auto job_id = [](int t) { return std::string(1, static_cast<char>('a' + t)); };
  for (int t = 0; t < 4; ++t) store->PutJob(MakeJob(job_id(t), t));
  ASSERT_TRUE(store->Flush().ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string job = job_id(t);
      for (int i = 0; i < 100; ++i) {
        store->AddScalars({{job, "x", i, 1.0, 1.0 * i}});
        if (!store->Flush().ok()) ++failures;
        auto latest = store->LatestScalars(job);
        if (!latest.ok() || latest->count("x") == 0 || latest->at("x") != i) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(StoreTest, WritesQueuedWhileTheWriterWaitsShareOneTransaction) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  ASSERT_TRUE(store->Flush().ok());
  const int64_t before = store->stats().committed_batches;
  // Hold the write lock so that the writer waits in its first transaction.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  for (int i = 0; i < 1000; ++i) store->AddScalars({{"a", "loss", i, 1.0, 1.0}});
  EXPECT_GT(store->stats().queued_writes, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_LE(store->stats().committed_batches - before, 2);
  EXPECT_EQ(Query(*store, "a", {.tag = "loss", .max_points = 1000}).size(), 1000u);
}

TEST_F(StoreTest, LargeBacklogsAreSplitIntoTransactions) {
  StoreOptions options;
  options.max_scalars_per_transaction = 1000;
  auto store = OpenStore(options);
  store->PutJob(MakeJob("a", 1));
  ASSERT_TRUE(store->Flush().ok());
  const int64_t before = store->stats().committed_batches;
  for (int b = 0; b < 10; ++b) {
    std::vector<ScalarRecord> recs;
    for (int i = 0; i < 1000; ++i) recs.push_back({"a", "loss", b * 1000 + i, 1.0, 1.0});
    store->AddScalars(std::move(recs));
  }
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_GE(store->stats().committed_batches - before, 10);
  EXPECT_EQ(store->stats().committed_scalars, 10000);
}

TEST_F(StoreTest, ReadersRunWhileTheWriterWrites) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  ASSERT_TRUE(store->Flush().ok());
  constexpr int kBatches = 200;
  constexpr int kPerBatch = 500;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      int64_t seen = -1;  // the last step seen: never goes back
      while (!done.load()) {
        auto pts = store->QueryScalars("a", {.tag = "loss", .max_points = 50});
        auto tags = store->ScalarTags("a");
        auto jobs = store->ListJobs(std::nullopt, 10, "");
        if (!pts.ok() || !tags.ok() || !jobs.ok() || pts->size() > 50) {
          ++failures;
          continue;
        }
        if (!pts->empty()) {
          // Batches commit whole: the series always ends at the end of a batch.
          const int64_t last = pts->back().step;
          if (last < seen || (last + 1) % kPerBatch != 0) ++failures;
          seen = last;
        }
        ++reads;
      }
    });
  }
  for (int b = 0; b < kBatches; ++b) {
    std::vector<ScalarRecord> recs;
    for (int i = 0; i < kPerBatch; ++i) {
      const int64_t step = int64_t{b} * kPerBatch + i;
      recs.push_back({"a", "loss", step, 1.0, std::sin(step * 0.001)});
    }
    store->AddScalars(std::move(recs));
    if (b % 20 == 0) {
      ASSERT_TRUE(store->Flush().ok());
    }
  }
  ASSERT_TRUE(store->Flush().ok());
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 3);
  const auto all = Query(*store, "a", {.tag = "loss", .max_points = kBatches * kPerBatch});
  EXPECT_EQ(all.size(), static_cast<size_t>(kBatches * kPerBatch));
}

// ---- durability ---------------------------------------------------------------------------------

TEST_F(StoreTest, FlushedWritesAreInTheFileForAnotherStore) {
  auto writer = OpenStore();
  writer->PutJob(MakeJob("a", 1, JobState::kRunning));
  std::vector<ScalarRecord> recs;
  for (int i = 0; i < 5000; ++i) recs.push_back({"a", "loss", i, 1.0, 1.0 * i});
  writer->AddScalars(std::move(recs));
  ASSERT_TRUE(writer->Flush().ok());
  {
    auto other = OpenStore();  // a second Store on the same file, the first still open
    ASSERT_TRUE(other != nullptr);
    EXPECT_EQ((*other->GetJob("a"))->state, JobState::kRunning);
    EXPECT_EQ(*other->LatestScalars("a"), (std::map<std::string, double>{{"loss", 4999.0}}));
  }
  writer.reset();
  auto again = OpenStore();
  EXPECT_EQ(Query(*again, "a", {.tag = "loss", .max_points = 5000}).size(), 5000u);
}

// The backup of docs/storage.md: VACUUM INTO from another connection while the store writes
// gives a consistent copy that opens as a store.
TEST_F(StoreTest, VacuumIntoWhileRunningMakesAConsistentBackup) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  ASSERT_TRUE(store->Flush().ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int64_t b = 0; !done.load() || b < 20; ++b) {
      std::vector<ScalarRecord> recs;
      for (int i = 0; i < 500; ++i) recs.push_back({"a", "loss", b * 500 + i, 1.0, 1.0 * i});
      store->AddScalars(std::move(recs));
      if (b % 5 == 0) {
        if (!store->Flush().ok()) ADD_FAILURE() << "flush";
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string backup = (dir_ / "backup.db").string();
  RawExec(path_, "VACUUM INTO '" + backup + "'");
  done = true;
  writer.join();
  ASSERT_TRUE(store->Flush().ok());
  auto copy = Store::Open(backup);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  auto pts = (*copy)->QueryScalars("a", {.tag = "loss", .max_points = 1000000});
  ASSERT_TRUE(pts.ok());
  // Whole batches only, and the rollups agree with the points they came with.
  EXPECT_EQ(pts->size() % 500, 0u);
  Series ref;
  for (const ScalarPoint& p : *pts) ref[p.step] = {p.wall_time, p.value};
  const ScalarQuery q{.tag = "loss", .max_points = 40};
  EXPECT_TRUE(FollowsRule(ref, q, *(*copy)->QueryScalars("a", q)));
}

// A child process writes, flushes, writes more and dies without running a destructor; the
// parent then finds everything that was flushed.
void CrashAfterFlush(const std::string& path, bool kill_nine) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto store = Store::Open(path);
    if (!store.ok()) ::_exit(2);
    Store& s = **store;
    s.PutJob(MakeJob("crash", 1, JobState::kRunning));
    for (int b = 0; b < 20; ++b) {
      std::vector<ScalarRecord> recs;
      for (int i = 0; i < 1000; ++i) {
        const int64_t step = int64_t{b} * 1000 + i;
        recs.push_back({"crash", "loss", step, 1.0 * step, std::cos(step * 0.01)});
      }
      s.AddScalars(std::move(recs));
    }
    s.UpdateJobStep("crash", 19999);
    if (!s.Flush().ok()) ::_exit(3);
    s.UpdateJobStep("crash", 123456);  // not flushed: may or may not survive
    if (kill_nine) ::kill(::getpid(), SIGKILL);
    ::_exit(0);  // no destructors: the writer thread is never joined
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  if (kill_nine) {
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  } else {
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto job = (*store)->GetJob("crash");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->state, JobState::kRunning);
  EXPECT_GE((*job)->global_step, 19999);
  Series ref;
  for (int64_t step = 0; step < 20000; ++step) ref[step] = {1.0 * step, std::cos(step * 0.01)};
  for (int64_t mp : {20000, 500}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    auto got = (*store)->QueryScalars("crash", q);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(FollowsRule(ref, q, *got));
  }
}

TEST_F(StoreTest, ProcessExitWithoutDestructorsLosesNothingFlushed) {
  CrashAfterFlush(path_, false);
}

TEST_F(StoreTest, KillNineLosesNothingFlushed) { CrashAfterFlush(path_, true); }

}  // namespace
}  // namespace trainingd::daemon
