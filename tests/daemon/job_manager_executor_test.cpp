// JobManager over the Executor seam, with a FakeExecutor whose runs the test drives: what the
// manager starts, stops and records from a run's events, its slots, and its restart recovery.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fake_executor.h"
#include "job_manager_fixture.h"

namespace trainingd::daemon {
namespace {
using api::JobState;
using engine::JobResult;

class JobManagerExecutorTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    Reopen(/*slots=*/1);
  }
  void Reopen(int slots, JobManagerOptions o = {}, bool cluster = false) {
    manager_.reset();
    store_.reset();
    auto fake = std::make_unique<FakeExecutor>(slots, cluster);
    fake_ = fake.get();
    OpenAll(slots, o, std::move(fake));
  }
  // Waits until the fake has been asked to start `n` runs.
  void WaitForStarts(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (fake_->started().size() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(fake_->started().size(), n);
  }
  std::vector<api::ServiceEvent> History(const std::string& topic) {
    std::vector<api::ServiceEvent> got;
    auto sub = bus_.Subscribe(topic, 0, [&](const api::ServiceEvent& e) { got.push_back(e); });
    return got;
  }
  FakeExecutor* fake_ = nullptr;  // owned by the manager
};

TEST_F(JobManagerExecutorTest, ARunsEventsBecomeStateScalarsLogAndEvents) {
  auto job = Submit(SmallJob("one", 100));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  WaitForStarts(1);
  const RunRequest run = fake_->started()[0];
  EXPECT_EQ(run.job_id, job->id);
  EXPECT_EQ(run.spec.name, "one");
  EXPECT_EQ(run.job_dir, dir_ + "/jobs/" + job->id);
  EXPECT_TRUE(std::filesystem::is_directory(run.job_dir));
  EXPECT_EQ(run.limits.max_checkpoints, JobLimits{}.max_checkpoints_per_job);
  EXPECT_EQ(manager_->Get(job->id)->state, JobState::kRunning);

  fake_->Emit(job->id, SessionCreated{0});
  fake_->Emit(job->id, ScalarRecorded{"loss", 10, 2.5, 1000.0});
  fake_->Emit(job->id, ScalarRecorded{"global_step/sec", 10, 4.0, 1000.0});
  fake_->Emit(job->id, LogWritten{engine::LogSeverity::kWarning, "careful"});
  api::JobInfo info = *manager_->Get(job->id);
  EXPECT_EQ(info.global_step, 10);
  EXPECT_EQ(info.latest_scalars.at("loss"), 2.5);
  EXPECT_EQ(info.examples_per_sec, 4.0 * 50);  // steps/s x batch
  auto lines = manager_->Logs(job->id, 1, 10);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].text, "WARNING:trainingd:careful");

  fake_->End(job->id, FakeExecutor::Completed(100));
  info = *manager_->Get(job->id);
  EXPECT_EQ(info.state, JobState::kCompleted);
  EXPECT_EQ(info.global_step, 100);
  EXPECT_EQ(info.reason, "reached max_steps");
  ASSERT_TRUE(store_->Flush().ok());
  auto points = manager_->Scalars(job->id, {.tag = "loss"});
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 1u);
  EXPECT_EQ((*points)[0].value, 2.5);
  // The bus had every event; a finished job keeps only its last (the final state).
  const auto kept = History(job->id);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(std::get<api::JobStateEvent>(kept[0].data).state, JobState::kCompleted);
}

TEST_F(JobManagerExecutorTest, StopAsksTheRunAndItsEndDecidesTheState) {
  auto queued_only = Submit(SmallJob("first", 100));
  auto waiting = Submit(SmallJob("second", 100));
  WaitForStarts(1);
  // The queued one stops at once, without a run.
  ASSERT_EQ(manager_->Stop(waiting->id)->state, JobState::kStopped);
  // The running one is asked to stop; it is stopping until its run ends.
  ASSERT_EQ(manager_->Stop(queued_only->id)->state, JobState::kStopping);
  EXPECT_EQ(fake_->stop_requests(), std::vector<std::string>{queued_only->id});
  fake_->Emit(queued_only->id, ScalarRecorded{"loss", 40, 1.0, 1.0});
  fake_->End(queued_only->id, FakeExecutor::Stopped(40));
  const api::JobInfo stopped = *manager_->Get(queued_only->id);
  EXPECT_EQ(stopped.state, JobState::kStopped);
  EXPECT_EQ(stopped.global_step, 40);
  EXPECT_EQ(fake_->started().size(), 1u);  // the stopped queued job never ran

  // Resumed: a new run of the same job; its session restored step 20, so later scalars go.
  ASSERT_EQ(manager_->Resume(queued_only->id, std::nullopt)->state, JobState::kQueued);
  WaitForStarts(2);
  fake_->Emit(queued_only->id, SessionCreated{20});
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_TRUE(manager_->Scalars(queued_only->id, {.tag = "loss"})->empty());
  EXPECT_EQ(manager_->Get(queued_only->id)->global_step, 20);
  fake_->End(
      queued_only->id,
      JobResult{
          JobResult::Outcome::kFailed, engine::Status::Internal("boom"), "run failed", 30, {}});
  const api::JobInfo failed = *manager_->Get(queued_only->id);
  EXPECT_EQ(failed.state, JobState::kFailed);
  EXPECT_EQ(failed.error, "Internal: boom");
}

