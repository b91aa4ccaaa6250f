#include "trainingd/engine/session/hooks/best_checkpoint_hook.h"

#include <cmath>
#include <filesystem>

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<BestCheckpointHook>> BestCheckpointHook::Create(Options options) {
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames({options.monitor}));
  if (options.monitor.find('/') == std::string::npos) {
    return Status::InvalidArgument(
        "monitor: must be an evaluation fetch \"<split>/<metric>\", got '" + options.monitor + "'");
  }
  if (options.mode != "min" && options.mode != "max") {
    return Status::InvalidArgument("mode: must be 'min' or 'max', got '" + options.mode + "'");
  }
  if (!(options.min_delta >= 0) || !std::isfinite(options.min_delta)) {
    return Status::InvalidArgument("min_delta must be a finite number >= 0");
  }
  auto timer = SecondOrStepTimer::Create(options.every_secs, options.every_steps);
  if (!timer.ok()) return timer.status();
  return std::shared_ptr<BestCheckpointHook>(
      new BestCheckpointHook(std::move(options), std::move(timer).value()));
}

std::optional<BestCheckpoint> BestCheckpointHook::best() const {
  return saver_ ? saver_->best() : std::nullopt;
}

Status BestCheckpointHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  if (!timer_.last_triggered_step()) timer_.UpdateLastTriggeredStep(session.global_step());
  return Status::Ok();
}

Status BestCheckpointHook::BeforeRun(RunContext& ctx, RunArgs& request) {
  requested_ = timer_.ShouldTriggerForStep(ctx.session().global_step() + 1);
  if (requested_) {
    request.fetches.push_back(options_.monitor);
    request.options.whole_state = true;  // a checkpoint may follow
  }
  return Status::Ok();
}

Status BestCheckpointHook::AfterRun(RunContext& ctx, const RunValues& values) {
  if (!requested_) return Status::Ok();
  Session& session = ctx.session();
  timer_.UpdateLastTriggeredStep(session.global_step());
  bool stop = false;
  TRAININGD_RETURN_IF_ERROR(Judge(session, values.get(options_.monitor), &stop));
  if (stop) ctx.RequestStop();
  return Status::Ok();
}

Status BestCheckpointHook::Judge(Session& session, double v, bool* stop) {
  judged_step_ = session.global_step();
  if (!saver_) return Status::Ok();
  std::optional<BestCheckpoint> best = saver_->best();
  // A record of another metric or mode (the spec changed between runs) is not comparable.
  const bool comparable = best && best->metric == options_.monitor && best->mode == options_.mode;
  if (!IsBetter(v, comparable ? std::optional<double>(best->value) : std::nullopt, options_.mode,
                options_.min_delta)) {
    return Status::Ok();
  }
  if (!session.state_whole()) {
    session.logger().Warning("Not keeping global step " + std::to_string(session.global_step()) +
                             " as the best checkpoint: its state is not whole on this rank.");
    return Status::Ok();
  }
  BestCheckpoint record;
  record.metric = options_.monitor;
  record.mode = options_.mode;
  record.value = v;
  TRAININGD_RETURN_IF_ERROR(saver_->SaveBest(session, std::move(record), stop));
  if (const auto now = saver_->best(); now && now->global_step == session.global_step()) {
    session.logger().Info("Best checkpoint: global step " + std::to_string(now->global_step) +
                          ", " + options_.monitor + " = " + internal::FormatValue(v) + ".");
  }
  return Status::Ok();
}

Status BestCheckpointHook::End(Session& session) {
  if (options_.at_end && judged_step_ != session.global_step()) {
    // Every rank fetches (the evaluation is collective); the session caches it per step.
    RunValues values;
    TRAININGD_RETURN_IF_ERROR(session.Fetch({options_.monitor}, &values));
    bool stop = false;
    TRAININGD_RETURN_IF_ERROR(Judge(session, values.get(options_.monitor), &stop));
  }
  if (!options_.restore_best || !completed_) return Status::Ok();
  Communicator* comm = options_.communicator && options_.communicator->size() > 1
                           ? options_.communicator.get()
                           : nullptr;
  // The chief decides and reads; the others take its bytes ("" = nothing to restore).
  std::string bytes;
  std::optional<BestCheckpoint> best = saver_ ? saver_->best() : std::nullopt;
  if (saver_ && best && best->global_step != session.global_step()) {
    const std::filesystem::path dir = saver_->checkpoint_dir();
    const std::filesystem::path file = !best->name.empty() && best->name.front() == '/'
                                           ? std::filesystem::path(best->name)
                                           : dir / best->name;
    auto data = ReadCheckpointFile(file.string());
    if (!data.ok()) return data.status();
    auto encoded = EncodeCheckpoint(*data);
    if (!encoded.ok()) return encoded.status();
    bytes = std::move(encoded).value();
  }
  if (comm) TRAININGD_RETURN_IF_ERROR(BroadcastString(*comm, bytes, 0));
  if (bytes.empty()) return Status::Ok();
  auto data = ParseCheckpoint(bytes, "the best checkpoint");
  if (!data.ok()) return data.status();
  TRAININGD_RETURN_IF_ERROR(session.Restore(*data));
  restored_step_ = data->global_step;
  if (best) {
    session.logger().Info("Restored the best checkpoint's state: global step " +
                          std::to_string(best->global_step) + ", " + best->metric + " = " +
                          internal::FormatValue(best->value) + " (restore_best).");
  }
  return Status::Ok();
}

}  // namespace trainingd::engine
