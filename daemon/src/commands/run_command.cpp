#include "trainingd/daemon/commands/run_command.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "commands/local_plan.h"
#include "commands/stop_signal.h"
#include "executors/mpirun.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/model_json.h"
#include "trainingd/api/run_report.h"
#include "trainingd/daemon/service/flags.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/session/hooks/evaluation_hook.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
namespace {

// The exit code of a run stopped by its time limit (resources.time_limit_secs), as timeout(1)'s.
constexpr int kOutOfTimeExit = 124;

struct RunArgs {
  std::vector<std::string> specs;  // exactly one
  std::string checkpoint_dir;
  std::string data_root = "/usr/share/datasets";
  std::string datasets_dir;
  int threads = 0;
  int workers = 0;  // 0 = the spec's distributed.workers
  // "stdout" or a file to append to: the run's events as JSON lines (api/run_report.h)
  std::string report;
};

// The flags of `trainingd run` (and, without the run-only ones, `validate`).
Flags RunFlags(bool run, RunArgs& ra) {
  Flags f(run ? "run" : "validate", "JOB.json",
          run ? "Runs the job in the foreground; running it again resumes from its latest\n"
                "checkpoint.\n"
              : "Checks the job spec against its data and prints what it will need; trains "
                "nothing.\n");
  f.Positionals("job spec", 1, &ra.specs);
  if (run) {
    f.String("--checkpoint-dir", "DIR", "checkpoints and event files (./<job name>)",
             &ra.checkpoint_dir);
  }
  f.String("--data-root", "DIR", "datasets are directories under it (/usr/share/datasets)",
           &ra.data_root);
  f.String("--datasets-dir", "DIR", "datasets uploaded to a daemon (its <data-dir>/datasets)",
           &ra.datasets_dir);
  if (run) {
    f.Int("--threads", "compute threads per rank (the machine's cores, shared by its ranks)", 1,
          256, &ra.threads);
    f.Int("--workers", "data-parallel ranks, started with mpirun (the spec's distributed.workers)",
          1, eng::kMaxWorkers, &ra.workers);
    f.Add("--report", "stdout|FILE",
          "the run's events as JSON lines on stdout, or appended to FILE, instead of the console "
          "(for the daemon)",
          [&ra](const std::string& v) -> std::optional<std::string> {
            if (v.empty()) return "give 'stdout' or a file";
            ra.report = v;
            return std::nullopt;
          });
  }
  return f;
}

// The one spec the command needs, or an error message.
bool HasSpec(const Flags& flags, const RunArgs& ra) {
  if (!ra.specs.empty()) return true;
  std::fprintf(stderr, "trainingd %s: no job spec given\n%s", flags.command().c_str(),
               flags.Usage().c_str());
  return false;
}

// Each of the machine's `local_ranks` ranks gets its share of the cores, so they never
// oversubscribe it.
int ComputeThreadsFor(const RunArgs& ra, int local_ranks = 1) {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return ra.threads > 0 ? ra.threads : std::max(1, cores / std::max(1, local_ranks));
}

// Reads and parses the spec; prints the error and returns nullopt on failure.
std::optional<eng::JobSpec> LoadSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "trainingd: %s: cannot read the job spec\n", path.c_str());
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  api::FieldError error;
  auto spec = api::ParseJobSpec(text.str(), &error);
  if (!spec.ok()) {
    std::fprintf(stderr, "trainingd: %s: %s\n", path.c_str(), error.message.c_str());
    return std::nullopt;
  }
  return std::move(spec).value();
}

struct Plan {
  eng::DatasetInfo data;
  eng::JobResources resources;
};

// Checks `spec` against its dataset (read to its headers) and this machine.
eng::Result<Plan> PlanForThisMachine(const eng::JobSpec& spec, const RunArgs& ra) {
  auto data = eng::ProbeJobDataset(spec.dataset, ra.data_root, ra.datasets_dir, spec.task);
  if (!data.ok()) return data.status();
  auto resources = PlanOnThisMachine(spec, *data, ComputeThreadsFor(ra));
  if (!resources.ok()) return resources.status();
  return Plan{*data, *resources};
}

// A worker rank's log: its warnings and errors, marked with the rank; the chief logs the rest.
class WorkerLogger final : public eng::Logger {
 public:
  WorkerLogger(int rank, std::shared_ptr<eng::Logger> out)
      : prefix_("rank " + std::to_string(rank) + ": "), out_(std::move(out)) {}
  void Log(eng::LogSeverity severity, std::string_view message) override {
    if (severity != eng::LogSeverity::kInfo) out_->Log(severity, prefix_ + std::string(message));
  }

