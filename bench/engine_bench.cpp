// engine_bench: training and inference throughput of the tutorial presets on real Fashion-MNIST,
// and of the resnet20 preset on CIFAR-10-shaped data (32x32x3, 10 classes; random pixels and
// labels, fixed seed: the speed of a step does not depend on the values).
//
// Prints one JSON object per line (the format bench/pytorch_reference.py prints too, so
// bench/compare.py can put them side by side):
//   {"impl": "trainingd", "model": "cnn", "mode": "train", "batch": 50, "threads": 2,
//    "examples_per_sec": 1234.5, "gflops": 101.2, "steps": 300, "seconds": 10.0}
// --profile adds a per-layer breakdown of the training step on stderr. --precision lists the
// training arithmetics to measure at each batch size, in order ("float32,mixed_bfloat16,
// float32,mixed_bfloat16" alternates them); a row names its own when it is not float32.
// --bf16-kernels sets the kernels of mixed precision's products (gemm.h; the same bits whichever).
// --fusion off runs every relu layer on its own (Model::set_fusion; the same bits either way).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "nn/gemm.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/nn/conv2d_layer.h"
#include "trainingd/engine/train/trainer.h"

namespace eng = trainingd::engine;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::vector<std::string> models{"cnn", "mlp", "softmax"};
  std::vector<int64_t> batches{50, 100, 256};
  int threads = 2;
  double seconds = 10;
  int64_t infer_batch = 1000;
  std::string data = "/usr/share/datasets/fashion-mnist";
  bool profile = false;
  // One per convolution, in order; the last one for the rest.
  std::vector<eng::ConvAlgorithm> conv = {eng::ConvAlgorithm::kAuto};
  std::vector<eng::Precision> precisions = {eng::Precision::kFloat32};
  bool fusion = true;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

[[noreturn]] void Usage(const char* msg) {
  std::fprintf(stderr,
               "engine_bench: %s\nusage: engine_bench [--models cnn,mlp,softmax,resnet20] "
               "[--batches 50,100,256] [--threads 2] [--seconds 10] [--infer-batch 1000] "
               "[--data DIR] [--profile] [--conv auto|im2col|winograd|direct[,...]] "
               "[--precision float32|mixed_bfloat16[,...]] [--bf16-kernels "
               "instructions|fma|emulated] [--fusion on|off]\n",
               msg);
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
      return argv[++i];
    };
    try {
      if (flag == "--models")
        a.models = Split(value());
      else if (flag == "--batches") {
        a.batches.clear();
        for (const auto& b : Split(value())) a.batches.push_back(std::stoll(b));
      } else if (flag == "--threads")
        a.threads = std::stoi(value());
      else if (flag == "--seconds")
        a.seconds = std::stod(value());
      else if (flag == "--infer-batch")
        a.infer_batch = std::stoll(value());
      else if (flag == "--data")
        a.data = value();
      else if (flag == "--profile")
        a.profile = true;
      else if (flag == "--conv") {
        a.conv.clear();
        std::stringstream list(value());
        for (std::string v; std::getline(list, v, ',');) {
          bool known = false;
          for (eng::ConvAlgorithm c :
               {eng::ConvAlgorithm::kAuto, eng::ConvAlgorithm::kIm2col,
                eng::ConvAlgorithm::kWinograd, eng::ConvAlgorithm::kDirect}) {
            if (v == eng::ConvAlgorithmName(c)) {
              a.conv.push_back(c);
              known = true;
            }
          }
          if (!known) Usage("--conv takes auto, im2col, winograd or direct, one per convolution");
        }
        if (a.conv.empty()) Usage("--conv takes auto, im2col, winograd or direct");
      } else if (flag == "--precision") {
        a.precisions.clear();
        for (const std::string& p : Split(value())) {
          const auto precision = eng::PrecisionNamed(p);
          if (!precision) Usage("--precision takes float32 or mixed_bfloat16");
          a.precisions.push_back(*precision);
        }
        if (a.precisions.empty()) Usage("--precision takes float32 or mixed_bfloat16");
      } else if (flag == "--bf16-kernels") {
        namespace in = eng::internal;
        const std::string k = value();
        in::Bf16Kernels kernels = in::Bf16Kernels::kEmulated;
        if (k == "instructions") {
          kernels = in::Bf16Kernels::kInstructions;
        } else if (k == "fma") {
          kernels = in::Bf16Kernels::kFloatFma;
        } else if (k != "emulated") {
          Usage("--bf16-kernels takes instructions, fma or emulated");
        }
        if (!in::SetGemmBf16Kernels(kernels)) Usage("this build has no such bfloat16 kernels");
      } else if (flag == "--fusion") {
        const std::string v = value();
        if (v != "on" && v != "off") Usage("--fusion takes on or off");
        a.fusion = v == "on";
      } else
        Usage(("unknown flag " + flag).c_str());
    } catch (const std::exception&) {
      Usage(("bad value for " + flag).c_str());
    }
  }
  if (a.threads < 1 || a.seconds <= 0 || a.infer_batch < 1) Usage("values must be positive");
  return a;
}

