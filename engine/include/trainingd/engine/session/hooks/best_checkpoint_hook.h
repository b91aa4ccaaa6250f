// BestCheckpointHook: keeps the checkpoint of the best evaluation of one metric (Keras'
// ModelCheckpoint(save_best_only) and EarlyStopping(restore_best_weights) in one hook;
// docs/hooks.md#bestcheckpointhook).
//
// Every N steps or seconds (the same timer as the EvaluationHook or EarlyStoppingHook it follows,
// so the monitored fetch is one shared pass) it fetches `monitor` after the step; on every rank,
// because evaluations are collective, and with a whole-state vote, because a checkpoint may
// follow. On the chief, a value better than the directory's best so far (IsBetter with mode and
// min_delta; the best survives restarts in the best_checkpoint file) makes the attached
// CheckpointSaverHook save a checkpoint of that step, unless it just did, and mark it as the best
// (CheckpointManager::MarkBest): it is then kept past max_to_keep until a better one comes.
//
// With at_end, End judges an evaluation of the last step too (unless the timer just did), before
// anything else. With restore_best, when the run completed (SetRunCompleted, before the session
// closes), its End puts the best checkpoint's whole state back into the session (global step
// included), so the end-of-run hooks after it (the final evaluation) see the best model. The
// checkpoints are written before that and are not changed: the latest stays the run's true last
// state, so a resume is exact. A data-parallel chief reads the best checkpoint and hands it to
// every rank.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "trainingd/engine/dist/communicator.h"
#include "trainingd/engine/io/best_checkpoint.h"
#include "trainingd/engine/session/hooks/checkpoint_saver_hook.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class BestCheckpointHook final : public SessionRunHook {
 public:
  struct Options {
    std::string monitor = "validation/loss";  // a "<split>/<metric>" fetch
    std::string mode = "min";                 // "min" or "max"
    double min_delta = 0;                     // >= 0
    // Exactly one > 0.
    int64_t every_steps = 0;
    double every_secs = 0;
    // Also judge an evaluation when the run ends, unless its last step was just judged (as
    // EvaluationHook's at_end; shared with its pass).
    bool at_end = false;
    bool restore_best = false;
    // Data-parallel ranks (null or size 1 = one process): the restore's broadcast.
    std::shared_ptr<Communicator> communicator;
  };
  static Result<std::shared_ptr<BestCheckpointHook>> Create(Options options);

  // The chief's checkpoint hook, which writes and marks the best; a rank without one only takes
  // part in the evaluations and the restore.
  void AttachSaver(std::shared_ptr<CheckpointSaverHook> saver) { saver_ = std::move(saver); }
  // Whether the run completed (not stopped, not failed): restore_best applies only then.
  void SetRunCompleted(bool completed) { completed_ = completed; }

  std::string name() const override { return "BestCheckpointHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;
  Status End(Session& session) override;

  const std::string& monitor() const { return options_.monitor; }
  // The best so far (the chief's), as recorded.
  std::optional<BestCheckpoint> best() const;
  // The global step whose state End restored, if it did.
  std::optional<int64_t> restored_step() const { return restored_step_; }

 private:
  BestCheckpointHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}

  Options options_;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  std::shared_ptr<CheckpointSaverHook> saver_;
  // Judges `value` of the session's step: the chief saves and marks a better one.
  Status Judge(Session& session, double value, bool* stop);

  bool requested_ = false;
  std::optional<int64_t> judged_step_;
  bool completed_ = false;
  std::optional<int64_t> restored_step_;
};

}  // namespace trainingd::engine
