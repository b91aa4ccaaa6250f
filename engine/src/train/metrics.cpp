#include "trainingd/engine/train/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainingd::engine {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double WeightOf(std::span<const double> weights, size_t i) {
  return weights.empty() ? 1.0 : weights[i];
}

// a / b, 0 when b is 0 (sklearn's zero_division=0).
double Ratio(double a, double b) { return b == 0 ? 0.0 : a / b; }

// The metrics below read the probabilities through `prob(i, k)` (example i, class k): from a
// [N, C] array, or computed from the logits on the fly (ComputeClassificationMetricsFromLogits),
// so that an evaluation holds no N x C doubles.
template <typename Prob>
std::vector<int32_t> ArgMaxOf(const Prob& prob, size_t n, size_t c) {
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    size_t arg = 0;
    double best = prob(i, 0);
    for (size_t k = 1; k < c; ++k) {
      const double p = prob(i, k);
      if (p > best) {
        best = p;
        arg = k;
      }
    }
    out[i] = static_cast<int32_t>(arg);
  }
  return out;
}

// PredictedClasses' rule on `prob`.
template <typename Prob>
std::vector<int32_t> PredictedOf(const Prob& prob, size_t n, size_t c, double threshold) {
  if (c != 2 || threshold == kDefaultDecisionThreshold) return ArgMaxOf(prob, n, c);
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = prob(i, 1) > threshold ? 1 : 0;
  return out;
}

template <typename Prob>
double RocAucOf(const Prob& prob, size_t c, std::span<const int32_t> labels,
                std::span<const double> weights) {
  const size_t n = labels.size();
  std::vector<double> scores(n);
  std::vector<uint8_t> positive(n);
  const auto column = [&](size_t k) {
    for (size_t i = 0; i < n; ++i) {
      scores[i] = prob(i, k);
      positive[i] = labels[i] == static_cast<int32_t>(k) ? 1 : 0;
    }
    return BinaryRocAuc(scores, positive, weights);
  };
  if (c == 2) return column(1);
  double sum = 0;
  int counted = 0;
  for (size_t k = 0; k < c; ++k) {
    const double auc = column(k);
    if (std::isnan(auc)) continue;  // the class has no example, or is every example
    sum += auc;
    ++counted;
  }
  return counted ? sum / counted : kNaN;
}

template <typename Prob>
double LogLossOf(const Prob& prob, size_t c, std::span<const int32_t> labels,
                 std::span<const double> weights) {
  double total = 0, weight = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    double row = 0;
    for (size_t k = 0; k < c; ++k) row += std::clamp(prob(i, k), kLogLossEps, 1 - kLogLossEps);
    const double q =
        std::clamp(prob(i, static_cast<size_t>(labels[i])), kLogLossEps, 1 - kLogLossEps) / row;
    const double w = WeightOf(weights, i);
    total += w * -std::log(q);
    weight += w;
  }
  return weight == 0 ? kNaN : total / weight;
}

template <typename Prob>
ClassificationMetrics MetricsOf(const Prob& prob, int num_classes, std::span<const int32_t> labels,
                                std::span<const double> weights, double threshold) {
  ClassificationMetrics m;
  m.num_classes = num_classes;
  const auto c = static_cast<size_t>(num_classes);
  const std::vector<int32_t> predicted = PredictedOf(prob, labels.size(), c, threshold);
  for (size_t i = 0; i < labels.size(); ++i) m.weight_sum += WeightOf(weights, i);
  m.accuracy = Accuracy(labels, predicted, weights);
  m.confusion = ConfusionMatrix(labels, predicted, num_classes, weights);
  PrecisionRecallF1(m.confusion, num_classes, &m);
  m.auc = RocAucOf(prob, c, labels, weights);
  m.log_loss = LogLossOf(prob, c, labels, weights);
  return m;
}

// prob(i, k) of a row-major [N, C] array.
struct ArrayProb {
  std::span<const double> p;
  size_t c;
  double operator()(size_t i, size_t k) const { return p[i * c + k]; }
};

}  // namespace

std::vector<double> SoftmaxProbabilities(std::span<const float> logits, int num_classes) {
  const auto c = static_cast<size_t>(num_classes);
  std::vector<double> p(logits.size());
  for (size_t row = 0; c > 0 && row + c <= logits.size(); row += c) {
    const float* z = logits.data() + row;
    float zmax = z[0];
    for (size_t k = 1; k < c; ++k) zmax = std::max(zmax, z[k]);
    double sum = 0;
    for (size_t k = 0; k < c; ++k) {
      p[row + k] = std::exp(static_cast<double>(z[k]) - static_cast<double>(zmax));
      sum += p[row + k];
    }
    for (size_t k = 0; k < c; ++k) p[row + k] /= sum;
  }
  return p;
}

