// Store: migrations, job rows, scalars and their downsampling, the writer's batching and Flush
// barrier, concurrent readers, durability across stores and across a crashed process, and bad
// or locked files. Every test has its own directory.
#include "trainingd/daemon/store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <utility>

#include "store_test_util.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
using api::JobState;
using api::ScalarPoint;
using api::ScalarQuery;
using engine::StatusCode;

using testing::kNaN;
using testing::Same;

// ---- helpers ---------------------------------------------------------------------------------

JobRecord MakeJob(const std::string& id, double created_at, JobState state = JobState::kQueued) {
  JobRecord j;
  j.id = id;
  j.name = "name-" + id;
  j.spec_json = R"({"name":")" + id + R"("})";
  j.state = state;
  j.created_at = created_at;
  j.max_steps = 1000;
  j.checkpoint_dir = "/var/jobs/" + id;
  j.crash_count = 1;
  return j;
}

// A statement on a plain SQLite connection, for preparing files the store must cope with.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << msg;
}

std::string RawText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out = "<error>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(st, 0);
    out = t != nullptr ? reinterpret_cast<const char*>(t) : "<null>";
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// The reference a query result is checked against: step -> (wall_time, value).
struct RefPoint {
  double wall_time;
  double value;
};
using Series = std::map<int64_t, RefPoint>;

std::string Show(const ScalarPoint& p) {
  return "{step " + std::to_string(p.step) + ", value " + std::to_string(p.value) + ", min " +
         std::to_string(p.min) + ", max " + std::to_string(p.max) + "}";
}

