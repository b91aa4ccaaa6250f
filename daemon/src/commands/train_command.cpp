#include "trainingd/daemon/commands/train_command.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "commands/local_plan.h"
#include "commands/stop_signal.h"
#include "trainingd/api/model_json.h"
#include "trainingd/daemon/service/flags.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_runner.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;
namespace fs = std::filesystem;
namespace {

struct Options {
  std::string model = "cnn";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::optional<int64_t> steps;       // unset: the preset's default
  std::optional<int64_t> batch_size;  // unset: the preset's default
  std::string optimizer = "adam";
  std::string precision = "float32";
  std::optional<double> learning_rate;  // unset: the preset's default
  std::optional<double> weight_decay;   // unset: the optimizer type's default
  bool cosine = false;                  // a cosine decay over the steps
  int64_t warmup_steps = 0;             // with --cosine
  std::optional<double> label_smoothing;
  int64_t random_crop = 0;  // padding; 0 = none
  bool flip = false;
  std::string normalize = "none";
  int threads = 2;
  uint64_t seed = 42;
  int64_t log_every = 100;
  int64_t eval_every = 1000;
  int64_t validation_size = 5000;
  std::string checkpoint_dir;  // "" = a temporary one, removed at the end
};

// The flags as a job spec: the preset, its optimizer and batch, logging and evaluation every so
// many steps, the final evaluation on the test split, and no event files.
eng::Result<eng::JobSpec> SpecFor(const Options& o) {
  eng::JobSpec s;
  s.name = "train-" + o.model;
  auto model = eng::PresetModel(o.model);
  if (!model.ok()) return eng::Status::InvalidArgument("--model: " + model.status().message());
  s.model_preset = o.model;
  s.model = *model;
  const bool cnn = o.model == "cnn";
  s.max_steps = o.steps.value_or(cnn ? 20000 : 10000);
  s.batch_size = o.batch_size.value_or(cnn ? 50 : 100);
  s.seed = o.seed;
  if (o.optimizer == "adam") {
    s.optimizer.type = eng::OptimizerOptions::Type::kAdam;
  } else if (o.optimizer == "momentum") {
    s.optimizer.type = eng::OptimizerOptions::Type::kMomentum;
  } else if (o.optimizer == "sgd") {
    s.optimizer.type = eng::OptimizerOptions::Type::kSgd;
  } else if (o.optimizer == "adamw") {
    s.optimizer.type = eng::OptimizerOptions::Type::kAdamW;
    s.optimizer.weight_decay = eng::OptimizerOptions::kDefaultAdamWWeightDecay;
  } else {
    return eng::Status::InvalidArgument("--optimizer: unknown '" + o.optimizer +
                                        "' (adam, adamw, momentum, sgd)");
  }
  if (o.weight_decay) s.optimizer.weight_decay = static_cast<float>(*o.weight_decay);
  if (o.label_smoothing) s.label_smoothing = static_cast<float>(*o.label_smoothing);
  s.augmentation.random_crop_padding = o.random_crop;
  s.augmentation.horizontal_flip = o.flip;
  if (o.normalize != "none" && o.normalize != "per_channel") {
    return eng::Status::InvalidArgument("--normalize: unknown '" + o.normalize +
                                        "' (none, per_channel)");
  }
  if (o.warmup_steps > 0 && !o.cosine) {
    return eng::Status::InvalidArgument("--warmup-steps: only with --cosine");
  }
  if (const auto precision = eng::PrecisionNamed(o.precision)) {
    s.precision = *precision;
  } else {
    return eng::Status::InvalidArgument("--precision: unknown '" + o.precision +
                                        "' (float32, mixed_bfloat16)");
  }
  const auto rate = static_cast<float>(o.learning_rate.value_or(cnn ? 1e-4 : 1e-3));
  s.optimizer.learning_rate = eng::LearningRateSchedule::Constant(rate);
  if (o.cosine) {
    if (o.warmup_steps >= s.max_steps) {
      return eng::Status::InvalidArgument("--warmup-steps: " + std::to_string(o.warmup_steps) +
                                          " is not less than the " + std::to_string(s.max_steps) +
                                          " steps");
    }
    // Warmup, then a decay to 0 at the last step.
    s.optimizer.learning_rate = eng::LearningRateSchedule::CosineDecay(
        rate, s.max_steps - o.warmup_steps, 0.0f, o.warmup_steps);
  }
  // The directory's name, for the logs; "data" when it is not a valid dataset name.
  s.dataset.name = fs::path(o.data).filename().string();
  if (s.dataset.name.empty() || s.dataset.name.size() > 100 || s.dataset.name == "." ||
      s.dataset.name == ".." ||
      s.dataset.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789._-") != std::string::npos) {
    s.dataset.name = "data";
  }
  s.dataset.validation_size = o.validation_size;
  s.dataset.normalize = o.normalize;
  eng::HooksSpec& h = s.hooks;
  h.checkpoint.enabled = !o.checkpoint_dir.empty();
  h.summary.enabled = false;
  h.logging.every_n_iter = o.log_every;
  h.evaluation.enabled = o.eval_every > 0;
  h.evaluation.trigger.every_steps = o.eval_every;
  h.final_eval.enabled = true;
  h.final_eval.split = "test";
  return s;
}

}  // namespace

