// session_bench: what the monitored session and its default hooks cost, against the bare step
// loop, on real Fashion-MNIST.
//
// Each round runs the same model twice, alternating (bare, monitored, bare, ...), from a fresh
// session with the same seed:
//   bare       Trainer::Step() in a loop
//   monitored  MonitoredTrainingSession with the default hooks of a job -- CheckpointSaverHook
//              every 1000 steps, SummarySaverHook every 100, StepCounterHook every 100,
//              LoggingTensorHook every 100 iterations -- writing real checkpoints and an event
//              file to a temporary directory
// Both warm up for 20 steps, then time --steps steps (default 1000, so the monitored loop pays
// for exactly one checkpoint, at step 1000). Prints one JSON object per round and mode, then the
// median overhead:
//   {"mode": "monitored", "round": 1, "examples_per_sec": 1234.5, "steps": 1000, ...}
//   {"summary": true, "bare_median": ..., "monitored_median": ..., "overhead_percent": 0.7}
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "trainingd/engine/dataset.h"
#include "trainingd/engine/hooks/logging_tensor_hook.h"
#include "trainingd/engine/monitored_training_session.h"
#include "trainingd/engine/parallel.h"
#include "trainingd/engine/trainer.h"

namespace eng = trainingd::engine;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string model = "cnn";
  int64_t batch = 50;
  int64_t steps = 1000;
  int rounds = 3;
  int threads = 2;
  std::string data = "/usr/share/datasets/fashion-mnist";
};

[[noreturn]] void Usage(const std::string& msg) {
  std::fprintf(stderr,
               "session_bench: %s\nusage: session_bench [--model cnn] [--batch 50] "
               "[--steps 1000] [--rounds 3] [--threads 2] [--data DIR]\n",
               msg.c_str());
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage("missing value for " + flag);
    const std::string v = argv[++i];
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    const bool numeric = end && *end == '\0' && n > 0;
    if (flag == "--model") {
      a.model = v;
    } else if (flag == "--data") {
      a.data = v;
    } else if (!numeric) {
      Usage("bad value '" + v + "' for " + flag);
    } else if (flag == "--batch") {
      a.batch = n;
    } else if (flag == "--steps") {
      a.steps = n;
    } else if (flag == "--rounds") {
      a.rounds = static_cast<int>(n);
    } else if (flag == "--threads") {
      a.threads = static_cast<int>(n);
    } else {
      Usage("unknown flag " + flag);
    }
  }
  return a;
}

// Drops log lines (the point is their cost, not their text), counting them.
class CountingLogger final : public eng::Logger {
 public:
  void Log(eng::LogSeverity, std::string_view) override { ++lines; }
  int lines = 0;
};

eng::SessionConfig Config(const Args& a) {
  eng::SessionConfig c;
  auto model = eng::PresetModel(a.model);
  if (!model.ok()) Usage(model.status().message());
  c.model = *model;
  c.optimizer.learning_rate = eng::LearningRateSchedule::Constant(1e-4f);
  c.batch_size = a.batch;
  c.seed = 42;
  return c;
}

constexpr int kWarmup = 20;

double Bare(const Args& a, const std::shared_ptr<const eng::Datasets>& data) {
  const eng::SessionConfig c = Config(a);
  auto t = eng::Trainer::Create(c.model, c.optimizer, data->train, data->num_classes,
                                {.batch_size = c.batch_size, .seed = c.seed});
  if (!t.ok()) Usage(t.status().message());
  for (int i = 0; i < kWarmup; ++i) (*t)->Step();
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < a.steps; ++i) (*t)->Step();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Monitored(const Args& a, const std::shared_ptr<const eng::Datasets>& data,
                 const std::string& dir, int* log_lines) {
  std::filesystem::remove_all(dir);
  auto logger = std::make_shared<CountingLogger>();
  eng::MonitoredTrainingSessionOptions o;
  o.checkpoint_dir = dir;
  o.save_checkpoint_steps = 1000;
  o.save_summaries_steps = 100;
  o.log_step_count_steps = 100;
  o.session_options.logger = logger;
  auto logging = eng::LoggingTensorHook::Create(
      std::vector<std::string>{"global_step", "loss", "accuracy"}, {.every_n_iter = 100});
  o.hooks = {*logging};
  auto ms = eng::MonitoredTrainingSession(Config(a), data, o);
  if (!ms.ok()) Usage(ms.status().message());
  for (int i = 0; i < kWarmup; ++i) {
    if (!(*ms)->Run({}).ok()) Usage("run failed");
  }
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < a.steps; ++i) {
    eng::Status st = (*ms)->Run({});
    if (!st.ok()) Usage(st.ToString());
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!(*ms)->Close().ok()) Usage("close failed");
  *log_lines = logger->lines;
  std::filesystem::remove_all(dir);
  return secs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  eng::SetComputeThreads(a.threads);
  auto loaded = eng::LoadMnistDirectory(a.data);
  if (!loaded.ok()) Usage(loaded.status().ToString());
  const auto data = std::make_shared<const eng::Datasets>(std::move(loaded).value());
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("session_bench." + std::to_string(getpid())))
          .string();
  std::vector<double> bare, monitored;
  for (int r = 1; r <= a.rounds; ++r) {
    for (const bool mon : {false, true}) {
      int lines = 0;
      const double secs = mon ? Monitored(a, data, dir, &lines) : Bare(a, data);
      const double eps = static_cast<double>(a.steps * a.batch) / secs;
      (mon ? monitored : bare).push_back(eps);
      std::printf(
          "{\"mode\": \"%s\", \"round\": %d, \"model\": \"%s\", \"batch\": %lld, \"threads\": %d, "
          "\"steps\": %lld, \"seconds\": %.3f, \"examples_per_sec\": %.1f, \"log_lines\": %d}\n",
          mon ? "monitored" : "bare", r, a.model.c_str(), static_cast<long long>(a.batch),
          a.threads, static_cast<long long>(a.steps), secs, eps, lines);
      std::fflush(stdout);
    }
  }
  const double b = Median(bare), m = Median(monitored);
  std::printf(
      "{\"summary\": true, \"bare_median\": %.1f, \"monitored_median\": %.1f, "
      "\"overhead_percent\": %.2f}\n",
      b, m, 100.0 * (b - m) / b);
  return 0;
}
