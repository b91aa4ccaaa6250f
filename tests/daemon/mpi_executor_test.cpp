// MpiExecutor's supervision with a fake mpirun: a shell script that plays the ranks' part (the
// run report on stdout, mpirun's messages on stderr, its exit code), so restarts, the stall
// watchdog, max_restarts and a stop are tested in a second each, without MPI. The real thing,
// over HTTP: tests/e2e/distributed_daemon_test.py.
#include "trainingd/daemon/executors/mpi_executor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fake_executor.h"
#include "job_manager_fixture.h"  // SmallJob
#include "run_recorder.h"

namespace trainingd::daemon {
namespace {
namespace fs = std::filesystem;
using engine::JobResult;

class MpiExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            ("mx_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A fake mpirun: `body` runs in sh with $JOB the job directory (the value after
  // --checkpoint-dir) and $N the attempt (counted in $JOB/attempts).
  std::string FakeMpirun(const std::string& body) {
    const std::string path = dir_ + "/fake-mpirun.sh";
    std::ofstream(path) << "#!/bin/sh\n"
                           "while [ $# -gt 0 ]; do\n"
                           "  [ \"$1\" = --checkpoint-dir ] && JOB=$2\n"
                           "  shift\n"
                           "done\n"
                           "N=$(( $(cat \"$JOB/attempts\" 2>/dev/null || echo 0) + 1 ))\n"
                           "echo $N > \"$JOB/attempts\"\n"
                        << body;
    chmod(path.c_str(), 0755);
    return path;
  }
  MpiExecutorOptions Options(const std::string& mpirun) {
    MpiExecutorOptions o;
    o.slots = 1;
    o.mpirun = mpirun;
    o.rank_program = "/opt/trainingd/bin/trainingd-mpi";
    o.initial_backoff_secs = 0.05;
    return o;
  }
  RunRequest Request(const std::string& id, int max_restarts = 2, double stall = 60) {
    RunRequest r{id, SmallJob(id, 100), dir_ + "/" + id, {}};
    r.spec.distributed.workers = 2;
    r.spec.distributed.max_restarts = max_restarts;
    r.spec.distributed.stall_timeout_secs = stall;
    fs::create_directories(r.job_dir);
    return r;
  }
  template <typename T>
  std::vector<T> All(const std::string& id) {
    std::vector<T> out;
    for (const RunEvent& e : recorder_.Events(id)) {
      if (const T* t = std::get_if<T>(&e)) out.push_back(*t);
    }
    return out;
  }
  std::string dir_;
  Recorder recorder_;
};

TEST_F(MpiExecutorTest, TheCommandLineIsLoopbackUnlessTheDaemonHasAHostfile) {
  MpiExecutor executor(Options("mpirun"));
  RunRequest r = Request("a");
  r.spec.distributed.workers = 3;
  const std::vector<std::string> local = executor.CommandLine(r);
  const auto has = [](const std::vector<std::string>& v, std::vector<std::string> part) {
    return std::search(v.begin(), v.end(), part.begin(), part.end()) != v.end();
  };
  EXPECT_EQ(local.front(), "mpirun");
  EXPECT_TRUE(has(local, {"--mca", "btl_tcp_if_include", "lo"}));
  EXPECT_TRUE(has(local, {"--mca", "oob_tcp_if_include", "lo"}));
  EXPECT_TRUE(has(local, {"--bind-to", "none"}));
  // Ranks yield their cores while they wait, whoever else shares the host.
  EXPECT_TRUE(has(local, {"--mca", "mpi_yield_when_idle", "1"}));
  EXPECT_TRUE(has(local, {"-np", "3", "/opt/trainingd/bin/trainingd-mpi", "run",
                          r.job_dir + "/spec.json", "--checkpoint-dir", r.job_dir}));
  EXPECT_TRUE(has(local, {"--report", "stdout"}));
  EXPECT_FALSE(has(local, {"--datasets-dir"}));
  // Uploaded datasets: the ranks read them where the daemon keeps them.
  MpiExecutorOptions with_uploads = Options("mpirun");
  with_uploads.datasets_dir = "/var/lib/trainingd/datasets";
  EXPECT_TRUE(has(MpiExecutor(with_uploads).CommandLine(r),
                  {"--datasets-dir", "/var/lib/trainingd/datasets"}));
  // A spec's hosts are not the daemon's to use (admission refuses them): still loopback.
  r.spec.distributed.hosts = {"node1:2", "node2"};
  const std::vector<std::string> spec_hosts = executor.CommandLine(r);
  EXPECT_FALSE(has(spec_hosts, {"--host"}));
  EXPECT_TRUE(has(spec_hosts, {"--mca", "btl_tcp_if_include", "lo"}));
  // The daemon's hostfile and mpirun options: its hosts, not loopback.
  MpiExecutorOptions o = Options("mpirun");
  o.hostfile = "/etc/trainingd/hosts";
  o.mpirun_options = {"--mca", "plm_rsh_agent", "/usr/local/bin/agent"};
  MpiExecutor on_hosts(o);
  const std::vector<std::string> hosts = on_hosts.CommandLine(r);
  EXPECT_TRUE(has(hosts, {"--hostfile", "/etc/trainingd/hosts"}));
  EXPECT_TRUE(has(hosts, {"--mca", "plm_rsh_agent", "/usr/local/bin/agent", "-np", "3"}));
  EXPECT_FALSE(has(hosts, {"btl_tcp_if_include", "lo"}));
}

TEST_F(MpiExecutorTest, ADeadRankRestartsTheJobFromItsCheckpoint) {
  MpiExecutor executor(Options(FakeMpirun(R"(
if [ $N = 1 ]; then
  echo '{"event":"session","global_step":0}'
  echo '{"event":"scalar","tag":"loss","step":1,"value":2.3,"wall_time":1}'
  echo 'mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).' >&2
  exit 137
fi
echo '{"event":"session","global_step":40}'
echo '{"event":"progress","global_step":41,"ranks":[{"compute_ms":2,"allreduce_ms":1},{"compute_ms":2.5,"allreduce_ms":0.5}]}'
echo '{"event":"end","outcome":"completed","global_step":100,"reason":"reached max_steps 100","final_values":{}}'
)")));
  ASSERT_TRUE(executor.Start(Request("a"), recorder_).ok());
  ASSERT_TRUE(recorder_.WaitForEnd("a"));
  const RunEnded& end = recorder_.End("a");
  ASSERT_TRUE(end.result.ok()) << end.result.status().ToString();
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kCompleted);
  EXPECT_EQ(end.result->global_step, 100);
  const auto started = All<engine::AttemptStarted>("a");
  const auto ended = All<engine::AttemptEnded>("a");
  ASSERT_EQ(started.size(), 2u);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(started[1].attempt, 2);
  EXPECT_EQ(started[1].max_attempts, 3);
  EXPECT_EQ(started[1].workers, 2);
  EXPECT_EQ(ended[0].reason,
            "mpirun exited with code 137 (mpirun noticed that process rank 1 with PID 0 on node "
            "vm exited on signal 9 (Killed).)");
  EXPECT_EQ(ended[1].reason, "completed");
  const auto sessions = All<SessionCreated>("a");
  ASSERT_EQ(sessions.size(), 2u);
  EXPECT_EQ(sessions[1].global_step, 40);
  const auto timings = All<engine::RankTimings>("a");
  ASSERT_EQ(timings.size(), 1u);
  ASSERT_EQ(timings[0].ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(timings[0].ranks[1].compute_seconds, 0.0025);
  // mpirun's own message went to the job's log.
  bool logged = false;
  for (const LogWritten& l : All<LogWritten>("a")) {
    logged = logged || l.text.find("mpirun noticed") != std::string::npos;
  }
  EXPECT_TRUE(logged);
}

TEST_F(MpiExecutorTest, WhenRestartsRunOutTheJobFailsNamingTheAttempts) {
  MpiExecutor executor(Options(FakeMpirun("echo 'boom' >&2\nexit 1\n")));
  ASSERT_TRUE(executor.Start(Request("a", /*max_restarts=*/1), recorder_).ok());
  ASSERT_TRUE(recorder_.WaitForEnd("a"));
  const RunEnded& end = recorder_.End("a");
  ASSERT_TRUE(end.result.ok());
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kFailed);
  EXPECT_EQ(end.result->reason,
            "failed after 2 attempts (distributed.max_restarts 1); the last: mpirun exited with "
            "code 1 (boom)");
  EXPECT_EQ(All<engine::AttemptStarted>("a").size(), 2u);
}

TEST_F(MpiExecutorTest, NoStepForTheStallTimeoutKillsTheAttempt) {
  MpiExecutor executor(Options(FakeMpirun(R"(
echo '{"event":"session","global_step":0}'
exec sleep 100
)")));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(executor.Start(Request("a", /*max_restarts=*/0, /*stall=*/1), recorder_).ok());
  ASSERT_TRUE(recorder_.WaitForEnd("a"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const RunEnded& end = recorder_.End("a");
  ASSERT_TRUE(end.result.ok());
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kFailed);
  EXPECT_NE(end.result->reason.find("the last: no step for 1 s"), std::string::npos)
      << end.result->reason;
}

TEST_F(MpiExecutorTest, AStopReachesRankZeroOnStdinAndItsEndIsReported) {
  MpiExecutor executor(Options(FakeMpirun(R"(
echo '{"event":"session","global_step":0}'
read line
[ "$line" = stop ] || exit 3
echo '{"event":"end","outcome":"stopped","global_step":7,"reason":"stop requested","final_values":{}}'
)")));
  ASSERT_TRUE(executor.Start(Request("a"), recorder_).ok());
  ASSERT_TRUE(recorder_.WaitFor(
      "a", [](const RunEvent& e) { return std::holds_alternative<SessionCreated>(e); }));
  executor.RequestStop("a");
  ASSERT_TRUE(recorder_.WaitForEnd("a"));
  const RunEnded& end = recorder_.End("a");
  ASSERT_TRUE(end.result.ok());
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kStopped);
  EXPECT_EQ(end.result->global_step, 7);
  EXPECT_EQ(All<engine::AttemptEnded>("a").back().reason, "stopped");
}

// A distributed run's ranks load the dataset in processes of their own: the local executor's idle
// datasets are let go before it starts, and left alone for a local run (which may reuse them).
TEST_F(MpiExecutorTest, RoutingFreesTheLocalIdleDatasetsBeforeADistributedRun) {
  auto local = std::make_unique<FakeExecutor>(2);
  auto distributed = std::make_unique<FakeExecutor>(2);
  FakeExecutor& l = *local;
  FakeExecutor& d = *distributed;
  RoutingExecutor routing(std::move(local), std::move(distributed));

  RunRequest one{"one", SmallJob("one", 100), dir_ + "/one", {}};
  ASSERT_TRUE(routing.Start(one, recorder_).ok());
  EXPECT_EQ(l.started().size(), 1u);
  EXPECT_EQ(l.free_idle_calls(), 0);

  ASSERT_TRUE(routing.Start(Request("two"), recorder_).ok());
  EXPECT_EQ(d.started().size(), 1u);
  EXPECT_EQ(l.free_idle_calls(), 1);
  EXPECT_EQ(d.free_idle_calls(), 0);
  routing.Shutdown();
}

}  // namespace
}  // namespace trainingd::daemon