int TrainCommand(const std::vector<std::string>& args) {
  Options o;
  Flags flags("train", "",
              "Trains a tutorial model in a monitored training session (like trainingd run).\n"
              "Defaults per model (steps, batch, learning rate): cnn 20000, 50, 1e-4;\n"
              "mlp and softmax 10000, 100, 1e-3.\n");
  flags
      .String("--model", "NAME", "a preset: cnn, mlp, softmax, resnet, resnet20/32/56 (cnn)",
              &o.model)
      .String("--data", "DIR", "a directory of MNIST-format IDX files (Fashion-MNIST)", &o.data)
      .Int("--steps", "global steps to train", 1, INT64_MAX, &o.steps)
      .Int("--batch-size", "examples per step", 1, INT64_MAX, &o.batch_size)
      .String("--optimizer", "NAME", "adam, adamw, momentum or sgd (adam)", &o.optimizer)
      .Positive("--learning-rate", "the learning rate", &o.learning_rate)
      .Positive("--weight-decay", "decoupled weight decay (adamw: 0.004; others: none)",
                &o.weight_decay)
      .Switch("--cosine", "a cosine decay of the learning rate to 0 over the steps", &o.cosine)
      .Int("--warmup-steps", "with --cosine: a linear warmup over the first N steps (0)", 0,
           INT64_MAX, &o.warmup_steps)
      .Positive("--label-smoothing", "the loss's label smoothing, in (0, 1) (none)",
                &o.label_smoothing)
      .Int("--random-crop", "augmentation: pad by N pixels and crop at random (0: none)", 0,
           eng::kMaxCropPadding, &o.random_crop)
      .Switch("--flip", "augmentation: mirror left to right at random", &o.flip)
      .String("--normalize", "HOW", "none or per_channel (none; docs/data.md)", &o.normalize)
      .String("--precision", "NAME",
              "float32 or mixed_bfloat16 (float32; docs/job-spec.md#precision)", &o.precision)
      .Int("--threads", "compute threads (2)", 1, 256, &o.threads)
      .Uint("--seed", "initialisation, dropout and data order (42)", &o.seed)
      .Int("--log-every", "log every N steps (100)", 1, INT64_MAX, &o.log_every)
      .Int("--eval-every", "evaluate on the validation split every N steps; 0 = never (1000)", 0,
           INT64_MAX, &o.eval_every)
      .Int("--validation-size", "examples held out of the training file (5000)", 0, INT64_MAX,
           &o.validation_size)
      .String("--checkpoint-dir", "DIR", "keep checkpoints there and resume from them (none)",
              &o.checkpoint_dir);
  return RunWithFlags(flags, args, [&]() -> int {
    auto spec = SpecFor(o);
    if (!spec.ok()) {
      std::fprintf(stderr, "trainingd train: %s\n", spec.status().message().c_str());
      return 2;
    }
    // Any directory of IDX files, not only one under the data root: checked against the spec
    // from its headers and labels first, so that a bad flag is refused before the images load,
    // then loaded here and handed over.
    eng::DatasetOptions dopt;
    dopt.validation_size = o.validation_size;
    auto info = eng::ProbeMnistDirectory(o.data, dopt);
    if (!info.ok()) {
      std::fprintf(stderr, "trainingd train: %s\n", info.status().ToString().c_str());
      return 1;
    }
    if (auto plan = PlanOnThisMachine(*spec, *info, o.threads); !plan.ok()) {
      std::fprintf(stderr, "trainingd train: %s\n", plan.status().message().c_str());
      return 2;
    }
    auto data = eng::LoadMnistDirectory(o.data, dopt);
    if (!data.ok()) {
      std::fprintf(stderr, "trainingd train: %s\n", data.status().ToString().c_str());
      return 1;
    }
    if (o.normalize == "per_channel") {
      if (eng::Status s = eng::NormalizePerChannel(&*data); !s.ok()) {
        std::fprintf(stderr, "trainingd train: --%s\n", s.message().c_str());
        return 2;
      }
    }
    // The session needs a directory for what it writes; without --checkpoint-dir, a temporary
    // one that nothing is written to (checkpoints and summaries are off).
    std::string dir = o.checkpoint_dir;
    if (dir.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "trainingd-train-XXXXXX").string();
      if (!mkdtemp(tmpl.data())) {
        std::perror("trainingd train: cannot create a temporary directory");
        return 1;
      }
      dir = tmpl;
    }
    eng::SetComputeThreads(o.threads);
    InstallStopSignals();
    eng::JobRunOptions run;
    run.checkpoint_dir = dir;
    run.datasets = std::make_shared<const eng::Datasets>(std::move(data).value());
    run.stop = &StopRequested();
    if (!o.checkpoint_dir.empty()) {
      run.on_model_input = [dir](const eng::ModelInput& input) {
        return api::WriteModelJson(dir, input);
      };
    }
    auto result = eng::RunJob(*spec, run);
    RestoreStopSignals();
    if (o.checkpoint_dir.empty()) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
    if (!result.ok()) {
      std::fprintf(stderr, "trainingd train: %s\n", result.status().message().c_str());
      return 2;
    }
    const auto& v = result->final_values;
    const auto value = [&](const char* k) { return v.count(k) ? v.at(k) : 0.0; };
    std::printf("final: step = %lld, test/loss = %.4f, test/accuracy = %.4f (%s: %s)\n",
                static_cast<long long>(result->global_step), value("test/loss"),
                value("test/accuracy"), eng::JobOutcomeName(result->outcome),
                result->reason.c_str());
    switch (result->outcome) {
      case eng::JobResult::Outcome::kCompleted:
        return 0;
      case eng::JobResult::Outcome::kStopped:
        return 130;
      case eng::JobResult::Outcome::kFailed:
        return 1;
    }
    return 1;
  });
}

}  // namespace trainingd::daemon