// Checks `got` against the contract of Store::QueryScalars over the true series `ref`, without
// assuming the bucket width: at most max_points points; raw when few enough; otherwise the first
// point as it is, then points that are real points of the series whose min/max are exactly those
// of the points since the previous output point -- i.e. consecutive buckets that cover the range,
// ending with the range's last point.
::testing::AssertionResult FollowsRule(const Series& ref, const ScalarQuery& q,
                                       const std::vector<ScalarPoint>& got) {
  const int64_t lo = q.from_step.value_or(std::numeric_limits<int64_t>::min());
  const int64_t hi = q.to_step.value_or(std::numeric_limits<int64_t>::max());
  std::vector<std::pair<int64_t, RefPoint>> pts;
  for (auto it = ref.lower_bound(lo); it != ref.end() && it->first <= hi; ++it) {
    pts.push_back(*it);
  }
  auto fail = [&](const std::string& why) {
    return ::testing::AssertionFailure()
           << why << " (max_points " << q.max_points << ", " << pts.size() << " points in range, "
           << got.size() << " returned)";
  };
  if (static_cast<int64_t>(pts.size()) <= q.max_points) {
    if (got.size() != pts.size()) return fail("expected every raw point");
    for (size_t i = 0; i < pts.size(); ++i) {
      const ScalarPoint& g = got[i];
      if (g.step != pts[i].first || !Same(g.value, pts[i].second.value) ||
          !Same(g.wall_time, pts[i].second.wall_time) || !Same(g.min, g.value) ||
          !Same(g.max, g.value)) {
        return fail("raw point " + std::to_string(i) + " differs: " + Show(g));
      }
    }
    return ::testing::AssertionSuccess();
  }
  if (got.empty()) return fail("no points");
  if (static_cast<int64_t>(got.size()) > q.max_points) return fail("too many points");
  for (size_t i = 0; i < got.size(); ++i) {
    if (i > 0 && got[i].step <= got[i - 1].step) return fail("steps not increasing");
    auto it = ref.find(got[i].step);
    if (it == ref.end() || !Same(it->second.value, got[i].value) ||
        !Same(it->second.wall_time, got[i].wall_time)) {
      return fail("point " + std::to_string(i) + " is not a point of the series: " + Show(got[i]));
    }
  }
  size_t next = 0;  // the first point of `pts` not yet accounted for
  size_t i = 0;
  if (q.max_points >= 2) {
    if (got[0].step != pts[0].first || !Same(got[0].min, got[0].value) ||
        !Same(got[0].max, got[0].value)) {
      return fail("the first point is not kept as it is: " + Show(got[0]));
    }
    next = 1;
    i = 1;
  }
  for (; i < got.size(); ++i) {
    double mn = kNaN;
    double mx = kNaN;
    const size_t begin = next;
    while (next < pts.size() && pts[next].first <= got[i].step) {
      mn = std::fmin(mn, pts[next].second.value);
      mx = std::fmax(mx, pts[next].second.value);
      ++next;
    }
    if (next == begin) return fail("empty bucket at " + Show(got[i]));
    if (!Same(mn, got[i].min) || !Same(mx, got[i].max)) {
      return fail("bucket " + std::to_string(i) + " " + Show(got[i]) + " should have min " +
                  std::to_string(mn) + ", max " + std::to_string(mx));
    }
  }
  if (next != pts.size()) return fail("the last point of the range is missing");
  return ::testing::AssertionSuccess();
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("store_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "trainingd.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> OpenStore(const StoreOptions& options = {}) {
    auto store = Store::Open(path_, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // Adds `ref`'s points to the store as (job, tag) in batches of `batch`, and flushes.
  static void AddSeries(Store& store, const std::string& job, const std::string& tag,
                        const Series& ref, size_t batch = 1000) {
    std::vector<ScalarRecord> recs;
    for (const auto& [step, p] : ref) {
      recs.push_back({job, tag, step, p.wall_time, p.value});
      if (recs.size() == batch) store.AddScalars(std::exchange(recs, {}));
    }
    store.AddScalars(std::move(recs));
    ASSERT_TRUE(store.Flush().ok());
  }

  static std::vector<ScalarPoint> Query(Store& store, const std::string& job,
                                        const ScalarQuery& q) {
    auto r = store.QueryScalars(job, q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<ScalarPoint>{};
  }

  fs::path dir_;
  std::string path_;
};

// ---- migrations and files ----------------------------------------------------------------------

TEST_F(StoreTest, FreshDatabaseIsMigratedInWalMode) {
  { auto store = OpenStore(); }
  EXPECT_EQ(RawText(path_, "PRAGMA user_version"), "11");
  EXPECT_EQ(RawText(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawText(path_, "PRAGMA application_id"), "1953656420");
  EXPECT_EQ(RawText(path_,
                    "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master "
                    "WHERE type = 'table' ORDER BY name)"),
            "attempts,audit,evaluations,experiment_decisions,experiments,fair_share_usage,jobs,"
            "rung_results,"
            "scalar_rollups,scalars,series,tokens,trials,users");
  EXPECT_EQ(RawText(path_,
                    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
                    "('jobs_by_created_at', 'jobs_by_state')"),
            "2");
}

TEST_F(StoreTest, ReopenKeepsDataAndVersion) {
  {
    auto store = OpenStore();
    store->PutJob(MakeJob("a", 1));
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = OpenStore();
  auto job = store->GetJob("a");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ((*job)->name, "name-a");
  EXPECT_EQ(RawText(path_, "PRAGMA user_version"), "11");
}

TEST_F(StoreTest, ExperimentsTrialsResultsAndDecisionsRoundTrip) {
  {
    auto store = OpenStore();
    ExperimentRecord e;
    e.id = "x1";
    e.name = "search";
    e.spec_json = "{}";
    e.state = api::ExperimentState::kStopping;
    e.created_at = 10;
    e.reason = "budget";
    e.seconds_used = 3.5;
    e.run_started_at = 12;
    e.peak_disk_bytes = 1 << 20;
    store->PutExperiment(e);
    JobRecord job = MakeJob("j1", 1);
    job.experiment_id = "x1";
    job.trial_index = 0;
    job.hyperparameters_json = R"({"batch_size":64})";
    store->PutJob(job);
    TrialRecord t;
    t.experiment_id = "x1";
    t.index = 0;
    t.job_id = "j1";
    t.hyperparameters_json = R"({"batch_size":64})";
    t.seed = (uint64_t{1} << 40) + 3;
    t.state = api::TrialState::kWaiting;
    t.target_steps = 100;
    t.restarts = 1;
    t.checkpoints_kept = false;
    store->PutTrial(t);
    t.state = api::TrialState::kPruned;  // replaced in place
    t.reason = "cut";
    store->PutTrial(t);
    store->PutRungResult({"x1", 0, 0, 100, 0.75, 11});
    store->PutRungResult({"x1", 0, 1, 400, std::nan(""), 12});
    for (int i = 0; i < 3; ++i) store->AddDecision({0, "x1", 10.0 + i, "d" + std::to_string(i)});
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = OpenStore();
  auto experiments = store->ListExperiments();
  ASSERT_TRUE(experiments.ok()) << experiments.status().ToString();
  ASSERT_EQ(experiments->size(), 1u);
  EXPECT_EQ((*experiments)[0].state, api::ExperimentState::kStopping);
  EXPECT_EQ((*experiments)[0].reason, "budget");
  EXPECT_EQ((*experiments)[0].seconds_used, 3.5);
  EXPECT_EQ((*experiments)[0].run_started_at, 12);
  EXPECT_EQ((*experiments)[0].peak_disk_bytes, 1 << 20);
  auto job = store->GetJob("j1");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->experiment_id, "x1");
  EXPECT_EQ((*job)->hyperparameters_json, R"({"batch_size":64})");
  auto trials = store->ListTrials("x1");
  ASSERT_TRUE(trials.ok());
  ASSERT_EQ(trials->size(), 1u);
  EXPECT_EQ((*trials)[0].state, api::TrialState::kPruned);
  EXPECT_EQ((*trials)[0].reason, "cut");
  EXPECT_EQ((*trials)[0].seed, (uint64_t{1} << 40) + 3);
  EXPECT_FALSE((*trials)[0].checkpoints_kept);
  EXPECT_EQ(store->ListTrials("")->size(), 1u);
  EXPECT_EQ(store->ListTrials("other")->size(), 0u);
  auto results = store->ListRungResults("x1");
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[0].metric, 0.75);
  EXPECT_TRUE(std::isnan((*results)[1].metric));
  auto decisions = store->ListDecisions("x1", 2);  // the latest two, in order
  ASSERT_TRUE(decisions.ok());
  ASSERT_EQ(decisions->size(), 2u);
  EXPECT_EQ((*decisions)[0].kind, "d1");
  EXPECT_EQ((*decisions)[1].kind, "d2");
  EXPECT_LT((*decisions)[0].seq, (*decisions)[1].seq);
  store->DeleteExperiment("x1");
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_TRUE(store->ListExperiments()->empty());
  EXPECT_TRUE(store->ListTrials("x1")->empty());
  EXPECT_TRUE(store->ListRungResults("x1")->empty());
  EXPECT_TRUE(store->ListDecisions("x1", 10)->empty());
  EXPECT_TRUE(store->GetJob("j1")->has_value());  // the jobs are the job manager's to delete
}

TEST_F(StoreTest, AWriteGroupIsHeldBackThenCommittedInOneTransaction) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Flush().ok());
  const int64_t before = store->stats().committed_batches;
  {
    Store::WriteGroup group(*store);
    store->PutJob(MakeJob("a", 1));
    {
      Store::WriteGroup inner(*store);  // nested: joins the outer one
      TrialRecord t;
      t.experiment_id = "x";
      t.job_id = "a";
      store->PutTrial(t);
    }
    store->AddDecision({0, "x", 1, "start"});
    // Another thread's flush does not see the held writes: they are not queued yet.
    std::thread([&] { ASSERT_TRUE(store->Flush().ok()); }).join();
    EXPECT_FALSE(store->GetJob("a")->has_value());
    EXPECT_TRUE(store->ListTrials("x")->empty());
  }
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_TRUE(store->GetJob("a")->has_value());
  EXPECT_EQ(store->ListTrials("x")->size(), 1u);
  EXPECT_EQ(store->ListDecisions("x", 10)->size(), 1u);
  EXPECT_EQ(store->stats().committed_batches - before, 1);
  // A group after a backlog of scalars larger than a transaction still commits whole.
  StoreOptions small;
  small.max_scalars_per_transaction = 1;
  store.reset();
  store = OpenStore(small);
  std::vector<ScalarRecord> scalars;
  for (int i = 0; i < 5; ++i) scalars.push_back({"a", "loss", i, 1.0 * i, 0.5});
  store->AddScalars(std::move(scalars));
  {
    Store::WriteGroup group(*store);
    store->PutExperiment({"x", "n", "{}"});
    store->AddDecision({0, "x", 2, "create"});
  }
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->ListExperiments()->size(), 1u);
  EXPECT_EQ(store->ListDecisions("x", 10)->size(), 2u);
}

TEST_F(StoreTest, AttemptsAreKeptUpdatedInPlaceAndDeletedWithTheirJob) {
  {
    auto store = OpenStore();
    store->PutJob(MakeJob("a", 1));
    store->PutJob(MakeJob("b", 2));
    api::AttemptInfo first{1, 2, 0, 10.0, 0, ""};
    store->PutAttempt("a", first);
    first.ended_at = 12.5;
    first.end = "mpirun exited with code 137";
    store->PutAttempt("a", first);  // the same attempt, ended
    store->PutAttempt("a", {2, 2, 400, 13.5, 0, ""});
    store->PutAttempt("b", {1, 3, 0, 11.0, 0, ""});
    store->PutAttempt("gone", {1, 2, 0, 1.0, 0, ""});  // no such job: nothing
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = OpenStore();
  auto all = store->ListAttempts();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  const auto& a = all->at("a");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].attempt, 1);
  EXPECT_EQ(a[0].workers, 2);
  EXPECT_EQ(a[0].ended_at, 12.5);
  EXPECT_EQ(a[0].end, "mpirun exited with code 137");
  EXPECT_EQ(a[1].attempt, 2);
  EXPECT_EQ(a[1].from_step, 400);
  EXPECT_EQ(a[1].ended_at, 0);
  EXPECT_EQ(all->at("b")[0].workers, 3);
  store->DeleteJob("a");
  ASSERT_TRUE(store->Flush().ok());
  all = store->ListAttempts();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->count("a"), 0u);
  EXPECT_EQ(all->count("b"), 1u);
}

