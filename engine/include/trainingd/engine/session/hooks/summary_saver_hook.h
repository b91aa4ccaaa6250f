// SummarySaverHook: writes the training scalars every N steps or seconds
// (tf.train.SummarySaverHook).
//
// The first run always writes, then runs whose global step triggers the timer. Scalars are
// stamped with the global step after the run: from step 0 with save_steps = 100 they land at
// steps 1, 101, 201, ... The first run also writes a SessionLog START at its step, which tells
// TensorBoard to drop anything a previous, interrupted run wrote from that step on. Tags: the
// fetch names ("loss", "accuracy", "learning_rate" by default). End() flushes the writer.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class SummarySaverHook final : public SessionRunHook {
 public:
  struct Options {
    // Exactly one > 0 (TF's save_steps / save_secs).
    int64_t save_steps = 0;
    double save_secs = 0;
    std::shared_ptr<SummaryWriter> summary_writer;  // required
    // Fetch names; those the session's task does not have (a regression job's "accuracy") are
    // left out.
    std::vector<std::string> tags = {"loss", "accuracy", "learning_rate"};
  };
  static Result<std::shared_ptr<SummarySaverHook>> Create(Options options);

  std::string name() const override { return "SummarySaverHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;
  Status End(Session& session) override;

 private:
  SummarySaverHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}

  Options options_;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  std::optional<int64_t> next_step_;  // TF's _next_step: none before the first run
  bool request_summary_ = false;
};

}  // namespace trainingd::engine
