// JobManager: the job state machine, the queue and restart recovery, on a real Store; storage
// faults injected under the store (FaultVfs).
#include "trainingd/daemon/jobs/job_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <thread>

#include "fault_vfs.h"
#include "job_manager_fixture.h"
#include "small_filesystem.h"
#include "trainingd/engine/nn/model_spec.h"

// The sanitizers' allocators end the process on an allocation no machine has instead of
// throwing std::bad_alloc (operator new does so even with allocator_may_return_null=1).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TRAININGD_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TRAININGD_SANITIZER_ALLOCATOR 1
#endif
#endif

namespace trainingd::daemon {
namespace {
namespace fs = std::filesystem;
using api::JobState;
using std::chrono::milliseconds;

// The spec of issue 11 that took the daemon down with std::bad_alloc: 65536-filter convolutions.
engine::JobSpec TheBadAllocSpec() {
  engine::JobSpec huge = SmallJob("huge", 10);
  huge.model_preset.clear();
  huge.model.layers = {
      engine::LayerSpec::Conv2d(65536, 1, engine::Padding::kSame, engine::Activation::kNone),
      engine::LayerSpec::Conv2d(65536, 64, engine::Padding::kSame, engine::Activation::kNone),
      engine::LayerSpec::Flatten(), engine::LayerSpec::Dense(10, engine::Activation::kNone)};
  return huge;
}

TEST_F(JobManagerTest, ASubmittedJobRunsToCompletionWithScalarsAndCheckpoints) {
  auto job = Submit(SmallJob("one", 200));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->state, JobState::kQueued);
  const api::JobInfo done = WaitFor(job->id, {JobState::kCompleted, JobState::kFailed});
  EXPECT_EQ(done.state, JobState::kCompleted) << done.error;
  EXPECT_EQ(done.global_step, 200);
  EXPECT_EQ(done.reason, "reached max_steps 200");
  ASSERT_TRUE(store_->Flush().ok());
  auto loss = manager_->Scalars(job->id, {.tag = "loss"});
  ASSERT_TRUE(loss.ok());
  ASSERT_EQ(loss->size(), 20u);  // steps 1, 11, ..., 191
  EXPECT_EQ(loss->front().step, 1);
  auto checkpoints = manager_->Checkpoints(job->id);
  ASSERT_TRUE(checkpoints.ok());
  EXPECT_EQ(checkpoints->back().global_step, 200);
  auto logs = manager_->Logs(job->id, 1, 1000);
  ASSERT_TRUE(logs.ok());
  EXPECT_FALSE(logs->empty());
}

TEST_F(JobManagerTest, IllegalTransitionsNameTheCurrentState) {
  auto job = Submit(SmallJob("two", 100));
  ASSERT_TRUE(job.ok());
  WaitFor(job->id, {JobState::kCompleted});
  auto st = manager_->Stop(job->id);
  EXPECT_EQ(st.status().code(), engine::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.status().message().find("is completed"), std::string::npos);
  auto resume = manager_->Resume(job->id, std::nullopt);
  EXPECT_NE(resume.status().message().find("give a larger max_steps"), std::string::npos);
  EXPECT_EQ(manager_->Resume(job->id, 50).status().code(), engine::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager_->Get("nope").status().code(), engine::StatusCode::kNotFound);
  // A completed job goes on with a larger max_steps, from its checkpoint.
  auto more = manager_->Resume(job->id, 150);
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  const api::JobInfo done = WaitFor(job->id, {JobState::kCompleted, JobState::kFailed});
  EXPECT_EQ(done.global_step, 150);
  ASSERT_TRUE(manager_->Delete(job->id).ok());
  EXPECT_FALSE(fs::exists(dir_ + "/jobs/" + job->id));
  EXPECT_EQ(manager_->Get(job->id).status().code(), engine::StatusCode::kNotFound);
}

TEST_F(JobManagerTest, StoppingAQueuedJobAndStoppingARunningOne) {
  auto first = Submit(SmallJob("long", 100000));
  auto second = Submit(SmallJob("waiting", 100));
  ASSERT_TRUE(first.ok() && second.ok());
  WaitForStep(first->id, 11);
  auto stopped = manager_->Stop(second->id);  // still queued behind the first
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->state, JobState::kStopped);
  EXPECT_EQ(manager_->Delete(first->id).code(), engine::StatusCode::kFailedPrecondition);
  auto stopping = manager_->Stop(first->id);
  ASSERT_TRUE(stopping.ok());
  const api::JobInfo s = WaitFor(first->id, {JobState::kStopped});
  EXPECT_GT(s.global_step, 0);
  auto checkpoints = manager_->Checkpoints(first->id);
  ASSERT_TRUE(checkpoints.ok());
  EXPECT_EQ(checkpoints->back().global_step, s.global_step);  // the final checkpoint
}

