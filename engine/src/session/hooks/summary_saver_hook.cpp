#include "trainingd/engine/session/hooks/summary_saver_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<SummarySaverHook>> SummarySaverHook::Create(Options options) {
  if (!options.summary_writer) {
    return Status::InvalidArgument("summary_writer: required by SummarySaverHook");
  }
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames(options.tags));
  auto timer = SecondOrStepTimer::Create(options.save_secs, options.save_steps);
  if (!timer.ok()) return timer.status();
  std::shared_ptr<SummarySaverHook> hook(
      new SummarySaverHook(std::move(options), std::move(timer).value()));
  return hook;
}

Status SummarySaverHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  std::erase_if(options_.tags, [&](const std::string& tag) {
    return !Session::CheckFetchNames({tag}, session.task()).ok();
  });
  return Status::Ok();
}

Status SummarySaverHook::BeforeRun(RunContext&, RunArgs& request) {
  request_summary_ = !next_step_ || timer_.ShouldTriggerForStep(*next_step_);
  if (request_summary_) {
    request.fetches.insert(request.fetches.end(), options_.tags.begin(), options_.tags.end());
  }
  return Status::Ok();
}

Status SummarySaverHook::AfterRun(RunContext& ctx, const RunValues& values) {
  const int64_t step = ctx.session().global_step();
  SummaryWriter& writer = *options_.summary_writer;
  if (!next_step_) {
    TRAININGD_RETURN_IF_ERROR(writer.AddSessionLog(SessionLogStatus::kStart, "", step));
  }
  if (request_summary_) {
    timer_.UpdateLastTriggeredStep(step);
    for (const std::string& tag : options_.tags) {
      TRAININGD_RETURN_IF_ERROR(writer.AddScalar(tag, step, values.get(tag)));
    }
  }
  next_step_ = step + 1;
  return Status::Ok();
}

Status SummarySaverHook::End(Session&) { return options_.summary_writer->Flush(); }

}  // namespace trainingd::engine