TEST_F(StoreTest, NewerSchemaVersionIsRefused) {
  { auto store = OpenStore(); }
  RawExec(path_, "PRAGMA user_version = 12");
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find(path_), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("version 12 is newer"), std::string::npos)
      << store.status().message();
}

TEST_F(StoreTest, AnotherApplicationsDatabaseIsRefused) {
  RawExec(path_, "PRAGMA application_id = 42; CREATE TABLE t (x)");
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("not a trainingd database"), std::string::npos);
}

TEST_F(StoreTest, GarbageFileIsDataLossNamingTheFile) {
  {
    std::ofstream f(path_, std::ios::binary);
    for (int i = 0; i < 8192; ++i) f.put(static_cast<char>(i * 7 + 3));
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss) << store.status().ToString();
  EXPECT_EQ(store.status().message().rfind(path_, 0), 0u) << store.status().message();
}

TEST_F(StoreTest, UnopenablePathIsIoError) {
  const std::string bad = (dir_ / "missing" / "dir" / "x.db").string();
  auto store = Store::Open(bad);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kIoError) << store.status().ToString();
  EXPECT_EQ(store.status().message().rfind(bad, 0), 0u) << store.status().message();

  auto dir = Store::Open(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kIoError) << dir.status().ToString();
}

TEST_F(StoreTest, LockedFileIsUnavailableNotACrash) {
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  StoreOptions options;
  options.busy_timeout_ms = 50;
  auto store = Store::Open(path_, options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable) << store.status().ToString();
  EXPECT_EQ(store.status().message().rfind(path_, 0), 0u) << store.status().message();
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
}