std::vector<int32_t> ArgMaxClasses(std::span<const double> scores, int num_classes) {
  const auto c = static_cast<size_t>(num_classes);
  std::vector<int32_t> out;
  if (c == 0) return out;
  out.reserve(scores.size() / c);
  for (size_t row = 0; row + c <= scores.size(); row += c) {
    size_t arg = 0;
    for (size_t k = 1; k < c; ++k) {
      if (scores[row + k] > scores[row + arg]) arg = k;
    }
    out.push_back(static_cast<int32_t>(arg));
  }
  return out;
}

std::vector<int32_t> PredictedClasses(std::span<const double> probabilities, int num_classes,
                                      double threshold) {
  const auto c = static_cast<size_t>(num_classes);
  if (c == 0) return {};
  return PredictedOf(ArrayProb{probabilities, c}, probabilities.size() / c, c, threshold);
}

double Accuracy(std::span<const int32_t> labels, std::span<const int32_t> predicted,
                std::span<const double> weights) {
  double right = 0, total = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double w = WeightOf(weights, i);
    total += w;
    if (labels[i] == predicted[i]) right += w;
  }
  return total == 0 ? kNaN : right / total;
}

std::vector<double> ConfusionMatrix(std::span<const int32_t> labels,
                                    std::span<const int32_t> predicted, int num_classes,
                                    std::span<const double> weights) {
  const auto c = static_cast<size_t>(num_classes);
  std::vector<double> m(c * c, 0.0);
  for (size_t i = 0; i < labels.size(); ++i) {
    m[static_cast<size_t>(labels[i]) * c + static_cast<size_t>(predicted[i])] +=
        WeightOf(weights, i);
  }
  return m;
}

void PrecisionRecallF1(const std::vector<double>& confusion, int num_classes,
                       ClassificationMetrics* out) {
  const auto c = static_cast<size_t>(num_classes);
  out->precision.assign(c, 0.0);
  out->recall.assign(c, 0.0);
  out->f1.assign(c, 0.0);
  out->support.assign(c, 0.0);
  double p_sum = 0, r_sum = 0, f_sum = 0;
  int present = 0;
  for (size_t k = 0; k < c; ++k) {
    double predicted = 0, actual = 0;
    for (size_t j = 0; j < c; ++j) {
      predicted += confusion[j * c + k];
      actual += confusion[k * c + j];
    }
    const double tp = confusion[k * c + k];
    const double p = Ratio(tp, predicted), r = Ratio(tp, actual);
    out->precision[k] = p;
    out->recall[k] = r;
    out->f1[k] = Ratio(2 * p * r, p + r);
    out->support[k] = actual;
    // sklearn's default labels: those among the true or the predicted classes.
    if (predicted > 0 || actual > 0) {
      ++present;
      p_sum += p;
      r_sum += r;
      f_sum += out->f1[k];
    }
  }
  out->precision_macro = present ? p_sum / present : 0.0;
  out->recall_macro = present ? r_sum / present : 0.0;
  out->f1_macro = present ? f_sum / present : 0.0;
}

double BinaryRocAuc(std::span<const double> scores, std::span<const uint8_t> positive,
                    std::span<const double> weights) {
  // Each score beside its index, sorted by ascending score, then index: a total order, so the
  // walk below is the same on any machine. Sorting the pairs themselves, not indices into
  // `scores`, keeps the comparisons in one array (an evaluation sorts every class's column).
  struct Scored {
    double score;
    size_t index;
  };
  std::vector<Scored> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = {scores[i], i};
  std::sort(order.begin(), order.end(), [](const Scored& a, const Scored& b) {
    return a.score < b.score || (a.score == b.score && a.index < b.index);
  });
  // Mann-Whitney: each positive gains the weight of the negatives below it, and half of those
  // tied with it.
  double pos_total = 0, neg_below = 0, pairs = 0;
  for (size_t g = 0; g < order.size();) {
    size_t end = g;
    double pos = 0, neg = 0;
    while (end < order.size() && order[end].score == order[g].score) {
      const double w = WeightOf(weights, order[end].index);
      (positive[order[end].index] ? pos : neg) += w;
      ++end;
    }
    pairs += pos * (neg_below + 0.5 * neg);
    pos_total += pos;
    neg_below += neg;
    g = end;
  }
  if (pos_total == 0 || neg_below == 0) return kNaN;
  return pairs / (pos_total * neg_below);
}

double RocAuc(std::span<const double> probabilities, int num_classes,
              std::span<const int32_t> labels, std::span<const double> weights) {
  const auto c = static_cast<size_t>(num_classes);
  return RocAucOf(ArrayProb{probabilities, c}, c, labels, weights);
}

double LogLoss(std::span<const double> probabilities, int num_classes,
               std::span<const int32_t> labels, std::span<const double> weights) {
  const auto c = static_cast<size_t>(num_classes);
  return LogLossOf(ArrayProb{probabilities, c}, c, labels, weights);
}

