#include "trainingd/engine/session/hooks/evaluation_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<EvaluationHook>> EvaluationHook::Create(Options options) {
  auto timer = SecondOrStepTimer::Create(options.every_secs, options.every_steps);
  if (!timer.ok()) return timer.status();
  const std::string loss = options.split + "/loss";
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames({loss}));
  return std::shared_ptr<EvaluationHook>(
      new EvaluationHook(std::move(options), std::move(timer).value()));
}

Status EvaluationHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  fetches_ = internal::EvaluationFetches(options_.split, session.task());
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
  last_ = Evaluation{step, values.get(fetches_[0]), 0, {}};
  if (session.task() == Task::kClassification) last_->accuracy = values.get(fetches_[1]);
  for (const std::string& f : fetches_) last_->values[f] = values.get(f);
  ++count_;
  // The loss last, as TF's evaluations logged it: "accuracy = 0.87, loss = 0.35".
  std::string line;
  for (size_t i = 1; i <= fetches_.size(); ++i) {
    const std::string& f = fetches_[i % fetches_.size()];
    line += f + " = " + internal::FormatValue(values.get(f)) + (i < fetches_.size() ? ", " : "");
  }
  session.logger().Info("Evaluation at global step " + std::to_string(step) + ": " + line);
  if (!options_.summary_writer) return Status::Ok();
  for (const std::string& f : fetches_) {
    TRAININGD_RETURN_IF_ERROR(options_.summary_writer->AddScalar(f, step, last_->values[f]));
  }
  return internal::RecordEvaluationSummary(session, options_.split, *options_.summary_writer);
}

}  // namespace trainingd::engine