TEST_F(StoreTest, WriteLockedByAnotherConnectionIsRetriedUntilItCommits) {
  StoreOptions options;
  options.busy_timeout_ms = 50;
  options.retry_initial_backoff = std::chrono::milliseconds(10);
  options.retry_max_backoff = std::chrono::milliseconds(40);
  auto store = OpenStore(options);
  std::vector<StoreHealth> changes;
  std::mutex changes_mu;
  store->SetHealthListener([&](const StoreHealth& h) {
    std::lock_guard<std::mutex> lock(changes_mu);
    changes.push_back(h);
  });
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  store->PutJob(MakeJob("through-the-lock", 1));
  // Until the writer has failed and retried (bounded: a loaded machine may be slow to get there).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (store->health().failed_writes < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const engine::Status st = store->Flush(std::chrono::milliseconds(100));
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st.ToString();
  EXPECT_NE(st.message().find("Unavailable"), std::string::npos) << st.message();
  const StoreHealth during = store->health();
  EXPECT_TRUE(during.degraded);
  EXPECT_EQ(during.error.code(), StatusCode::kUnavailable);
  EXPECT_GE(during.failed_writes, 2);  // retried
  EXPECT_EQ(store->stats().failed_writes, during.failed_writes);
  store->PutJob(MakeJob("queued-behind", 2));
  sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(holder);

  EXPECT_TRUE(store->Flush().ok());
  EXPECT_TRUE(store->GetJob("through-the-lock")->has_value());  // nothing was dropped
  EXPECT_TRUE(store->GetJob("queued-behind")->has_value());
  EXPECT_FALSE(store->health().degraded);
  std::lock_guard<std::mutex> lock(changes_mu);
  ASSERT_EQ(changes.size(), 2u);  // degraded, then recovered
  EXPECT_TRUE(changes[0].degraded);
  EXPECT_FALSE(changes[1].degraded);
}

// ---- jobs ---------------------------------------------------------------------------------------

TEST_F(StoreTest, JobRoundTripsEveryField) {
  auto store = OpenStore();
  JobRecord j = MakeJob("job-1", 1700000000.25, JobState::kFailed);
  j.started_at = 1700000001.5;
  j.finished_at = 1700000002.75;
  j.global_step = 1234;
  j.max_steps = 20000;
  j.error = "loss is NaN";
  j.reason = "nan_guard";
  j.spec_json = R"({"name":"x","unicode":"\u00e9 é"})";
  store->PutJob(j);
  ASSERT_TRUE(store->Flush().ok());
  auto got = store->GetJob("job-1");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  const JobRecord& g = **got;
  EXPECT_EQ(g.id, j.id);
  EXPECT_EQ(g.name, j.name);
  EXPECT_EQ(g.spec_json, j.spec_json);
  EXPECT_EQ(g.state, JobState::kFailed);
  EXPECT_EQ(g.created_at, j.created_at);
  EXPECT_EQ(g.started_at, j.started_at);
  EXPECT_EQ(g.finished_at, j.finished_at);
  EXPECT_EQ(g.global_step, 1234);
  EXPECT_EQ(g.max_steps, 20000);
  EXPECT_EQ(g.error, j.error);
  EXPECT_EQ(g.reason, j.reason);
  EXPECT_EQ(g.checkpoint_dir, j.checkpoint_dir);
  EXPECT_EQ(g.crash_count, j.crash_count);

  auto missing = store->GetJob("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_F(StoreTest, EveryStateIsStoredByItsName) {
  const std::vector<std::pair<JobState, std::string>> states = {
      {JobState::kQueued, "queued"},     {JobState::kRunning, "running"},
      {JobState::kStopping, "stopping"}, {JobState::kCompleted, "completed"},
      {JobState::kFailed, "failed"},     {JobState::kStopped, "stopped"}};
  auto store = OpenStore();
  for (const auto& [state, name] : states) {
    EXPECT_EQ(api::JobStateName(state), name);
    EXPECT_EQ(api::ParseJobState(name), state);
    store->PutJob(MakeJob(name, 1, state));
  }
  EXPECT_EQ(api::ParseJobState("Queued"), std::nullopt);
  EXPECT_EQ(api::ParseJobState(""), std::nullopt);
  ASSERT_TRUE(store->Flush().ok());
  for (const auto& [state, name] : states) {
    EXPECT_EQ((*store->GetJob(name))->state, state);
    EXPECT_EQ(RawText(path_, "SELECT state FROM jobs WHERE id = '" + name + "'"), name);
  }
  RawExec(path_, "UPDATE jobs SET state = 'exploded' WHERE id = 'queued'");
  auto broken = store->GetJob("queued");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(broken.status().message().find("exploded"), std::string::npos);
}

TEST_F(StoreTest, StateAndStepUpdates) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->UpdateJobState("a", JobState::kRunning, 10.5, 0, "", "");
  store->UpdateJobStep("a", 500);
  store->UpdateJobCrashCount("a", 2);
  store->UpdateJobState("a", JobState::kStopped, 10.5, 20.25, "", "stop requested");
  store->UpdateJobStep("ghost", 7);  // a deleted job: nothing happens
  store->UpdateJobState("ghost", JobState::kRunning, 1, 0, "", "");
  store->UpdateJobCrashCount("ghost", 1);
  ASSERT_TRUE(store->Flush().ok());
  auto a = store->GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->state, JobState::kStopped);
  EXPECT_EQ((*a)->started_at, 10.5);
  EXPECT_EQ((*a)->finished_at, 20.25);
  EXPECT_EQ((*a)->reason, "stop requested");
  EXPECT_EQ((*a)->global_step, 500);
  EXPECT_EQ((*a)->crash_count, 2);
  EXPECT_EQ((*a)->name, "name-a");  // untouched
  EXPECT_FALSE(store->GetJob("ghost")->has_value());
}

