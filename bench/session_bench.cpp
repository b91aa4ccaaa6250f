// session_bench: what the monitored session and its default hooks cost, against the bare step
// loop, on real Fashion-MNIST.
//
// Two copies of the same model train side by side in one process, from the same seed:
//   bare       Trainer::Step() in a loop
//   monitored  MonitoredTrainingSession with the default hooks of a job -- CheckpointSaverHook
//              every 1000 steps, SummarySaverHook every 100, StepCounterHook every 100,
//              LoggingTensorHook every 100 iterations -- writing real checkpoints and an event
//              file to a temporary directory
// They alternate in chunks of --chunk steps, in ABBA order (bare+monitored, monitored+bare, ...),
// each chunk timed on its own, so that the machine's drift in speed (CPU steal on a shared VM
// swings it by 10-30% within minutes) and any advantage of going first or second in a pair hit
// both alike. Both warm up for 20 steps, then run --steps steps (default 2000, so
// the monitored loop pays for two checkpoints, at steps 1000 and 2000). Prints one JSON object per
// chunk pair, then the totals:
//   {"pair": 3, "bare_seconds": 2.9, "monitored_seconds": 2.95}
//   {"summary": true, "bare_examples_per_sec": ..., "monitored_examples_per_sec": ...,
//    "overhead_percent": 0.7, "median_pair_overhead_percent": 0.5}
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/session/hooks/logging_tensor_hook.h"
#include "trainingd/engine/session/monitored_training_session.h"
#include "trainingd/engine/train/trainer.h"

namespace eng = trainingd::engine;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string model = "cnn";
  int64_t batch = 50;
  int64_t steps = 2000;
  int64_t chunk = 50;
  int threads = 2;
  std::string data = "/usr/share/datasets/fashion-mnist";
};

[[noreturn]] void Usage(const std::string& msg) {
  std::fprintf(stderr,
               "session_bench: %s\nusage: session_bench [--model cnn] [--batch 50] "
               "[--steps 2000] [--chunk 50] [--threads 2] [--data DIR]\n",
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
    } else if (flag == "--chunk") {
      a.chunk = n;
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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
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
  std::filesystem::remove_all(dir);

  const eng::SessionConfig c = Config(a);
  auto bare = eng::Trainer::Create(c.model, c.optimizer, data->train, data->num_classes,
                                   {.batch_size = c.batch_size, .seed = c.seed});
  if (!bare.ok()) Usage(bare.status().message());

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
  auto ms = eng::MonitoredTrainingSession(c, data, o);
  if (!ms.ok()) Usage(ms.status().message());
  auto run = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      eng::Status st = (*ms)->Run({});
      if (!st.ok()) Usage(st.ToString());
    }
  };
  for (int i = 0; i < kWarmup; ++i) (*bare)->Step();
  run(kWarmup);

  double bare_total = 0, monitored_total = 0;
  std::vector<double> pair_overheads;
  int pair = 0;
  for (int64_t done = 0; done < a.steps; done += a.chunk) {
    const int64_t n = std::min(a.chunk, a.steps - done);
    // ABBA order: even pairs bare first, odd pairs monitored first, so that whatever favours the
    // first (or second) chunk of a pair favours both sides equally.
    double b = 0, m = 0;
    for (int k = 0; k < 2; ++k) {
      const bool monitored_now = (k == 0) == (pair % 2 == 1);
      const auto t0 = Clock::now();
      if (monitored_now) {
        run(n);
        m = SecondsSince(t0);
      } else {
        for (int64_t i = 0; i < n; ++i) (*bare)->Step();
        b = SecondsSince(t0);
      }
    }
    bare_total += b;
    monitored_total += m;
    pair_overheads.push_back(100.0 * (m - b) / b);
    std::printf(
        "{\"pair\": %d, \"steps\": %lld, \"bare_seconds\": %.4f, "
        "\"monitored_seconds\": %.4f}\n",
        ++pair, static_cast<long long>(n), b, m);
    std::fflush(stdout);
  }
  if (!(*ms)->Close().ok()) Usage("close failed");
  std::filesystem::remove_all(dir);
  const double steps = static_cast<double>(a.steps * a.batch);
  std::printf(
      "{\"summary\": true, \"model\": \"%s\", \"batch\": %lld, \"threads\": %d, "
      "\"steps\": %lld, \"chunk\": %lld, \"bare_examples_per_sec\": %.1f, "
      "\"monitored_examples_per_sec\": %.1f, \"overhead_percent\": %.2f, "
      "\"median_pair_overhead_percent\": %.2f, \"log_lines\": %d}\n",
      a.model.c_str(), static_cast<long long>(a.batch), a.threads, static_cast<long long>(a.steps),
      static_cast<long long>(a.chunk), steps / bare_total, steps / monitored_total,
      100.0 * (monitored_total - bare_total) / bare_total, Median(pair_overheads), logger->lines);
  return 0;
}