// The tutorials' optimizers: softmax and MLP use plain gradient descent, the CNN Adam 1e-4; the
// ResNet He et al.'s momentum 0.9 at 0.1 with weight decay 1e-4 (bench/pytorch_reference.py
// uses the same).
eng::OptimizerOptions TutorialOptimizer(const std::string& model) {
  eng::OptimizerOptions o;
  if (model == "resnet20") {
    o.type = eng::OptimizerOptions::Type::kMomentum;
    o.learning_rate = eng::LearningRateSchedule::Constant(0.1f);
    o.momentum = 0.9f;
    o.weight_decay = 1e-4f;
  } else if (model == "cnn") {
    o.type = eng::OptimizerOptions::Type::kAdam;
    o.learning_rate = eng::LearningRateSchedule::Constant(1e-4f);
  } else {
    o.type = eng::OptimizerOptions::Type::kSgd;
    o.learning_rate = eng::LearningRateSchedule::Constant(model == "softmax" ? 0.5f : 0.01f);
  }
  return o;
}

void PrintRow(const char* model, const char* mode, int64_t batch, int threads, double ex_per_sec,
              double gflops, int64_t steps, double seconds,
              eng::Precision precision = eng::Precision::kFloat32) {
  // float32 rows carry no "precision", as before there was a choice.
  const std::string precision_field =
      precision == eng::Precision::kFloat32
          ? ""
          : std::string(", \"precision\": \"") + eng::PrecisionName(precision) + "\"";
  std::printf(
      "{\"impl\": \"trainingd\", \"model\": \"%s\", \"mode\": \"%s\", \"batch\": %lld, "
      "\"threads\": %d, \"examples_per_sec\": %.1f, \"gflops\": %.2f, \"steps\": %lld, "
      "\"seconds\": %.3f%s}\n",
      model, mode, static_cast<long long>(batch), threads, ex_per_sec, gflops,
      static_cast<long long>(steps), seconds, precision_field.c_str());
  std::fflush(stdout);
}

void PrintProfile(const eng::Trainer& t, const std::string& model, int64_t batch) {
  const eng::LayerTimes& lt = t.layer_times();
  const double steps = static_cast<double>(lt.steps);
  double total = lt.loss_seconds + lt.optimizer_seconds + lt.input_seconds;
  for (size_t i = 0; i < lt.forward_seconds.size(); ++i) {
    total += lt.forward_seconds[i] + lt.backward_seconds[i];
  }
  std::fprintf(stderr, "profile %s batch %lld: ms per step (share)\n", model.c_str(),
               static_cast<long long>(batch));
  auto row = [&](const std::string& name, double sec) {
    std::fprintf(stderr, "  %-24s %8.3f  (%4.1f%%)\n", name.c_str(), 1e3 * sec / steps,
                 100 * sec / total);
  };
  const auto& layers = t.model().layers();
  for (size_t i = 0; i < layers.size(); ++i)
    row(layers[i]->name() + " forward", lt.forward_seconds[i]);
  for (size_t i = layers.size(); i-- > 0;)
    row(layers[i]->name() + " backward", lt.backward_seconds[i]);
  row("loss", lt.loss_seconds);
  row("optimizer", lt.optimizer_seconds);
  row("input", lt.input_seconds);
  std::fprintf(stderr, "  %-24s %8.3f\n", "total", 1e3 * total / steps);
}

// Applies --conv to the model's convolutions and says on stderr what each one uses.
void SetConvAlgorithm(const eng::Model& model, const std::vector<eng::ConvAlgorithm>& algorithms,
                      bool report) {
  size_t i = 0;
  for (const auto& layer : model.layers()) {
    auto* conv = dynamic_cast<eng::Conv2dLayer*>(layer.get());
    if (conv == nullptr) continue;
    conv->set_algorithm(algorithms[std::min(i++, algorithms.size() - 1)]);
    if (report)
      std::fprintf(stderr, "%s: %s\n", conv->name().c_str(),
                   eng::ConvAlgorithmName(conv->algorithm()));
  }
}