// resources.time_limit_secs ends a run as a stop does, and a resume goes on from there with a
// time of its own.
TEST_F(JobManagerTest, ATimeLimitStopsTheRunAfterAFinalCheckpointAndAResumeGoesOn) {
  engine::JobSpec spec = SmallJob("timed", 100000);
  spec.resources.time_limit_secs = 1;
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const api::JobInfo first = WaitFor(job->id, {JobState::kStopped, JobState::kFailed});
  ASSERT_EQ(first.state, JobState::kStopped) << first.reason;
  EXPECT_EQ(first.reason, "time limit of 1 s reached (resources.time_limit_secs) at global step " +
                              std::to_string(first.global_step));
  auto checkpoints = manager_->Checkpoints(job->id);
  ASSERT_TRUE(checkpoints.ok());
  EXPECT_EQ(checkpoints->back().global_step, first.global_step);  // the final checkpoint
  ASSERT_TRUE(manager_->Resume(job->id, std::nullopt).ok());
  const api::JobInfo second = WaitFor(job->id, {JobState::kStopped, JobState::kFailed});
  EXPECT_EQ(second.state, JobState::kStopped) << second.reason;
  // (Under a sanitizer a second may pass before the first step.)
  EXPECT_GE(second.global_step, first.global_step);
}

TEST_F(JobManagerTest, ARestartRequeuesUnfinishedJobsAndTheyResume) {
  auto job = Submit(SmallJob("survivor", 100000));
  ASSERT_TRUE(job.ok());
  WaitForStep(job->id, 11);
  manager_->Shutdown();  // as on SIGTERM: the job stops with a checkpoint and stays queued
  EXPECT_EQ(manager_->Get(job->id)->state, JobState::kQueued);
  const int64_t step = manager_->Get(job->id)->global_step;
  EXPECT_GT(step, 0);
  manager_.reset();
  store_.reset();
  OpenAll();
  const api::JobInfo running = WaitFor(job->id, {JobState::kRunning});
  EXPECT_GE(running.global_step, step);
  ASSERT_TRUE(manager_->Stop(job->id).ok());
  WaitFor(job->id, {JobState::kStopped});
  auto logs = manager_->Logs(job->id, 1, api::kMaxLogLines);
  ASSERT_TRUE(logs.ok());
  bool restored = false;
  for (const auto& l : *logs) {
    restored |= l.text.find("Restoring parameters from") != std::string::npos &&
                l.text.find("model.ckpt-" + std::to_string(step)) != std::string::npos;
  }
  EXPECT_TRUE(restored) << "no restore from step " << step;
}

