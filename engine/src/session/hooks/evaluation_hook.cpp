#include "trainingd/engine/session/hooks/evaluation_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<EvaluationHook>> EvaluationHook::Create(Options options) {
  auto timer = SecondOrStepTimer::Create(options.every_secs, options.every_steps);
  if (!timer.ok()) return timer.status();
  std::vector<std::string> fetches = internal::EvaluationFetches(options.split);
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames(fetches));
  std::shared_ptr<EvaluationHook> hook(
      new EvaluationHook(std::move(options), std::move(timer).value()));
  hook->loss_fetch_ = hook->options_.split + "/loss";
  hook->accuracy_fetch_ = hook->options_.split + "/accuracy";
  hook->fetches_ = std::move(fetches);
  return hook;
}

Status EvaluationHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  if (!timer_.last_triggered_step()) timer_.UpdateLastTriggeredStep(session.global_step());
  return Status::Ok();
}

Status EvaluationHook::BeforeRun(RunContext& ctx, RunArgs& request) {
  requested_ = timer_.ShouldTriggerForStep(ctx.session().global_step() + 1);
  if (requested_) request.fetches.insert(request.fetches.end(), fetches_.begin(), fetches_.end());
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
  TRAININGD_RETURN_IF_ERROR(session.Fetch(fetches_, &values));
  return Record(session, values);
}

Status EvaluationHook::Record(Session& session, const RunValues& values) {
  const int64_t step = session.global_step();
  last_ = Evaluation{step, values.get(loss_fetch_), values.get(accuracy_fetch_), {}};
  for (const std::string& f : fetches_) last_->values[f] = values.get(f);
  ++count_;
  session.logger().Info("Evaluation at global step " + std::to_string(step) + ": " +
                        accuracy_fetch_ + " = " + internal::FormatValue(last_->accuracy) + ", " +
                        loss_fetch_ + " = " + internal::FormatValue(last_->loss));
  if (!options_.summary_writer) return Status::Ok();
  for (const std::string& f : fetches_) {
    TRAININGD_RETURN_IF_ERROR(options_.summary_writer->AddScalar(f, step, last_->values[f]));
  }
  return internal::RecordEvaluationSummary(session, options_.split, *options_.summary_writer);
}

}  // namespace trainingd::engine
