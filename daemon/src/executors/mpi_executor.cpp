#include "trainingd/daemon/executors/mpi_executor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "executors/mpirun.h"
#include "executors/subprocess.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/run_report.h"
#include "trainingd/engine/base/format.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/checkpoint_manager.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "WARNING:trainingd:rank 1: ..." as a log line of its severity; other text as it is.
eng::LogWritten ConsoleLine(const std::string& line) {
  for (auto sev : {eng::LogSeverity::kInfo, eng::LogSeverity::kWarning, eng::LogSeverity::kError}) {
    const std::string prefix = std::string(eng::LogSeverityName(sev)) + ":trainingd:";
    if (line.rfind(prefix, 0) == 0) return {sev, line.substr(prefix.size())};
  }
  return {eng::LogSeverity::kInfo, line};
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "mpirun exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "mpirun was killed by signal " + std::to_string(WTERMSIG(status));
  return "mpirun ended";
}

}  // namespace

MpiExecutor::MpiExecutor(MpiExecutorOptions options) : options_(std::move(options)) {
  // A stop request written to an mpirun that has just exited must fail with EPIPE, not kill the
  // daemon with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  if (options_.rank_program.empty()) options_.rank_program = RankProgramPath();
}

MpiExecutor::~MpiExecutor() { Shutdown(); }

std::vector<std::string> MpiExecutor::CommandLine(const RunRequest& request) const {
  std::vector<std::string> rank_args = {request.job_dir + "/spec.json",
                                        "--checkpoint-dir",
                                        request.job_dir,
                                        "--data-root",
                                        options_.data_root,
                                        "--report",
                                        "stdout"};
  if (!options_.datasets_dir.empty()) {
    rank_args.emplace_back("--datasets-dir");
    rank_args.push_back(options_.datasets_dir);
  }
  const int cpus = request.spec.resources.cpus_per_worker;
  if (cpus > 0 || options_.threads_per_rank > 0) {
    rank_args.emplace_back("--threads");
    rank_args.push_back(std::to_string(cpus > 0 ? cpus : options_.threads_per_rank));
  }
  // The daemon's hosts, never the spec's (admission refuses those).
  eng::DistributedSpec where = request.spec.distributed;
  where.hosts.clear();
  where.hostfile = options_.hostfile;
  std::vector<std::string> cmd =
      MpirunCommand(where, where.workers, options_.rank_program, rank_args);
  cmd[0] = options_.mpirun;
  const auto np = std::find(cmd.begin(), cmd.end(), "-np");
  cmd.insert(np, options_.mpirun_options.begin(), options_.mpirun_options.end());
  return cmd;
}

eng::Status MpiExecutor::Start(RunRequest request, RunListener& listener) {
  const std::string id = request.job_id;
  return runs_.Start(id, options_.slots, [this, request = std::move(request), &listener](Run& r) {
    Supervise(request, listener, r);
  });
}

