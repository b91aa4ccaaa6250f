// The JSON of a split's whole evaluation (engine::EvaluationSummary): what the run report
// carries from rank 0 of a data-parallel run, what the store keeps of each split's latest
// evaluation, and what GET /api/v1/jobs/{id}/evaluation answers (docs/openapi.yaml,
// Evaluation):
//
//   {"split":"validation","step":1000,"wall_time":1795625424.5,"examples":5000,
//    "loss":0.31,"accuracy":0.9,"precision_macro":0.89,"recall_macro":0.9,"f1_macro":0.89,
//    "auc":0.99,"log_loss":0.31,
//    "classes":[{"name":"cat","precision":0.9,"recall":0.8,"f1":0.85,"support":500},...],
//    "confusion_matrix":[[400,100],[...]]}
//
// confusion_matrix[t][p]: the examples of true class t predicted as p (row = true class). Counts
// are written as integers when they are whole (always, without sample weights). NaN (the AUC of
// a split of one class) and infinities are the strings "NaN", "Infinity", "-Infinity".
//
// A regression job's evaluation has "task": "regression", its metrics in the target's units and
// a sample of at most engine::kScatterPoints examples (engine::ScatterSample: evenly spread over
// the split in its order), each one's target and prediction, for a predicted-against-actual plot:
//
//   {"split":"test","step":2000,"wall_time":...,"task":"regression","examples":120,"loss":0.08,
//    "rmse":41.2,"mae":30.9,"r2":0.97,"scatter":{"actual":[1520.3,...],"predicted":[1498.0,...]}}
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::api {

nlohmann::json EvaluationToJson(const engine::EvaluationSummary& e, double wall_time);

// The inverse: InvalidArgument naming the field when a field is missing or of the wrong type,
// the split is not train, validation or test, or the sizes disagree (class names, classes and
// matrix rows must all have the same number of classes, 1..engine::kMaxClasses).
engine::Result<engine::EvaluationSummary> EvaluationFromJson(const nlohmann::json& v,
                                                             double* wall_time);

}  // namespace trainingd::api