// Fair-share usage is written to the store and read back by the next daemon, decayed over the
// time it was down (docs/operations.md#fair-share). The scheduler's clock is a fake one.
TEST_F(JobManagerTest, FairShareUsageSurvivesARestartDecayedOverTheDowntime) {
  auto now = std::make_shared<std::atomic<double>>(1.7e9);
  JobManagerOptions o;
  o.scheduler.now = [now] { return now->load(); };
  o.scheduler.half_life_secs = 1000;
  o.scheduler.default_estimate_secs = 50;
  manager_.reset();
  store_.reset();
  OpenAll(1, o);
  const engine::JobSpec spec = SmallJob("charged", 100000);
  auto job = manager_->Submit(spec, api::JobSpecToJson(spec), "alice");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  WaitFor(job->id, {JobState::kRunning});
  EXPECT_DOUBLE_EQ(manager_->FairShareUsage("alice"), 50);  // the estimate, at its start
  *now = *now + 80;                                         // it runs 80 s: past its estimate
  ASSERT_TRUE(manager_->Stop(job->id).ok());
  WaitFor(job->id, {JobState::kStopped});
  // Charged 50 at the start, corrected to the 80 s it ran when it ended.
  const double before = manager_->FairShareUsage("alice");
  EXPECT_NEAR(before, 50 * std::exp2(-0.08) + 30, 1e-9);
  EXPECT_DOUBLE_EQ(manager_->FairShareUsage("bob"), 0);

  manager_.reset();
  ASSERT_TRUE(store_->Flush().ok());
  auto rows = store_->ListFairShareUsage();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].owner, "alice");
  EXPECT_DOUBLE_EQ((*rows)[0].usage, before);
  EXPECT_DOUBLE_EQ((*rows)[0].at, now->load());
  store_.reset();

  *now = *now + 1000;  // down for one half-life
  OpenAll(1, o);
  EXPECT_NEAR(manager_->FairShareUsage("alice"), before / 2, 1e-9);
  *now = *now + 1000;
  EXPECT_NEAR(manager_->FairShareUsage("alice"), before / 4, 1e-9);
}

TEST_F(JobManagerTest, SubmitChecksTheSpecAgainstItsDataAndTheBudgets) {
  engine::JobSpec no_data = SmallJob("nodata", 10);
  no_data.dataset.name = "no-such-dataset";
  auto r = Submit(no_data);
  EXPECT_EQ(r.status().code(), engine::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("dataset.name: no dataset 'no-such-dataset' in ", 0), 0u)
      << r.status().message();
  EXPECT_NE(r.status().message().find("fashion-mnist"), std::string::npos);

  engine::JobSpec big_batch = SmallJob("batch", 10);
  big_batch.batch_size = 3001;  // max_train_examples 3000
  EXPECT_EQ(Submit(big_batch).status().message().rfind("batch_size: 3001", 0), 0u);

  engine::JobSpec dense_first = SmallJob("shapes", 10);
  dense_first.model_preset.clear();
  dense_first.model.layers = {engine::LayerSpec::Dense(10, engine::Activation::kNone)};
  EXPECT_EQ(Submit(dense_first).status().message().rfind("model.layers[0]: dense ", 0), 0u);

  engine::JobSpec keep_many = SmallJob("keep", 10);
  keep_many.hooks.checkpoint.max_to_keep = 51;  // over max_checkpoints_per_job (50)
  EXPECT_EQ(Submit(keep_many).status().message().rfind(
                "hooks.checkpoint.max_to_keep: 51 is more than", 0),
            0u);

  const engine::JobSpec huge = TheBadAllocSpec();
  r = Submit(huge);
  EXPECT_EQ(r.status().message().rfind("model.layers[1]: the job needs an estimated", 0), 0u)
      << r.status().message();
  EXPECT_TRUE(manager_->List(std::nullopt, 100, "")->jobs.empty());  // nothing was accepted

  // The fixture's daemon gives a job 1 compute thread.
  engine::JobSpec threads = SmallJob("threads", 10);
  threads.resources.cpus_per_worker = 2;
  EXPECT_EQ(Submit(threads).status().message(),
            "resources.cpus_per_worker: 2 for each of 1 worker(s) is more than the 1 compute "
            "thread(s) this daemon gives a job, so that jobs never oversubscribe its cores "
            "(threads_per_job in its config)");
  threads.resources.cpus_per_worker = 1;
  threads.resources.time_limit_secs = 3600;
  EXPECT_TRUE(Submit(threads).ok());

  // Resume with a larger max_steps is admitted again: here over the disk budget.
  manager_.reset();
  JobManagerOptions tight;
  tight.limits.max_job_disk_bytes = 40 << 20;
  OpenAll(1, tight);
  engine::JobSpec every_step = SmallJob("resumed", 10);
  every_step.hooks.checkpoint.trigger.every_steps = 1;
  every_step.hooks.checkpoint.max_to_keep = 50;
  every_step.model_preset.clear();
  every_step.model = *engine::PresetModel("mlp");  // ~1.2 MiB checkpoints: 51 of them fit
  auto job = Submit(every_step);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  WaitFor(job->id, {JobState::kCompleted});
  manager_.reset();
  tight.limits.max_job_disk_bytes = 20 << 20;
  OpenAll(1, tight);
  auto more = manager_->Resume(job->id, 1000);
  EXPECT_EQ(more.status().message().rfind("hooks.checkpoint.max_to_keep: the job needs", 0), 0u)
      << more.status().message();
}