void MpiExecutor::Supervise(const RunRequest& request, RunListener& listener, Run& run) {
  const std::string& id = request.job_id;
  const eng::DistributedSpec& d = request.spec.distributed;
  const int attempts = d.max_restarts + 1;
  const auto log = [&](eng::LogSeverity sev, const std::string& text) {
    listener.OnRunEvent(id, eng::LogWritten{sev, text});
  };
  const auto finish = [&](eng::Result<eng::JobResult> result) {
    runs_.Finished(run);
    listener.OnRunEvent(id, eng::RunEnded{std::move(result)});
  };
  const auto stopped = [&](const std::string& why) {
    eng::JobResult r;
    r.outcome = eng::JobResult::Outcome::kStopped;
    r.stop_cause = eng::JobResult::StopCause::kRequest;
    r.global_step = eng::LatestCheckpointStep(request.job_dir);
    r.reason = "stop requested" + (why.empty() ? "" : "; " + why);
    return r;
  };

  // The spec the ranks read, in its canonical form.
  const eng::Status written =
      eng::WriteFileAtomically(request.job_dir + "/spec.json", api::JobSpecToJson(request.spec, 2));
  if (!written.ok()) return finish(written);

  std::string last_failure;
  double backoff = options_.initial_backoff_secs;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(run.mu);
      if (run.stop) return finish(stopped("between attempts"));
    }
    const std::vector<std::string> cmd = CommandLine(request);
    std::string shown;
    for (const std::string& a : cmd) shown += (shown.empty() ? "" : " ") + a;
    log(eng::LogSeverity::kInfo,
        "attempt " + std::to_string(attempt) + " of " + std::to_string(attempts) + ": " +
            std::to_string(d.workers) + " ranks from global step " +
            std::to_string(eng::LatestCheckpointStep(request.job_dir)) + ": " + shown);
    listener.OnRunEvent(
        id, eng::AttemptStarted{attempt, attempts, d.workers,
                                eng::LatestCheckpointStep(request.job_dir), WallTime()});
    auto spawned = Spawn(cmd);
    if (!spawned.ok()) {
      listener.OnRunEvent(id, eng::AttemptEnded{attempt, spawned.status().message(), WallTime()});
      return finish(spawned.status());
    }
    LineReader out(spawned->out), err(spawned->err);
    std::optional<eng::RunEnded> ended;
    auto last_progress = Clock::now();
    bool asked = false, sent_term = false, stalled = false;
    Clock::time_point asked_at;
    std::string last_err;
    while (out.fd() >= 0 || err.fd() >= 0) {
      pollfd fds[2] = {{out.fd(), POLLIN, 0}, {err.fd(), POLLIN, 0}};
      const int ready = ::poll(fds, 2, 250);
      std::vector<std::string> out_lines, err_lines;
      if (ready > 0) {
        if (fds[0].revents) out.Read(out_lines);
        if (fds[1].revents) err.Read(err_lines);
      }
      for (const std::string& line : out_lines) {
        auto event = api::ParseRunReport(line);
        if (!event) {
          if (!line.empty()) listener.OnRunEvent(id, ConsoleLine(line));
          continue;
        }
        if (auto* e = std::get_if<eng::RunEnded>(&*event)) {
          ended = std::move(*e);
          continue;
        }
        if (std::holds_alternative<eng::SessionCreated>(*event) ||
            std::holds_alternative<eng::ScalarRecorded>(*event) ||
            std::holds_alternative<eng::RankTimings>(*event)) {
          last_progress = Clock::now();
        }
        // Attempts are this supervisor's to count, not a rank's.
        if (std::holds_alternative<eng::AttemptStarted>(*event) ||
            std::holds_alternative<eng::AttemptEnded>(*event)) {
          continue;
        }
        listener.OnRunEvent(id, std::move(*event));
      }
      for (const std::string& line : err_lines) {
        if (line.empty()) continue;
        // What to quote when the attempt fails: mpirun's own account ("mpirun noticed that
        // process rank 1 ... exited on signal 9") or else the last line with words in it.
        if (line.find("noticed") != std::string::npos ||
            last_err.find("noticed") == std::string::npos) {
          if (line.find_first_not_of("- ") != std::string::npos) last_err = line;
        }
        listener.OnRunEvent(id, ConsoleLine(line));
      }
      bool stop;
      {
        std::lock_guard<std::mutex> lock(run.mu);
        stop = run.stop;
      }
      if (stop && !asked) {
        // A line on mpirun's stdin reaches rank 0, which votes to stop: every rank stops after
        // the same step and the chief writes the final checkpoint and reports the end. (SIGTERM
        // to mpirun would stop the ranks too, but mpirun stops forwarding their output.)
        static constexpr char kStop[] = "stop\n";
        asked = ::write(spawned->in, kStop, sizeof kStop - 1) == sizeof kStop - 1;
        if (!asked) sent_term = true;  // rank 0's stdin is gone: straight to SIGTERM below
        asked_at = Clock::now();
        last_progress = Clock::now();  // the final checkpoint gets a full stall period
      }
      if (stop && !sent_term && SecondsSince(asked_at) > d.stall_timeout_secs) {
        ::kill(spawned->pid, SIGTERM);  // no end yet: mpirun passes SIGTERM to the ranks
        sent_term = true;
      }
      if (!stalled && !ended && SecondsSince(last_progress) > d.stall_timeout_secs) {
        stalled = true;
        log(eng::LogSeverity::kWarning,
            "attempt " + std::to_string(attempt) + ": no step for " +
                eng::FormatSeconds(d.stall_timeout_secs) +
                " s (distributed.stall_timeout_secs): killing its processes");
        ::kill(-spawned->pid, SIGKILL);
      }
    }
    ::close(spawned->in);
    int status = 0;
    while (::waitpid(spawned->pid, &status, 0) < 0 && errno == EINTR) {
    }
    ::kill(-spawned->pid, SIGKILL);  // whatever of the group is left
    if (ended) {
      // The chief said how the run ended: a completed, stopped or failed run, or one that could
      // not start. A restart would end the same way.
      listener.OnRunEvent(
          id, eng::AttemptEnded{attempt,
                                ended->result.ok() ? eng::JobOutcomeName(ended->result->outcome)
                                                   : "could not start",
                                WallTime()});
      return finish(std::move(ended->result));
    }
    const std::string why =
        stalled ? "no step for " + eng::FormatSeconds(d.stall_timeout_secs) + " s"
                : DescribeExit(status) + (last_err.empty() ? "" : " (" + last_err + ")");
    last_failure = why;
    listener.OnRunEvent(id, eng::AttemptEnded{attempt, why, WallTime()});
    {
      std::lock_guard<std::mutex> lock(run.mu);
      if (run.stop) return finish(stopped("the ranks ended without a report: " + why));
    }
    if (attempt == attempts) break;
    log(eng::LogSeverity::kWarning, "attempt " + std::to_string(attempt) + " ended: " + why +
                                        "; restarting from the latest checkpoint in " +
                                        eng::FormatSeconds(backoff) + " s");
    std::unique_lock<std::mutex> lock(run.mu);
    run.cv.wait_for(lock, std::chrono::duration<double>(backoff), [&] { return run.stop; });
    backoff = std::min(options_.max_backoff_secs, backoff * 2);
  }
  eng::JobResult r;
  r.outcome = eng::JobResult::Outcome::kFailed;
  r.global_step = eng::LatestCheckpointStep(request.job_dir);
  r.reason = "failed after " + std::to_string(attempts) + " attempt" + (attempts > 1 ? "s" : "") +
             " (distributed.max_restarts " + std::to_string(d.max_restarts) +
             "); the last: " + last_failure;
  r.error = eng::Status::Aborted(r.reason);
  finish(std::move(r));
}