ClassificationMetrics ComputeClassificationMetrics(std::span<const double> probabilities,
                                                   int num_classes, std::span<const int32_t> labels,
                                                   std::span<const double> weights,
                                                   double threshold) {
  return MetricsOf(ArrayProb{probabilities, static_cast<size_t>(num_classes)}, num_classes, labels,
                   weights, threshold);
}

ClassificationMetrics ComputeClassificationMetricsFromLogits(std::span<const float> logits,
                                                             int num_classes,
                                                             std::span<const int32_t> labels,
                                                             std::span<const double> weights,
                                                             double threshold) {
  // Each row's largest logit and its softmax denominator, as SoftmaxProbabilities forms them;
  // a probability is then the same expression, so the same bits.
  const auto c = static_cast<size_t>(num_classes);
  const size_t n = labels.size();
  std::vector<float> row_max(n);
  std::vector<double> row_sum(n);
  for (size_t i = 0; i < n; ++i) {
    const float* z = logits.data() + i * c;
    float zmax = z[0];
    for (size_t k = 1; k < c; ++k) zmax = std::max(zmax, z[k]);
    double sum = 0;
    for (size_t k = 0; k < c; ++k) {
      sum += std::exp(static_cast<double>(z[k]) - static_cast<double>(zmax));
    }
    row_max[i] = zmax;
    row_sum[i] = sum;
  }
  const auto prob = [&](size_t i, size_t k) {
    return std::exp(static_cast<double>(logits[i * c + k]) - static_cast<double>(row_max[i])) /
           row_sum[i];
  };
  return MetricsOf(prob, num_classes, labels, weights, threshold);
}

RegressionMetrics ComputeRegressionMetrics(std::span<const double> predictions,
                                           std::span<const double> targets,
                                           std::span<const double> weights) {
  RegressionMetrics r;
  double squared = 0, absolute = 0, weighted_targets = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    const double w = WeightOf(weights, i);
    const double e = predictions[i] - targets[i];
    squared += w * e * e;
    absolute += w * std::fabs(e);
    weighted_targets += w * targets[i];
    r.weight_sum += w;
  }
  if (r.weight_sum == 0) return {0, kNaN, kNaN, kNaN};
  const double mean = weighted_targets / r.weight_sum;
  double total = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    const double d = targets[i] - mean;
    total += WeightOf(weights, i) * d * d;
  }
  r.rmse = std::sqrt(squared / r.weight_sum);
  r.mae = absolute / r.weight_sum;
  if (total == 0) {
    r.r2 = squared == 0 ? 1.0 : 0.0;
  } else {
    r.r2 = 1.0 - squared / total;
  }
  return r;
}

std::vector<int64_t> ScatterSample(int64_t n, int64_t max_points) {
  std::vector<int64_t> out;
  if (n <= 0 || max_points <= 0) return out;
  const int64_t count = std::min(n, max_points);
  out.reserve(static_cast<size_t>(count));
  // k * n < 2^63 for any split a job holds (n < 2^40 examples, k < max_points).
  for (int64_t k = 0; k < count; ++k) out.push_back(n <= max_points ? k : k * n / max_points);
  return out;
}

std::span<const EvaluationMetric> EvaluationMetricsOf(Task task) {
  if (task == Task::kRegression) return kRegressionMetrics;
  return kClassificationMetrics;
}

const EvaluationMetric* FindEvaluationMetric(std::string_view name, std::optional<Task> task) {
  for (Task t : {Task::kClassification, Task::kRegression}) {
    if (task && t != *task) continue;
    for (const EvaluationMetric& m : EvaluationMetricsOf(t)) {
      if (name == m.name) return &m;
    }
  }
  return nullptr;
}

std::string EvaluationMetricNames(std::optional<Task> task) {
  std::vector<std::string_view> names;
  for (Task t : {Task::kClassification, Task::kRegression}) {
    if (task && t != *task) continue;
    for (const EvaluationMetric& m : EvaluationMetricsOf(t)) {
      // "loss" is both tasks'.
      if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    }
  }
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::string DefaultMode(std::string_view fetch) {
  const size_t slash = fetch.find('/');
  const EvaluationMetric* m =
      FindEvaluationMetric(slash == std::string_view::npos ? fetch : fetch.substr(slash + 1));
  return m && m->higher_is_better ? "max" : "min";
}

double MetricValue(const ClassificationMetrics& m, double loss, std::string_view name) {
  if (name == "loss") return loss;
  if (name == "accuracy") return m.accuracy;
  if (name == "precision_macro") return m.precision_macro;
  if (name == "recall_macro") return m.recall_macro;
  if (name == "f1_macro") return m.f1_macro;
  if (name == "auc") return m.auc;
  if (name == "log_loss") return m.log_loss;
  return kNaN;
}

}  // namespace trainingd::engine
