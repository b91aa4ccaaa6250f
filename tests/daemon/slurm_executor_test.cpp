// SlurmExecutor with a fake Slurm: sbatch, squeue and scancel are shell scripts over files in a
// directory, and the test plays the job's rank 0 by appending run report lines to its progress
// file. So submission, tracking, the mapping of Slurm's states, a stop, a requeue, an outage of
// the controller and reattaching after a restart are tested in seconds, without Slurm. The real
// thing, over HTTP: tests/e2e/slurm_test.py.
#include "trainingd/daemon/executors/slurm_executor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "job_manager_fixture.h"  // SmallJob
#include "run_recorder.h"
#include "trainingd/api/run_report.h"
#include "trainingd/engine/io/checkpoint_manager.h"

namespace trainingd::daemon {
namespace {
namespace fs = std::filesystem;
namespace eng = trainingd::engine;
using engine::JobResult;

TEST(SqueueJsonTest, ReadsTheJobsAndTheirStates) {
  auto jobs = ParseSqueueJson(R"({"meta": {}, "errors": [], "jobs": [
    {"job_id": 10, "name": "trainingd-a", "job_state": "PENDING", "state_reason": "Priority",
     "nodes": "", "restart_cnt": 0, "tasks": 2, "exit_code": 0, "cpus_per_task": null},
    {"job_id": 9, "name": "x", "job_state": "FAILED", "state_reason": "NonZeroExitCode",
     "nodes": "n[1-2]", "restart_cnt": 1, "tasks": 1, "exit_code": 768}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].job_id, 10);
  EXPECT_EQ((*jobs)[0].name, "trainingd-a");
  EXPECT_EQ((*jobs)[0].state, "PENDING");
  EXPECT_EQ((*jobs)[0].reason, "Priority");
  EXPECT_EQ((*jobs)[0].tasks, 2);
  EXPECT_EQ((*jobs)[1].nodes, "n[1-2]");
  EXPECT_EQ((*jobs)[1].restarts, 1);
  EXPECT_EQ((*jobs)[1].exit_code, 768);
}

TEST(SqueueJsonTest, AnErrorIsUnavailableNotAnEmptyQueue) {
  // What squeue --json prints, with exit code 0, while the controller is down.
  auto down = ParseSqueueJson(R"({"errors": [{"description": "Failed while looking for jobs",
    "error_number": -1, "error": "Unspecified error", "source": "slurm_load_jobs"}], "jobs": []})");
  EXPECT_EQ(down.status().code(), eng::StatusCode::kUnavailable);
  EXPECT_NE(down.status().message().find("slurm_load_jobs"), std::string::npos);
  EXPECT_EQ(ParseSqueueJson("squeue: error: ...").status().code(),
            eng::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSqueueJson("{}").status().code(), eng::StatusCode::kInvalidArgument);
}

