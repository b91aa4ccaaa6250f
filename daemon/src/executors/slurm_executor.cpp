#include "trainingd/daemon/executors/slurm_executor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "executors/subprocess.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/run_report.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/format.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/checkpoint_manager.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
using nlohmann::json;

namespace {

constexpr double kCommandTimeoutSecs = 60;  // sbatch, squeue, scancel
constexpr double kFollowPeriodSecs = 0.2;   // the progress file is read this often
constexpr size_t kMaxReadBytes = 4 << 20;   // of the progress file at once
constexpr size_t kMaxLineBytes = 1 << 20;   // longer report lines are skipped
// Slurm's time limit for a job with resources.time_limit_secs: this much later than its own, so
// that the run stops itself first (a final checkpoint) and Slurm's TIMEOUT only ends one that
// did not.
constexpr double kSlurmTimeMarginSecs = 120;

double Now() { return eng::Env::Default()->NowSeconds(); }

// A word for /bin/sh: single-quoted.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string SelfPath() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).string();
}

std::string ProgressPath(const std::string& job_dir) { return job_dir + "/progress.jsonl"; }
std::string StatePath(const std::string& job_dir) { return job_dir + "/slurm.json"; }

// What a run's thread keeps in <job_dir>/slurm.json: which Slurm job is the run's and how far
// its progress file has been read. A new Start finds it and follows the same Slurm job again.
struct FollowState {
  int64_t slurm_job_id = 0;  // 0 with submitting: sbatch was called, its answer not kept
  bool submitting = false;
  int64_t offset = 0;           // bytes of the progress file already reported
  bool ended = false;           // the run's end was reported: a new Start submits anew
  int attempt_restarts = -1;    // the restart count whose attempt was last reported; -1 none
  int ended_restarts = -1;      // the restart count whose attempt's end was last reported
  int64_t previous_job_id = 0;  // submitting: the job's earlier Slurm job, which is not this one
};

std::optional<FollowState> LoadState(const std::string& job_dir) {
  std::ifstream in(StatePath(job_dir));
  if (!in) return std::nullopt;
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  FollowState s;
  s.slurm_job_id = j.value("slurm_job_id", int64_t{0});
  s.submitting = j.value("submitting", false);
  s.offset = j.value("offset", int64_t{0});
  s.ended = j.value("ended", true);
  s.attempt_restarts = j.value("attempt_restarts", -1);
  s.ended_restarts = j.value("ended_restarts", s.attempt_restarts - 1);
  s.previous_job_id = j.value("previous_job_id", int64_t{0});
  return s;
}

eng::Status SaveState(const std::string& job_dir, const FollowState& s) {
  const json j = {{"slurm_job_id", s.slurm_job_id},
                  {"submitting", s.submitting},
                  {"offset", s.offset},
                  {"ended", s.ended},
                  {"attempt_restarts", s.attempt_restarts},
                  {"ended_restarts", s.ended_restarts},
                  {"previous_job_id", s.previous_job_id}};
  return eng::WriteFileAtomically(StatePath(job_dir), j.dump() + "\n");
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

// Reads the complete lines of `path` from `*offset` on and advances it past them.
std::vector<std::string> ReadNewLines(const std::string& path, int64_t* offset) {
  std::vector<std::string> lines;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size <= *offset) {
    ::close(fd);
    return lines;
  }
  std::string buf(std::min<size_t>(kMaxReadBytes, static_cast<size_t>(st.st_size - *offset)), '\0');
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), *offset);
  ::close(fd);
  if (n <= 0) return lines;
  buf.resize(static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (nl - start <= kMaxLineBytes) lines.push_back(buf.substr(start, nl - start));
  }
  // A line longer than a whole read holds no newline: skipped, so the reader moves on.
  if (start == 0 && buf.size() == kMaxReadBytes) start = buf.size();
  *offset += static_cast<int64_t>(start);
  return lines;
}

eng::JobResult Ended(eng::JobResult::Outcome outcome, int64_t step, std::string reason) {
  eng::JobResult r;
  r.outcome = outcome;
  r.global_step = step;
  r.reason = std::move(reason);
  if (outcome == eng::JobResult::Outcome::kFailed) r.error = eng::Status::Aborted(r.reason);
  return r;
}

