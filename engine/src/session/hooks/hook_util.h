// Helpers shared by the built-in hooks (private to engine/src).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "base/float_format.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/format.h"
#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session.h"

namespace trainingd::engine::internal {

// What every timed hook does first in AfterCreateSession: take the session's Env and read its
// timer's clock from it from then on (tests drive time through a fake Env).
inline void UseSessionEnv(Session& session, Env*& env, SecondOrStepTimer& timer) {
  env = &session.env();
  timer.set_clock([e = env] { return e->NowMonotonic(); });
}

// A fetched value as TF prints it: integers without a fraction ("100"), others as the shortest
// text of the float32 ("0.3125", "nan").
inline std::string FormatValue(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return FloatToString(static_cast<float>(v));
}

// The fetches of every scalar metric of `split`: "<split>/loss", "<split>/accuracy", ...
inline std::vector<std::string> EvaluationFetches(const std::string& split, Task task) {
  std::vector<std::string> out;
  for (const EvaluationMetric& m : EvaluationMetricsOf(task)) out.push_back(split + "/" + m.name);
  return out;
}

// Writes the `split` evaluation at the session's global step (the session's cached one, so no
// second pass) to `writer` as an EvaluationSummary: a classifier's metrics and confusion matrix,
// or a regression job's metrics and scatter sample.
inline Status RecordEvaluationSummary(Session& session, const std::string& split,
                                      SummaryWriter& writer) {
  auto eval = session.Evaluate(split);
  if (!eval.ok()) return eval.status();
  EvaluationSummary summary;
  summary.split = split;
  summary.step = session.global_step();
  summary.loss = eval->loss;
  summary.task = session.task();
  if (summary.task == Task::kRegression) {
    summary.regression = {eval->weight_sum, eval->rmse, eval->mae, eval->r2};
    summary.actual = eval->actual;
    summary.predicted = eval->predicted;
    return writer.AddEvaluation(summary);
  }
  summary.metrics = eval->metrics;
  summary.class_names = session.datasets().class_names;
  if (summary.class_names.size() != static_cast<size_t>(summary.metrics.num_classes)) {
    summary.class_names.clear();
    for (int c = 0; c < summary.metrics.num_classes; ++c)
      summary.class_names.push_back(std::to_string(c));
  }
  return writer.AddEvaluation(summary);
}

}  // namespace trainingd::engine::internal