TEST_F(StoreTest, ListIsNewestFirstPagedAndFiltered) {
  auto store = OpenStore();
  store->PutJob(MakeJob("j1", 1, JobState::kCompleted));
  store->PutJob(MakeJob("j2a", 2, JobState::kQueued));
  store->PutJob(MakeJob("j2b", 2, JobState::kRunning));  // same time: id breaks the tie
  store->PutJob(MakeJob("j3", 3, JobState::kQueued));
  store->PutJob(MakeJob("j4", 4, JobState::kCompleted));
  ASSERT_TRUE(store->Flush().ok());
  auto ids = [](const engine::Result<std::vector<JobRecord>>& r) {
    std::vector<std::string> out;
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) {
      for (const auto& j : *r) out.push_back(j.id);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids(store->ListJobs(std::nullopt, 100, "")), (V{"j4", "j3", "j2b", "j2a", "j1"}));
  EXPECT_EQ(ids(store->ListJobs(std::nullopt, 2, "")), (V{"j4", "j3"}));
  EXPECT_EQ(ids(store->ListJobs(std::nullopt, 2, "j3")), (V{"j2b", "j2a"}));
  EXPECT_EQ(ids(store->ListJobs(std::nullopt, 2, "j2a")), (V{"j1"}));
  EXPECT_EQ(ids(store->ListJobs(std::nullopt, 2, "j1")), V{});
  EXPECT_EQ(ids(store->ListJobs(JobState::kQueued, 100, "")), (V{"j3", "j2a"}));
  EXPECT_EQ(ids(store->ListJobs(JobState::kCompleted, 1, "j4")), (V{"j1"}));
  EXPECT_EQ(ids(store->ListJobs(JobState::kStopped, 10, "")), V{});

  auto bad_limit = store->ListJobs(std::nullopt, 0, "");
  ASSERT_FALSE(bad_limit.ok());
  EXPECT_EQ(bad_limit.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_limit.status().message().rfind("limit", 0), 0u);
  auto bad_cursor = store->ListJobs(std::nullopt, 10, "no-such-job");
  ASSERT_FALSE(bad_cursor.ok());
  EXPECT_EQ(bad_cursor.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_cursor.status().message().rfind("after_id", 0), 0u);
}

TEST_F(StoreTest, PutJobAgainReplacesTheRowAndKeepsScalars) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->AddScalars({{"a", "loss", 1, 10, 0.5}});
  JobRecord again = MakeJob("a", 1, JobState::kRunning);
  again.name = "renamed";
  store->PutJob(again);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ((*store->GetJob("a"))->name, "renamed");
  EXPECT_EQ((*store->GetJob("a"))->state, JobState::kRunning);
  auto latest = store->LatestScalars("a");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, (std::map<std::string, double>{{"loss", 0.5}}));
}

// ---- scalars ------------------------------------------------------------------------------------

TEST_F(StoreTest, AddScalarsReplacesDuplicates) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  std::vector<ScalarRecord> recs;
  for (int s = 0; s < 10; ++s) recs.push_back({"a", "loss", s, 100.0 + s, 1.0 * s});
  store->AddScalars(recs);
  ASSERT_TRUE(store->Flush().ok());
  // Another batch overwrites step 5; one call with step 3 twice: the later one wins.
  store->AddScalars({{"a", "loss", 5, 555, 50}});
  store->AddScalars({{"a", "loss", 3, 333, 30}, {"a", "loss", 3, 334, 31}});
  ASSERT_TRUE(store->Flush().ok());
  const auto got = Query(*store, "a", {.tag = "loss"});
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got[5].value, 50);
  EXPECT_EQ(got[5].wall_time, 555);
  EXPECT_EQ(got[3].value, 31);
  EXPECT_EQ(got[3].wall_time, 334);
  EXPECT_EQ(got[4].value, 4);
  // Downsampled, the buckets hold the new values: a replaced maximum no longer counts.
  Series big;
  for (int s = 0; s < 4000; ++s) big[s] = {1.0, 1.0 * s};
  AddSeries(*store, "a", "big", big);
  std::vector<ScalarRecord> lower;
  for (int s = 0; s < 4000; s += 3) {
    lower.push_back({"a", "big", s, 2.0, -1.0 * s});
    big[s] = {2.0, -1.0 * s};
  }
  store->AddScalars(std::move(lower));
  ASSERT_TRUE(store->Flush().ok());
  for (int64_t mp : {2, 3, 20, 300}) {
    const ScalarQuery q{.tag = "big", .max_points = mp};
    EXPECT_TRUE(FollowsRule(big, q, Query(*store, "a", q))) << mp;
  }
}

TEST_F(StoreTest, ScalarsForAnUnknownJobFailAtFlushAndTheRestIsKept) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->AddScalars({{"nope", "loss", 1, 1, 1}});
  store->AddScalars({{"a", "loss", 1, 1, 1}});
  store->AddScalars({{"a", "", 2, 1, 1}});  // empty tag
  const engine::Status st = store->Flush();
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_NE(st.message().find("'nope'"), std::string::npos) << st.message();
  EXPECT_TRUE(store->Flush().ok()) << "the error is reported once";
  EXPECT_TRUE(store->ScalarTags("nope")->empty());
  EXPECT_EQ(*store->ScalarTags("a"), std::vector<std::string>{"loss"});
}

TEST_F(StoreTest, FlushReturnsTheFirstErrorSinceTheLastFlush) {
  auto store = OpenStore();
  store->AddScalars({{"first", "loss", 1, 1, 1}});
  ASSERT_EQ(store->Flush().code(), StatusCode::kNotFound);
  store->AddScalars({{"second", "loss", 1, 1, 1}});
  store->AddScalars({{"third", "loss", 1, 1, 1}});
  const engine::Status st = store->Flush();
  EXPECT_NE(st.message().find("'second'"), std::string::npos) << st.message();
  EXPECT_TRUE(store->Flush().ok());
}

