#include "trainingd/engine/session/hooks/stop_at_step_hook.h"

namespace trainingd::engine {

Result<std::shared_ptr<StopAtStepHook>> StopAtStepHook::Create(std::optional<int64_t> num_steps,
                                                               std::optional<int64_t> last_step) {
  if (num_steps.has_value() == last_step.has_value()) {
    return Status::InvalidArgument("Exactly one of num_steps and last_step should be provided.");
  }
  if (num_steps && *num_steps < 0) {
    return Status::InvalidArgument("num_steps must be >= 0, got " + std::to_string(*num_steps));
  }
  if (last_step && *last_step < 0) {
    return Status::InvalidArgument("last_step must be >= 0, got " + std::to_string(*last_step));
  }
  return std::shared_ptr<StopAtStepHook>(new StopAtStepHook(num_steps, last_step));
}

Status StopAtStepHook::AfterCreateSession(Session& session, Coordinator& coordinator) {
  if (!last_step_) last_step_ = session.global_step() + *num_steps_;
  if (session.global_step() >= *last_step_) coordinator.RequestStop();
  return Status::Ok();
}

Status StopAtStepHook::AfterRun(RunContext& ctx, const RunValues&) {
  if (ctx.session().global_step() >= *last_step_) ctx.RequestStop();
  return Status::Ok();
}

}  // namespace trainingd::engine
