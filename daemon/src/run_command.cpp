#include "trainingd/daemon/run_command.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "trainingd/api/job_spec_json.h"
#include "trainingd/engine/hooks/evaluation_hook.h"
#include "machine.h"
#include "trainingd/engine/job_resources.h"
#include "trainingd/engine/job_runner.h"
#include "trainingd/engine/parallel.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};

void OnSignal(int sig) {
  if (g_stop.exchange(true)) _exit(128 + sig);  // a second Ctrl-C: give up at once
  g_signal.store(sig);
  static const char kMsg[] =
      "trainingd: stopping after the current step with a final checkpoint "
      "(Ctrl-C again to abort without one)\n";
  const ssize_t ignored = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
}

struct RunArgs {
  std::string spec_path;
  std::string checkpoint_dir;
  std::string data_root = "/usr/share/datasets";
  int threads = 0;
};

void RunUsage(FILE* f) {
  std::fprintf(f,
               "usage: trainingd run JOB.json [--checkpoint-dir DIR] [--data-root DIR] "
               "[--threads N]\n"
               "  Runs the job in the foreground; running it again resumes from its latest\n"
               "  checkpoint. DIR defaults to ./<job name>; the data root to "
               "/usr/share/datasets.\n"
               "usage: trainingd validate JOB.json [--data-root DIR]\n");
}

// Parses the command's flags; an error message (exit 2) or nothing.
std::optional<std::string> ParseArgs(const std::vector<std::string>& args, bool allow_run_flags,
                                     RunArgs& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (!out.spec_path.empty()) return "more than one job spec given ('" + a + "')";
      out.spec_path = a;
      continue;
    }
    if (i + 1 >= args.size()) return "missing value for " + a;
    const std::string& v = args[++i];
    if (a == "--data-root") {
      out.data_root = v;
    } else if (allow_run_flags && a == "--checkpoint-dir") {
      out.checkpoint_dir = v;
    } else if (allow_run_flags && a == "--threads") {
      const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out.threads);
      if (ec != std::errc() || p != v.data() + v.size() || out.threads < 1 || out.threads > 256) {
        return "--threads must be in [1, 256], got '" + v + "'";
      }
    } else {
      return "unknown flag " + a;
    }
  }
  if (out.spec_path.empty()) return std::string("no job spec given");
  return std::nullopt;
}

int ComputeThreadsFor(const RunArgs& ra) {
  return ra.threads > 0 ? ra.threads
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
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

// Checks `spec` against its dataset and this machine: a job whose estimated peak memory is more
// than the machine's physical memory is refused rather than attempted (docs/run.md).
eng::Result<Plan> PlanForThisMachine(const eng::JobSpec& spec, const RunArgs& ra) {
  auto data = eng::ProbeJobDataset(spec.dataset, ra.data_root);
  if (!data.ok()) return data.status();
  eng::JobRunLimits limits;
  limits.compute_threads = ComputeThreadsFor(ra);
  auto resources = eng::PlanJob(spec, *data, limits);
  if (!resources.ok()) return resources.status();
  eng::JobBudget budget;
  budget.memory_bytes = PhysicalMemoryBytes();
  TRAININGD_RETURN_IF_ERROR(eng::CheckJobBudget(spec, *resources, budget));
  return Plan{*data, *resources};
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

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    RunUsage(stdout);
    return 0;
  }
  RunArgs ra;
  if (auto err = ParseArgs(args, /*allow_run_flags=*/true, ra)) {
    std::fprintf(stderr, "trainingd run: %s\n", err->c_str());
    RunUsage(stderr);
    return 2;
  }
  auto spec = LoadSpec(ra.spec_path);
  if (!spec) return 2;
  if (ra.checkpoint_dir.empty()) ra.checkpoint_dir = spec->name;
  if (auto plan = PlanForThisMachine(*spec, ra); !plan.ok()) {
    std::fprintf(stderr, "trainingd run: %s: %s\n", ra.spec_path.c_str(),
                 plan.status().message().c_str());
    return 1;
  }
  const int threads = ComputeThreadsFor(ra);
  eng::SetComputeThreads(threads);

  auto logger = eng::Logger::Stderr();
  logger->Info("Job " + spec->name + ": checkpoints and event files in " + ra.checkpoint_dir +
               " (" + std::to_string(threads) + " compute threads)");
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  eng::JobRunOptions o;
  o.checkpoint_dir = ra.checkpoint_dir;
  o.data_root = ra.data_root;
  o.stop = &g_stop;
  o.logger = logger;
  auto result = eng::RunJob(*spec, o);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!result.ok()) {
    std::fprintf(stderr, "trainingd run: %s\n", result.status().message().c_str());
    return 1;
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
      return 128 + (g_signal.load() ? g_signal.load() : SIGINT);
    case eng::JobResult::Outcome::kFailed:
      logger->Error(line);
      return 1;
  }
  return 1;
}

int ValidateCommand(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    RunUsage(stdout);
    return 0;
  }
  RunArgs ra;
  if (auto err = ParseArgs(args, /*allow_run_flags=*/false, ra)) {
    std::fprintf(stderr, "trainingd validate: %s\n", err->c_str());
    RunUsage(stderr);
    return 2;
  }
  auto spec = LoadSpec(ra.spec_path);
  if (!spec) return 2;
  // The model's shapes can only be checked against the data it will see: its headers and labels
  // are read, not its images.
  auto plan = PlanForThisMachine(*spec, ra);
  if (!plan.ok()) {
    std::fprintf(stderr, "trainingd validate: %s: %s\n", ra.spec_path.c_str(),
                 plan.status().message().c_str());
    return 1;
  }
  std::printf("%s: OK: job '%s', %zu layers, %lld parameters, dataset '%s' (%lld training, %lld "
              "validation, %lld test examples)\n%s",
              ra.spec_path.c_str(), spec->name.c_str(), spec->model.layers.size(),
              static_cast<long long>(plan->resources.num_parameters), spec->dataset.name.c_str(),
              static_cast<long long>(plan->data.train_examples),
              static_cast<long long>(plan->data.validation_examples),
              static_cast<long long>(plan->data.test_examples),
              eng::DescribeJobResources(plan->resources).c_str());
  return 0;
}

}  // namespace trainingd::daemon