// CIFAR-10's shape: n images [32, 32, 3] of uniform pixels in [0, 1), labels in [0, 10).
eng::Split CifarShapedSplit(int64_t n) {
  eng::Split s;
  s.images.Resize(eng::Shape{n, 32, 32, 3});
  uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  };
  for (int64_t i = 0; i < s.images.size(); ++i)
    s.images.data()[i] = static_cast<float>(next() & 0xffff) / 65536.0f;
  s.labels.resize(static_cast<size_t>(n));
  for (auto& l : s.labels) l = static_cast<int32_t>(next() % 10);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  eng::SetComputeThreads(args.threads);
  if (!args.fusion) std::fprintf(stderr, "fusion: off\n");
  std::fprintf(stderr, "gemm: %s kernels, bfloat16 on %s\n", eng::internal::GemmKernels(),
               eng::internal::Bf16KernelsName(eng::internal::GemmBf16Kernels()));
  auto data = eng::LoadMnistDirectory(args.data, {});
  if (!data.ok()) {
    std::fprintf(stderr, "engine_bench: %s\n", data.status().ToString().c_str());
    return 1;
  }
  const eng::Split cifar_shaped = CifarShapedSplit(2560);
  for (const std::string& model : args.models) {
    const bool resnet = model == "resnet20";
    const eng::Split& train = resnet ? cifar_shaped : data->train;
    const int num_classes = resnet ? 10 : data->num_classes;
    auto spec = resnet ? eng::PresetModel(model, train.example_shape(), num_classes)
                       : eng::PresetModel(model);
    if (!spec.ok()) {
      std::fprintf(stderr, "engine_bench: %s\n", spec.status().message().c_str());
      return 2;
    }
    for (int64_t batch : args.batches) {
      for (size_t pi = 0; pi < args.precisions.size(); ++pi) {
        const eng::Precision precision = args.precisions[pi];
        auto trainer =
            eng::Trainer::Create(*spec, TutorialOptimizer(model), train, num_classes,
                                 {.batch_size = batch, .seed = 42, .precision = precision});
        if (!trainer.ok()) {
          std::fprintf(stderr, "engine_bench: %s\n", trainer.status().ToString().c_str());
          return 1;
        }
        eng::Trainer& t = **trainer;
        t.model().set_fusion(args.fusion);
        SetConvAlgorithm(t.model(), args.conv, batch == args.batches.front() && pi == 0);
        // Warm up: buffers allocated, caches and thread pools hot.
        const auto warm_until =
            Clock::now() + std::chrono::duration<double>(std::min(1.0, args.seconds / 4));
        for (int i = 0; i < 3 || Clock::now() < warm_until; ++i) (void)t.Step();
        if (args.profile) t.EnableProfiling(true);
        int64_t steps = 0;
        const auto t0 = Clock::now();
        const auto until = t0 + std::chrono::duration<double>(args.seconds);
        do {
          (void)t.Step();
          ++steps;
        } while (Clock::now() < until);
        const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
        const double eps = static_cast<double>(steps * batch) / sec;
        PrintRow(model.c_str(), "train", batch, args.threads, eps,
                 eps * static_cast<double>(t.model().TrainingFlopsPerExample()) * 1e-9, steps, sec,
                 precision);
        if (args.profile) {
          PrintProfile(t, model, batch);
          t.EnableProfiling(false);
        }
      }
    }
    if (model == "cnn") {
      auto trainer = eng::Trainer::Create(*spec, TutorialOptimizer(model), data->train,
                                          data->num_classes, {50, 42});
      eng::Trainer& t = **trainer;
      SetConvAlgorithm(t.model(), args.conv, false);
      eng::Tensor images;
      std::vector<int32_t> labels;
      const int64_t n = std::min<int64_t>(args.infer_batch, data->test.size());
      eng::CopyRange(data->test, 0, n, images, labels);
      for (int i = 0; i < 2; ++i) (void)t.model().Forward(images, eng::Mode::kEval);
      int64_t steps = 0;
      const auto t0 = Clock::now();
      const auto until = t0 + std::chrono::duration<double>(args.seconds);
      do {
        (void)t.model().Forward(images, eng::Mode::kEval);
        ++steps;
      } while (Clock::now() < until);
      const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
      const double eps = static_cast<double>(steps * n) / sec;
      PrintRow(model.c_str(), "infer", n, args.threads, eps,
               eps * static_cast<double>(t.model().ForwardFlopsPerExample()) * 1e-9, steps, sec);
    }
  }
  return 0;
}
