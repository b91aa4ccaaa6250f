#include "trainingd/engine/session/hooks/checkpoint_saver_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<CheckpointSaverHook>> CheckpointSaverHook::Create(Options options) {
  if (options.checkpoint_dir.empty()) {
    return Status::InvalidArgument("checkpoint_dir: required by CheckpointSaverHook");
  }
  auto timer = SecondOrStepTimer::Create(options.save_secs, options.save_steps);
  if (!timer.ok()) return timer.status();
  if (options.max_to_keep < 1) {
    return Status::InvalidArgument("max_to_keep must be >= 1, got " +
                                   std::to_string(options.max_to_keep));
  }
  std::shared_ptr<CheckpointSaverHook> hook(
      new CheckpointSaverHook(std::move(options), std::move(timer).value()));
  return hook;
}

Status CheckpointSaverHook::Begin() {
  CheckpointManagerOptions mo;
  mo.basename = options_.checkpoint_basename;
  mo.max_to_keep = options_.max_to_keep;
  mo.keep_checkpoint_every_n_hours = options_.keep_checkpoint_every_n_hours;
  mo.max_preserved = options_.max_preserved;
  mo.now_seconds = [this] { return env_->NowSeconds(); };
  auto manager = CheckpointManager::Create(options_.checkpoint_dir, mo, &open_warnings_);
  if (!manager.ok()) return manager.status();
  manager_ = std::move(manager).value();
  for (auto& l : options_.listeners) TRAININGD_RETURN_IF_ERROR(l->Begin());
  return Status::Ok();
}

Status CheckpointSaverHook::AfterCreateSession(Session& session, Coordinator& coordinator) {
  internal::UseSessionEnv(session, env_, timer_);
  for (const std::string& w : open_warnings_) session.logger().Warning(w);
  open_warnings_.clear();
  bool stop = false;
  TRAININGD_RETURN_IF_ERROR(Save(session, &stop));
  timer_.UpdateLastTriggeredStep(session.global_step());
  if (stop) coordinator.RequestStop();
  return Status::Ok();
}

Status CheckpointSaverHook::BeforeRun(RunContext& ctx, RunArgs& request) {
  // A data-parallel step leaves each rank with only its own part of the optimizer slots; the step
  // before a save makes them whole on every rank.
  if (timer_.ShouldTriggerForStep(ctx.session().global_step() + 1)) {
    request.options.whole_state = true;
  }
  return Status::Ok();
}

Status CheckpointSaverHook::AfterRun(RunContext& ctx, const RunValues&) {
  const int64_t step = ctx.session().global_step();
  if (!timer_.ShouldTriggerForStep(step)) return Status::Ok();
  // Data-parallel, when the save_secs deadline passed during the step: its state is not whole,
  // so the next step asks for it (BeforeRun) and the save follows that one.
  if (!ctx.session().state_whole()) return Status::Ok();
  timer_.UpdateLastTriggeredStep(step);
  bool stop = false;
  TRAININGD_RETURN_IF_ERROR(Save(ctx.session(), &stop));
  if (stop) ctx.RequestStop();
  return Status::Ok();
}

Status CheckpointSaverHook::End(Session& session) {
  const int64_t step = session.global_step();
  if (timer_.last_triggered_step() != step && last_saved_step_ != step) {
    bool stop = false;
    TRAININGD_RETURN_IF_ERROR(Save(session, &stop));
    timer_.UpdateLastTriggeredStep(step);
  }
  for (auto& l : options_.listeners) TRAININGD_RETURN_IF_ERROR(l->End(session, step));
  return Status::Ok();
}

Status CheckpointSaverHook::Save(Session& session, bool* stop) {
  const int64_t step = session.global_step();
  if (session.diverged()) {
    session.logger().Warning(
        "Not saving a checkpoint for " + std::to_string(step) +
        ": the model diverged (loss = " + internal::FormatValue(session.last_step()->loss) + ").");
    return Status::Ok();
  }
  session.logger().Info("Saving checkpoints for " + std::to_string(step) + " into " +
                        options_.checkpoint_dir + "/" + options_.checkpoint_basename + ".");
  for (auto& l : options_.listeners) TRAININGD_RETURN_IF_ERROR(l->BeforeSave(session, step));
  auto data = session.Capture();
  if (!data.ok()) return data.status();
  auto path = manager_->Save(*data);
  if (!path.ok()) return path.status();
  last_saved_step_ = step;
  if (options_.summary_writer) {
    TRAININGD_RETURN_IF_ERROR(
        options_.summary_writer->AddSessionLog(SessionLogStatus::kCheckpoint, *path, step));
  }
  for (auto& l : options_.listeners) {
    auto want_stop = l->AfterSave(session, step);
    if (!want_stop.ok()) return want_stop.status();
    if (*want_stop) *stop = true;
  }
  return Status::Ok();
}

Status CheckpointSaverHook::SaveBest(Session& session, BestCheckpoint best, bool* stop) {
  if (!manager_) return Status::FailedPrecondition("SaveBest before Begin");
  const int64_t step = session.global_step();
  if (last_saved_step_ != step) {
    TRAININGD_RETURN_IF_ERROR(Save(session, stop));
    if (last_saved_step_ != step) return Status::Ok();  // diverged: not saved
  }
  best.global_step = step;
  return manager_->MarkBest(std::move(best));
}

std::optional<BestCheckpoint> CheckpointSaverHook::best() const {
  return manager_ ? manager_->best() : std::nullopt;
}

std::vector<std::string> CheckpointSaverHook::KeptCheckpoints() const {
  return manager_ ? manager_->KeptCheckpoints() : std::vector<std::string>{};
}

}  // namespace trainingd::engine
