// StopAtStepHook: stops training at a global step (tf.train.StopAtStepHook).
//
// Exactly one of num_steps and last_step. With num_steps, last_step = the global step after the
// session was created (after any restore) + num_steps, computed once, so a recovery does not move
// it. The stop is requested after the run that brings the global step to last_step or beyond.
// Unlike TF, a session created at or past last_step (a finished job resumed) stops before running
// any step instead of running one more.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class StopAtStepHook final : public SessionRunHook {
 public:
  // InvalidArgument unless exactly one is given and it is >= 0.
  static Result<std::shared_ptr<StopAtStepHook>> Create(std::optional<int64_t> num_steps,
                                                        std::optional<int64_t> last_step);

  std::string name() const override { return "StopAtStepHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;

  // The step training stops at; known after the session was created.
  std::optional<int64_t> last_step() const { return last_step_; }

 private:
  StopAtStepHook(std::optional<int64_t> num_steps, std::optional<int64_t> last_step)
      : num_steps_(num_steps), last_step_(last_step) {}
  std::optional<int64_t> num_steps_;
  std::optional<int64_t> last_step_;
};

}  // namespace trainingd::engine