 private:
  std::string prefix_;
  std::shared_ptr<eng::Logger> out_;
};

// `--report stdout|FILE`: the chief's events as run report lines (api/run_report.h), one write
// and flush per line, from whichever thread logs. A file is appended to (a Slurm job's runs
// after a requeue add to what the earlier ones wrote).
class Reporter final : public eng::Logger, public eng::SummarySink {
 public:
  // Null with errno set when the file cannot be opened.
  static std::shared_ptr<Reporter> Open(const std::string& to) {
    if (to == "stdout") return std::shared_ptr<Reporter>(new Reporter(stdout));
    std::FILE* f = std::fopen(to.c_str(), "ae");
    return f ? std::shared_ptr<Reporter>(new Reporter(f)) : nullptr;
  }
  ~Reporter() override {
    if (out_ != stdout) std::fclose(out_);
  }
  void Emit(const eng::RunEvent& event) {
    const std::string line = api::FormatRunReport(event);
    std::lock_guard<std::mutex> lock(mu_);
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }
  void Log(eng::LogSeverity severity, std::string_view message) override {
    Emit(eng::LogWritten{severity, std::string(message)});
  }
  eng::Status AddScalar(std::string_view tag, int64_t step, double value,
                        double wall_time) override {
    Emit(eng::ScalarRecorded{std::string(tag), step, value, wall_time});
    return eng::Status::Ok();
  }
  eng::Status AddEvaluation(const eng::EvaluationSummary& evaluation, double wall_time) override {
    Emit(eng::EvaluationRecorded{evaluation, wall_time});
    return eng::Status::Ok();
  }

 private:
  explicit Reporter(std::FILE* out) : out_(out) {}
  std::mutex mu_;
  std::FILE* const out_;
};

// Reports the global step at most once a second, for the supervisor's stall watchdog.
class ProgressHook final : public eng::SessionRunHook {
 public:
  explicit ProgressHook(std::shared_ptr<Reporter> reporter) : reporter_(std::move(reporter)) {}
  std::string name() const override { return "ProgressReport"; }
  eng::Status AfterRun(eng::RunContext& ctx, const eng::RunValues&) override {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ >= std::chrono::seconds(1)) {
      last_ = now;
      reporter_->Emit(
          eng::RankTimings{ctx.session().global_step(), ctx.session().trainer().rank_timings()});
    }
    return eng::Status::Ok();
  }

 private:
  std::shared_ptr<Reporter> reporter_;
  std::chrono::steady_clock::time_point last_{};
};

// Open MPI's launcher sets these in every rank's environment.
bool StartedByMpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