TEST_F(StoreTest, TagsAreSortedAndLatestIsAtTheHighestStep) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->PutJob(MakeJob("b", 2));
  store->AddScalars({{"a", "train/loss", 20, 1, 0.2},
                     {"a", "accuracy", 5, 1, 0.9},
                     {"a", "train/loss", 30, 1, 0.3},
                     {"a", "train/loss", 10, 1, 0.1},  // out of order
                     {"a", "eval/loss", 7, 1, kNaN},
                     {"b", "other", 1, 1, 1}});
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->ScalarTags("a"),
            (std::vector<std::string>{"accuracy", "eval/loss", "train/loss"}));
  auto latest = store->LatestScalars("a");
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 3u);
  EXPECT_EQ(latest->at("train/loss"), 0.3);
  EXPECT_EQ(latest->at("accuracy"), 0.9);
  EXPECT_TRUE(std::isnan(latest->at("eval/loss")));
  EXPECT_TRUE(store->ScalarTags("zzz")->empty());
  EXPECT_TRUE(store->LatestScalars("zzz")->empty());
}

TEST_F(StoreTest, DropScalarsAfterDeletesLaterStepsOfEveryTag) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->PutJob(MakeJob("b", 2));
  Series ref;
  for (int s = 0; s < 5000; ++s) ref[s] = {1.0 * s, 1.0 * s};
  AddSeries(*store, "a", "loss", ref);
  AddSeries(*store, "a", "acc", ref);
  AddSeries(*store, "b", "loss", ref);
  store->DropScalarsAfter("a", 2999);
  ASSERT_TRUE(store->Flush().ok());
  Series kept(ref.begin(), ref.find(3000));
  for (const char* tag : {"loss", "acc"}) {
    const auto raw = Query(*store, "a", {.tag = tag, .max_points = 10000});
    ASSERT_EQ(raw.size(), 3000u) << tag;
    EXPECT_EQ(raw.back().step, 2999);
    for (int64_t mp : {1, 2, 50, 1000}) {
      const ScalarQuery q{.tag = tag, .max_points = mp};
      EXPECT_TRUE(FollowsRule(kept, q, Query(*store, "a", q))) << tag << " " << mp;
    }
  }
  EXPECT_EQ(Query(*store, "b", {.tag = "loss", .max_points = 10000}).size(), 5000u);
  // Resuming writes the steps again, with new values.
  Series resumed = kept;
  for (int s = 3000; s < 4000; ++s) resumed[s] = {2.0 * s, -1.0 * s};  // dropped maxima must go
  AddSeries(*store, "a", "loss", Series(resumed.find(3000), resumed.end()));
  for (int64_t mp : {3, 100, 999}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    EXPECT_TRUE(FollowsRule(resumed, q, Query(*store, "a", q))) << mp;
  }
}

TEST_F(StoreTest, DeleteJobRemovesTheRowAndItsScalarsOnly) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->PutJob(MakeJob("b", 2));
  Series ref;
  for (int s = 0; s < 3000; ++s) ref[s] = {1.0 * s, 1.0 * s};
  AddSeries(*store, "a", "loss", ref);
  AddSeries(*store, "b", "loss", ref);
  store->DeleteJob("a");
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_FALSE(store->GetJob("a")->has_value());
  EXPECT_TRUE(store->ScalarTags("a")->empty());
  EXPECT_TRUE(Query(*store, "a", {.tag = "loss"}).empty());
  EXPECT_EQ(Query(*store, "b", {.tag = "loss", .max_points = 5000}).size(), 3000u);
  EXPECT_EQ(RawText(path_, "SELECT count(*) FROM series WHERE job_id = 'a'"), "0");
  EXPECT_EQ(RawText(path_,
                    "SELECT count(*) FROM scalar_rollups WHERE series_id NOT IN "
                    "(SELECT id FROM series)"),
            "0");
  EXPECT_EQ(
      RawText(path_, "SELECT count(*) FROM scalars WHERE series_id NOT IN (SELECT id FROM series)"),
      "0");
  // The same id again starts empty: no old points or rollups leak into its series.
  store->PutJob(MakeJob("a", 3));
  Series fresh;
  for (int s = 0; s < 2000; ++s) fresh[s] = {1.0, -1.0 * s};
  AddSeries(*store, "a", "loss", fresh);
  const ScalarQuery q{.tag = "loss", .max_points = 100};
  EXPECT_TRUE(FollowsRule(fresh, q, Query(*store, "a", q)));
}

TEST_F(StoreTest, DroppingEveryPointOfATagUnlistsItAndItCanBeWrittenAgain) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->AddScalars(
      {{"a", "late", 100, 1, 1.0}, {"a", "late", 200, 1, 2.0}, {"a", "early", 5, 1, 5.0}});
  store->DropScalarsAfter("a", 50);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->ScalarTags("a"), std::vector<std::string>{"early"});
  EXPECT_EQ(*store->LatestScalars("a"), (std::map<std::string, double>{{"early", 5.0}}));
  EXPECT_TRUE(Query(*store, "a", {.tag = "late"}).empty());
  // Steps at or below the old largest one are new again.
  store->AddScalars({{"a", "late", 150, 1, 3.0}, {"a", "late", 60, 1, 4.0}});
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->ScalarTags("a"), (std::vector<std::string>{"early", "late"}));
  const auto late = Query(*store, "a", {.tag = "late"});
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(late[0].step, 60);
  EXPECT_EQ(late[1].value, 3.0);
  const ScalarQuery one{.tag = "late", .max_points = 1};
  EXPECT_TRUE(FollowsRule({{60, {1, 4.0}}, {150, {1, 3.0}}}, one, Query(*store, "a", one)));
}