TEST_F(JobManagerTest, AnExceptionInAJobFailsTheJobNotTheDaemon) {
#ifdef TRAININGD_SANITIZER_ALLOCATOR
  GTEST_SKIP() << "a sanitizer's allocator aborts instead of throwing std::bad_alloc";
#endif
  // Admission off: the huge model is attempted, and its parameters cannot be allocated.
  manager_.reset();
  JobManagerOptions unchecked;
  unchecked.limits.max_job_memory_bytes = -1;
  unchecked.limits.max_job_disk_bytes = -1;
  OpenAll(1, unchecked);
  const engine::JobSpec huge = TheBadAllocSpec();
  auto job = Submit(huge);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const api::JobInfo failed = WaitFor(job->id, {JobState::kFailed, JobState::kCompleted});
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_NE(failed.reason.find("out of memory"), std::string::npos) << failed.reason;
  // The daemon goes on: the next job runs.
  auto next = Submit(SmallJob("after", 20));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(WaitFor(next->id, {JobState::kCompleted, JobState::kFailed}).state,
            JobState::kCompleted);
}

TEST_F(JobManagerTest, AJobRunningWhenTheDaemonDiedIsRequeuedAtMostMaxCrashRestartsTimes) {
  // What the database holds when the daemon died under a job for the (k+1)-th time in a row:
  // the job marked running, its count at k. (tests/e2e/robustness_test.py kills a real daemon.)
  JobRecord r;
  r.id = "jcrasher";
  r.name = "crasher";
  r.spec_json = R"({"name":"crasher","model":"softmax","max_steps":100000,
                    "dataset":{"validation_size":500,"max_train_examples":3000}})";
  r.state = JobState::kRunning;
  r.created_at = 1;
  r.checkpoint_dir = dir_ + "/jobs/jcrasher";
  for (int64_t k = 0; k <= 2; ++k) {
    manager_.reset();
    r.crash_count = k;
    store_->PutJob(r);
    ASSERT_TRUE(store_->Flush().ok());
    store_.reset();
    OpenAll();
    ASSERT_TRUE(store_->Flush().ok());
    const auto stored = store_->GetJob("jcrasher").value();
    EXPECT_EQ(stored->crash_count, k + 1);
    if (k + 1 <= 2) {
      EXPECT_NE(stored->state, JobState::kFailed);
      EXPECT_NE(stored->state, JobState::kCompleted);
    } else {
      EXPECT_EQ(stored->state, JobState::kFailed);
      EXPECT_NE(stored->reason.find("crashed the daemon"), std::string::npos) << stored->reason;
      EXPECT_EQ(manager_->Get("jcrasher")->state, JobState::kFailed);
    }
  }
  // The user's resume is another try: the count starts over, and the job runs to its end.
  ASSERT_TRUE(manager_->Resume("jcrasher", 20).ok());
  EXPECT_EQ(WaitFor("jcrasher", {JobState::kCompleted, JobState::kFailed}).state,
            JobState::kCompleted);
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(store_->GetJob("jcrasher").value()->crash_count, 0);
}