TEST(SqueueJsonTest, FinalStates) {
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                        "PREEMPTED", "BOOT_FAIL", "DEADLINE"}) {
    EXPECT_TRUE(IsFinalSlurmState(s)) << s;
  }
  for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}) {
    EXPECT_FALSE(IsFinalSlurmState(s)) << s;
  }
}

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            ("sx_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/slurm");
    // sbatch: the next id, the job directory kept by id, RUNNING unless $S/hold exists.
    Script("sbatch",
           "N=$(( $(cat \"$S/last\" 2>/dev/null || echo 0) + 1 )); echo $N > \"$S/last\"\n"
           "for a; do SCRIPT=$a; done\n"
           "echo \"$*\" >> \"$S/sbatch.log\"\n"
           "dirname \"$SCRIPT\" > \"$S/dir.$N\"\n"
           "sed -n 's/^#SBATCH --job-name=//p' \"$SCRIPT\" > \"$S/name.$N\"\n"
           "if [ -e \"$S/hold\" ]; then echo PENDING > \"$S/state.$N\"; "
           "else echo RUNNING > \"$S/state.$N\"; fi\n"
           "echo $N\n");
    // squeue --json: every job from its files (state, and optionally restarts and exit).
    Script("squeue",
           "if [ -e \"$S/down\" ]; then echo '{\"errors\": [{\"description\": \"Failed while "
           "looking for jobs\", \"source\": \"slurm_load_jobs\"}], \"jobs\": []}'; exit 0; fi\n"
           "printf '{\"errors\": [], \"jobs\": ['\n"
           "sep=\n"
           "for f in \"$S\"/state.*; do\n"
           "  [ -e \"$f\" ] || continue\n"
           "  N=${f##*.}\n"
           "  printf '%s{\"job_id\": %s, \"name\": \"%s\", \"job_state\": \"%s\", "
           "\"state_reason\": \"None\", \"nodes\": \"n1\", \"restart_cnt\": %s, \"tasks\": 1, "
           "\"exit_code\": %s}' \"$sep\" $N $(cat \"$S/name.$N\") $(cat \"$f\") $(cat "
           "\"$S/restarts.$N\" 2>/dev/null "
           "|| echo 0) $(cat \"$S/exit.$N\" 2>/dev/null || echo 0)\n"
           "  sep=,\n"
           "done\n"
           "echo ']}'\n");
    // scancel: logged. A TERM makes the job stop as trainingd run would: a final report line,
    // then exit 143 (FAILED); a plain scancel cancels it.
    Script("scancel",
           "echo \"$*\" >> \"$S/scancel.log\"\n"
           "for a; do N=$a; done\n"
           "case \"$*\" in\n"
           "  *--signal=TERM*) echo '" +
               api::FormatRunReport(eng::RunEnded{Stopped(7)})
                   .substr(0, api::FormatRunReport(eng::RunEnded{Stopped(7)}).size() - 1) +
               "' >> \"$(cat \"$S/dir.$N\")/progress.jsonl\"\n"
               "    echo 36608 > \"$S/exit.$N\"; echo FAILED > \"$S/state.$N\" ;;\n"
               "  *) echo CANCELLED > \"$S/state.$N\" ;;\n"
               "esac\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static JobResult Stopped(int64_t step) {
    JobResult r;
    r.outcome = JobResult::Outcome::kStopped;
    r.stop_cause = JobResult::StopCause::kRequest;
    r.global_step = step;
    r.reason = "stop requested";
    return r;
  }
  void Script(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\nS=" << dir_ << "/slurm\n" << body;
    chmod(path.c_str(), 0755);
  }
  SlurmOptions Options() {
    SlurmOptions o;
    o.job_root = dir_ + "/jobs";
    o.sbatch = dir_ + "/sbatch";
    o.squeue = dir_ + "/squeue";
    o.scancel = dir_ + "/scancel";
    o.trainingd_path = "/opt/trainingd/bin/trainingd";
    o.data_root = "/data";
    o.poll_secs = 0.05;
    o.stop_grace_secs = 30;
    return o;
  }
  RunRequest Request(const std::string& id) {
    RunRequest r{id, SmallJob(id, 100), dir_ + "/jobs/" + id, {}};
    r.memory_bytes = int64_t{300} << 20;
    fs::create_directories(r.job_dir);
    return r;
  }
  // Slurm's side of job `n`.
  void SetState(int n, const std::string& state, int restarts = 0) {
    std::ofstream(dir_ + "/slurm/restarts." + std::to_string(n)) << restarts << "\n";
    std::ofstream(dir_ + "/slurm/state." + std::to_string(n)) << state << "\n";
  }
  // Rank 0's side: a report line appended to the job's progress file.
  void Report(const RunRequest& r, const eng::RunEvent& event) {
    std::ofstream(r.job_dir + "/progress.jsonl", std::ios::app) << api::FormatRunReport(event);
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_ + "/slurm/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int Lines(const std::string& name) {
    const std::string text = Read(name);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  template <typename T>
  std::vector<T> All(const std::string& id) {
    std::vector<T> out;
    for (const RunEvent& e : recorder_.Events(id)) {
      if (const T* t = std::get_if<T>(&e)) out.push_back(*t);
    }
    return out;
  }
  // Submits `r` and waits until Slurm runs it.
  bool StartRunning(SlurmExecutor& executor, const RunRequest& r) {
    return executor.Start(r, recorder_).ok() && WaitForState(r.job_id, "RUNNING");
  }
  bool WaitForState(const std::string& id, const std::string& state) {
    return recorder_.WaitFor(id, [&](const RunEvent& e) {
      const auto* s = std::get_if<eng::SchedulerStatus>(&e);
      return s && s->state == state;
    });
  }
  bool WaitForScalar(const std::string& id, int64_t step) {
    return recorder_.WaitFor(id, [&](const RunEvent& e) {
      const auto* s = std::get_if<eng::ScalarRecorded>(&e);
      return s && s->step == step;
    });
  }
  std::string dir_;
  Recorder recorder_;
};

