// MpiExecutor: runs a data-parallel job (distributed.workers > 1) as `mpirun` with N ranks of
// trainingd-mpi, and supervises it (docs/distributed.md#supervision). The same Executor calls as
// the LocalExecutor: rank 0 reports the run's events as JSON lines on its stdout
// (api/run_report.h), which mpirun forwards to a pipe this executor reads.
//
// Each run has a supervisor thread. It starts mpirun by argv (no shell) in its own process group,
// with PR_SET_PDEATHSIG so mpirun dies with the daemon (and each rank with its mpirun), and:
// - a stop request is a line on mpirun's stdin, which mpirun forwards to rank 0: it votes, all
//   ranks stop after the same step, and the chief writes the final checkpoint and reports the
//   end (SIGTERM to mpirun follows if no end comes within stall_timeout_secs);
// - a rank that dies ends mpirun (Open MPI 4.1 has no fault tolerance); no step for
//   stall_timeout_secs (a stopped or hung rank): the process group is killed. Either way the job
//   is relaunched from its latest checkpoint after a backoff (1 s, doubling, at most 30 s), up to
//   distributed.max_restarts times; then it fails with a reason naming the attempts.
// Each attempt's start and end are logged in the job's log ("attempt 2 of 4 ...").
//
// Constructing one makes the process ignore SIGPIPE (it writes to pipes of processes that may
// have exited).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trainingd/daemon/executors/executor.h"
#include "trainingd/daemon/executors/run_table.h"

namespace trainingd::daemon {

struct MpiExecutorOptions {
  int slots = 1;  // runs at once
  // trainingd-mpi; empty = beside this program (/proc/self/exe's directory).
  std::string rank_program;
  std::string mpirun = "mpirun";
  std::string data_root = "/usr/share/datasets";
  std::string datasets_dir;  // uploaded datasets
  // Compute threads per rank; 0 = the machine's cores shared by its ranks.
  int threads_per_rank = 0;
  // An Open MPI hostfile: the ranks run on its hosts (started through mpirun's launch agent,
  // ssh unless mpirun_options say otherwise), over TCP. "" = this machine, loopback only.
  std::string hostfile;
  // More mpirun arguments, before -np (e.g. "--mca", "btl_tcp_if_include", "10.0.0.0/24").
  std::vector<std::string> mpirun_options;
  double initial_backoff_secs = 1;
  double max_backoff_secs = 30;
};

class MpiExecutor final : public Executor {
 public:
  explicit MpiExecutor(MpiExecutorOptions options);
  ~MpiExecutor() override;  // Shutdown()

  int slots() const override { return options_.slots; }
  std::string Name(const engine::JobSpec&) const override { return "mpi"; }
  engine::Status Start(RunRequest request, RunListener& listener) override;
  void RequestStop(const std::string& job_id) override;
  void Shutdown() override;

  // The argv of one attempt (for tests and the docs).
  std::vector<std::string> CommandLine(const RunRequest& request) const;

 private:
  struct Run {
    std::mutex mu;
    std::condition_variable cv;  // a stop or shutdown wakes the backoff wait
    bool stop = false;           // guarded by mu
    std::thread thread;
  };
  void Supervise(const RunRequest& request, RunListener& listener, Run& run);
  static void Stop(Run& run);

  MpiExecutorOptions options_;
  RunTable<Run> runs_;
};

// Routes each run by its spec: distributed.workers > 1 to `distributed`, the rest to `local`.
// Its slots are the local executor's, shared by both.
class RoutingExecutor final : public Executor {
 public:
  RoutingExecutor(std::unique_ptr<Executor> local, std::unique_ptr<Executor> distributed);
  int slots() const override { return local_->slots(); }
  std::string Name(const engine::JobSpec& spec) const override;
  engine::Status Start(RunRequest request, RunListener& listener) override;
  void RequestStop(const std::string& job_id) override;
  void Shutdown() override;

 private:
  Executor& For(const engine::JobSpec& spec) const;
  std::unique_ptr<Executor> local_, distributed_;
};

}  // namespace trainingd::daemon
