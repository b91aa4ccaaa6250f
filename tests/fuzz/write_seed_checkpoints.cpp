// Writes the checkpoint fuzzer's seeds (tests/fuzz/corpus/checkpoint/) with the engine itself:
// tiny models captured after two training steps, so every record kind the trainer writes (weights,
// optimizer slots, RNG and input-pipeline states) is in the seeds, plus the empty checkpoint.
//
//   write_seed_checkpoints OUT_DIR
#include <cstdio>
#include <memory>
#include <string>

#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/train/trainer.h"
#include "trainingd/engine/train/trainer_checkpoint.h"

namespace engine = trainingd::engine;

namespace {

// Six 4x4 single-channel images of three classes.
engine::Split TinySplit() {
  engine::Split split;
  split.images = engine::Tensor(engine::Shape({6, 4, 4, 1}));
  for (int64_t i = 0; i < split.images.size(); ++i) {
    split.images[i] = static_cast<float>((i * 7) % 11) / 10.0f;
  }
  split.labels = {0, 1, 2, 0, 1, 2};
  return split;
}

bool Write(const std::string& path, const engine::ModelSpec& model,
           engine::OptimizerOptions::Type optimizer) {
  const engine::Split split = TinySplit();
  engine::OptimizerOptions options;
  options.type = optimizer;
  auto trainer = engine::Trainer::Create(model, options, split, 3, {.batch_size = 4, .seed = 1});
  if (!trainer.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), trainer.status().ToString().c_str());
    return false;
  }
  (*trainer)->Step();
  (*trainer)->Step();
  auto data = engine::CaptureTrainer(**trainer);
  engine::Status st = data.ok() ? engine::WriteCheckpointFile(path, *data) : data.status();
  if (!st.ok()) std::fprintf(stderr, "%s: %s\n", path.c_str(), st.ToString().c_str());
  return st.ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  using engine::LayerSpec;
  const engine::ModelSpec dense{
      {LayerSpec::Flatten(), LayerSpec::Dense(3, engine::Activation::kNone)}};
  const engine::ModelSpec cnn{
      {LayerSpec::Conv2d(2, 3, engine::Padding::kSame, engine::Activation::kRelu),
       LayerSpec::MaxPool2d(2, 2), LayerSpec::Flatten(), LayerSpec::Dropout(0.5f),
       LayerSpec::Dense(3, engine::Activation::kNone)}};
  using Type = engine::OptimizerOptions::Type;
  bool ok = Write(dir + "/dense_sgd.ckpt", dense, Type::kSgd) &&
            Write(dir + "/dense_momentum.ckpt", dense, Type::kMomentum) &&
            Write(dir + "/cnn_adam.ckpt", cnn, Type::kAdam);
  if (ok) {
    const engine::Status st = engine::WriteCheckpointFile(dir + "/empty.ckpt", {});
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.ToString().c_str());
    ok = st.ok();
  }
  return ok ? 0 : 1;
}