// The writer remembers each series' largest step between transactions; another store writing
// the same file meanwhile must not make it take a stored step for a new one.
TEST_F(StoreTest, AnotherWriterOnTheSameFileIsNoticed) {
  auto first = OpenStore();
  first->PutJob(MakeJob("a", 1));
  Series ref;
  std::vector<ScalarRecord> recs;
  for (int s = 0; s < 100; ++s) {
    recs.push_back({"a", "loss", s, 1.0, 1.0 * s});
    ref[s] = {1.0, 1.0 * s};
  }
  first->AddScalars(std::move(recs));
  ASSERT_TRUE(first->Flush().ok());
  {
    auto second = OpenStore();
    std::vector<ScalarRecord> more;
    for (int s = 100; s < 200; ++s) {
      more.push_back({"a", "loss", s, 2.0, 1000.0 + s});
      ref[s] = {2.0, 1000.0 + s};
    }
    second->AddScalars(std::move(more));
    ASSERT_TRUE(second->Flush().ok());
  }
  std::vector<ScalarRecord> overlap;
  for (int s = 150; s < 250; ++s) {
    overlap.push_back({"a", "loss", s, 3.0, -1.0 * s});
    ref[s] = {3.0, -1.0 * s};
  }
  first->AddScalars(std::move(overlap));
  const engine::Status st = first->Flush();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int64_t mp : {1, 7, 50, 1000}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    EXPECT_TRUE(FollowsRule(ref, q, Query(*first, "a", q))) << mp;
  }
}

TEST_F(StoreTest, BatchesMixingNewAndStoredStepsKeepRollupsExact) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  Series ref;
  for (int s = 0; s < 3000; ++s) ref[s * 2] = {1.0, std::sin(s * 0.01)};
  AddSeries(*store, "a", "loss", ref, 3000);
  // One op: old steps replaced (a new maximum and minimum among them), gaps filled, new steps
  // after the end, out of order and with a duplicate whose last copy must win.
  std::vector<ScalarRecord> recs;
  auto put = [&](int64_t step, double value) {
    recs.push_back({"a", "loss", step, 2.0, value});
    ref[step] = {2.0, value};
  };
  put(7000, 5.0);
  put(5998, 10.0);   // the stored last step
  put(4001, -10.0);  // a gap
  put(6500, 1.0);
  put(6500, 2.0);
  put(6000, 3.0);
  put(10, 0.25);
  store->AddScalars(std::move(recs));
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(Query(*store, "a", {.tag = "loss", .max_points = 100000}).size(), ref.size());
  for (int64_t mp : {1, 2, 5, 64, 300, 2999}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    EXPECT_TRUE(FollowsRule(ref, q, Query(*store, "a", q))) << mp;
  }
  EXPECT_EQ(store->LatestScalars("a")->at("loss"), 5.0);
}

// ---- downsampling -------------------------------------------------------------------------------

TEST_F(StoreTest, QueryValidatesItsArguments) {
  auto store = OpenStore();
  auto expect_invalid = [&](const ScalarQuery& q, const std::string& field) {
    auto r = store->QueryScalars("a", q);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(field, 0), 0u) << r.status().message();
  };
  expect_invalid({.tag = ""}, "tag");
  expect_invalid({.tag = "x", .max_points = 0}, "max_points");
  expect_invalid({.tag = "x", .max_points = -5}, "max_points");
  expect_invalid({.tag = "x", .from_step = 10, .to_step = 9}, "from_step");
  EXPECT_TRUE(store->QueryScalars("a", {.tag = "x", .from_step = 9, .to_step = 9}).ok());
}

TEST_F(StoreTest, FewPointsComeBackRaw) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  Series ref;
  for (int s = 0; s < 10; ++s) ref[s * 3] = {100.0 + s, s * 0.5};
  AddSeries(*store, "a", "loss", ref);
  const auto got = Query(*store, "a", {.tag = "loss", .max_points = 10});
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got[4].step, 12);
  EXPECT_EQ(got[4].value, 2.0);
  EXPECT_EQ(got[4].min, 2.0);
  EXPECT_EQ(got[4].max, 2.0);
  EXPECT_EQ(got[4].wall_time, 104.0);
  const auto fewer = Query(*store, "a", {.tag = "loss", .max_points = 9});
  EXPECT_LE(fewer.size(), 9u);
  EXPECT_TRUE(FollowsRule(ref, {.tag = "loss", .max_points = 9}, fewer));
  const auto sub = Query(*store, "a", {.tag = "loss", .from_step = 4, .to_step = 12});
  ASSERT_EQ(sub.size(), 3u);
  EXPECT_EQ(sub.front().step, 6);
  EXPECT_EQ(sub.back().step, 12);
  EXPECT_TRUE(Query(*store, "a", {.tag = "loss", .from_step = 100}).empty());
}

