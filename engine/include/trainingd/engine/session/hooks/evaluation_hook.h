// EvaluationHook: the metrics of a job's task (metrics.h: loss, accuracy and the other
// classification metrics; a regression job's loss, rmse, mae and r2) over a whole split every N
// steps or seconds, recorded as summaries "<split>/<metric>", and a classifier's whole
// evaluation (confusion matrix, per-class values) as an EvaluationSummary (TF had no such hook:
// Estimators evaluated in a separate process from checkpoints).
//
// The timer's baseline is the global step when the session is first created, so with
// every_steps = 1000 from step 0 evaluations happen after steps 1000, 2000, ... With at_end
// (default), End() evaluates once more unless the final step was just evaluated. Each evaluation
// logs "Evaluation at global step 1000: validation/accuracy = 0.87, validation/loss = 0.35".
// An evaluation runs in inference mode (dropout off) and does not change the training state.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class EvaluationHook final : public SessionRunHook {
 public:
  struct Options {
    // Exactly one > 0.
    int64_t every_steps = 0;
    double every_secs = 0;
    std::string split = "validation";  // "train", "validation" or "test"
    bool at_end = true;
    std::shared_ptr<SummaryWriter> summary_writer;  // optional
  };
  struct Evaluation {
    int64_t global_step = 0;
    double loss = 0;
    double accuracy = 0;                   // classification
    std::map<std::string, double> values;  // every "<split>/<metric>" recorded
  };
  static Result<std::shared_ptr<EvaluationHook>> Create(Options options);

  std::string name() const override { return "EvaluationHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;
  Status End(Session& session) override;

  const std::optional<Evaluation>& last_evaluation() const { return last_; }
  int64_t evaluations() const { return count_; }

 private:
  EvaluationHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}
  Status Record(Session& session, const RunValues& values);

  Options options_;
  std::vector<std::string> fetches_;  // "<split>/<metric>" for the session's task's metrics
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  bool requested_ = false;
  std::optional<Evaluation> last_;
  int64_t count_ = 0;
};

}  // namespace trainingd::engine
