// CheckpointManager: a directory of numbered checkpoints with TensorFlow's `checkpoint` state file
// and retention rules (tf.train.Saver / tf.train.CheckpointManager).
//
// Layout (docs/checkpoints.md): `<dir>/<basename>-<step>` per checkpoint, in our single-file format
// (checkpoint.h), and `<dir>/checkpoint`, a text file in TensorFlow's CheckpointState format naming
// the latest checkpoint and the kept ones, oldest first. Both are replaced atomically. Retention is
// TensorFlow's: beyond max_to_keep the oldest checkpoint is deleted, unless at least
// keep_checkpoint_every_n_hours have passed since the last one preserved, in which case it is
// preserved instead (left on disk for good and no longer tracked by the state file). The best
// checkpoint (best_checkpoint.h, MarkBest) is never deleted by retention: dropped from the state
// file, it stays on disk, "retained", until a better one replaces it.
//
// Not thread-safe: one owner drives a manager. Two managers must not share a directory.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/io/best_checkpoint.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::engine {

struct CheckpointManagerOptions {
  // Checkpoint files are "<basename>-<global step>". TensorFlow's default.
  std::string basename = "model.ckpt";
  // Checkpoints tracked before the oldest is deleted; >= 1. TensorFlow's default 5.
  int max_to_keep = 5;
  // When > 0, a checkpoint about to be deleted is kept for good if at least this many hours passed
  // since the last one so preserved (or since the manager first started in this directory).
  // 0 (default) = off.
  double keep_checkpoint_every_n_hours = 0;
  // When >= 0, at most this many preserved checkpoints stay on disk: preserving one more deletes
  // the oldest preserved one (a cap on what keep_checkpoint_every_n_hours can fill a disk with).
  // -1 (default) = no cap, TensorFlow's behaviour.
  int max_preserved = -1;
  // Seconds since the epoch, for timestamps and the preservation rule. Empty = the wall clock.
  std::function<double()> now_seconds;
};

class CheckpointManager {
 public:
  // Creates `directory` (and its parents) if missing and reads its state file, so numbering and
  // retention continue across restarts. A state file that cannot be read or parsed is rebuilt
  // from the "<basename>-<step>" files in the directory (the max_to_keep newest; TensorFlow would
  // see no checkpoint and start over), and a warning naming it, the problem and the outcome is
  // appended to `warnings` (if not null). Temp files of writes whose process died are deleted
  // (RemoveStaleTempFiles). Errors: InvalidArgument for bad options, IoError when the directory
  // cannot be created.
  static Result<std::unique_ptr<CheckpointManager>> Create(
      const std::string& directory, CheckpointManagerOptions options = {},
      std::vector<std::string>* warnings = nullptr);

  // Writes `data` as "<basename>-<data.global_step>" (replacing a checkpoint of the same step),
  // makes it the latest, writes the state file, then deletes what retention drops. Returns the
  // checkpoint's path. Errors from WriteCheckpointFile/WriteFileAtomically (ResourceExhausted on
  // a full disk); a failed Save leaves the tracked list, the state file and the latest checkpoint
  // unchanged, and no new file behind. A file retention cannot delete is left behind, untracked.
  Result<std::string> Save(const CheckpointData& data);

  // Reads the latest checkpoint; if it is missing, truncated or corrupt, appends a warning naming
  // the file and the problem to `warnings` (if not null) and tries the previous kept one, and so
  // on. NotFound when no checkpoint is tracked; DataLoss when none of them could be read.
  Result<CheckpointData> RestoreLatest(std::vector<std::string>* warnings);

  // Records the tracked checkpoint of `best.global_step` as the best (best.name is set here):
  // writes the best_checkpoint file, then deletes the former best if only being the best kept it.
  // NotFound when no tracked checkpoint has that step; errors of WriteBestCheckpoint (the former
  // record stays).
  Status MarkBest(BestCheckpoint best);
  // The best checkpoint, if one was marked (also by an earlier manager of this directory).
  const std::optional<BestCheckpoint>& best() const { return best_; }

  // Path of the latest checkpoint, if any (tf.train.latest_checkpoint).
  std::optional<std::string> LatestCheckpointPath() const;
  // Paths of the tracked checkpoints, oldest first; the last is the latest.
  std::vector<std::string> KeptCheckpoints() const;

  const std::string& directory() const { return directory_; }
  // "<directory>/checkpoint".
  std::string StateFilePath() const;

 private:
  struct Entry {
    std::string name;  // as written in the state file: relative to directory_, or absolute
    double timestamp = 0;
  };

  CheckpointManager(std::string directory, CheckpointManagerOptions options);
  double Now() const;
  std::string PathOf(const std::string& name) const;
  // Parses the state file into entries_/last_preserved_; a warning for anything unreadable.
  void LoadState(std::vector<std::string>* warnings);
  std::string FormatState(const std::vector<Entry>& entries, double last_preserved) const;

  std::string directory_;
  CheckpointManagerOptions options_;
  std::vector<Entry> entries_;  // oldest first; the last is the latest
  double last_preserved_ = 0;
  std::optional<BestCheckpoint> best_;
};

// A checkpoint on disk, as ListCheckpoints finds it.
struct CheckpointFileInfo {
  std::string path;
  int64_t global_step = 0;
  int64_t bytes = 0;
  double mtime = 0;  // seconds since the epoch
};

// The checkpoints the state file of `directory` tracks, oldest first (the latest last), with
// their sizes -- read-only: unlike CheckpointManager::Create it creates nothing, deletes nothing
// and may run while a manager in another thread or process writes the directory (a checkpoint
// its retention deletes meanwhile is left out). None when there is no state file; an unreadable
// one is read as the manager would rebuild it, from the "<basename>-<step>" files.
Result<std::vector<CheckpointFileInfo>> ListCheckpoints(const std::string& directory,
                                                        const std::string& basename = "model.ckpt");

// The global step of the latest checkpoint ListCheckpoints finds in `directory`; 0 if none (or
// the directory cannot be read).
int64_t LatestCheckpointStep(const std::string& directory);

// Deletes the checkpoints of `directory`, its state file and its best_checkpoint record, the two
// files first (a crash midway leaves no file naming missing checkpoints). Nothing else in the
// directory is touched. IoError naming the file that could not be deleted.
Status DeleteCheckpoints(const std::string& directory, const std::string& basename = "model.ckpt");

}  // namespace trainingd::engine
