#include "trainingd/engine/session/hooks/logging_tensor_hook.h"

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<LoggingTensorHook>> LoggingTensorHook::Create(
    std::vector<std::string> fetches, Options options) {
  std::vector<std::pair<std::string, std::string>> tags;
  for (std::string& f : fetches) tags.emplace_back(f, f);
  if (tags.empty()) return Status::InvalidArgument("tensors: give at least one fetch to log");
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames(fetches));
  const bool only_at_end = options.at_end && options.every_n_iter <= 0 && options.every_n_secs <= 0;
  if (!only_at_end && (options.every_n_iter > 0) == (options.every_n_secs > 0)) {
    return Status::InvalidArgument(
        "either at_end and/or exactly one of every_n_iter and every_n_secs must be provided.");
  }
  if (options.every_n_iter < 0) {
    return Status::InvalidArgument("invalid every_n_iter=" + std::to_string(options.every_n_iter) +
                                   ".");
  }
  // An at_end-only hook still needs a timer for the elapsed time; its period is never used.
  const int64_t steps = only_at_end ? 1 : options.every_n_iter;
  const double secs = only_at_end ? 0 : options.every_n_secs;
  std::shared_ptr<LoggingTensorHook> hook(new LoggingTensorHook(
      std::move(tags), std::move(options), SecondOrStepTimer::Create(secs, steps).value()));
  hook->only_at_end_ = only_at_end;
  for (const auto& t : hook->tags_) hook->fetches_.push_back(t.second);
  return hook;
}

Result<std::shared_ptr<LoggingTensorHook>> LoggingTensorHook::Create(
    const std::map<std::string, std::string>& tagged_fetches, Options options) {
  std::vector<std::string> fetches;
  for (const auto& [tag, fetch] : tagged_fetches) fetches.push_back(fetch);
  auto hook = Create(std::move(fetches), std::move(options));
  if (!hook.ok()) return hook;
  size_t i = 0;
  for (const auto& [tag, fetch] : tagged_fetches) (*hook)->tags_[i++].first = tag;  // sorted
  return hook;
}

Status LoggingTensorHook::Begin() {
  timer_.Reset();
  iter_count_ = 0;
  return Status::Ok();
}

Status LoggingTensorHook::AfterCreateSession(Session& session, Coordinator&) {
  internal::UseSessionEnv(session, env_, timer_);
  return Status::Ok();
}

Status LoggingTensorHook::BeforeRun(RunContext&, RunArgs& request) {
  should_trigger_ = !only_at_end_ && timer_.ShouldTriggerForStep(iter_count_);
  if (should_trigger_) {
    request.fetches.insert(request.fetches.end(), fetches_.begin(), fetches_.end());
  }
  return Status::Ok();
}

Status LoggingTensorHook::AfterRun(RunContext& ctx, const RunValues& values) {
  if (should_trigger_) LogValues(ctx.session().logger(), values);
  ++iter_count_;
  return Status::Ok();
}

Status LoggingTensorHook::End(Session& session) {
  if (!options_.at_end) return Status::Ok();
  RunValues values;
  TRAININGD_RETURN_IF_ERROR(session.Fetch(fetches_, &values));
  LogValues(session.logger(), values);
  return Status::Ok();
}

void LoggingTensorHook::LogValues(Logger& logger, const RunValues& values) {
  const auto elapsed = timer_.UpdateLastTriggeredStep(iter_count_);
  std::vector<std::pair<std::string, double>> pairs;
  for (const auto& [tag, fetch] : tags_) pairs.emplace_back(tag, values.get(fetch));
  if (options_.formatter) {
    logger.Info(options_.formatter(pairs));
    return;
  }
  std::string line;
  for (const auto& [tag, value] : pairs) {
    if (!line.empty()) line += ", ";
    line += tag + " = " + internal::FormatValue(value);
  }
  if (elapsed) line += " (" + FormatSeconds(elapsed->seconds, "%.3f") + " sec)";
  logger.Info(line);
}

}  // namespace trainingd::engine