TEST_F(SlurmExecutorTest, TheBatchScriptRunsTheJobWithItsResources) {
  SlurmOptions o = Options();
  o.partition = "gpu";
  o.account = "ml";
  o.time_limit_minutes = 90;
  o.cpus_per_task = 2;
  o.trainingd_path = "/opt/it's/trainingd";
  SlurmExecutor executor(o);
  RunRequest r = Request("j1");
  r.spec.distributed.workers = 3;
  const std::string script = executor.BatchScript(r);
  for (const std::string& line : std::vector<std::string>{
           "#SBATCH --job-name=trainingd-j1\n", "#SBATCH --ntasks=3\n",
           "#SBATCH --cpus-per-task=2\n", "#SBATCH --mem-per-cpu=150M\n", "#SBATCH --time=90\n",
           "#SBATCH --partition=gpu\n", "#SBATCH --account=ml\n", "#SBATCH --requeue\n",
           "#SBATCH --chdir=" + r.job_dir + "\n", "unset TRAININGD_TOKEN\n",
           "exec '/opt/it'\\''s/trainingd' run '" + r.job_dir + "/spec.json' --checkpoint-dir '" +
               r.job_dir + "' --data-root '/data' --threads 2 --report '" + r.job_dir +
               "/progress.jsonl' --workers 3\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\nnot in\n" << script;
  }
  // Uploaded datasets live on the shared job root; the nodes are told where.
  SlurmOptions shared = o;
  shared.datasets_dir = "/shared/jobs/datasets";
  EXPECT_NE(SlurmExecutor(shared).BatchScript(r).find(
                " --data-root '/data' --datasets-dir '/shared/jobs/datasets' --threads 2 "),
            std::string::npos);
  // The spec's resources come first: its CPUs, and its own time limit with Slurm's margin of
  // 2 minutes (the run stops itself at 3000 s; Slurm would end it at 52 minutes).
  r.spec.resources.cpus_per_worker = 4;
  r.spec.resources.time_limit_secs = 3000;
  const std::string own = executor.BatchScript(r);
  for (const std::string& line :
       std::vector<std::string>{"#SBATCH --cpus-per-task=4\n", "#SBATCH --mem-per-cpu=75M\n",
                                "#SBATCH --time=52\n", " --threads 4 "}) {
    EXPECT_NE(own.find(line), std::string::npos) << line << "\nnot in\n" << own;
  }
}

TEST_F(SlurmExecutorTest, ARunIsSubmittedFollowedAndEndsAsItsReportSays) {
  SlurmExecutor executor(Options());
  RunRequest r = Request("a");
  std::ofstream(dir_ + "/slurm/hold");
  ASSERT_TRUE(executor.Start(r, recorder_).ok());
  ASSERT_TRUE(WaitForState("a", "PENDING"));
  EXPECT_EQ(Lines("sbatch.log"), 1);
  EXPECT_NE(Read("sbatch.log").find("--parsable " + r.job_dir + "/slurm.sh"), std::string::npos);
  EXPECT_TRUE(fs::exists(r.job_dir + "/spec.json"));
  EXPECT_TRUE(All<eng::AttemptStarted>("a").empty());  // not running yet

  SetState(1, "RUNNING");
  // A checkpoint in the directory says nothing of where the attempt started: the run's own
  // report does (trainingd run under Slurm writes its attempt and its session's start).
  std::ofstream(r.job_dir + "/model.ckpt-700") << "x";
  std::ofstream(r.job_dir + "/checkpoint") << "?";  // unreadable: rebuilt from the files
  ASSERT_EQ(eng::LatestCheckpointStep(r.job_dir), 700);
  Report(r, eng::AttemptStarted{1, 0, 1, 0, 99});
  Report(r, eng::SessionCreated{0});
  Report(r, eng::ScalarRecorded{"loss", 1, 2.5, 100});
  Report(r, eng::LogWritten{eng::LogSeverity::kInfo, "global_step = 1"});
  ASSERT_TRUE(WaitForScalar("a", 1));
  ASSERT_TRUE(WaitForState("a", "RUNNING"));
  ASSERT_EQ(All<eng::AttemptStarted>("a").size(), 1u);
  EXPECT_EQ(All<eng::AttemptStarted>("a")[0].from_step, 0);

  Report(r, eng::ScalarRecorded{"loss", 100, 0.5, 101});
  JobResult done;
  done.global_step = 100;
  done.reason = "reached max_steps 100";
  Report(r, eng::RunEnded{done});
  SetState(1, "COMPLETED");
  ASSERT_TRUE(recorder_.WaitForEnd("a"));
  const RunEnded& end = recorder_.End("a");
  ASSERT_TRUE(end.result.ok()) << end.result.status().message();
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kCompleted);
  EXPECT_EQ(end.result->reason, "reached max_steps 100");
  EXPECT_EQ(All<eng::ScalarRecorded>("a").size(), 2u);
  EXPECT_EQ(All<eng::AttemptEnded>("a").size(), 1u);
}

