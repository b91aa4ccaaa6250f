// LocalExecutor through the Executor interface: a real run's events in their order, stops,
// slots, the exception boundary and shutdown.
#include "trainingd/daemon/executors/local_executor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "job_manager_fixture.h"  // SmallJob
#include "run_recorder.h"

namespace trainingd::daemon {
namespace {
namespace fs = std::filesystem;
using engine::JobResult;

class LocalExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            ("lx_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunRequest Request(const std::string& id, int64_t max_steps) {
    RunRequest r{id, SmallJob(id, max_steps), dir_ + "/" + id, {}};
    r.limits.max_checkpoints = 10;
    r.limits.max_profiler_traces = 2;
    return r;
  }
  std::string dir_;
  Recorder recorder_;
};

TEST_F(LocalExecutorTest, ARunReportsItsSessionItsScalarsAndLogsThenItsEndOnce) {
  LocalExecutor executor({.slots = 1, .threads_per_job = 1});
  ASSERT_TRUE(executor.Start(Request("a", 50), recorder_).ok());
  ASSERT_TRUE(recorder_.WaitForEnd("a"));
  executor.Shutdown();
  const std::vector<RunEvent> events = recorder_.Events("a");
  ASSERT_GE(events.size(), 3u);
  // Log lines may come first (creating the session logs); the session exists before any scalar.
  int ends = 0, logs = 0, sessions = 0;
  int64_t last_loss_step = -1;
  for (const RunEvent& e : events) {
    if (auto* created = std::get_if<SessionCreated>(&e)) {
      EXPECT_EQ(created->global_step, 0);
      EXPECT_EQ(last_loss_step, -1) << "a scalar before the session";
      ++sessions;
    }
    ends += std::holds_alternative<RunEnded>(e);
    logs += std::holds_alternative<LogWritten>(e);
    if (auto* s = std::get_if<ScalarRecorded>(&e); s && s->tag == "loss") {
      EXPECT_GT(s->step, last_loss_step);
      last_loss_step = s->step;
    }
  }
  EXPECT_EQ(sessions, 1);
  EXPECT_EQ(ends, 1);
  EXPECT_TRUE(std::holds_alternative<RunEnded>(events.back()));
  EXPECT_GT(logs, 0);
  EXPECT_EQ(last_loss_step, 41);  // SummarySaverHook every 10 steps from the first: 1, 11, ... 41
  const RunEnded& end = std::get<RunEnded>(events.back());
  ASSERT_TRUE(end.result.ok()) << end.result.status().ToString();
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kCompleted);
  EXPECT_EQ(end.result->global_step, 50);
  EXPECT_TRUE(fs::exists(dir_ + "/a/model.ckpt-50"));

  // The same job again resumes from its checkpoint.
  Recorder second;  // outlives the executor's runs
  LocalExecutor again({.slots = 1, .threads_per_job = 1});
  ASSERT_TRUE(again.Start(Request("a", 80), second).ok());
  ASSERT_TRUE(second.WaitForEnd("a"));
  bool resumed = false;
  for (const RunEvent& e : second.Events("a")) {
    if (auto* created = std::get_if<SessionCreated>(&e)) resumed = created->global_step == 50;
  }
  EXPECT_TRUE(resumed) << "the second run's session restored step 50";
}

TEST_F(LocalExecutorTest, StopEndsTheRunStoppedAfterAFinalCheckpoint) {
  LocalExecutor executor({.slots = 1, .threads_per_job = 1});
  ASSERT_TRUE(executor.Start(Request("long", 10000000), recorder_).ok());
  ASSERT_TRUE(recorder_.WaitFor("long", [](const RunEvent& e) {
    auto* s = std::get_if<ScalarRecorded>(&e);
    return s && s->step >= 20;
  }));
  executor.RequestStop("long");
  executor.RequestStop("not-running");  // nothing
  ASSERT_TRUE(recorder_.WaitForEnd("long"));
  const RunEnded& end = recorder_.End("long");
  ASSERT_TRUE(end.result.ok()) << end.result.status().ToString();
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kStopped)
      << end.result->reason << " / " << end.result->error.ToString();
  EXPECT_TRUE(engine::HasCheckpointAt(dir_ + "/long", end.result->global_step));
}

TEST_F(LocalExecutorTest, SlotsAndOneRunPerJob) {
  LocalExecutor executor({.slots = 1, .threads_per_job = 1});
  ASSERT_TRUE(executor.Start(Request("one", 10000000), recorder_).ok());
  EXPECT_EQ(executor.Start(Request("one", 10), recorder_).code(),
            engine::StatusCode::kFailedPrecondition);
  EXPECT_EQ(executor.Start(Request("two", 10), recorder_).code(), engine::StatusCode::kUnavailable);
  // Shutdown stops every run and waits for its end; nothing starts after it.
  executor.Shutdown();
  ASSERT_EQ(recorder_.Events("one").size() > 0, true);
  EXPECT_TRUE(std::holds_alternative<RunEnded>(recorder_.Events("one").back()));
  EXPECT_EQ(recorder_.End("one").result->outcome, JobResult::Outcome::kStopped);
  EXPECT_EQ(executor.Start(Request("two", 10), recorder_).code(), engine::StatusCode::kUnavailable);
  // A slot frees once a run ended.
  Recorder r;  // outlives the executor's runs
  LocalExecutor next({.slots = 1, .threads_per_job = 1});
  ASSERT_TRUE(next.Start(Request("short", 10), r).ok());
  ASSERT_TRUE(r.WaitForEnd("short"));
  EXPECT_TRUE(next.Start(Request("after", 10), r).ok());
}

TEST_F(LocalExecutorTest, WhatARunThrowsEndsThatRunOnly) {
  LocalExecutor executor({.slots = 1, .threads_per_job = 1});
  RunRequest missing = Request("nodata", 10);
  missing.spec.dataset.name = "no-such-dataset";
  ASSERT_TRUE(executor.Start(missing, recorder_).ok());
  ASSERT_TRUE(recorder_.WaitForEnd("nodata"));
  const RunEnded& end = recorder_.End("nodata");
  ASSERT_FALSE(end.result.ok());
  EXPECT_NE(end.result.status().message().find("no-such-dataset"), std::string::npos)
      << end.result.status().ToString();
  EXPECT_EQ(recorder_.Events("nodata").size(), 1u);  // no session: only the end
}

}  // namespace
}  // namespace trainingd::daemon
