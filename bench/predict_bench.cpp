// predict_bench CHECKPOINT_DIR BATCH SECONDS [THREADS]: the engine's batch inference on a trained
// model (model.json and its latest checkpoint, as `trainingd export` and the model server load
// it): TrainedModel::Predict on batches of BATCH raw examples (uint8-range values for images, as
// /infer and the ONNX file take them) for SECONDS, with THREADS compute threads (default 2).
// Prints one JSON line: {"batch", "threads", "calls", "examples_per_sec", "p50_ms", "p99_ms"}
// (per call). bench/infer_bench.py runs it beside onnxruntime on the exported file.
// With PROFILE=1 in the environment it also prints where a call's time goes: each layer's share
// of Model::Forward on the same model and batch (Model::set_layer_timers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainingd/api/model_json.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/job/trained_model.h"
#include "trainingd/engine/nn/model.h"

namespace eng = trainingd::engine;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: predict_bench CHECKPOINT_DIR BATCH SECONDS [THREADS]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t batch = std::atoll(argv[2]);
  const double seconds = std::atof(argv[3]);
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  if (batch < 1 || seconds <= 0 || threads < 1) {
    std::fprintf(stderr, "predict_bench: BATCH >= 1, SECONDS > 0, THREADS >= 1\n");
    return 2;
  }
  eng::SetComputeThreads(threads);
  auto input = trainingd::api::ReadModelJson(dir);
  if (!input.ok()) {
    std::fprintf(stderr, "predict_bench: %s\n", input.status().ToString().c_str());
    return 1;
  }
  auto model = eng::LoadTrainedModel(dir, std::nullopt, *input);
  if (!model.ok()) {
    std::fprintf(stderr, "predict_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  eng::Rng rng(1);
  std::vector<float> raw(static_cast<size_t>(batch * model->example_size()));
  for (float& v : raw) v = static_cast<float>(rng.UniformInt(256));
  std::vector<float> probs(static_cast<size_t>(batch * model->num_classes()));
  std::vector<double> ms;
  using Clock = std::chrono::steady_clock;
  // One call to warm the buffers and the threads, not counted.
  if (!model->Predict(raw.data(), batch, nullptr, probs.data()).ok()) return 1;
  const auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    const auto t0 = Clock::now();
    if (!model->Predict(raw.data(), batch, nullptr, probs.data()).ok()) return 1;
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  if (const char* profile = std::getenv("PROFILE"); profile && std::string(profile) == "1") {
    // The same layers (weights do not change the cost), timed layer by layer.
    auto timed = eng::Model::Build(input->model, input->example_shape, input->num_classes, 1);
    if (!timed.ok()) return 1;
    (*timed)->PrepareForInference();  // as LoadTrainedModel does
    eng::Tensor x(input->example_shape.with_batch(batch));
    for (int64_t i = 0; i < x.size(); ++i) x[i] = raw[static_cast<size_t>(i)] / 255.0f;
    std::vector<double> forward((*timed)->layers().size()), backward(forward.size());
    (*timed)->Forward(x, eng::Mode::kEval);
    (*timed)->set_layer_timers(&forward, &backward);
    const int calls = std::max(10, static_cast<int>(ms.size() / 4));
    for (int i = 0; i < calls; ++i) (*timed)->Forward(x, eng::Mode::kEval);
    double sum = 0;
    for (double t : forward) sum += t;
    for (size_t i = 0; i < forward.size(); ++i) {
      std::fprintf(stderr, "%-16s %8.4f ms  %5.1f%%\n", (*timed)->layers()[i]->name().c_str(),
                   1e3 * forward[i] / calls, 100 * forward[i] / sum);
    }
  }
  std::sort(ms.begin(), ms.end());
  const auto pct = [&](double p) { return ms[std::min(ms.size() - 1, size_t(p * ms.size()))]; };
  std::printf(
      "{\"batch\": %lld, \"threads\": %d, \"calls\": %zu, \"examples_per_sec\": %.1f, "
      "\"p50_ms\": %.4f, \"p99_ms\": %.4f}\n",
      static_cast<long long>(batch), threads, ms.size(),
      static_cast<double>(ms.size()) * static_cast<double>(batch) / total, pct(0.5), pct(0.99));
  return 0;
}