TEST_F(JobManagerExecutorTest, RunsStartAsSlotsFreeUp) {
  Reopen(/*slots=*/2);
  auto a = Submit(SmallJob("a", 10));
  auto b = Submit(SmallJob("b", 10));
  auto c = Submit(SmallJob("c", 10));
  WaitForStarts(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(fake_->started().size(), 2u);  // no third while both slots run
  EXPECT_EQ(manager_->Get(c->id)->state, JobState::kQueued);
  fake_->End(a->id, FakeExecutor::Completed(10));
  WaitForStarts(3);
  EXPECT_EQ(fake_->started()[2].job_id, c->id);
  EXPECT_TRUE(fake_->IsRunning(b->id));
}

TEST_F(JobManagerExecutorTest, HigherPriorityStartsFirstAndAChangeTakesEffectInTheQueue) {
  auto a = Submit(SmallJob("a", 10));
  WaitForStarts(1);
  auto b = Submit(SmallJob("b", 10));
  auto c = Submit(SmallJob("c", 10));
  engine::JobSpec urgent = SmallJob("d", 10);
  urgent.priority = 5;
  auto d = Submit(urgent);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->priority, 5);
  EXPECT_EQ(manager_->Get(b->id)->priority, 0);
  // c overtakes d after its change; b, the oldest, waits behind both.
  auto changed = manager_->SetPriority(c->id, 10);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->priority, 10);
  EXPECT_EQ(manager_->SetPriority(c->id, 1001).status().code(),
            engine::StatusCode::kInvalidArgument);
  EXPECT_EQ(manager_->SetPriority("jnothere", 1).status().code(), engine::StatusCode::kNotFound);
  fake_->End(a->id, FakeExecutor::Completed(10));
  WaitForStarts(2);
  EXPECT_EQ(fake_->started()[1].job_id, c->id);
  fake_->End(c->id, FakeExecutor::Completed(10));
  WaitForStarts(3);
  EXPECT_EQ(fake_->started()[2].job_id, d->id);

  // The priority is in the database: a restart keeps it and the order.
  manager_->Shutdown();
  Reopen(/*slots=*/1);
  EXPECT_EQ(manager_->Get(c->id)->priority, 10);
  WaitForStarts(1);
  EXPECT_EQ(fake_->started()[0].job_id, d->id);  // interrupted while running, priority 5
  fake_->End(d->id, FakeExecutor::Completed(10));
  WaitForStarts(2);
  EXPECT_EQ(fake_->started()[1].job_id, b->id);
}

