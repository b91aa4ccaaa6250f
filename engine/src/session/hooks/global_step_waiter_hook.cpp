#include "trainingd/engine/session/hooks/global_step_waiter_hook.h"

#include <charconv>
#include <filesystem>

#include "session/hooks/hook_util.h"
#include "trainingd/engine/io/checkpoint_manager.h"

namespace trainingd::engine {

Result<std::shared_ptr<GlobalStepWaiterHook>> GlobalStepWaiterHook::Create(Options options) {
  if (!(options.poll_secs > 0)) {
    return Status::InvalidArgument("poll_secs must be > 0, got " +
                                   FormatSeconds(options.poll_secs));
  }
  if (!(options.max_wait_secs >= 0)) {
    return Status::InvalidArgument("max_wait_secs must be >= 0");
  }
  if (!options.global_step_source && !options.checkpoint_dir.empty()) {
    const std::string dir = options.checkpoint_dir;
    options.global_step_source = [dir]() -> Result<int64_t> {
      std::error_code ec;
      if (!std::filesystem::exists(dir + "/checkpoint", ec)) return int64_t{0};
      auto manager = CheckpointManager::Create(dir);
      if (!manager.ok()) return manager.status();
      const auto latest = (*manager)->LatestCheckpointPath();
      if (!latest) return int64_t{0};
      const size_t dash = latest->rfind('-');
      int64_t step = 0;
      if (dash != std::string::npos) {
        std::from_chars(latest->data() + dash + 1, latest->data() + latest->size(), step);
      }
      return step;
    };
  }
  return std::shared_ptr<GlobalStepWaiterHook>(new GlobalStepWaiterHook(std::move(options)));
}

Status GlobalStepWaiterHook::BeforeRun(RunContext& ctx, RunArgs&) {
  if (started_) return Status::Ok();
  const int64_t target = options_.wait_until_step;
  Session& session = ctx.session();
  if (target <= 0 || session.global_step() >= target) {
    started_ = true;
    return Status::Ok();
  }
  if (!options_.global_step_source) {
    return Status::FailedPrecondition(
        "GlobalStepWaiterHook: waiting for global step " + std::to_string(target) +
        " but nothing else advances this session's global step (" +
        std::to_string(session.global_step()) + "); give a checkpoint_dir to follow the chief");
  }
  session.logger().Info("Waiting for global step " + std::to_string(target) +
                        " before starting training.");
  Env& env = session.env();
  const double start = env.NowMonotonic();
  int64_t last_logged = 0;
  for (;;) {
    auto current = options_.global_step_source();
    if (!current.ok()) return current.status();
    if (*current >= target) {
      started_ = true;
      return Status::Ok();
    }
    if (*current - last_logged > 1000) {
      session.logger().Info("Waiting for global step " + std::to_string(target) +
                            " before starting training. Current step is " +
                            std::to_string(*current) + ".");
      last_logged = *current;
    }
    if (ctx.ShouldStopLoop()) {
      return Status::Cancelled("stop requested while waiting for global step " +
                               std::to_string(target));
    }
    if (options_.max_wait_secs > 0 && env.NowMonotonic() - start >= options_.max_wait_secs) {
      return Status::DeadlineExceeded("global step " + std::to_string(target) +
                                      " not reached after waiting " +
                                      FormatSeconds(options_.max_wait_secs) + " secs (latest " +
                                      std::to_string(*current) + ")");
    }
    env.SleepForSeconds(options_.poll_secs);
  }
}

}  // namespace trainingd::engine
