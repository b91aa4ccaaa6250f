// CheckpointSaverHook: saves checkpoints every N steps or seconds (tf.train.CheckpointSaverHook).
//
// Saves in AfterCreateSession at the current step (a fresh run writes model.ckpt-0, every restart
// saves again), then after a run whose global step triggers the timer, and in End() if the final
// step was not saved yet. Each save: logs "Saving checkpoints for N into DIR/model.ckpt.", calls
// the listeners' BeforeSave, writes the checkpoint (CheckpointManager: atomic, retention), adds a
// CHECKPOINT session-log event to the summary writer, calls the listeners' AfterSave -- any of
// them returning true requests a stop. Unlike TF, a model whose latest loss was NaN or infinite
// is never saved (a warning says so), so the latest checkpoint stays a good one.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

// Code that runs around every save (tf.train.CheckpointSaverListener).
class CheckpointSaverListener {
 public:
  virtual ~CheckpointSaverListener() = default;
  virtual Status Begin() { return Status::Ok(); }
  virtual Status BeforeSave(Session& /*session*/, int64_t /*global_step*/) { return Status::Ok(); }
  // Returning true requests a stop.
  virtual Result<bool> AfterSave(Session& /*session*/, int64_t /*global_step*/) { return false; }
  virtual Status End(Session& /*session*/, int64_t /*global_step*/) { return Status::Ok(); }
};

class CheckpointSaverHook final : public SessionRunHook {
 public:
  struct Options {
    std::string checkpoint_dir;  // required
    // Exactly one > 0 (TF's save_secs / save_steps).
    double save_secs = 0;
    int64_t save_steps = 0;
    std::string checkpoint_basename = "model.ckpt";
    int max_to_keep = 5;
    double keep_checkpoint_every_n_hours = 0;
    int max_preserved = -1;  // CheckpointManagerOptions::max_preserved
    std::vector<std::shared_ptr<CheckpointSaverListener>> listeners;
    std::shared_ptr<SummaryWriter> summary_writer;  // optional: CHECKPOINT events
  };
  // InvalidArgument for a missing directory, both or neither of save_secs/save_steps, or bad
  // retention options.
  static Result<std::shared_ptr<CheckpointSaverHook>> Create(Options options);

  std::string name() const override { return "CheckpointSaverHook"; }
  // Opens the directory (creating it) and reads its state, so numbering and retention continue.
  Status Begin() override;
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;
  Status End(Session& session) override;

  // Saves a checkpoint of the session's global step unless this hook just saved that step, then
  // marks it as the best (CheckpointManager::MarkBest; BestCheckpointHook calls it). Nothing is
  // saved or marked for a diverged model. *stop = a listener asked to stop. FailedPrecondition
  // before Begin.
  Status SaveBest(Session& session, BestCheckpoint best, bool* stop);
  // The directory's best checkpoint, if one was marked (after Begin).
  std::optional<BestCheckpoint> best() const;
  const std::string& checkpoint_dir() const { return options_.checkpoint_dir; }

  // The checkpoints kept, oldest first (after Begin).
  std::vector<std::string> KeptCheckpoints() const;
  // Global step of the latest save by this hook.
  std::optional<int64_t> last_saved_step() const { return timer_.last_triggered_step(); }

 private:
  CheckpointSaverHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}
  // Saves at the session's global step; *stop = a listener asked to stop.
  Status Save(Session& session, bool* stop);

  Options options_;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  std::unique_ptr<CheckpointManager> manager_;
  std::optional<int64_t> last_saved_step_;  // by any save, periodic or best
  std::vector<std::string> open_warnings_;
};

}  // namespace trainingd::engine
