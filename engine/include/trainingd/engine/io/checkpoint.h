// Checkpoint files: one file holds a whole training state (named tensors, named opaque state
// records, the global step), in a little-endian binary format protected by CRC-32C checksums.
//
// The byte layout is documented in docs/checkpoints.md. Writers replace the target atomically
// (temp file, fsync, rename, directory fsync), so a reader sees either the old file or the new one.
// Readers validate every length before allocating and every checksum before trusting a byte: a
// truncated, extended, bit-flipped or foreign file is reported as DataLoss naming the file and the
// problem, never read out of bounds. The functions are thread-compatible: they keep no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

// What a checkpoint holds. Names must be non-empty, at most kMaxCheckpointNameBytes long and unique
// within `tensors` and within `states`; a tensor's data must have its shape's element count.
struct CheckpointData {
  int64_t global_step = 0;
  // Variables and optimizer slots by TensorFlow name ("dense/kernel", "dense/kernel/Adam").
  std::vector<std::pair<std::string, Tensor>> tensors;
  // Opaque records: RNG states ("dropout/rng"), the input position ("input_pipeline").
  std::vector<std::pair<std::string, std::vector<uint64_t>>> states;
};

// The format's limits; a file declaring more is rejected as corrupt before anything is allocated.
inline constexpr uint32_t kCheckpointFormatVersion = 1;
inline constexpr size_t kMaxCheckpointNameBytes = 4096;
inline constexpr int kMaxCheckpointTensorRank = 32;

// Writes `data` to `path`, replacing any existing file atomically. Returns InvalidArgument for data
// breaking the rules above (naming the tensor or record), ResourceExhausted (a full disk) or
// IoError naming the file and the failing system call otherwise. On failure the temp file is
// removed and `path` is unchanged.
Status WriteCheckpointFile(const std::string& path, const CheckpointData& data);

// The bytes WriteCheckpointFile writes for `data`; InvalidArgument as there.
Result<std::string> EncodeCheckpoint(const CheckpointData& data);

// Reads a file written by WriteCheckpointFile. NotFound when it does not exist, IoError when it
// cannot be read, DataLoss naming the file and the defect (bad magic, unsupported version,
// truncation, checksum mismatch, impossible length, duplicate name) otherwise.
Result<CheckpointData> ReadCheckpointFile(const std::string& path);

// ReadCheckpointFile's parse of a whole file's `bytes` already in memory; `name` stands for the
// path in messages. DataLoss as above. Reads no file (the checkpoint fuzzer calls it directly).
Result<CheckpointData> ParseCheckpoint(std::string_view bytes, const std::string& name);

// Replaces `path` with `contents` atomically: writes "<path>.tmp-<pid>-<n>" in the same directory,
// fsyncs and closes it, renames it over `path`, then fsyncs the directory so the rename is durable.
// On failure the error names the file and the system call -- ResourceExhausted for a full disk
// or quota, IoError otherwise -- and the temp file is removed. `path` is as it was, except when
// only the directory's fsync failed: then it holds `contents` already, and `*replaced` (if given)
// says which (true also on success).
Status WriteFileAtomically(const std::string& path, std::string_view contents,
                           bool* replaced = nullptr);

// Deletes the temp files WriteFileAtomically left in `dir` ("<name>.tmp-<pid>-<n>") when its
// process died part way through: those of processes that no longer exist. Returns how many.
int RemoveStaleTempFiles(const std::string& dir);

}  // namespace trainingd::engine
