#include "trainingd/engine/session/monitored_training_session.h"

#include "trainingd/engine/session/hooks/checkpoint_saver_hook.h"
#include "trainingd/engine/session/hooks/step_counter_hook.h"
#include "trainingd/engine/session/hooks/summary_saver_hook.h"

namespace trainingd::engine {

Result<std::unique_ptr<MonitoredSession>> MonitoredTrainingSession(
    const SessionConfig& config, std::shared_ptr<const Datasets> datasets,
    MonitoredTrainingSessionOptions options) {
  if (options.save_checkpoint_secs && options.save_checkpoint_steps) {
    return Status::InvalidArgument(
        "save_checkpoint_secs and save_checkpoint_steps: give one, not both");
  }
  if (options.save_summaries_secs && options.save_summaries_steps) {
    return Status::InvalidArgument(
        "save_summaries_steps and save_summaries_secs: give one, not both");
  }
  if (!options.save_checkpoint_secs && !options.save_checkpoint_steps) {
    options.save_checkpoint_secs = 600;
  }
  if (!options.save_summaries_secs && !options.save_summaries_steps) {
    options.save_summaries_steps = 100;
  }
  MonitoredSessionOptions ms = options.session_options;
  if (!ms.env) ms.env = Env::Default();
  if (!ms.logger) ms.logger = Logger::Stderr();
  const SessionSource source{config, std::move(datasets), ms.env, ms.logger};

  if (!options.is_chief) {
    if (!(options.worker_poll_secs > 0) || !(options.max_wait_secs >= 0)) {
      return Status::InvalidArgument("worker_poll_secs must be > 0 and max_wait_secs >= 0");
    }
    ms.summary_writer = nullptr;
    auto creator = std::make_unique<WorkerSessionCreator>(
        source, WorkerSessionCreator::Options{.poll_secs = options.worker_poll_secs,
                                              .max_wait_secs = options.max_wait_secs,
                                              .ready = nullptr,
                                              .checkpoint_dir = options.checkpoint_dir});
    return MonitoredSession::Create(std::move(creator), options.hooks, ms);
  }

  const std::string summary_dir =
      options.summary_dir.empty() ? options.checkpoint_dir : options.summary_dir;
  std::shared_ptr<SummaryWriter> writer = ms.summary_writer;
  if (!summary_dir.empty() || !options.summary_sinks.empty()) {
    if (!writer) writer = std::make_shared<SummaryWriter>(ms.env);
    if (!summary_dir.empty()) {
      auto sink = EventFileSink::Create(
          summary_dir,
          {.flush_secs = options.summary_flush_secs, .filename_suffix = "", .env = ms.env});
      if (!sink.ok()) return sink.status();
      writer->AddSink(std::move(sink).value());
    }
    for (auto& s : options.summary_sinks) writer->AddSink(s);
  }
  ms.summary_writer = writer;

  std::vector<std::shared_ptr<SessionRunHook>> hooks = options.chief_only_hooks;
  if (writer && options.log_step_count_steps > 0) {
    auto h = StepCounterHook::Create(
        {.every_n_steps = options.log_step_count_steps, .summary_writer = writer});
    if (!h.ok()) return h.status();
    hooks.push_back(*h);
  }
  const bool summaries_on = options.save_summaries_steps ? *options.save_summaries_steps > 0
                                                         : *options.save_summaries_secs > 0;
  if (writer && summaries_on) {
    auto h = SummarySaverHook::Create({.save_steps = options.save_summaries_steps.value_or(0),
                                       .save_secs = options.save_summaries_secs.value_or(0),
                                       .summary_writer = writer});
    if (!h.ok()) return h.status();
    hooks.push_back(*h);
  }
  const bool checkpoints_on = options.save_checkpoint_steps ? *options.save_checkpoint_steps > 0
                                                            : *options.save_checkpoint_secs > 0;
  if (!options.checkpoint_dir.empty() && checkpoints_on) {
    CheckpointSaverHook::Options co;
    co.checkpoint_dir = options.checkpoint_dir;
    co.save_secs = options.save_checkpoint_secs.value_or(0);
    co.save_steps = options.save_checkpoint_steps.value_or(0);
    co.max_to_keep = options.max_to_keep;
    co.keep_checkpoint_every_n_hours = options.keep_checkpoint_every_n_hours;
    co.max_preserved = options.max_preserved_checkpoints;
    co.summary_writer = writer;
    auto h = CheckpointSaverHook::Create(std::move(co));
    if (!h.ok()) return h.status();
    hooks.push_back(*h);
    if (options.best_checkpoint) options.best_checkpoint->AttachSaver(*h);
  }
  hooks.insert(hooks.end(), options.hooks.begin(), options.hooks.end());

  CheckpointManagerOptions restore_options;
  restore_options.max_to_keep = options.max_to_keep;
  auto creator =
      std::make_unique<ChiefSessionCreator>(source, options.checkpoint_dir, restore_options);
  return MonitoredSession::Create(std::move(creator), std::move(hooks), ms);
}

}  // namespace trainingd::engine