TEST_F(JobManagerTest, SubscribersGetStateEventsAndUnknownJobsAreNotFound) {
  std::mutex mu;
  std::vector<std::string> kinds;
  auto sub = manager_->Subscribe("", 0, [&](const api::ServiceEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    kinds.push_back(std::string(api::EventKindName(e.kind)));
  });
  ASSERT_TRUE(sub.ok());
  auto job = Submit(SmallJob("events", 20));
  WaitFor(job->id, {JobState::kCompleted});
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_GE(kinds.size(), 3u);  // queued, running, completed
  }
  EXPECT_EQ(manager_->Subscribe("nope", 0, [](const api::ServiceEvent&) {}).status().code(),
            engine::StatusCode::kNotFound);
  EXPECT_NE(MetricsText().find("trainingd_jobs{state=\"completed\"} 1"), std::string::npos);
}

// ---- storage faults -----------------------------------------------------------------------------

// A fixture that opens the store through FaultVfs, retrying quickly.
class JobManagerFaultTest : public JobManagerTest {
 protected:
  void SetUp() override {
    store_options_.vfs = FaultVfs::Get().name();
    store_options_.busy_timeout_ms = 20;
    store_options_.retry_initial_backoff = milliseconds(10);
    store_options_.retry_max_backoff = milliseconds(50);
    JobManagerTest::SetUp();
  }
  void TearDown() override {
    FaultVfs::Get().Clear();
    JobManagerTest::TearDown();
  }
  // Reopens everything through SQLite's own VFS.
  void Restart() {
    manager_.reset();
    store_.reset();
    store_options_ = StoreOptions();
    OpenAll();
  }
  static bool Has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  }
};

TEST_F(JobManagerFaultTest, ADiskFullStopsRunningJobsAfterAFinalCheckpointAndHoldsTheQueue) {
  manager_.reset();
  OpenAll(2);  // two workers: a queued job would start at once if it were let
  auto running = Submit(SmallJob("running", 100000));
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  WaitForStep(running->id, 11);

  FaultVfs::Get().Inject(FaultVfs::Fault::kFull);
  const api::JobInfo stopped = WaitFor(running->id, {JobState::kStopped, JobState::kFailed});
  EXPECT_EQ(stopped.state, JobState::kStopped) << stopped.reason << " / " << stopped.error;
  EXPECT_EQ(stopped.reason.rfind("disk full (the database cannot be written: ", 0), 0u)
      << stopped.reason;
  EXPECT_TRUE(Has(stopped.reason, "ResourceExhausted") || Has(stopped.reason, "full"))
      << stopped.reason;
  EXPECT_TRUE(Has(stopped.reason, "; stopped after a final checkpoint at global step " +
                                      std::to_string(stopped.global_step)))
      << stopped.reason;
  auto checkpoints = manager_->Checkpoints(running->id);
  ASSERT_TRUE(checkpoints.ok());
  EXPECT_EQ(checkpoints->back().global_step, stopped.global_step);

  const api::ServiceHealth health = manager_->Health();
  EXPECT_TRUE(health.degraded);
  ASSERT_EQ(health.problems.size(), 1u);
  EXPECT_TRUE(Has(health.problems[0], "the database cannot be written: ResourceExhausted"))
      << health.problems[0];
  const std::string metrics = MetricsText();
  EXPECT_TRUE(Has(metrics, "\ntrainingd_degraded 1\n")) << metrics;
  EXPECT_FALSE(Has(metrics, "\ntrainingd_sqlite_failed_writes_total 0\n")) << metrics;

  // Submitted while the disk is full: accepted, and held in the queue with two workers idle.
  auto waiting = Submit(SmallJob("waiting", 20));
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kQueued);
  EXPECT_TRUE(manager_->Health().degraded);

  FaultVfs::Get().Clear();
  EXPECT_EQ(WaitFor(waiting->id, {JobState::kCompleted, JobState::kFailed}).state,
            JobState::kCompleted);
  EXPECT_FALSE(manager_->Health().degraded);
  EXPECT_EQ(manager_->Get(running->id)->state, JobState::kStopped);  // it stays stopped
  ASSERT_TRUE(store_->Flush().ok());

  // What was written while the database failed made it to the file.
  Restart();
  const api::JobInfo after = *manager_->Get(running->id);
  EXPECT_EQ(after.state, JobState::kStopped);
  EXPECT_EQ(after.reason, stopped.reason);
  EXPECT_EQ(after.global_step, stopped.global_step);
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kCompleted);
  // And it resumes from the final checkpoint.
  ASSERT_TRUE(manager_->Resume(running->id, stopped.global_step + 20).ok());
  const api::JobInfo done = WaitFor(running->id, {JobState::kCompleted, JobState::kFailed});
  EXPECT_EQ(done.state, JobState::kCompleted) << done.reason;
  EXPECT_EQ(done.global_step, stopped.global_step + 20);
}