TEST_F(SlurmExecutorTest, AStopSendsTermThenTheRunEndsStopped) {
  SlurmExecutor executor(Options());
  RunRequest r = Request("s");
  ASSERT_TRUE(executor.Start(r, recorder_).ok());
  ASSERT_TRUE(WaitForState("s", "RUNNING"));
  executor.RequestStop("s");
  ASSERT_TRUE(recorder_.WaitForEnd("s"));
  EXPECT_EQ(Read("scancel.log"), "--batch --signal=TERM 1\n");
  const RunEnded& end = recorder_.End("s");
  ASSERT_TRUE(end.result.ok()) << end.result.status().message();
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kStopped);
  EXPECT_EQ(end.result->global_step, 7);
}

TEST_F(SlurmExecutorTest, AStopCancelsAPendingJob) {
  SlurmExecutor executor(Options());
  RunRequest r = Request("p");
  std::ofstream(dir_ + "/slurm/hold");
  ASSERT_TRUE(executor.Start(r, recorder_).ok());
  ASSERT_TRUE(WaitForState("p", "PENDING"));
  executor.RequestStop("p");
  ASSERT_TRUE(recorder_.WaitForEnd("p"));
  EXPECT_EQ(Read("scancel.log"), "1\n");
  const RunEnded& end = recorder_.End("p");
  ASSERT_TRUE(end.result.ok()) << end.result.status().message();
  EXPECT_EQ(end.result->outcome, JobResult::Outcome::kStopped);
  EXPECT_EQ(end.result->reason, "stop requested");
}

TEST_F(SlurmExecutorTest, WithoutAReportSlurmsStateSaysHowItEnded) {
  SlurmExecutor executor(Options());
  RunRequest c = Request("c"), t = Request("t");
  ASSERT_TRUE(StartRunning(executor, c));
  ASSERT_TRUE(StartRunning(executor, t));
  SetState(1, "CANCELLED");  // scancel by hand
  SetState(2, "TIMEOUT");
  ASSERT_TRUE(recorder_.WaitForEnd("c"));
  ASSERT_TRUE(recorder_.WaitForEnd("t"));
  ASSERT_TRUE(recorder_.End("c").result.ok());
  EXPECT_EQ(recorder_.End("c").result->outcome, JobResult::Outcome::kStopped);
  EXPECT_NE(recorder_.End("c").result->reason.find("cancelled in Slurm"), std::string::npos);
  ASSERT_TRUE(recorder_.End("t").result.ok());
  EXPECT_EQ(recorder_.End("t").result->outcome, JobResult::Outcome::kFailed);
  EXPECT_NE(recorder_.End("t").result->reason.find("Slurm job 2 ended TIMEOUT"), std::string::npos)
      << recorder_.End("t").result->reason;
}

// A run whose stop flag Slurm raised (scancel --signal=TERM by hand) reports "stop requested";
// the daemon did not ask, so the job says it was cancelled in Slurm. A run that stopped itself
// at its time limit keeps its own reason.
TEST_F(SlurmExecutorTest, AStopTheDaemonDidNotAskForIsSlurmsAndATimeLimitKeepsItsReason) {
  SlurmExecutor executor(Options());
  RunRequest c = Request("c"), t = Request("t");
  ASSERT_TRUE(StartRunning(executor, c));
  ASSERT_TRUE(StartRunning(executor, t));
  Report(c, eng::RunEnded{Stopped(12)});
  JobResult out_of_time = Stopped(30);
  out_of_time.stop_cause = JobResult::StopCause::kTimeLimit;
  out_of_time.reason = "time limit of 60 s reached (resources.time_limit_secs) at global step 30";
  Report(t, eng::RunEnded{out_of_time});
  SetState(1, "CANCELLED");
  SetState(2, "COMPLETED");
  ASSERT_TRUE(recorder_.WaitForEnd("c"));
  ASSERT_TRUE(recorder_.WaitForEnd("t"));
  const auto& cancelled = recorder_.End("c").result;
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->outcome, JobResult::Outcome::kStopped);
  EXPECT_EQ(cancelled->reason.rfind("cancelled in Slurm (", 0), 0u) << cancelled->reason;
  EXPECT_NE(cancelled->reason.find("stopped at global step 12"), std::string::npos)
      << cancelled->reason;
  const auto& timed_out = recorder_.End("t").result;
  ASSERT_TRUE(timed_out.ok());
  EXPECT_EQ(timed_out->outcome, JobResult::Outcome::kStopped);
  EXPECT_EQ(timed_out->reason, out_of_time.reason);
}

