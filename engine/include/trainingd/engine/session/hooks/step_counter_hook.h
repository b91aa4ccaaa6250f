// StepCounterHook: measures training speed as `global_step/sec` (tf.train.StepCounterHook).
//
// Every N steps (default 100) or seconds: the first trigger only records a baseline; each later
// one writes global steps per second since the previous trigger as the scalar "global_step/sec"
// and logs "global_step/sec: 12.3". A recovery resets the baseline (the time spent recovering is
// not training speed). TF's "global step has not been increased" warning has no equivalent: every
// run advances our global step by one.
#pragma once

#include <memory>

#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

inline constexpr const char* kStepsPerSecTag = "global_step/sec";

class StepCounterHook final : public SessionRunHook {
 public:
  struct Options {
    // Exactly one > 0. TF's defaults: every_n_steps = 100.
    int64_t every_n_steps = 100;
    double every_n_secs = 0;
    std::shared_ptr<SummaryWriter> summary_writer;  // optional: without it, only the log line
  };
  static Result<std::shared_ptr<StepCounterHook>> Create(Options options);

  std::string name() const override { return "StepCounterHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;

  // The latest rate, 0 before the second trigger.
  double last_steps_per_sec() const { return last_rate_; }

 private:
  StepCounterHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}

  Options options_;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  double last_rate_ = 0;
};

}  // namespace trainingd::engine