// Preemption by checkpoint (scheduler.h): a higher-priority job stops the running lower one,
// which ends preempted (not stopped, not failed), waits ahead of newer jobs of its priority and
// runs again when the slot is free. Its owner's stop while it is being preempted wins.
TEST_F(JobManagerExecutorTest, AHigherPriorityJobPreemptsTheRunningLowerOne) {
  JobManagerOptions o;
  o.scheduler.min_run_secs = 0;
  Reopen(/*slots=*/1, o);
  auto low = Submit(SmallJob("low", 100));
  ASSERT_TRUE(low.ok()) << low.status().ToString();
  WaitForStarts(1);
  fake_->Emit(low->id, ScalarRecorded{"loss", 40, 1.0, 1.0});
  engine::JobSpec urgent = SmallJob("urgent", 10);
  urgent.priority = 5;
  auto high = Submit(urgent);
  auto newer = Submit(SmallJob("newer", 10));  // priority 0, after low
  ASSERT_TRUE(high.ok() && newer.ok());
  // The scheduling thread asks for the stop (at once: it is woken by the submit).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake_->stop_requests().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(fake_->stop_requests(), std::vector<std::string>{low->id});
  api::JobInfo info = *manager_->Get(low->id);
  EXPECT_EQ(info.state, JobState::kStopping);
  EXPECT_EQ(info.preempted_by, high->id);
  EXPECT_NE(info.reason.find("preempted by job " + high->id), std::string::npos) << info.reason;
  fake_->End(low->id, FakeExecutor::Stopped(40));
  info = *manager_->Get(low->id);
  EXPECT_EQ(info.state, JobState::kPreempted);
  EXPECT_EQ(info.preempted_by, high->id);
  EXPECT_EQ(info.error, "");
  WaitForStarts(2);
  EXPECT_EQ(fake_->started()[1].job_id, high->id);
  EXPECT_EQ(fake_->stop_requests().size(), 1u) << "one victim for one urgent job";
  fake_->End(high->id, FakeExecutor::Completed(10));
  // The preempted job runs before the newer one of its priority (Determined #3340).
  WaitForStarts(3);
  EXPECT_EQ(fake_->started()[2].job_id, low->id);
  EXPECT_EQ(manager_->Get(low->id)->state, JobState::kRunning);
  // Its state is in the database: a restart while preempted would queue it again (below).
  fake_->End(low->id, FakeExecutor::Completed(100));
  WaitForStarts(4);
  EXPECT_EQ(fake_->started()[3].job_id, newer->id);
  EXPECT_EQ(manager_->Get(low->id)->state, JobState::kCompleted);
  EXPECT_EQ(manager_->Get(low->id)->preempted_by, high->id);  // who last preempted it

  // The owner's stop while a preemption is under way: the job ends stopped.
  engine::JobSpec urgent2 = SmallJob("urgent2", 10);
  urgent2.priority = 5;
  auto high2 = Submit(urgent2);
  while (fake_->stop_requests().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(fake_->stop_requests().size(), 2u);
  EXPECT_EQ(fake_->stop_requests()[1], newer->id);
  ASSERT_EQ(manager_->Stop(newer->id)->state, JobState::kStopping);
  fake_->End(newer->id, FakeExecutor::Stopped(5));
  EXPECT_EQ(manager_->Get(newer->id)->state, JobState::kStopped);
  WaitForStarts(5);
  EXPECT_EQ(fake_->started()[4].job_id, high2->id);
}

TEST_F(JobManagerExecutorTest, APreemptedJobIsQueuedAgainAfterARestart) {
  JobManagerOptions o;
  o.scheduler.min_run_secs = 0;
  Reopen(/*slots=*/1, o);
  auto low = Submit(SmallJob("low", 100));
  WaitForStarts(1);
  engine::JobSpec urgent = SmallJob("urgent", 10);
  urgent.priority = 5;
  auto high = Submit(urgent);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake_->stop_requests().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  fake_->End(low->id, FakeExecutor::Stopped(40));
  WaitForStarts(2);
  ASSERT_EQ(manager_->Get(low->id)->state, JobState::kPreempted);
  // The daemon stops with the urgent job running: both wait for the next start, in their order.
  manager_->Shutdown();
  Reopen(/*slots=*/1, o);
  const api::JobInfo after = *manager_->Get(low->id);
  EXPECT_EQ(after.state, JobState::kPreempted);
  EXPECT_EQ(after.preempted_by, high->id);
  WaitForStarts(1);
  EXPECT_EQ(fake_->started()[0].job_id, high->id);
}

// The daemon died while a preemption was stopping the victim (its row says stopping, with the
// preemption's reason): the next start queues it again as preempted, not stopped.
TEST_F(JobManagerExecutorTest, AVictimStoppingWhenTheDaemonDiedIsPreemptedAfterTheRestart) {
  auto victim = Submit(SmallJob("victim", 100));
  auto other = Submit(SmallJob("other", 100));
  WaitForStarts(1);
  manager_.reset();  // its run ends stopped at shutdown: queued in the database
  {
    auto store = Store::Open(dir_ + "/trainingd.db", store_options_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    (*store)->UpdateJobState(victim->id, JobState::kStopping, 1.0, 0, "",
                             "preempted by job jurgent (priority 5): stopping after a final "
                             "checkpoint");
    (*store)->UpdateJobState(other->id, JobState::kStopping, 1.0, 0, "", "stop requested");
    ASSERT_TRUE((*store)->Flush().ok());
  }
  Reopen(/*slots=*/1);
  EXPECT_EQ(manager_->Get(other->id)->state, JobState::kStopped);  // a user's stop, as before
  WaitForStarts(1);
  EXPECT_EQ(fake_->started()[0].job_id, victim->id);
}

// Quotas (scheduler.h): running_slots holds the owner's next job with a reason; queued_jobs and
// max_priority refuse the submit naming the quota.
TEST_F(JobManagerExecutorTest, QuotasHoldOrRefuseNamingTheQuota) {
  JobManagerOptions o;
  o.scheduler.quotas["alice"].running_slots = 1;
  o.scheduler.quotas["alice"].queued_jobs = 1;
  o.scheduler.quotas["alice"].max_priority = 3;
  Reopen(/*slots=*/2, o);
  const auto As = [&](const std::string& owner, const engine::JobSpec& spec) {
    return manager_->Submit(spec, api::JobSpecToJson(spec), owner);
  };
  auto a1 = As("alice", SmallJob("a1", 10));
  ASSERT_TRUE(a1.ok()) << a1.status().ToString();
  WaitForStarts(1);
  auto a2 = As("alice", SmallJob("a2", 10));
  ASSERT_TRUE(a2.ok()) << a2.status().ToString();
  auto b1 = As("bob", SmallJob("b1", 10));
  WaitForStarts(2);
  EXPECT_EQ(fake_->started()[1].job_id, b1->id);  // a free slot, but not for alice's a2
  const api::JobInfo held = *manager_->Get(a2->id);
  EXPECT_EQ(held.state, JobState::kQueued);
  EXPECT_EQ(held.waiting_reason.rfind("quotas.running_slots: ", 0), 0u) << held.waiting_reason;
  auto a3 = As("alice", SmallJob("a3", 10));
  EXPECT_EQ(a3.status().code(), engine::StatusCode::kResourceExhausted);
  EXPECT_EQ(a3.status().message().rfind("quotas.queued_jobs: ", 0), 0u) << a3.status().message();
  engine::JobSpec high = SmallJob("a4", 10);
  high.priority = 4;
  auto a4 = As("alice", high);
  EXPECT_EQ(a4.status().message().rfind("quotas.max_priority: ", 0), 0u) << a4.status().message();
  EXPECT_EQ(manager_->SetPriority(a2->id, 4).status().code(),
            engine::StatusCode::kResourceExhausted);
  EXPECT_TRUE(manager_->SetPriority(a2->id, 3).ok());
  fake_->End(a1->id, FakeExecutor::Completed(10));
  WaitForStarts(3);
  EXPECT_EQ(fake_->started()[2].job_id, a2->id);
  EXPECT_EQ(manager_->Get(a2->id)->waiting_reason, "");
}

TEST_F(JobManagerExecutorTest, AStartTheExecutorRefusesFailsTheJob) {
  fake_->FailStarts(engine::Status::Unavailable("no nodes"));
  auto job = Submit(SmallJob("refused", 10));
  const api::JobInfo failed = WaitFor(job->id, {JobState::kFailed});
  EXPECT_EQ(failed.reason, "could not start: no nodes");
}

TEST_F(JobManagerExecutorTest, ShutdownLeavesStoppedRunsQueuedForTheNextStart) {
  auto running = Submit(SmallJob("running", 100));
  auto waiting = Submit(SmallJob("waiting", 100));
  WaitForStarts(1);
  fake_->Emit(running->id, ScalarRecorded{"loss", 30, 1.0, 1.0});
  // The daemon shuts down: the run is stopped and the job stays queued for the next start.
  manager_->Shutdown();
  EXPECT_EQ(manager_->Get(running->id)->state, JobState::kQueued);
  EXPECT_EQ(manager_->Get(waiting->id)->state, JobState::kQueued);

  // A restart queues both again, oldest first.
  Reopen(/*slots=*/1);
  WaitForStarts(1);
  EXPECT_EQ(fake_->started()[0].job_id, running->id);

  // (A daemon that died under a run: AJobRunningWhenTheDaemonDiedIs... in job_manager_test.)
}

// An executor whose runs outlive the daemon (Slurm): queued until the cluster runs the job, its
// status in the job, and after the daemon's death the same runs followed again, not counted as
// crashes; a stop under way is asked for again.
TEST_F(JobManagerExecutorTest, AClustersRunsAreQueuedUntilTheyRunAndFollowedAgainAfterACrash) {
  Reopen(/*slots=*/4, {}, /*cluster=*/true);
  auto pending = Submit(SmallJob("pending", 100));
  auto stopping = Submit(SmallJob("stopping", 100));
  WaitForStarts(2);
  EXPECT_EQ(manager_->Get(pending->id)->state, JobState::kQueued);
  fake_->Emit(pending->id, SchedulerStatus{7, "PENDING", "Priority", "", 0});
  fake_->Emit(stopping->id, SchedulerStatus{8, "RUNNING", "None", "node1", 0});
  api::JobInfo info = *manager_->Get(pending->id);
  EXPECT_EQ(info.state, JobState::kQueued);
  EXPECT_EQ(info.executor, "slurm");
  EXPECT_EQ(info.slurm.job_id, 7);
  EXPECT_EQ(info.slurm.reason, "Priority");
  EXPECT_EQ(manager_->Get(stopping->id)->state, JobState::kRunning);
  EXPECT_EQ(manager_->Get(stopping->id)->slurm.nodes, "node1");
  // A session before the scheduler's word: running.
  auto early = Submit(SmallJob("early", 100));
  WaitForStarts(3);
  EXPECT_EQ(manager_->Get(early->id)->state, JobState::kQueued);
  fake_->Emit(early->id, SessionCreated{0});
  EXPECT_EQ(manager_->Get(early->id)->state, JobState::kRunning);
  fake_->End(early->id, FakeExecutor::Completed(100));
  // A queued job with a run is stopped through its executor, not dropped from the queue.
  ASSERT_EQ(manager_->Stop(stopping->id)->state, JobState::kStopping);
  EXPECT_EQ(fake_->stop_requests(), std::vector<std::string>{stopping->id});
  ASSERT_TRUE(store_->Flush().ok());

  // The daemon dies: the database as it was then (the shutdown below would end the runs).
  JobRecord p = store_->GetJob(pending->id).value().value();
  JobRecord s = store_->GetJob(stopping->id).value().value();
  EXPECT_EQ(p.slurm_job_id, 7);
  EXPECT_EQ(s.state, JobState::kStopping);
  p.state = JobState::kRunning;  // as if it had been running
  manager_.reset();
  store_->PutJob(p);
  store_->PutJob(s);
  ASSERT_TRUE(store_->Flush().ok());
  store_.reset();
  Reopen(/*slots=*/4, {}, /*cluster=*/true);
  WaitForStarts(2);
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(store_->GetJob(pending->id).value()->crash_count, 0);  // not a suspect
  EXPECT_EQ(manager_->Get(pending->id)->slurm.job_id, 7);
  EXPECT_EQ(WaitFor(stopping->id, {JobState::kStopping}).state, JobState::kStopping);
  EXPECT_EQ(fake_->stop_requests(), std::vector<std::string>{stopping->id});
  fake_->End(stopping->id, FakeExecutor::Stopped(50));
  EXPECT_EQ(manager_->Get(stopping->id)->state, JobState::kStopped);
}

// A reply means the change is in the database (read on the store's own connection, with no
// Flush): a kill -9 of the daemon right after a stop's 202 must not let the cluster job run on.
TEST_F(JobManagerExecutorTest, WhatARequestChangedIsInTheDatabaseWhenItReturns) {
  Reopen(/*slots=*/1, {}, /*cluster=*/true);
  auto job = Submit(SmallJob("durable", 100));
  ASSERT_EQ(store_->GetJob(job->id).value().value().state, JobState::kQueued);
  WaitForStarts(1);
  fake_->Emit(job->id, SessionCreated{0});
  ASSERT_EQ(manager_->Get(job->id)->state, JobState::kRunning);
  ASSERT_EQ(manager_->Stop(job->id)->state, JobState::kStopping);
  EXPECT_EQ(store_->GetJob(job->id).value().value().state, JobState::kStopping);
  fake_->End(job->id, FakeExecutor::Stopped(40));
  ASSERT_EQ(manager_->Resume(job->id, 200)->state, JobState::kQueued);
  const JobRecord resumed = store_->GetJob(job->id).value().value();
  EXPECT_EQ(resumed.state, JobState::kQueued);
  EXPECT_EQ(resumed.max_steps, 200);
}

}  // namespace
}  // namespace trainingd::daemon
