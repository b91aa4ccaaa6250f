#include "trainingd/engine/session/second_or_step_timer.h"

#include <chrono>

namespace trainingd::engine {

Result<SecondOrStepTimer> SecondOrStepTimer::Create(double every_secs, int64_t every_steps,
                                                    Clock clock) {
  const bool secs = every_secs > 0, steps = every_steps > 0;
  if (!secs && !steps) {
    return Status::InvalidArgument("Either every_secs or every_steps should be provided.");
  }
  if (secs && steps) {
    return Status::InvalidArgument("Can not provide both every_secs and every_steps.");
  }
  if (!clock) {
    clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
  return SecondOrStepTimer(secs ? every_secs : 0, steps ? every_steps : 0, std::move(clock));
}

bool SecondOrStepTimer::ShouldTriggerForStep(int64_t step) const {
  if (!last_step_) return true;
  if (*last_step_ == step) return false;
  if (every_secs_ > 0) return clock_() >= last_time_ + every_secs_;
  return step >= *last_step_ + every_steps_;
}

std::optional<SecondOrStepTimer::Elapsed> SecondOrStepTimer::UpdateLastTriggeredStep(int64_t step) {
  const double now = clock_();
  std::optional<Elapsed> elapsed;
  if (last_step_) elapsed = Elapsed{now - last_time_, step - *last_step_};
  last_time_ = now;
  last_step_ = step;
  return elapsed;
}

void SecondOrStepTimer::Reset() { last_step_.reset(); }

}  // namespace trainingd::engine
