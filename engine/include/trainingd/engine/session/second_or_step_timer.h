// SecondOrStepTimer: when a periodic hook should fire, every N seconds or every N global steps.
//
// The same rules as TensorFlow's basic_session_run_hooks.SecondOrStepTimer:
//   ShouldTriggerForStep(s): never triggered -> true; s equals the last triggered step -> false;
//     seconds mode: now >= last trigger time + every_secs; steps mode: s >= last step +
//     every_steps.
//   UpdateLastTriggeredStep(s): records (now, s) and returns the seconds and steps elapsed since
//     the previous trigger, or nothing on the first trigger.
// The clock is injected so tests can drive it. Not thread-safe: one hook owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

class SecondOrStepTimer {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  struct Elapsed {
    double seconds = 0;
    int64_t steps = 0;
  };

  // Exactly one of `every_secs` and `every_steps` must be positive (the other <= 0); otherwise
  // InvalidArgument ("Either every_secs or every_steps should be provided." / "Can not provide
  // both every_secs and every_steps.", TF's messages). `clock` defaults to a steady clock.
  static Result<SecondOrStepTimer> Create(double every_secs, int64_t every_steps,
                                          Clock clock = nullptr);
  // Replaces the clock (a null clock is ignored): a hook reads its session's Env from the moment
  // it has one.
  void set_clock(Clock clock) {
    if (clock) clock_ = std::move(clock);
  }

  bool ShouldTriggerForStep(int64_t step) const;
  std::optional<Elapsed> UpdateLastTriggeredStep(int64_t step);
  std::optional<int64_t> last_triggered_step() const { return last_step_; }
  // Forgets the last trigger, so the next step triggers again.
  void Reset();

  bool in_steps() const { return every_steps_ > 0; }
  double every_secs() const { return every_secs_; }
  int64_t every_steps() const { return every_steps_; }

 private:
  SecondOrStepTimer(double every_secs, int64_t every_steps, Clock clock)
      : every_secs_(every_secs), every_steps_(every_steps), clock_(std::move(clock)) {}

  double every_secs_;
  int64_t every_steps_;
  Clock clock_;
  std::optional<int64_t> last_step_;
  double last_time_ = 0;
};

}  // namespace trainingd::engine
