// Store under storage faults injected through FaultVfs (fault_vfs.h): a full disk, an I/O error,
// a lock another process holds. Writes made while the database fails are retried with backoff
// (counted in failed_writes), health goes degraded and back, and once the fault is gone every
// job row, state change and scalar queued meanwhile is in the file -- read back after the store
// is closed and opened again through SQLite's own VFS.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault_vfs.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
using api::JobState;
using engine::StatusCode;
using Fault = FaultVfs::Fault;
using std::chrono::milliseconds;

struct FaultCase {
  const char* name;
  Fault fault;
  StatusCode code;      // what the store reports while it lasts
  int64_t after_calls;  // calls that still succeed first: > 0 starts it mid-transaction
};

std::ostream& operator<<(std::ostream& out, const FaultCase& c) { return out << c.name; }

JobRecord Job(const std::string& id, double created_at) {
  JobRecord j;
  j.id = id;
  j.name = "name-" + id;
  j.spec_json = R"({"name":")" + id + R"("})";
  j.created_at = created_at;
  j.max_steps = 100;
  return j;
}

std::vector<ScalarRecord> Scalars(const std::string& job, int64_t from, int64_t to) {
  std::vector<ScalarRecord> out;
  for (int64_t s = from; s <= to; ++s) {
    out.push_back({job, "loss", s, 1000.0 + static_cast<double>(s), 1.0 / static_cast<double>(s)});
  }
  return out;
}

class StoreFaultTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->name()) + "_" + std::to_string(::getpid());
    for (char& c : name) {
      if (c == '/') c = '_';
    }
    dir_ = fs::path(::testing::TempDir()) / ("store_fault_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "trainingd.db").string();
    options_.vfs = FaultVfs::Get().name();
    options_.busy_timeout_ms = 20;
    options_.retry_initial_backoff = milliseconds(5);
    options_.retry_max_backoff = milliseconds(40);
  }
  void TearDown() override {
    FaultVfs::Get().Clear();
    fs::remove_all(dir_);
  }

  std::unique_ptr<Store> Open(const StoreOptions& options) {
    auto store = Store::Open(path_, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  fs::path dir_;
  std::string path_;
  StoreOptions options_;
};

TEST_P(StoreFaultTest, WritesDuringTheFaultAreRetriedAndAllThereAfterAReopen) {
  const FaultCase& c = GetParam();
  {
    std::unique_ptr<Store> store = Open(options_);
    ASSERT_NE(store, nullptr);
    std::mutex mu;
    std::vector<StoreHealth> changes;
    store->SetHealthListener([&](const StoreHealth& h) {
      std::lock_guard<std::mutex> lock(mu);
      changes.push_back(h);
    });
    store->PutJob(Job("before", 1));
    store->PutJob(Job("stopped-later", 2));
    store->AddScalars(Scalars("before", 1, 100));
    ASSERT_TRUE(store->Flush().ok());
    const int64_t failures_before = FaultVfs::Get().failures();

    FaultVfs::Get().Inject(c.fault, c.after_calls);
    // Everything a daemon writes while its disk fails: a new job, state changes, steps,
    // crash counts, scalars, a resume's dropped scalars.
    store->PutJob(Job("during", 3));
    store->UpdateJobState("before", JobState::kRunning, 10, 0, "", "");
    store->UpdateJobStep("before", 250);
    store->AddScalars(Scalars("before", 101, 250));
    store->UpdateJobCrashCount("before", 1);
    store->UpdateJobState("stopped-later", JobState::kStopped, 0, 20, "", "stopped meanwhile");
    store->AddScalars(Scalars("during", 1, 30));
    store->DropScalarsAfter("during", 20);
    store->UpdateJobState("during", JobState::kFailed, 30, 40, "ResourceExhausted: x", "why");
    const engine::Status st = store->Flush(milliseconds(300));
    EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
    EXPECT_NE(st.message().find(engine::StatusCodeName(c.code)), std::string::npos) << st.message();
    const StoreHealth during = store->health();
    EXPECT_TRUE(during.degraded);
    EXPECT_EQ(during.error.code(), c.code) << during.error.ToString();
    EXPECT_NE(during.error.message().find(path_), std::string::npos) << during.error.message();
    EXPECT_GE(during.failed_writes, 2);  // the batch was retried, with backoff
    // A request's reply does not wait for the retries.
    const auto asked = std::chrono::steady_clock::now();
    const engine::Status reply = store->FlushForReply(std::chrono::seconds(60));
    EXPECT_EQ(reply.code(), StatusCode::kDeadlineExceeded) << reply.ToString();
    EXPECT_NE(reply.message().find(engine::StatusCodeName(c.code)), std::string::npos)
        << reply.message();
    EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(30));
    EXPECT_GT(FaultVfs::Get().failures(), failures_before);
    const StoreStats stats = store->stats();
    EXPECT_GE(stats.failed_writes, during.failed_writes);  // the writer retries meanwhile
    EXPECT_GT(stats.queued_writes, 0);                     // held, not dropped
    EXPECT_EQ(stats.dropped_scalars, 0);
    // Reads go on meanwhile, and see what was committed before the fault.
    auto before = store->GetJob("before");
    ASSERT_TRUE(before.ok()) << before.status().ToString();
    EXPECT_EQ((*before)->state, JobState::kQueued);
    EXPECT_FALSE(store->GetJob("during")->has_value());

    FaultVfs::Get().Clear();
    EXPECT_TRUE(store->Flush().ok());
    EXPECT_FALSE(store->health().degraded);
    EXPECT_EQ(store->stats().queued_writes, 0);
    // Healthy again, a reply waits for the commit.
    store->PutJob(Job("after", 4));
    EXPECT_TRUE(store->FlushForReply(std::chrono::seconds(60)).ok());
    EXPECT_TRUE(store->GetJob("after")->has_value());
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(changes.size(), 2u);  // degraded once, recovered once
    EXPECT_TRUE(changes[0].degraded);
    EXPECT_EQ(changes[0].error.code(), c.code);
    EXPECT_FALSE(changes[1].degraded);
    EXPECT_TRUE(changes[1].error.ok());
  }
  // Closed, and opened again through SQLite's own VFS: everything is in the file.
  std::unique_ptr<Store> store = Open(StoreOptions());
  ASSERT_NE(store, nullptr);
  const JobRecord before = store->GetJob("before").value().value();
  EXPECT_EQ(before.state, JobState::kRunning);
  EXPECT_EQ(before.started_at, 10);
  EXPECT_EQ(before.global_step, 250);
  EXPECT_EQ(before.crash_count, 1);
  const JobRecord stopped = store->GetJob("stopped-later").value().value();
  EXPECT_EQ(stopped.state, JobState::kStopped);
  EXPECT_EQ(stopped.reason, "stopped meanwhile");
  const JobRecord during = store->GetJob("during").value().value();
  EXPECT_EQ(during.state, JobState::kFailed);
  EXPECT_EQ(during.error, "ResourceExhausted: x");
  EXPECT_EQ(during.name, "name-during");

  auto points = store->QueryScalars("before", {.tag = "loss"});
  ASSERT_TRUE(points.ok()) << points.status().ToString();
  ASSERT_EQ(points->size(), 250u);
  for (size_t i = 0; i < points->size(); ++i) {
    const auto& p = (*points)[i];
    EXPECT_EQ(p.step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(p.value, 1.0 / static_cast<double>(p.step));
  }
  // The rollups were written in the same transactions: a downsampled query agrees.
  auto summary = store->QueryScalars("before", {.tag = "loss", .max_points = 1});
  ASSERT_TRUE(summary.ok() && summary->size() == 1u);
  EXPECT_EQ(summary->front().step, 250);
  EXPECT_EQ(summary->front().max, 1.0);
  EXPECT_EQ(summary->front().min, 1.0 / 250);
  auto dropped = store->QueryScalars("during", {.tag = "loss"});
  ASSERT_TRUE(dropped.ok());
  ASSERT_EQ(dropped->size(), 20u);
  EXPECT_EQ(dropped->back().step, 20);
}

// A store closed while its disk stays full gives its writes up after give_up_after_stop, even
// when its retries have backed off further than that, so that a daemon can exit. What it gave up
// is not in the file.
TEST_F(StoreFaultTest, ClosedWhileTheDiskStaysFullItGivesUpInTime) {
  StoreOptions options = options_;
  options.retry_initial_backoff = milliseconds(3000);
  options.retry_max_backoff = milliseconds(3000);
  options.give_up_after_stop = milliseconds(200);
  {
    std::unique_ptr<Store> store = Open(options);
    ASSERT_NE(store, nullptr);
    FaultVfs::Get().Inject(Fault::kFull);
    store->PutJob(Job("never", 1));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!store->health().degraded && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_TRUE(store->health().degraded);
    const auto start = std::chrono::steady_clock::now();
    store.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  }
  FaultVfs::Get().Clear();
  std::unique_ptr<Store> store = Open(StoreOptions());
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->GetJob("never").value().has_value());
}

INSTANTIATE_TEST_SUITE_P(
    Faults, StoreFaultTest,
    ::testing::Values(FaultCase{"DiskFull", Fault::kFull, StatusCode::kResourceExhausted, 0},
                      FaultCase{"DiskFullMidTransaction", Fault::kFull,
                                StatusCode::kResourceExhausted, 3},
                      FaultCase{"IoError", Fault::kIoError, StatusCode::kIoError, 0},
                      FaultCase{"IoErrorMidTransaction", Fault::kIoError, StatusCode::kIoError, 3},
                      FaultCase{"Busy", Fault::kBusy, StatusCode::kUnavailable, 0}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace trainingd::daemon