void MpiExecutor::Stop(Run& run) {
  std::lock_guard<std::mutex> lock(run.mu);
  run.stop = true;
  run.cv.notify_all();
}

void MpiExecutor::RequestStop(const std::string& job_id) { runs_.With(job_id, Stop); }

void MpiExecutor::Shutdown() { runs_.Shutdown(Stop); }

RoutingExecutor::RoutingExecutor(std::unique_ptr<Executor> local,
                                 std::unique_ptr<Executor> distributed)
    : local_(std::move(local)), distributed_(std::move(distributed)) {}

Executor& RoutingExecutor::For(const eng::JobSpec& spec) const {
  return spec.distributed.workers > 1 ? *distributed_ : *local_;
}

std::string RoutingExecutor::Name(const eng::JobSpec& spec) const { return For(spec).Name(spec); }

eng::Status RoutingExecutor::Start(RunRequest request, RunListener& listener) {
  Executor& to = For(request.spec);
  // A distributed run's ranks load the dataset themselves: what this process keeps idle goes
  // first, as it would for a local run of another dataset.
  if (&to == distributed_.get()) local_->FreeIdle();
  return to.Start(std::move(request), listener);
}

void RoutingExecutor::RequestStop(const std::string& job_id) {
  local_->RequestStop(job_id);
  distributed_->RequestStop(job_id);
}

void RoutingExecutor::Shutdown() {
  local_->Shutdown();
  distributed_->Shutdown();
}

}  // namespace trainingd::daemon
