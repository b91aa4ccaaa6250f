#include "trainingd/engine/session/hooks/step_counter_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<StepCounterHook>> StepCounterHook::Create(Options options) {
  auto timer = SecondOrStepTimer::Create(options.every_n_secs, options.every_n_steps);
  if (!timer.ok()) return timer.status();
  std::shared_ptr<StepCounterHook> hook(
      new StepCounterHook(std::move(options), std::move(timer).value()));
  return hook;
}

Status StepCounterHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  timer_.Reset();
  return Status::Ok();
}

Status StepCounterHook::AfterRun(RunContext& ctx, const RunValues&) {
  const int64_t step = ctx.session().global_step();
  if (!timer_.ShouldTriggerForStep(step)) return Status::Ok();
  const auto elapsed = timer_.UpdateLastTriggeredStep(step);
  if (!elapsed || elapsed->seconds <= 0) return Status::Ok();
  last_rate_ = static_cast<double>(elapsed->steps) / elapsed->seconds;
  ctx.session().logger().Info(std::string(kStepsPerSecTag) + ": " + FormatSeconds(last_rate_));
  if (options_.summary_writer) {
    return options_.summary_writer->AddScalar(kStepsPerSecTag, step, last_rate_);
  }
  return Status::Ok();
}

}  // namespace trainingd::engine