std::string DescribeSlurmEnd(const SlurmJobStatus& s) {
  std::string out = "Slurm job " + std::to_string(s.job_id) + " ended " + s.state;
  if (!s.reason.empty() && s.reason != "None") out += " (" + s.reason + ")";
  const int status = s.exit_code;
  if (status & 0x7f) {
    out += ", killed by signal " + std::to_string(status & 0x7f);
  } else if (status >> 8) {
    out += ", exit code " + std::to_string(status >> 8);
  }
  return out;
}

}  // namespace

eng::Result<std::vector<SlurmJobStatus>> ParseSqueueJson(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array()) {
    return eng::Status::InvalidArgument("squeue --json: not the JSON of squeue: " +
                                        text.substr(0, 200));
  }
  if (const auto e = j.find("errors"); e != j.end() && e->is_array() && !e->empty()) {
    const json& first = (*e)[0];
    std::string what = first.is_object() ? first.value("description", "") : "";
    if (first.is_object() && first.contains("source") && first["source"].is_string()) {
      what += " (" + first["source"].get<std::string>() + ")";
    }
    return eng::Status::Unavailable("squeue --json reports an error: " + what);
  }
  std::vector<SlurmJobStatus> out;
  for (const json& job : j["jobs"]) {
    if (!job.is_object() || !job.contains("job_id") || !job["job_id"].is_number_integer()) continue;
    const auto text_of = [&](const char* key) {
      const auto it = job.find(key);
      return it != job.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const auto int_of = [&](const char* key) {
      const auto it = job.find(key);
      return it != job.end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
    };
    SlurmJobStatus s;
    s.job_id = job["job_id"].get<int64_t>();
    s.name = text_of("name");
    s.state = text_of("job_state");
    s.reason = text_of("state_reason");
    s.nodes = text_of("nodes");
    s.restarts = static_cast<int>(int_of("restart_cnt"));
    s.tasks = static_cast<int>(int_of("tasks"));
    s.exit_code = static_cast<int>(int_of("exit_code"));
    out.push_back(std::move(s));
  }
  return out;
}

bool IsFinalSlurmState(const std::string& state) {
  return state != "PENDING" && state != "RUNNING" && state != "COMPLETING" &&
         state != "CONFIGURING" && state != "SUSPENDED" && state != "REQUEUED" &&
         state != "REQUEUE_HOLD" && state != "REQUEUE_FED" && state != "RESIZING" &&
         state != "SIGNALING" && state != "STAGE_OUT" && state != "STOPPED" &&
         state != "RESV_DEL_HOLD";
}

SlurmExecutor::SlurmExecutor(SlurmOptions options) : options_(std::move(options)) {
  if (options_.trainingd_path.empty()) options_.trainingd_path = SelfPath();
}

SlurmExecutor::~SlurmExecutor() { Shutdown(); }

eng::Status SlurmExecutor::Check(const SlurmOptions& options) {
  // squeue would look for a missing SLURM_CONF for a minute before it gives up.
  if (const char* conf = std::getenv("SLURM_CONF");
      conf && *conf && !std::filesystem::exists(conf)) {
    return eng::Status::FailedPrecondition(std::string("SLURM_CONF names ") + conf +
                                           ", which does not exist");
  }
  auto out = RunCommandOutput({options.squeue, "--json"}, kCommandTimeoutSecs);
  if (!out.ok()) {
    if (out.status().code() == eng::StatusCode::kNotFound) {
      return eng::Status::FailedPrecondition(
          out.status().message() + " (install slurm-client, or set slurm.squeue to its path)");
    }
    return out.status();
  }
  if (!out->ok()) {
    return eng::Status::FailedPrecondition("squeue --json " + out->Describe() +
                                           " (is SLURM_CONF right?)");
  }
  auto parsed = ParseSqueueJson(out->out);
  if (!parsed.ok()) {
    return eng::Status::FailedPrecondition(parsed.status().message() +
                                           ": the Slurm controller does not answer");
  }
  return eng::Status::Ok();
}

