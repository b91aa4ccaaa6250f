// The best checkpoint of a checkpoint directory: the one whose evaluation of a monitored metric
// ("validation/loss", min) was the best so far (docs/checkpoints.md#the-best-checkpoint).
//
// It is recorded in "<dir>/best_checkpoint", a small text file beside TensorFlow's `checkpoint`
// state file (which TensorFlow's parser must still read, so it gets no new field):
//
//   model_checkpoint_path: "model.ckpt-500"
//   global_step: 500
//   metric: "validation/loss"
//   mode: "min"
//   value: 0.2831
//   retained: false
//
// `retained: true` means max_to_keep dropped it from the state file and it stays on disk only
// because it is the best (so it goes when a better one comes). The file is replaced atomically
// and always names a checkpoint on disk: CheckpointManager writes it after the checkpoint and
// deletes a former best only after it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

struct BestCheckpoint {
  std::string name;  // as in the file: relative to the directory, or absolute
  int64_t global_step = 0;
  std::string metric;        // the monitored fetch, "validation/loss"
  std::string mode = "min";  // "min" or "max"
  double value = 0;          // the metric at global_step
  bool retained = false;     // kept past max_to_keep only because it is the best
};

// "best_checkpoint".
const char* BestCheckpointFileName();

// The record in `directory`: none when there is no file; DataLoss naming the line when it cannot
// be parsed; IoError when it cannot be read.
Result<std::optional<BestCheckpoint>> ReadBestCheckpoint(const std::string& directory);

// Replaces the record in `directory` atomically (WriteFileAtomically).
Status WriteBestCheckpoint(const std::string& directory, const BestCheckpoint& best);

// Whether `value` is better than `best` in `mode` ("max": higher; otherwise lower) by more than
// `min_delta`. NaN is never better; anything not NaN is better than no best.
bool IsBetter(double value, const std::optional<double>& best, const std::string& mode,
              double min_delta);

}  // namespace trainingd::engine