TEST_F(SlurmExecutorTest, ARequeueStartsANewAttemptAndTheJobGoesOn) {
  SlurmExecutor executor(Options());
  RunRequest r = Request("q");
  ASSERT_TRUE(executor.Start(r, recorder_).ok());
  ASSERT_TRUE(WaitForState("q", "RUNNING"));
  Report(r, eng::SessionCreated{0});
  Report(r, eng::ScalarRecorded{"loss", 1, 2.5, 100});
  ASSERT_TRUE(WaitForScalar("q", 1));
  // A node fails: Slurm TERMs the script, whose run stops with a final checkpoint, and requeues.
  Report(r, eng::RunEnded{Stopped(40)});
  SetState(1, "PENDING", 1);
  ASSERT_TRUE(recorder_.WaitFor(
      "q", [](const RunEvent& e) { return std::holds_alternative<eng::AttemptEnded>(e); }));
  EXPECT_EQ(All<eng::AttemptEnded>("q")[0].reason, "requeued by Slurm");
  SetState(1, "RUNNING", 1);
  ASSERT_TRUE(recorder_.WaitFor("q", [](const RunEvent& e) {
    const auto* s = std::get_if<eng::SchedulerStatus>(&e);
    return s && s->state == "RUNNING" && s->restarts == 1;
  }));
  Report(r, eng::SessionCreated{40});
  Report(r, eng::ScalarRecorded{"loss", 41, 1.5, 200});
  ASSERT_TRUE(WaitForScalar("q", 41));
  JobResult done;
  done.global_step = 100;
  done.reason = "reached max_steps 100";
  Report(r, eng::RunEnded{done});
  SetState(1, "COMPLETED", 1);
  ASSERT_TRUE(recorder_.WaitForEnd("q"));
  ASSERT_TRUE(recorder_.End("q").result.ok());
  EXPECT_EQ(recorder_.End("q").result->outcome, JobResult::Outcome::kCompleted);
  EXPECT_EQ(All<eng::AttemptStarted>("q").size(), 2u);
  EXPECT_EQ(Lines("sbatch.log"), 1);
}

TEST_F(SlurmExecutorTest, AfterARestartTheSameSlurmJobIsFollowedFromWhereItWasLeft) {
  RunRequest r = Request("r");
  {
    SlurmExecutor executor(Options());
    ASSERT_TRUE(executor.Start(r, recorder_).ok());
    ASSERT_TRUE(WaitForState("r", "RUNNING"));
    Report(r, eng::SessionCreated{0});
    Report(r, eng::ScalarRecorded{"loss", 1, 2.5, 100});
    ASSERT_TRUE(WaitForScalar("r", 1));
    executor.Shutdown();  // the daemon goes down; the Slurm job does not
  }
  const RunEnded& detached = recorder_.End("r");
  ASSERT_TRUE(detached.result.ok());
  EXPECT_EQ(detached.result->outcome, JobResult::Outcome::kStopped);
  EXPECT_NE(detached.result->reason.find("goes on"), std::string::npos);
  // What the run writes while the daemon is down is picked up; nothing is reported twice.
  Report(r, eng::ScalarRecorded{"loss", 51, 1.5, 150});
  Recorder second;
  SlurmExecutor executor(Options());
  ASSERT_TRUE(executor.Start(r, second).ok());
  ASSERT_TRUE(second.WaitFor("r", [](const RunEvent& e) {
    const auto* s = std::get_if<eng::ScalarRecorded>(&e);
    return s && s->step == 51;
  }));
  JobResult done;
  done.global_step = 100;
  Report(r, eng::RunEnded{done});
  SetState(1, "COMPLETED");
  ASSERT_TRUE(second.WaitForEnd("r"));
  EXPECT_EQ(Lines("sbatch.log"), 1);  // never submitted twice
  int scalars = 0;
  for (const RunEvent& e : second.Events("r"))
    scalars += std::holds_alternative<eng::ScalarRecorded>(e);
  EXPECT_EQ(scalars, 1);
  ASSERT_TRUE(second.End("r").result.ok());
  EXPECT_EQ(second.End("r").result->outcome, JobResult::Outcome::kCompleted);
}