std::string SlurmExecutor::BatchScript(const RunRequest& request) const {
  const int workers = std::max(1, request.spec.distributed.workers);
  const int cpus = std::max(1, request.spec.resources.cpus_per_worker > 0
                                   ? request.spec.resources.cpus_per_worker
                                   : options_.cpus_per_task);
  std::string s = "#!/bin/sh\n";
  s += "# trainingd job " + request.job_id + " (" + request.spec.name +
       "), written and submitted by trainingd serve.\n";
  s += "#SBATCH --job-name=trainingd-" + request.job_id + "\n";
  s += "#SBATCH --chdir=" + request.job_dir + "\n";
  s += "#SBATCH --output=" + request.job_dir + "/slurm-%j.out\n";
  s += "#SBATCH --open-mode=append\n";
  // After a node failure Slurm runs the script again; it resumes from the latest checkpoint.
  s += "#SBATCH --requeue\n";
  s += "#SBATCH --ntasks=" + std::to_string(workers) + "\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(cpus) + "\n";
  if (request.memory_bytes > 0) {
    // Admission's estimate of a rank's peak, shared by its CPUs, in MiB rounded up.
    const int64_t mib = (request.memory_bytes + (int64_t{1} << 20) - 1) >> 20;
    s += "#SBATCH --mem-per-cpu=" + std::to_string((mib + cpus - 1) / cpus) + "M\n";
  }
  // The job's own time limit stops its run gracefully (a final checkpoint, then `stopped`);
  // Slurm's comes kSlurmTimeMarginSecs later, for a run that did not stop by then.
  const double limit = request.spec.resources.time_limit_secs;
  const int64_t minutes = limit > 0
                              ? static_cast<int64_t>(std::ceil((limit + kSlurmTimeMarginSecs) / 60))
                              : options_.time_limit_minutes;
  if (minutes > 0) s += "#SBATCH --time=" + std::to_string(minutes) + "\n";
  if (!options_.partition.empty()) s += "#SBATCH --partition=" + options_.partition + "\n";
  if (!options_.account.empty()) s += "#SBATCH --account=" + options_.account + "\n";
  s += "unset TRAININGD_TOKEN\n";  // the daemon's API token stays with the daemon
  s += "exec " + ShellQuote(options_.trainingd_path) + " run " +
       ShellQuote(request.job_dir + "/spec.json") + " --checkpoint-dir " +
       ShellQuote(request.job_dir) + " --data-root " + ShellQuote(options_.data_root) +
       (options_.datasets_dir.empty() ? ""
                                      : " --datasets-dir " + ShellQuote(options_.datasets_dir)) +
       " --threads " + std::to_string(cpus) + " --report " +
       ShellQuote(ProgressPath(request.job_dir));
  if (workers > 1) s += " --workers " + std::to_string(workers);
  return s + "\n";
}

eng::Result<std::map<int64_t, SlurmJobStatus>> SlurmExecutor::Queue(double not_before) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  const double asked = Now();
  if (queue_time_ >= not_before && asked - queue_time_ < options_.poll_secs) return queue_;
  auto out = RunCommandOutput({options_.squeue, "--json"}, kCommandTimeoutSecs);
  if (!out.ok()) {
    queue_ = out.status();
  } else if (!out->ok()) {
    queue_ = eng::Status::Unavailable("squeue --json " + out->Describe());
  } else if (auto jobs = ParseSqueueJson(out->out); !jobs.ok()) {
    queue_ = jobs.status();
  } else {
    std::map<int64_t, SlurmJobStatus> by_id;
    for (SlurmJobStatus& j : *jobs) by_id[j.job_id] = std::move(j);
    queue_ = std::move(by_id);
  }
  queue_time_ = asked;  // it shows every job submitted before it was asked
  return queue_;
}

eng::Status SlurmExecutor::Start(RunRequest request, RunListener& listener) {
  const std::string id = request.job_id;
  return runs_.Start(
      id, options_.max_jobs,
      [this, request = std::move(request), &listener](Run& r) { Follow(request, listener, r); });
}

