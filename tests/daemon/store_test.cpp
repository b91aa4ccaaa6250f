// Store: opening and migrating a file, refusing bad, foreign, newer or locked ones, and the
// rows of jobs, experiments, trials and attempts. Every test has its own directory
// (store_fixture.h); scalars are in store_scalars_test.cpp, the writer and durability in
// store_writer_test.cpp.

#include "trainingd/daemon/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store_fixture.h"

namespace trainingd::daemon {
namespace {

using api::JobState;
using engine::StatusCode;

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

}  // namespace
}  // namespace trainingd::daemon