// Under mpirun: becomes trainingd-mpi with the same arguments (trainingd does not link MPI).
int ExecRankProgram(const std::vector<std::string>& args) {
  const std::string program = RankProgramPath();
  std::vector<std::string> argv_strings = {program, "run"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
  std::fprintf(stderr,
               "trainingd run: started by mpirun, but %s cannot be started (%s); it is built and "
               "installed beside trainingd\n",
               program.c_str(), std::strerror(errno));
  return 1;
}

pid_t g_launcher_child = 0;
std::atomic<int> g_forwarded{0};

void ForwardSignal(int sig) {
  g_forwarded.store(sig);
  if (g_launcher_child > 0) ::kill(g_launcher_child, sig);
}

// `trainingd run --workers N`: mpirun with N ranks of trainingd-mpi, started by argv (no shell),
// on this machine over loopback unless the spec names hosts. Returns mpirun's exit code.
int LaunchRanks(const RunArgs& ra, const eng::JobSpec& spec, int workers) {
  namespace fs = std::filesystem;
  const std::string checkpoint_dir = ra.checkpoint_dir.empty() ? spec.name : ra.checkpoint_dir;
  std::vector<std::string> rank_args = {fs::absolute(ra.specs[0]).string(), "--checkpoint-dir",
                                        fs::absolute(checkpoint_dir).string(), "--data-root",
                                        fs::absolute(ra.data_root).string()};
  if (!ra.datasets_dir.empty()) {
    rank_args.emplace_back("--datasets-dir");
    rank_args.push_back(fs::absolute(ra.datasets_dir).string());
  }
  if (ra.threads > 0) {
    rank_args.emplace_back("--threads");
    rank_args.push_back(std::to_string(ra.threads));
  }
  if (!ra.report.empty()) {
    rank_args.emplace_back("--report");
    rank_args.push_back(ra.report == "stdout" ? ra.report : fs::absolute(ra.report).string());
  }
  std::vector<std::string> cmd =
      MpirunCommand(spec.distributed, workers, RankProgramPath(), rank_args);
  std::vector<char*> argv;
  for (std::string& a : cmd) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fprintf(stderr, "trainingd run: starting %d ranks:", workers);
  for (const std::string& a : cmd) std::fprintf(stderr, " %s", a.c_str());
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  pid_t pid = 0;
  if (int rc = ::posix_spawnp(&pid, "mpirun", nullptr, nullptr, argv.data(), environ); rc != 0) {
    std::fprintf(stderr, "trainingd run: cannot start mpirun: %s (install openmpi-bin)\n",
                 std::strerror(rc));
    return 1;
  }
  // A signal to this process goes to mpirun, which passes it to the ranks: each votes to stop,
  // and all stop after the same step with a final checkpoint. Ctrl-C reaches them all through
  // the terminal's process group anyway.
  g_launcher_child = pid;
  std::signal(SIGINT, ForwardSignal);
  std::signal(SIGTERM, ForwardSignal);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  g_launcher_child = 0;
  const int code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  // mpirun ends with 1 when its ranks stopped on a signal: report the signal, as `run` does.
  return code != 0 && g_forwarded.load() ? 128 + g_forwarded.load() : code;
}

std::string FormatValues(const std::map<std::string, double>& values) {
  std::string out;
  char buf[64];
  for (const auto& [k, v] : values) {
    std::snprintf(buf, sizeof buf, "%.4f", v);
    out += (out.empty() ? "" : ", ") + k + " = " + buf;
  }
  return out;
}

int Run(RunArgs& ra, const RankRuntime* rank) {
  auto spec = LoadSpec(ra.specs[0]);
  if (!spec) return 2;
  // --threads, else the spec's resources.cpus_per_worker, else a share of the cores.
  if (ra.threads == 0) ra.threads = spec->resources.cpus_per_worker;
  const int ranks = rank ? rank->communicator->size() : 1;
  const int workers = ra.workers > 0 ? ra.workers : spec->distributed.workers;
  if (!rank && workers > 1) return LaunchRanks(ra, *spec, workers);
  if (rank && ra.workers > 0 && ra.workers != ranks) {
    std::fprintf(stderr, "trainingd run: --workers %d, but mpirun started %d ranks\n", ra.workers,
                 ranks);
    return 2;
  }
  if (auto st = eng::CheckDistributable(*spec, ranks); !st.ok()) {
    std::fprintf(stderr, "trainingd run: %s: %s\n", ra.specs[0].c_str(), st.message().c_str());
    return 2;
  }
  if (ra.checkpoint_dir.empty()) ra.checkpoint_dir = spec->name;
  if (auto plan = PlanForThisMachine(*spec, ra); !plan.ok()) {
    std::fprintf(stderr, "trainingd run: %s: %s\n", ra.specs[0].c_str(),
                 plan.status().message().c_str());
    return 1;
  }
  const int threads = ComputeThreadsFor(ra, rank ? rank->local_ranks : 1);
  eng::SetComputeThreads(threads);

  const bool chief = !rank || rank->communicator->is_chief();
  std::shared_ptr<Reporter> reporter;
  if (chief && !ra.report.empty()) {
    reporter = Reporter::Open(ra.report);
    if (!reporter) {
      std::fprintf(stderr, "trainingd run: --report: %s: %s\n", ra.report.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::shared_ptr<eng::Logger> logger = eng::Logger::Stderr();
  if (reporter) logger = reporter;
  if (!chief) logger = std::make_shared<WorkerLogger>(rank->communicator->rank(), logger);
  logger->Info("Job " + spec->name + ": checkpoints and event files in " + ra.checkpoint_dir +
               " (" + std::to_string(threads) + " compute threads" +
               (ranks > 1 ? " per rank, " + std::to_string(ranks) + " ranks" : "") + ")");
  InstallStopSignals();
  eng::JobRunOptions o;
  o.checkpoint_dir = ra.checkpoint_dir;
  o.data_root = ra.data_root;
  o.datasets_dir = ra.datasets_dir;
  o.stop = &StopRequested();
  o.logger = logger;
  // What export and serving need besides the weights, beside the checkpoints (docs/models.md).
  o.on_model_input = [dir = ra.checkpoint_dir](const eng::ModelInput& input) {
    return api::WriteModelJson(dir, input);
  };
  if (rank) o.communicator = rank->communicator;
  if (reporter) {
    // The supervisor's requests arrive on stdin (mpirun forwards its stdin to rank 0): "stop"
    // votes to stop, as a signal would. The thread blocks in read until the process ends.
    std::thread([] {
      char line[64];
      while (std::fgets(line, sizeof line, stdin)) {
        if (std::string_view(line).substr(0, 4) == "stop") StopRequested() = true;
      }
    }).detach();
    o.summary_sinks = {reporter};
    o.extra_hooks = {std::make_shared<ProgressHook>(reporter)};
    // Under Slurm the run says itself which attempt it is (SLURM_RESTART_COUNT: how often Slurm
    // requeued the job) and the step its session restored: what its executor reports as the
    // attempt's from_step (docs/slurm.md), never a guess from the directory read later.
    const char* slurm_job = std::getenv("SLURM_JOB_ID");
    const char* restarts = std::getenv("SLURM_RESTART_COUNT");
    const int attempt = slurm_job ? 1 + (restarts ? std::atoi(restarts) : 0) : 0;
    o.on_session_created = [&reporter, attempt, ranks,
                            first = true](eng::MonitoredSession& ms) mutable {
      if (attempt > 0 && first) {
        const double now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        reporter->Emit(eng::AttemptStarted{attempt, 0, ranks, ms.global_step(), now});
      }
      first = false;
      reporter->Emit(eng::SessionCreated{ms.global_step()});
    };
  }
  auto result = eng::RunJob(*spec, o);
  if (reporter) reporter->Emit(eng::RunEnded{result});
  RestoreStopSignals();
  // A rank that fails may leave the others waiting for it in a collective: it ends them all. A
  // worker first gives the chief a moment, so that when all ranks failed together (a NaN loss
  // is every rank's), the chief's report of the end goes out before the abort ends it.
  const auto fail = [&](int code) {
    if (ranks > 1) {
      if (!chief) std::this_thread::sleep_for(std::chrono::seconds(2));
      rank->abort(code);
    }
    return code;
  };
  if (!result.ok()) {
    std::fprintf(stderr, "trainingd run: %s\n", result.status().message().c_str());
    return fail(1);
  }
  std::string line = "Job " + spec->name + " " + eng::JobOutcomeName(result->outcome) +
                     " at global step " + std::to_string(result->global_step) + ": " +
                     result->reason;
  if (!result->final_values.empty()) line += "; " + FormatValues(result->final_values);
  switch (result->outcome) {
    case eng::JobResult::Outcome::kCompleted:
      logger->Info(line);
      return 0;
    case eng::JobResult::Outcome::kStopped:
      logger->Info(line + ". Run the same command again to resume.");
      if (result->stop_cause == eng::JobResult::StopCause::kTimeLimit) return kOutOfTimeExit;
      return 128 + (StopSignal() ? StopSignal() : SIGINT);
    case eng::JobResult::Outcome::kFailed:
      logger->Error(line);
      return fail(1);
  }
  return 1;
}

int Validate(const RunArgs& ra) {
  auto spec = LoadSpec(ra.specs[0]);
  if (!spec) return 2;
  // The model's shapes can only be checked against the data it will see: its headers and labels
  // are read, not its images.
  auto plan = PlanForThisMachine(*spec, ra);
  if (!plan.ok()) {
    std::fprintf(stderr, "trainingd validate: %s: %s\n", ra.specs[0].c_str(),
                 plan.status().message().c_str());
    return 1;
  }
  std::printf(
      "%s: OK: job '%s', %zu layers, %lld parameters, dataset '%s' (%lld training, %lld "
      "validation, %lld test examples)\n%s",
      ra.specs[0].c_str(), spec->name.c_str(), spec->model.layers.size(),
      static_cast<long long>(plan->resources.num_parameters), spec->dataset.name.c_str(),
      static_cast<long long>(plan->data.train_examples),
      static_cast<long long>(plan->data.validation_examples),
      static_cast<long long>(plan->data.test_examples),
      eng::DescribeJobResources(plan->resources).c_str());
  return 0;
}

}  // namespace

int RunCommand(const std::vector<std::string>& args, const RankRuntime* rank) {
  if (!rank && StartedByMpirun()) return ExecRankProgram(args);
  RunArgs ra;
  const Flags flags = RunFlags(/*run=*/true, ra);
  return RunWithFlags(flags, args, [&] { return HasSpec(flags, ra) ? Run(ra, rank) : 2; });
}

int ValidateCommand(const std::vector<std::string>& args) {
  RunArgs ra;
  const Flags flags = RunFlags(/*run=*/false, ra);
  return RunWithFlags(flags, args, [&] { return HasSpec(flags, ra) ? Validate(ra) : 2; });
}

}  // namespace trainingd::daemon