void SlurmExecutor::Follow(const RunRequest& request, RunListener& listener, Run& run) {
  const std::string& id = request.job_id;
  const std::string& dir = request.job_dir;
  const auto log = [&](eng::LogSeverity sev, const std::string& text) {
    listener.OnRunEvent(id, eng::LogWritten{sev, text});
  };
  const auto finish = [&](eng::Result<eng::JobResult> result) {
    runs_.Finished(run);
    listener.OnRunEvent(id, eng::RunEnded{std::move(result)});
  };
  const std::string name = "trainingd-" + id;

  // The Slurm job to follow: the one a previous daemon left running, or a new submission.
  FollowState st = LoadState(dir).value_or(FollowState{});
  if (!st.ended && st.submitting && st.slurm_job_id == 0) {
    // The daemon died between sbatch and keeping its answer: find the job by its name.
    auto queue = Queue(Now());
    if (!queue.ok()) return finish(queue.status());
    for (const auto& [slurm_id, job] : *queue) {
      if (job.name == name && slurm_id > st.previous_job_id) {
        st.slurm_job_id = std::max(st.slurm_job_id, slurm_id);
      }
    }
  }
  bool submitted = false;
  // squeue's answers from before this time may not show the job yet.
  double known_since = 0;
  if (!st.ended && st.slurm_job_id > 0) {
    log(eng::LogSeverity::kInfo, "following Slurm job " + std::to_string(st.slurm_job_id) +
                                     " again, its progress file from byte " +
                                     std::to_string(st.offset));
  } else {
    const eng::Status written =
        eng::WriteFileAtomically(dir + "/spec.json", api::JobSpecToJson(request.spec, 2));
    if (!written.ok()) return finish(written);
    if (auto w = eng::WriteFileAtomically(dir + "/slurm.sh", BatchScript(request)); !w.ok()) {
      return finish(w);
    }
    const int64_t previous = std::max(st.slurm_job_id, st.previous_job_id);
    st = FollowState{};
    st.submitting = true;
    st.previous_job_id = previous;
    st.offset = FileSize(ProgressPath(dir));  // what earlier runs wrote is reported already
    if (auto w = SaveState(dir, st); !w.ok()) return finish(w);
    std::vector<std::string> argv = {options_.sbatch, "--parsable"};
    argv.insert(argv.end(), options_.sbatch_options.begin(), options_.sbatch_options.end());
    argv.push_back(dir + "/slurm.sh");
    auto out = RunCommandOutput(argv, kCommandTimeoutSecs);
    if (!out.ok()) return finish(out.status());
    // "<id>" or "<id>;<cluster>"
    char* end = nullptr;
    const long long slurm_id = std::strtoll(out->out.c_str(), &end, 10);
    if (!out->ok() || slurm_id <= 0) {
      st.ended = true;
      static_cast<void>(SaveState(dir, st));
      return finish(eng::Status::FailedPrecondition("sbatch " + out->Describe()));
    }
    st.slurm_job_id = slurm_id;
    st.submitting = false;
    submitted = true;
    known_since = Now();
    if (auto w = SaveState(dir, st); !w.ok()) return finish(w);
    log(eng::LogSeverity::kInfo,
        "submitted to Slurm as job " + std::to_string(slurm_id) + " (" + dir + "/slurm.sh)");
  }
  SlurmJobStatus last;  // what was reported of the Slurm job ("" state: nothing yet)
  last.restarts = std::max(0, st.attempt_restarts);
  if (submitted) {  // queued until squeue says more
    last.state = "PENDING";
    listener.OnRunEvent(id, eng::SchedulerStatus{st.slurm_job_id, "PENDING", "", "", 0});
  }
  std::optional<eng::RunEnded> reported_end;  // rank 0's report of the latest run's end
  const int workers = std::max(1, request.spec.distributed.workers);
  // Attempts, one per Slurm run of the job (restarts + 1). The run reports its own start, with
  // the step its session restored (run_command.cpp); a run that ended before it had a session
  // restored nothing and wrote nothing, so the directory's latest checkpoint is its from_step.
  int seen_running = -1;  // the highest restart count squeue showed RUNNING
  const auto end_attempt = [&](int restarts, const std::string& how) {
    if (restarts < 0 || restarts <= st.ended_restarts || restarts > st.attempt_restarts) return;
    st.ended_restarts = restarts;
    static_cast<void>(SaveState(dir, st));
    listener.OnRunEvent(id, eng::AttemptEnded{restarts + 1, how, Now()});
  };
  const auto start_attempt = [&](int restarts, int64_t from_step, double wall_time) {
    if (restarts <= st.attempt_restarts) return;
    end_attempt(st.attempt_restarts, "requeued by Slurm");
    st.attempt_restarts = restarts;
    static_cast<void>(SaveState(dir, st));
    listener.OnRunEvent(id, eng::AttemptStarted{restarts + 1, 0, workers, from_step, wall_time});
  };
  bool stop_sent = false, unreachable = false;
  double stop_sent_at = 0, saved_at = Now();
  int64_t saved_offset = st.offset;
  const auto drain = [&] {
    const std::string path = ProgressPath(dir);
    for (;;) {
      const int64_t before = st.offset;
      for (const std::string& line : ReadNewLines(path, &st.offset)) {
        auto event = api::ParseRunReport(line);
        if (!event) {
          if (!line.empty()) log(eng::LogSeverity::kInfo, line);
          continue;
        }
        if (auto* e = std::get_if<eng::RunEnded>(&*event)) {
          reported_end = std::move(*e);
          continue;
        }
        // A run after a requeue starts a new session: an end reported before it is not the job's.
        if (std::holds_alternative<eng::SessionCreated>(*event)) reported_end.reset();
        if (auto* a = std::get_if<eng::AttemptStarted>(&*event)) {
          start_attempt(a->attempt - 1, a->from_step, a->wall_time);
          continue;
        }
        if (std::holds_alternative<eng::AttemptEnded>(*event) ||
            std::holds_alternative<eng::SchedulerStatus>(*event)) {
          continue;  // this executor's to say
        }
        listener.OnRunEvent(id, std::move(*event));
      }
      if (st.offset == before) return;
    }
  };
  const auto save = [&](bool now) {
    if (st.offset != saved_offset && (now || Now() - saved_at >= 1)) {
      static_cast<void>(SaveState(dir, st));
      saved_offset = st.offset;
      saved_at = Now();
    }
  };
  for (;;) {
    drain();
    save(false);
    bool stop, detach;
    {
      std::unique_lock<std::mutex> lock(run.mu);
      stop = run.stop;
      detach = run.detach;
    }
    // A run asked to stop is followed to its end even then: a later resume must not find it
    // still running.
    if (detach && !stop) {
      save(true);
      return finish(Ended(eng::JobResult::Outcome::kStopped, eng::LatestCheckpointStep(dir),
                          "the daemon shut down; Slurm job " + std::to_string(st.slurm_job_id) +
                              " goes on, and the next start follows it again"));
    }
    auto queue = Queue(known_since);
    if (!queue.ok()) {
      // squeue fails while the controller is down (and exits 0 with an error): wait for it.
      if (!unreachable) {
        log(eng::LogSeverity::kWarning,
            "Slurm does not answer (" + queue.status().message() + "); waiting for it");
      }
      unreachable = true;
    } else {
      if (unreachable) log(eng::LogSeverity::kInfo, "Slurm answers again");
      unreachable = false;
      const auto it = queue->find(st.slurm_job_id);
      SlurmJobStatus now;
      // (A job of that id by another name is not ours: the cluster's ids started again.)
      if (it != queue->end() && it->second.name == name) {
        now = it->second;
      } else {
        // Slurm forgets a job MinJobAge after its end: it ended, as its report says.
        now = last;
        now.state = "GONE";
      }
      if (now.state != last.state || now.reason != last.reason || now.nodes != last.nodes ||
          now.restarts != last.restarts) {
        // The attempts first, then Slurm's state: whoever reads the job on that state's event
        // finds the attempt it runs.
        if (now.restarts > last.restarts) {
          if (seen_running >= last.restarts) {
            start_attempt(last.restarts, eng::LatestCheckpointStep(dir), Now());
          }
          end_attempt(last.restarts,
                      "requeued by Slurm" + (now.reason.empty() || now.reason == "None"
                                                 ? std::string()
                                                 : " (" + now.reason + ")"));
          log(eng::LogSeverity::kWarning, "Slurm requeued job " + std::to_string(st.slurm_job_id) +
                                              "; its next run resumes from the latest checkpoint");
        }
        if (now.state == "RUNNING") seen_running = std::max(seen_running, now.restarts);
        if (now.state != "GONE") {
          listener.OnRunEvent(id, eng::SchedulerStatus{st.slurm_job_id, now.state, now.reason,
                                                       now.nodes, now.restarts});
        }
        last = now;
      }
      if (stop && !stop_sent) {
        // A pending job is cancelled; a running one asked to stop after its current step.
        const bool pending = last.state == "PENDING";
        std::vector<std::string> argv = {options_.scancel};
        if (!pending) argv.insert(argv.end(), {"--batch", "--signal=TERM"});
        argv.push_back(std::to_string(st.slurm_job_id));
        auto out = RunCommandOutput(argv, kCommandTimeoutSecs);
        if (!out.ok() || !out->ok()) {
          log(eng::LogSeverity::kWarning,
              "scancel: " + (out.ok() ? out->Describe() : out.status().message()));
        }
        stop_sent = true;
        stop_sent_at = Now();
      } else if (stop && stop_sent_at > 0 && Now() - stop_sent_at > options_.stop_grace_secs) {
        log(eng::LogSeverity::kWarning, "no end " + eng::FormatSeconds(options_.stop_grace_secs) +
                                            " s after the stop request: cancelling Slurm job " +
                                            std::to_string(st.slurm_job_id));
        static_cast<void>(RunCommandOutput({options_.scancel, std::to_string(st.slurm_job_id)},
                                           kCommandTimeoutSecs));
        stop_sent_at = 0;  // once
      }
      if (IsFinalSlurmState(now.state)) {
        drain();  // what the run wrote before it ended
        if (seen_running >= now.restarts) {
          start_attempt(now.restarts, eng::LatestCheckpointStep(dir), Now());
        }
        st.ended = true;
        static_cast<void>(SaveState(dir, st));
        std::string how = now.state == "GONE" ? "ended" : now.state;
        if (reported_end) {
          how = reported_end->result.ok() ? eng::JobOutcomeName(reported_end->result->outcome)
                                          : "could not start";
        }
        end_attempt(st.attempt_restarts, how);
        const int64_t step = eng::LatestCheckpointStep(dir);
        if (reported_end) {
          eng::Result<eng::JobResult> result = std::move(reported_end->result);
          // Stopped by Slurm, not by a stop request: its time limit, its memory, its node.
          if (result.ok() && result->outcome == eng::JobResult::Outcome::kStopped && !stop &&
              now.state != "CANCELLED" && now.state != "GONE" && now.state != "COMPLETED" &&
              now.state != "FAILED") {
            return finish(Ended(eng::JobResult::Outcome::kFailed, result->global_step,
                                DescribeSlurmEnd(now) + "; " + result->reason));
          }
          // (A run that stopped itself, at its time limit or on a full disk, says why.)
          if (result.ok() && result->stop_cause == eng::JobResult::StopCause::kRequest && !stop) {
            result->reason = "cancelled in Slurm (" + DescribeSlurmEnd(now) +
                             "); stopped at global step " + std::to_string(result->global_step);
          }
          return finish(std::move(result));
        }
        if (now.state == "CANCELLED") {
          return finish(Ended(
              eng::JobResult::Outcome::kStopped, step,
              stop ? "stop requested" : "cancelled in Slurm (" + DescribeSlurmEnd(now) + ")"));
        }
        if (now.state == "GONE") {
          return finish(Ended(eng::JobResult::Outcome::kFailed, step,
                              "Slurm no longer knows job " + std::to_string(st.slurm_job_id) +
                                  " and its run reported no end; resume the job to run it "
                                  "again from its latest checkpoint"));
        }
        return finish(Ended(eng::JobResult::Outcome::kFailed, step,
                            DescribeSlurmEnd(now) + " without a report of its end (see " + dir +
                                "/slurm-" + std::to_string(st.slurm_job_id) + ".out)"));
      }
    }
    std::unique_lock<std::mutex> lock(run.mu);
    run.cv.wait_for(lock, std::chrono::duration<double>(kFollowPeriodSecs),
                    [&] { return (run.detach && !run.stop) || (run.stop && !stop_sent); });
  }
}

void SlurmExecutor::RequestStop(const std::string& job_id) {
  runs_.With(job_id, [](Run& run) {
    std::lock_guard<std::mutex> lock(run.mu);
    run.stop = true;
    run.cv.notify_all();
  });
}

void SlurmExecutor::Shutdown() {
  runs_.Shutdown([](Run& run) {
    std::lock_guard<std::mutex> lock(run.mu);
    run.detach = true;
    run.cv.notify_all();
  });
}

}  // namespace trainingd::daemon
