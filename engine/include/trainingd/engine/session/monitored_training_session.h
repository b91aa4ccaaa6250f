// MonitoredTrainingSession: a MonitoredSession set up for training with TF's options and
// defaults (tf.train.MonitoredTrainingSession).
//
// The chief gets, in this order: chief_only_hooks, StepCounterHook (if a summary dir and
// log_step_count_steps > 0), SummarySaverHook (if a summary dir and save_summaries_steps/secs
// > 0), CheckpointSaverHook (if checkpoint_dir and save_checkpoint_secs/steps > 0), then hooks.
// It restores the latest checkpoint in checkpoint_dir or initialises. A non-chief gets only
// `hooks`, never restores or saves, and waits for the chief (WorkerSessionCreator).
// Summaries go to one event file in summary_dir (default: checkpoint_dir) and to any extra sinks;
// the writer is shared by the hooks and handed to user code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/hooks/best_checkpoint_hook.h"
#include "trainingd/engine/session/monitored_session.h"
#include "trainingd/engine/session/session.h"

namespace trainingd::engine {

struct MonitoredTrainingSessionOptions {
  bool is_chief = true;
  std::string checkpoint_dir;  // empty = no checkpoints, no restore
  std::vector<std::shared_ptr<SessionRunHook>> hooks;
  std::vector<std::shared_ptr<SessionRunHook>> chief_only_hooks;
  // At most one of each pair. Neither checkpoint option: every 600 s. Neither summary option:
  // every 100 steps. A value <= 0 turns the hook off.
  std::optional<double> save_checkpoint_secs;
  std::optional<int64_t> save_checkpoint_steps;
  std::optional<int64_t> save_summaries_steps;
  std::optional<double> save_summaries_secs;
  int64_t log_step_count_steps = 100;  // <= 0: no StepCounterHook
  // Accepted for TF compatibility and not used: the engine starts no threads of its own, so
  // Close() has nothing to wait for.
  double stop_grace_period_secs = 120;
  double max_wait_secs = 7200;      // non-chief: how long to wait for the chief
  double worker_poll_secs = 1;      // non-chief: how often to look (TF: 30 s, fixed)
  std::string summary_dir;          // empty = checkpoint_dir
  double summary_flush_secs = 120;  // the event file's flush period (TF's FileWriter)
  // Checkpoint retention (the CheckpointSaverHook's).
  int max_to_keep = 5;
  double keep_checkpoint_every_n_hours = 0;
  // At most this many checkpoints preserved by keep_checkpoint_every_n_hours stay on disk;
  // -1 = no cap (CheckpointManagerOptions::max_preserved).
  int max_preserved_checkpoints = -1;
  // Set (and among `hooks`): the chief's CheckpointSaverHook is attached to it, so the best
  // checkpoint it finds is kept (BestCheckpointHook::AttachSaver).
  std::shared_ptr<BestCheckpointHook> best_checkpoint;
  // Further places summaries go (the daemon's database and live stream).
  std::vector<std::shared_ptr<SummarySink>> summary_sinks;
  // Recovery, env, logger. If its summary_writer is set, the chief uses that writer (adding the
  // event file and summary_sinks to it), so hooks built beforehand can write through it too;
  // otherwise the chief builds one when there is a summary dir or a sink.
  MonitoredSessionOptions session_options;
};

// InvalidArgument for options given twice (secs and steps) or a non-chief's impossible wait;
// then anything MonitoredSession::Create returns.
Result<std::unique_ptr<MonitoredSession>> MonitoredTrainingSession(
    const SessionConfig& config, std::shared_ptr<const Datasets> datasets,
    MonitoredTrainingSessionOptions options);

}  // namespace trainingd::engine
