// Evaluation metrics: pure functions from a split's per-example class probabilities (or
// predictions) and labels, with optional per-example weights, to the numbers scikit-learn's
// sklearn.metrics reports for the same input (tests/engine/metrics_test.cpp checks each against
// a value sklearn computed). docs/job-spec.md#metrics lists them and their fetch names.
//
// Every function walks its input in index order and sorts with a total order (score, then
// index), so the same input gives the same bits whatever computed it: a data-parallel
// evaluation gathers the whole split's logits in split order and every rank computes these on
// the same data (Trainer::Evaluate).
//
// Weights: empty = every example weighs 1; otherwise one finite weight >= 0 per example (the
// caller checks). With weights every count below is a sum of weights, as sklearn's
// `sample_weight` makes it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

// What a classification evaluation reports over a split (num_classes C >= 2).
struct ClassificationMetrics {
  int num_classes = 0;
  double weight_sum = 0;  // the examples (or their weights' sum)
  double accuracy = 0;    // sklearn accuracy_score
  // confusion[t * C + p]: the examples (weights) of true class t predicted as p (rows = true
  // class, columns = predicted), sklearn confusion_matrix(y, pred, labels=range(C)).
  std::vector<double> confusion;
  // Per class c in [0, C): sklearn precision_recall_fscore_support(y, pred, labels=range(C),
  // zero_division=0): 0 where a denominator is 0 (no prediction of c, or no example of c).
  std::vector<double> precision, recall, f1, support;
  // Unweighted means over the classes that occur among the labels or the predictions:
  // sklearn's *_score(y, pred, average="macro") with its default labels (and zero_division=0).
  double precision_macro = 0, recall_macro = 0, f1_macro = 0;
  // ROC AUC. Two classes: of class 1's probability (sklearn roc_auc_score(y, p[:, 1])). More:
  // the unweighted mean of each class against the rest (roc_auc_score(y, p, multi_class="ovr",
  // average="macro")) over the classes that have both positive and negative examples. NaN when
  // no class has both (a split of one class).
  double auc = 0;
  // sklearn log_loss(y, p, labels=range(C)): the weighted mean of -log q_y, where q is the
  // example's probabilities clipped to [kLogLossEps, 1 - kLogLossEps] and renormalized to sum 1.
  double log_loss = 0;
};

// sklearn's eps="auto" for float64 probabilities: numpy.finfo(float64).eps = 2^-52.
inline constexpr double kLogLossEps = 2.220446049250313e-16;

// The row-wise softmax of [N, C] float logits, in double (the largest logit subtracted first);
// the arg-max of a row of the result is the arg-max of its logits (the first on a tie).
std::vector<double> SoftmaxProbabilities(std::span<const float> logits, int num_classes);

// The class of each row of [N, C] scores: the first index of the row's largest value.
std::vector<int32_t> ArgMaxClasses(std::span<const double> scores, int num_classes);

// A two-class model's decision threshold (docs/job-spec.md#decision-threshold): it predicts the
// positive class, class 1, when that class's probability is above the threshold. At the default
// 0.5 that is the arg-max (the first class on an exact tie), and the arg-max is what every
// predicted class is then computed as, so the default is exactly a model without a threshold.
inline constexpr double kDefaultDecisionThreshold = 0.5;
// The predicted class of `probabilities`' rows ([N, C]): the arg-max, or for two classes and a
// threshold other than 0.5, 1 where p[1] > threshold and 0 elsewhere.
std::vector<int32_t> PredictedClasses(std::span<const double> probabilities, int num_classes,
                                      double threshold = kDefaultDecisionThreshold);

// The parts, each usable alone. `labels` and `predicted` are in [0, C); sizes must agree (N).
double Accuracy(std::span<const int32_t> labels, std::span<const int32_t> predicted,
                std::span<const double> weights = {});
std::vector<double> ConfusionMatrix(std::span<const int32_t> labels,
                                    std::span<const int32_t> predicted, int num_classes,
                                    std::span<const double> weights = {});
// Per-class precision, recall, F1 and support, and their macro means, from a confusion matrix.
void PrecisionRecallF1(const std::vector<double>& confusion, int num_classes,
                       ClassificationMetrics* out);
// The ROC AUC of `scores` with positives where `positive[i]`: the Mann-Whitney statistic,
// P(score of a positive > score of a negative) + 1/2 P(equal), weighted; NaN without a positive
// or without a negative. Exact for ties (a tie group counts half).
double BinaryRocAuc(std::span<const double> scores, std::span<const uint8_t> positive,
                    std::span<const double> weights = {});
// Two classes: BinaryRocAuc of column 1; more: the macro one-vs-rest mean described above.
double RocAuc(std::span<const double> probabilities, int num_classes,
              std::span<const int32_t> labels, std::span<const double> weights = {});
double LogLoss(std::span<const double> probabilities, int num_classes,
               std::span<const int32_t> labels, std::span<const double> weights = {});

