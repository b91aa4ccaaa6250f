#include "trainingd/engine/session/hooks/early_stopping_hook.h"

#include <cmath>

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<EarlyStoppingHook>> EarlyStoppingHook::Create(Options options) {
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames({options.monitor}));
  if (options.monitor.find('/') == std::string::npos) {
    return Status::InvalidArgument(
        "monitor: must be an evaluation fetch \"<split>/<metric>\" (metric one of " +
        EvaluationMetricNames() + "), got '" + options.monitor + "'");
  }
  if (options.patience < 1) {
    return Status::InvalidArgument("patience must be >= 1, got " +
                                   std::to_string(options.patience));
  }
  if (!(options.min_delta >= 0) || !std::isfinite(options.min_delta)) {
    return Status::InvalidArgument("min_delta must be a finite number >= 0");
  }
  auto timer = SecondOrStepTimer::Create(options.every_secs, options.every_steps);
  if (!timer.ok()) return timer.status();
  std::shared_ptr<EarlyStoppingHook> hook(
      new EarlyStoppingHook(std::move(options), std::move(timer).value()));
  return hook;
}

Status EarlyStoppingHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  if (!timer_.last_triggered_step()) timer_.UpdateLastTriggeredStep(session.global_step());
  return Status::Ok();
}

Status EarlyStoppingHook::BeforeRun(RunContext& ctx, RunArgs& request) {
  requested_ = timer_.ShouldTriggerForStep(ctx.session().global_step() + 1);
  if (requested_) request.fetches.push_back(options_.monitor);
  return Status::Ok();
}

Status EarlyStoppingHook::AfterRun(RunContext& ctx, const RunValues& values) {
  if (!requested_) return Status::Ok();
  const int64_t step = ctx.session().global_step();
  timer_.UpdateLastTriggeredStep(step);
  const double v = values.get(options_.monitor);
  const bool improved =
      !std::isnan(v) && (!best_ || (options_.mode == Mode::kMin ? v < *best_ - options_.min_delta
                                                                : v > *best_ + options_.min_delta));
  if (improved) {
    best_ = v;
    best_step_ = step;
    wait_ = 0;
    return Status::Ok();
  }
  if (++wait_ < options_.patience) return Status::Ok();
  stopped_step_ = step;
  ctx.session().logger().Info("Early stopping at global step " + std::to_string(step) + ": " +
                              options_.monitor + " did not improve by more than " +
                              internal::FormatValue(options_.min_delta) + " in " +
                              std::to_string(wait_) + " evaluations (best " +
                              (best_ ? internal::FormatValue(*best_) : std::string("none")) +
                              " at global step " + std::to_string(best_step_) + ").");
  ctx.RequestStop();
  return Status::Ok();
}

}  // namespace trainingd::engine
