// SlurmExecutor: runs each job as a Slurm batch job (docs/slurm.md). The same Executor calls as
// the LocalExecutor; the run's events come from a progress file that the job's rank 0 appends to
// in the job's directory, on storage the daemon and the nodes share.
//
// A run: the job's spec and a batch script (slurm.sh, which execs `trainingd run ... --report
// <job_dir>/progress.jsonl`, with --workers N for a data-parallel job: mpirun inside the
// allocation) are written into its directory and submitted with `sbatch --parsable` (argv, no
// shell). A thread per run then follows the progress file from where it last read, and Slurm's
// view of the job from `squeue --json` (one call for all runs every poll_secs, shared):
// - PENDING is reported as a SchedulerStatus (the manager shows the job queued, with Slurm's
//   reason); RUNNING starts an attempt; a requeue (node failure) ends it and the next run of the
//   batch script resumes from the job's latest checkpoint;
// - the run ends when Slurm says the job ended: as its rank 0 reported (completed, stopped,
//   failed), or, without such a report, as Slurm's state says (CANCELLED: stopped; FAILED,
//   NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, ...: failed with the state and reason);
// - a stop request is `scancel --batch --signal=TERM` (the job stops after its current step with
//   a final checkpoint), then `scancel` after stop_grace_secs; a pending job is cancelled at once.
// What the thread has read, and which Slurm job is the run's, is kept in <job_dir>/slurm.json, so
// a new Start for the same job after a daemon restart follows the same Slurm job again (never
// submitting twice) and picks up what the progress file gained meanwhile. Shutdown leaves the
// Slurm jobs running and only stops following them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainingd/daemon/executors/executor.h"
#include "trainingd/daemon/executors/run_table.h"
#include "trainingd/daemon/executors/slurm_options.h"

namespace trainingd::daemon {

// One job as `squeue --json` shows it (Slurm 22.05, OpenAPI v0.0.38).
struct SlurmJobStatus {
  int64_t job_id = 0;
  std::string name;
  std::string state;   // job_state: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, ...
  std::string reason;  // state_reason
  std::string nodes;
  int restarts = 0;  // restart_cnt
  int tasks = 0;
  int exit_code = 0;  // a raw wait status
};

// The jobs in `squeue --json`'s output. Its `errors` (the controller did not answer: squeue
// still exits 0) are Unavailable; output that is not squeue's JSON is InvalidArgument.
engine::Result<std::vector<SlurmJobStatus>> ParseSqueueJson(const std::string& text);

// True for the states a job does not leave (it ran, or will not run).
bool IsFinalSlurmState(const std::string& state);

class SlurmExecutor final : public Executor {
 public:
  explicit SlurmExecutor(SlurmOptions options);
  ~SlurmExecutor() override;  // Shutdown()

  // Checks that Slurm answers: `squeue --json` runs and reports no error. A message that says
  // what is wrong otherwise (not installed, no controller, SLURM_CONF).
  static engine::Status Check(const SlurmOptions& options);

  int slots() const override { return options_.max_jobs; }
  std::string Name(const engine::JobSpec&) const override { return "slurm"; }
  bool RunsOutliveDaemon() const override { return true; }
  engine::Status Start(RunRequest request, RunListener& listener) override;
  void RequestStop(const std::string& job_id) override;
  void Shutdown() override;

  // The batch script of a run (for tests and the docs).
  std::string BatchScript(const RunRequest& request) const;

 private:
  struct Run {
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;    // the job is to stop (guarded by mu)
    bool detach = false;  // the daemon shuts down: stop following (guarded by mu)
    std::thread thread;
  };
  void Follow(const RunRequest& request, RunListener& listener, Run& run);
  // The jobs Slurm knows, from a `squeue --json` at most poll_secs old and asked no earlier than
  // `not_before` (shared by the runs).
  engine::Result<std::map<int64_t, SlurmJobStatus>> Queue(double not_before);

  SlurmOptions options_;
  RunTable<Run> runs_;

  std::mutex queue_mu_;  // one squeue at a time; the others wait and share its answer
  double queue_time_ = -1e30;
  engine::Result<std::map<int64_t, SlurmJobStatus>> queue_ =
      engine::Status::Unavailable("not asked yet");
};

}  // namespace trainingd::daemon