// All of the above from [N, C] probabilities. N >= 1. The predicted classes, which accuracy,
// the confusion matrix and precision, recall and F1 count, are PredictedClasses' with
// `threshold` (a two-class model's decision threshold); the ROC AUC and the log loss read the
// probabilities alone, so the threshold does not change them.
ClassificationMetrics ComputeClassificationMetrics(std::span<const double> probabilities,
                                                   int num_classes, std::span<const int32_t> labels,
                                                   std::span<const double> weights = {},
                                                   double threshold = kDefaultDecisionThreshold);
// The same bits as ComputeClassificationMetrics(SoftmaxProbabilities(logits, C), ...), from
// [N, C] float logits, without holding the N x C probabilities: they are formed when read (an
// evaluation's extra memory is O(N), not O(N x C)).
ClassificationMetrics ComputeClassificationMetricsFromLogits(
    std::span<const float> logits, int num_classes, std::span<const int32_t> labels,
    std::span<const double> weights = {}, double threshold = kDefaultDecisionThreshold);

// Regression (docs/job-spec.md#metrics), over N >= 1 predictions and targets:
struct RegressionMetrics {
  double weight_sum = 0;
  double rmse = 0;  // sqrt(mean_squared_error(y, pred)): sklearn mean_squared_error(squared=False)
  double mae = 0;   // mean_absolute_error(y, pred)
  // r2_score(y, pred): 1 - SS_res / SS_tot about the (weighted) mean of y. A constant target
  // (SS_tot = 0) gives 1 when the predictions are exact and 0 otherwise, as sklearn does.
  double r2 = 0;
};
RegressionMetrics ComputeRegressionMetrics(std::span<const double> predictions,
                                           std::span<const double> targets,
                                           std::span<const double> weights = {});

// The most (actual, predicted) pairs a regression evaluation keeps for its scatter plot.
inline constexpr int64_t kScatterPoints = 1000;
// Which of a split's n examples the scatter shows, ascending: all of them when n <= max_points,
// else example floor(k * n / max_points) for k in [0, max_points) -- evenly spread over the
// split in its order, the same for any number of ranks (the evaluation gathers the whole split's
// outputs in split order first).
std::vector<int64_t> ScatterSample(int64_t n, int64_t max_points = kScatterPoints);

// One evaluation of a split, as a summary records it beside its scalars (SummarySink::
// AddEvaluation): what the daemon keeps of a split's latest evaluation and serves with its
// confusion matrix or, for a regression job, its scatter (GET /api/v1/jobs/{id}/evaluation).
struct EvaluationSummary {
  std::string split;  // "train", "validation" or "test"
  int64_t step = 0;   // the global step evaluated
  double loss = 0;    // the split's mean loss ("<split>/loss")
  // The dataset's class names, one per class (Datasets::class_names; "0".."C-1" when it has
  // none); empty for a regression job.
  std::vector<std::string> class_names;
  Task task = Task::kClassification;
  ClassificationMetrics metrics;  // classification
  // Regression: the metrics in the target's units, and the ScatterSample of the split's
  // examples, each one's target (actual) and prediction, in split order.
  RegressionMetrics regression;
  std::vector<double> actual, predicted;
};

// The scalar metrics an evaluation of a split records as "<split>/<name>" (fetches, summaries,
// an early-stopping monitor, an experiment's metric), and whether higher is better.
struct EvaluationMetric {
  const char* name;
  bool higher_is_better;
};
inline constexpr EvaluationMetric kClassificationMetrics[] = {
    {"loss", false},    {"accuracy", true}, {"precision_macro", true}, {"recall_macro", true},
    {"f1_macro", true}, {"auc", true},      {"log_loss", false},
};
// A regression job's (docs/job-spec.md#task): the loss of the standardized target, then RMSE,
// MAE and R^2 in the target's units (Trainer::Evaluate's sums, ComputeRegressionMetrics').
inline constexpr EvaluationMetric kRegressionMetrics[] = {
    {"loss", false}, {"rmse", false}, {"mae", false}, {"r2", true}};
// The metrics an evaluation of a `task` job reports, in the order it records them.
std::span<const EvaluationMetric> EvaluationMetricsOf(Task task);
// The metric called `name` of a `task` job (of either task when not given), or null.
const EvaluationMetric* FindEvaluationMetric(std::string_view name,
                                             std::optional<Task> task = std::nullopt);
// "loss, accuracy, precision_macro, ...": the known names (of a `task` job), for error messages.
std::string EvaluationMetricNames(std::optional<Task> task = std::nullopt);
// "max" when the metric of fetch "<split>/<name>" (or of `name` itself) is better higher, else
// "min" (also for an unknown name: the caller refuses it).
std::string DefaultMode(std::string_view fetch);
// The value of metric `name` in `m`, the split's `loss` given apart (the cross-entropy of the
// logits, which ClassificationMetrics does not hold); NaN for an unknown name.
double MetricValue(const ClassificationMetrics& m, double loss, std::string_view name);

}  // namespace trainingd::engine