TEST_F(StoreTest, DownsamplingKeepsSpikesAndEnds) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  Series ref;
  for (int s = 0; s < 200000; ++s) ref[s] = {1000.0 + s, 0.0};
  ref[123457].value = 1e6;
  ref[98765].value = -1e6;
  ref[0].value = 7;
  ref[199999].value = 9;
  AddSeries(*store, "a", "loss", ref, 5000);
  for (int64_t mp : {100, 1000}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    const auto got = Query(*store, "a", q);
    EXPECT_TRUE(FollowsRule(ref, q, got));
    ASSERT_GE(got.size(), static_cast<size_t>(mp / 2)) << "buckets far too wide";
    EXPECT_EQ(got.front().step, 0);
    EXPECT_EQ(got.front().value, 7);
    EXPECT_EQ(got.back().step, 199999);
    EXPECT_EQ(got.back().value, 9);
    int spikes_up = 0;
    int spikes_down = 0;
    for (const auto& p : got) {
      spikes_up += p.max == 1e6;
      spikes_down += p.min == -1e6;
    }
    EXPECT_EQ(spikes_up, 1);
    EXPECT_EQ(spikes_down, 1);
  }
  // A sub-range that holds only the upward spike, its ends inside rollup blocks.
  const ScalarQuery sub{.tag = "loss", .from_step = 100003, .to_step = 150011, .max_points = 77};
  const auto got = Query(*store, "a", sub);
  EXPECT_TRUE(FollowsRule(ref, sub, got));
  EXPECT_EQ(got.front().step, 100003);
  EXPECT_EQ(got.back().step, 150011);
  double mx = 0;
  double mn = 0;
  for (const auto& p : got) {
    mx = std::max(mx, p.max);
    mn = std::min(mn, p.min);
  }
  EXPECT_EQ(mx, 1e6);
  EXPECT_EQ(mn, 0);
}

TEST_F(StoreTest, DownsamplingFollowsTheRuleOnManyShapes) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise;
  std::map<std::string, Series> shapes;
  for (int s = 0; s < 30000; ++s) shapes["dense"][s] = {1.0 * s, noise(rng)};
  for (int s = 0; s < 20000; ++s) shapes["sparse"][s * 100] = {1.0 * s, noise(rng)};
  for (int s = -5000; s < 5000; ++s) shapes["negative"][s * 7] = {1.0, noise(rng)};
  for (int s = 0; s < 3000; ++s) {
    shapes["nan"][s] = {1.0, (s % 50) < 30 ? kNaN : noise(rng)};  // all-NaN stretches too
  }
  const int64_t big = std::numeric_limits<int64_t>::max();
  for (int64_t s : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, int64_t{1},
                    int64_t{1} << 40, big - 20, big - 1, big}) {
    shapes["extreme"][s] = {1.0, noise(rng)};
  }
  for (int s = 0; s < 2000; ++s) {  // clustered: bursts far apart
    shapes["bursts"][(s / 100) * 1000003 + s % 100] = {1.0, noise(rng)};
  }
  for (const auto& [tag, ref] : shapes) AddSeries(*store, "a", tag, ref, 777);

  std::uniform_int_distribution<int> pick(0, 99);
  for (const auto& [tag, ref] : shapes) {
    const int64_t first = ref.begin()->first;
    const int64_t last = ref.rbegin()->first;
    for (int64_t mp : {1, 2, 3, 4, 7, 16, 100, 1000, 5000}) {
      std::vector<ScalarQuery> queries = {{.tag = tag, .max_points = mp}};
      for (int r = 0; r < 4; ++r) {
        // Random sub-ranges, in step space (not just at points).
        const long double f = first + (static_cast<long double>(last) - first) * pick(rng) / 100;
        const long double t = f + (static_cast<long double>(last) - f) * pick(rng) / 100;
        queries.push_back({.tag = tag,
                           .from_step = static_cast<int64_t>(f),
                           .to_step = static_cast<int64_t>(t),
                           .max_points = mp});
      }
      queries.push_back({.tag = tag, .from_step = first + 1, .max_points = mp});
      queries.push_back({.tag = tag, .to_step = last - 1, .max_points = mp});
      for (const ScalarQuery& q : queries) {
        EXPECT_TRUE(FollowsRule(ref, q, Query(*store, "a", q)))
            << tag << " from " << q.from_step.value_or(-1) << " to " << q.to_step.value_or(-1);
      }
    }
  }
}

// Random writes -- out of order, duplicates, NaN, drop-after -- must keep the rollups exact.
TEST_F(StoreTest, RollupsStayExactUnderRandomWrites) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> step_in(0, 70000);
  std::uniform_real_distribution<double> val(-1, 1);
  std::map<std::string, Series> ref;
  for (int round = 0; round < 40; ++round) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 7) {
      std::vector<ScalarRecord> recs;
      const int n = static_cast<int>(rng() % 3000) + 1;
      const int64_t base = step_in(rng);
      for (int i = 0; i < n; ++i) {
        const std::string tag = (rng() % 3 == 0) ? "b" : "a";
        // Mostly runs of nearby steps, some anywhere (earlier steps, duplicates).
        const int64_t step = (rng() % 5 == 0) ? step_in(rng) : base + static_cast<int64_t>(i);
        const double v = (rng() % 97 == 0) ? kNaN : val(rng);
        const double wall = static_cast<double>(round * 10000 + i);
        recs.push_back({"a", tag, step, wall, v});
        ref[tag][step] = {wall, v};
      }
      store->AddScalars(std::move(recs));
    } else if (kind < 9) {
      const int64_t after = step_in(rng);
      store->DropScalarsAfter("a", after);
      for (auto& [tag, series] : ref) series.erase(series.upper_bound(after), series.end());
    }
    if (rng() % 3 == 0 || round == 39) {
      ASSERT_TRUE(store->Flush().ok());
      for (const auto& [tag, series] : ref) {
        for (int64_t mp : {2, 9, 300}) {
          const ScalarQuery q{.tag = tag, .max_points = mp};
          ASSERT_TRUE(FollowsRule(series, q, Query(*store, "a", q)))
              << "round " << round << " tag " << tag;
        }
      }
    }
  }
}

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