TEST_F(SlurmExecutorTest, ADaemonThatDiedRightAfterSbatchFindsItsJobByName) {
  RunRequest r = Request("n");
  // Slurm knows the job's earlier run (1, completed) and the submission the daemon did not
  // live to record (2); another job of that name is not the job's (3 is someone else's).
  for (const auto& [id, name, state] :
       {std::tuple{1, "trainingd-n", "COMPLETED"}, std::tuple{2, "trainingd-n", "RUNNING"},
        std::tuple{3, "other", "RUNNING"}}) {
    std::ofstream(dir_ + "/slurm/name." + std::to_string(id)) << name << "\n";
    std::ofstream(dir_ + "/slurm/dir." + std::to_string(id)) << r.job_dir << "\n";
    SetState(id, state);
  }
  std::ofstream(dir_ + "/slurm/last") << "3\n";
  std::ofstream(r.job_dir + "/slurm.json")
      << R"({"slurm_job_id": 0, "submitting": true, "offset": 0, "ended": false,)"
      << R"( "attempt_restarts": -1, "previous_job_id": 1})";
  SlurmExecutor executor(Options());
  ASSERT_TRUE(executor.Start(r, recorder_).ok());
  ASSERT_TRUE(recorder_.WaitFor("n", [](const RunEvent& e) {
    const auto* s = std::get_if<eng::SchedulerStatus>(&e);
    return s && s->job_id == 2 && s->state == "RUNNING";
  }));
  SetState(2, "CANCELLED");
  ASSERT_TRUE(recorder_.WaitForEnd("n"));
  EXPECT_EQ(Lines("sbatch.log"), 0);  // not submitted again

  // Died before sbatch: only the earlier run has the name, and it is not followed again.
  std::ofstream(r.job_dir + "/slurm.json")
      << R"({"slurm_job_id": 0, "submitting": true, "offset": 0, "ended": false,)"
      << R"( "attempt_restarts": -1, "previous_job_id": 2})";
  Recorder second;
  ASSERT_TRUE(executor.Start(r, second).ok());
  ASSERT_TRUE(second.WaitFor("n", [](const RunEvent& e) {
    const auto* s = std::get_if<eng::SchedulerStatus>(&e);
    return s && s->job_id == 4;
  }));
  EXPECT_EQ(Lines("sbatch.log"), 1);
  SetState(4, "CANCELLED");
  ASSERT_TRUE(second.WaitForEnd("n"));
}

TEST_F(SlurmExecutorTest, WhileTheControllerIsDownTheRunWaits) {
  SlurmExecutor executor(Options());
  RunRequest r = Request("d");
  ASSERT_TRUE(executor.Start(r, recorder_).ok());
  ASSERT_TRUE(WaitForState("d", "RUNNING"));
  std::ofstream(dir_ + "/slurm/down");
  ASSERT_TRUE(recorder_.WaitFor("d", [](const RunEvent& e) {
    const auto* l = std::get_if<eng::LogWritten>(&e);
    return l && l->text.find("Slurm does not answer") != std::string::npos;
  }));
  EXPECT_TRUE(All<RunEnded>("d").empty());  // an empty answer is not "the job is gone"
  fs::remove(dir_ + "/slurm/down");
  SetState(1, "CANCELLED");
  ASSERT_TRUE(recorder_.WaitForEnd("d"));
  EXPECT_EQ(recorder_.End("d").result->outcome, JobResult::Outcome::kStopped);
}

TEST_F(SlurmExecutorTest, CheckSaysWhatIsWrong) {
  EXPECT_TRUE(SlurmExecutor::Check(Options()).ok());
  std::ofstream(dir_ + "/slurm/down");
  const eng::Status down = SlurmExecutor::Check(Options());
  EXPECT_FALSE(down.ok());
  EXPECT_NE(down.message().find("does not answer"), std::string::npos) << down.message();
  SlurmOptions missing = Options();
  missing.squeue = dir_ + "/no-such-squeue";
  const eng::Status none = SlurmExecutor::Check(missing);
  EXPECT_NE(none.message().find("install slurm-client"), std::string::npos) << none.message();
}

}  // namespace
}  // namespace trainingd::daemon
