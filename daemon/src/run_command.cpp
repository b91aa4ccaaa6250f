#include "trainingd/daemon/run_command.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "machine.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/daemon/flags.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/session/hooks/evaluation_hook.h"

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
  std::vector<std::string> specs;  // exactly one
  std::string checkpoint_dir;
  std::string data_root = "/usr/share/datasets";
  int threads = 0;
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
  if (run) f.Int("--threads", "compute threads (the machine's cores)", 1, 256, &ra.threads);
  return f;
}

// The one spec the command needs, or an error message.
bool HasSpec(const Flags& flags, const RunArgs& ra) {
  if (!ra.specs.empty()) return true;
  std::fprintf(stderr, "trainingd %s: no job spec given\n%s", flags.command().c_str(),
               flags.Usage().c_str());
  return false;
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

int Run(RunArgs& ra) {
  auto spec = LoadSpec(ra.specs[0]);
  if (!spec) return 2;
  if (ra.checkpoint_dir.empty()) ra.checkpoint_dir = spec->name;
  if (auto plan = PlanForThisMachine(*spec, ra); !plan.ok()) {
    std::fprintf(stderr, "trainingd run: %s: %s\n", ra.specs[0].c_str(),
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

int RunCommand(const std::vector<std::string>& args) {
  RunArgs ra;
  const Flags flags = RunFlags(/*run=*/true, ra);
  return RunWithFlags(flags, args, [&] { return HasSpec(flags, ra) ? Run(ra) : 2; });
}

int ValidateCommand(const std::vector<std::string>& args) {
  RunArgs ra;
  const Flags flags = RunFlags(/*run=*/false, ra);
  return RunWithFlags(flags, args, [&] { return HasSpec(flags, ra) ? Validate(ra) : 2; });
}

}  // namespace trainingd::daemon
