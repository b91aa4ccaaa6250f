// EarlyStoppingHook: stops training when a monitored metric stops improving (TF lacked it in
// MonitoredTrainingSession; Keras' EarlyStopping has the same knobs).
//
// Every N steps or seconds (baseline: the global step when the session is first created) the
// monitored fetch -- "validation/loss", "validation/accuracy", any "<split>/<metric>" -- is
// evaluated (shared with an EvaluationHook on the same step: one pass). A value improves on the
// best so far when it is lower by more than min_delta (mode "min") or higher by more than
// min_delta (mode "max"); NaN never improves. After `patience` evaluations in a row without
// improvement the hook logs why and requests a stop. Its counters live in memory: a resumed job
// starts counting again.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class EarlyStoppingHook final : public SessionRunHook {
 public:
  enum class Mode { kMin, kMax };
  struct Options {
    std::string monitor = "validation/loss";
    Mode mode = Mode::kMin;
    int64_t patience = 5;  // >= 1
    double min_delta = 0;  // >= 0
    // Exactly one > 0.
    int64_t every_steps = 0;
    double every_secs = 0;
  };
  static Result<std::shared_ptr<EarlyStoppingHook>> Create(Options options);

  std::string name() const override { return "EarlyStoppingHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;

  const std::string& monitor() const { return options_.monitor; }
  std::optional<double> best() const { return best_; }
  int64_t best_step() const { return best_step_; }
  // Evaluations since the last improvement.
  int64_t evaluations_without_improvement() const { return wait_; }
  // The global step at which it requested the stop, if it did.
  std::optional<int64_t> stopped_step() const { return stopped_step_; }

 private:
  EarlyStoppingHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}

  Options options_;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  bool requested_ = false;
  std::optional<double> best_;
  int64_t best_step_ = 0;
  int64_t wait_ = 0;
  std::optional<int64_t> stopped_step_;
};

}  // namespace trainingd::engine
