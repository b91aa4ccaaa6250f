#include "trainingd/engine/session/hooks/evaluation_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<EvaluationHook>> EvaluationHook::Create(Options options) {
  auto timer = SecondOrStepTimer::Create(options.every_secs, options.every_steps);
  if (!timer.ok()) return timer.status();
  const std::string loss = options.split + "/loss";
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames({loss}));
  std::shared_ptr<EvaluationHook> hook(
      new EvaluationHook(std::move(options), std::move(timer).value()));
  hook->loss_fetch_ = loss;
  hook->accuracy_fetch_ = hook->options_.split + "/accuracy";
  return hook;
}

Status EvaluationHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  if (!timer_.last_triggered_step()) timer_.UpdateLastTriggeredStep(session.global_step());
  return Status::Ok();
}

Status EvaluationHook::BeforeRun(RunContext& ctx, RunArgs& request) {
  requested_ = timer_.ShouldTriggerForStep(ctx.session().global_step() + 1);
  if (requested_) {
    request.fetches.push_back(loss_fetch_);
    request.fetches.push_back(accuracy_fetch_);
  }
  return Status::Ok();
}

Status EvaluationHook::AfterRun(RunContext& ctx, const RunValues& values) {
  if (!requested_) return Status::Ok();
  timer_.UpdateLastTriggeredStep(ctx.session().global_step());
  return Record(ctx.session(), values);
}

Status EvaluationHook::End(Session& session) {
  if (!options_.at_end || (last_ && last_->global_step == session.global_step())) {
    return Status::Ok();
  }
  RunValues values;
  TRAININGD_RETURN_IF_ERROR(session.Fetch({loss_fetch_, accuracy_fetch_}, &values));
  return Record(session, values);
}

Status EvaluationHook::Record(Session& session, const RunValues& values) {
  const int64_t step = session.global_step();
  last_ = Evaluation{step, values.get(loss_fetch_), values.get(accuracy_fetch_)};
  ++count_;
  session.logger().Info("Evaluation at global step " + std::to_string(step) + ": " +
                        accuracy_fetch_ + " = " + internal::FormatValue(last_->accuracy) + ", " +
                        loss_fetch_ + " = " + internal::FormatValue(last_->loss));
  if (!options_.summary_writer) return Status::Ok();
  TRAININGD_RETURN_IF_ERROR(options_.summary_writer->AddScalar(loss_fetch_, step, last_->loss));
  return options_.summary_writer->AddScalar(accuracy_fetch_, step, last_->accuracy);
}

}  // namespace trainingd::engine