TEST_F(JobManagerFaultTest, ALockHeldElsewhereHoldsTheQueueButStopsNoJob) {
  manager_.reset();
  OpenAll(2);
  // Steps enough to outlast the test: the softmax runs some 15,000 steps a second, and the
  // submission below waits up to 5 s for the busy database, so 100,000 could end in time (seen
  // once in make test on a clean clone).
  auto running = Submit(SmallJob("running", 100'000'000));
  ASSERT_TRUE(running.ok());
  WaitForStep(running->id, 11);

  FaultVfs::Get().Inject(FaultVfs::Fault::kBusy);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!manager_->Health().degraded && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const api::ServiceHealth health = manager_->Health();
  ASSERT_TRUE(health.degraded);
  EXPECT_TRUE(Has(health.problems[0], "Unavailable")) << health.problems[0];
  auto waiting = Submit(SmallJob("waiting", 20));
  ASSERT_TRUE(waiting.ok());
  const int64_t step = manager_->Get(running->id)->global_step;
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kQueued);
  const api::JobInfo still = *manager_->Get(running->id);
  EXPECT_EQ(still.state, JobState::kRunning);  // only a full or failing disk stops jobs
  EXPECT_GT(still.global_step, step);

  FaultVfs::Get().Clear();
  EXPECT_EQ(WaitFor(waiting->id, {JobState::kCompleted, JobState::kFailed}).state,
            JobState::kCompleted);
  ASSERT_TRUE(manager_->Stop(running->id).ok());
  EXPECT_EQ(WaitFor(running->id, {JobState::kStopped}).reason, "stop requested");
  EXPECT_FALSE(manager_->Health().degraded);
}

TEST_F(JobManagerFaultTest, AFullJobsDiskHoldsTheQueueWhileTheDatabaseWorks) {
  manager_.reset();
  store_.reset();
  std::string why;
  auto jobs = test_support::SmallFileSystem::Mount(dir_ + "/jobs", 8 << 20, &why);
  if (!jobs) GTEST_SKIP() << why;
  OpenAll();
  // Less room than the queue needs to start a job, and less than the job's estimated disk use:
  // while the disk is full the job is not refused as too big, it waits.
  ASSERT_TRUE(jobs->Fill(64 << 10));
  auto waiting = Submit(SmallJob("waiting", 20));
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  std::this_thread::sleep_for(milliseconds(1500));  // the free space is looked at every second
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kQueued);
  const api::ServiceHealth health = manager_->Health();
  EXPECT_TRUE(health.degraded);
  ASSERT_EQ(health.problems.size(), 1u);
  EXPECT_EQ(health.problems[0].rfind("the disk holding " + dir_ + "/jobs is full (", 0), 0u)
      << health.problems[0];
  EXPECT_TRUE(Has(health.problems[0], " KiB free); no queued job starts until there is room"))
      << health.problems[0];
  EXPECT_FALSE(store_->health().degraded);

  jobs->Unfill();
  EXPECT_EQ(WaitFor(waiting->id, {JobState::kCompleted, JobState::kFailed}).state,
            JobState::kCompleted);
  EXPECT_FALSE(manager_->Health().degraded);
  manager_.reset();
}

// The data directory (database and job files) on a small tmpfs that the test fills: a real full
// disk, with SQLite's own VFS.
class JobManagerFullDiskTest : public JobManagerFaultTest {
 protected:
  void SetUp() override {
    JobManagerFaultTest::SetUp();
    manager_.reset();
    store_.reset();
    root_ = dir_;
    std::string why;
    disk_ = test_support::SmallFileSystem::Mount(root_ + "/disk", 32 << 20, &why);
    if (!disk_) GTEST_SKIP() << why;
    dir_ = disk_->dir();
    store_options_.vfs.clear();
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    disk_.reset();
    dir_ = root_;
    JobManagerFaultTest::TearDown();
  }

  std::string root_;
  std::unique_ptr<test_support::SmallFileSystem> disk_;
};

TEST_F(JobManagerFullDiskTest, RunningJobsFailWhenNoFinalCheckpointFitsAndNothingIsLost) {
  OpenAll();
  auto running = Submit(SmallJob("running", 100000));
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  WaitForStep(running->id, 11);

  ASSERT_TRUE(disk_->Fill(0));
  const api::JobInfo failed = WaitFor(running->id, {JobState::kStopped, JobState::kFailed});
  EXPECT_EQ(failed.state, JobState::kFailed) << failed.reason;
  EXPECT_EQ(failed.reason.rfind("disk full (", 0), 0u) << failed.reason;
  EXPECT_TRUE(Has(failed.reason, "no final checkpoint fitted")) << failed.reason;
  EXPECT_TRUE(Has(failed.error, "ResourceExhausted")) << failed.error;
  // Degraded: the disk is full. The database fails too once a write needs a page the disk has
  // no room for; the failed state's may still fit in the WAL's room (seen under ctest -j2), so
  // that second problem is waited for but not required.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  api::ServiceHealth health;
  while (std::chrono::steady_clock::now() < deadline) {
    health = manager_->Health();
    if (health.problems.size() == 2) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(health.degraded);
  ASSERT_GE(health.problems.size(), 1u);
  ASSERT_LE(health.problems.size(), 2u);
  if (health.problems.size() == 2) {
    EXPECT_TRUE(Has(health.problems[0], "the database cannot be written: ResourceExhausted"))
        << health.problems[0];
  }
  EXPECT_EQ(health.problems.back().rfind("the disk holding " + dir_ + " is full (", 0), 0u)
      << health.problems.back();
  auto waiting = Submit(SmallJob("waiting", 20));
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kQueued);

  disk_->Unfill();
  EXPECT_EQ(WaitFor(waiting->id, {JobState::kCompleted, JobState::kFailed}).state,
            JobState::kCompleted);
  EXPECT_FALSE(manager_->Health().degraded);
  ASSERT_TRUE(store_->Flush().ok());
  manager_.reset();
  store_.reset();
  OpenAll();
  const api::JobInfo after = *manager_->Get(running->id);
  EXPECT_EQ(after.state, JobState::kFailed);
  EXPECT_EQ(after.reason, failed.reason);
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kCompleted);
  // Its latest checkpoint from before the disk filled is whole: it resumes from there.
  ASSERT_TRUE(manager_->Resume(running->id, after.global_step + 50).ok());
  const api::JobInfo done = WaitFor(running->id, {JobState::kCompleted, JobState::kFailed});
  EXPECT_EQ(done.state, JobState::kCompleted) << done.reason;
  for (const std::string& f : std::vector<std::string>{dir_ + "/jobs/" + running->id}) {
    for (const auto& e : fs::directory_iterator(f)) {
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    }
  }
}

}  // namespace
}  // namespace trainingd::daemon
