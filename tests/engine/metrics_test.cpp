// The evaluation metrics against scikit-learn 1.2.1 (Debian's python3-sklearn): each expected
// value below was printed by the sklearn call in the comment beside it, on the same input.
#include "trainingd/engine/train/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace trainingd::engine {
namespace {

constexpr double kTol = 1e-12;

// P = np.array([[0.7,0.2,0.1],[0.2,0.5,0.3],[0.1,0.3,0.6],[0.4,0.4,0.2],[0.3,0.3,0.4],
//               [0.05,0.9,0.05],[0.6,0.1,0.3],[0.2,0.2,0.6]])
// y = [0,1,2,1,0,1,2,2]; w = [1,2,0.5,1,3,1,1,0.25]; pred = P.argmax(1) = [0,1,2,0,2,1,0,2]
// (row 3 ties classes 0 and 1: the first wins, as numpy's argmax).
const std::vector<double> kP = {0.7, 0.2, 0.1, 0.2,  0.5, 0.3,  0.1, 0.3, 0.6, 0.4, 0.4, 0.2,
                                0.3, 0.3, 0.4, 0.05, 0.9, 0.05, 0.6, 0.1, 0.3, 0.2, 0.2, 0.6};
const std::vector<int32_t> kY = {0, 1, 2, 1, 0, 1, 2, 2};
const std::vector<double> kW = {1, 2, 0.5, 1, 3, 1, 1, 0.25};

void ExpectVector(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], kTol) << "index " << i;
}

TEST(MetricsTest, ThreeClassesMatchScikitLearn) {
  const ClassificationMetrics m = ComputeClassificationMetrics(kP, 3, kY);
  EXPECT_EQ(ArgMaxClasses(kP, 3), (std::vector<int32_t>{0, 1, 2, 0, 2, 1, 0, 2}));
  EXPECT_EQ(m.weight_sum, 8);
  EXPECT_NEAR(m.accuracy, 0.625, kTol);  // accuracy_score(y, pred)
  // confusion_matrix(y, pred, labels=[0,1,2])
  ExpectVector(m.confusion, {1, 0, 1, 1, 2, 0, 1, 0, 2});
  // precision_recall_fscore_support(y, pred, labels=[0,1,2], zero_division=0)
  ExpectVector(m.precision, {0.3333333333333333, 1.0, 0.6666666666666666});
  ExpectVector(m.recall, {0.5, 0.6666666666666666, 0.6666666666666666});
  ExpectVector(m.f1, {0.4, 0.8, 0.6666666666666666});
  ExpectVector(m.support, {2, 3, 3});
  // precision_score / recall_score / f1_score(y, pred, average="macro", zero_division=0)
  EXPECT_NEAR(m.precision_macro, 0.6666666666666666, kTol);
  EXPECT_NEAR(m.recall_macro, 0.611111111111111, kTol);
  EXPECT_NEAR(m.f1_macro, 0.6222222222222222, kTol);
  // roc_auc_score(y, P, multi_class="ovr", average="macro")
  EXPECT_NEAR(m.auc, 0.9111111111111111, kTol);
  // log_loss(y, P, labels=[0,1,2])
  EXPECT_NEAR(m.log_loss, 0.6876337785268141, kTol);
}

TEST(MetricsTest, SampleWeightsMatchScikitLearn) {
  // The same calls with sample_weight=w.
  const ClassificationMetrics m = ComputeClassificationMetrics(kP, 3, kY, kW);
  EXPECT_NEAR(m.weight_sum, 9.75, kTol);
  EXPECT_NEAR(m.accuracy, 0.48717948717948717, kTol);
  ExpectVector(m.confusion, {1, 0, 3, 1, 3, 0, 1, 0, 0.75});
  ExpectVector(m.precision, {0.3333333333333333, 1.0, 0.2});
  ExpectVector(m.recall, {0.25, 0.75, 0.42857142857142855});
  ExpectVector(m.f1, {0.28571428571428575, 0.8571428571428571, 0.27272727272727276});
  ExpectVector(m.support, {4, 4, 1.75});
  EXPECT_NEAR(m.precision_macro, 0.5111111111111111, kTol);
  EXPECT_NEAR(m.recall_macro, 0.4761904761904762, kTol);
  EXPECT_NEAR(m.f1_macro, 0.4718614718614718, kTol);
  EXPECT_NEAR(m.auc, 0.8178053830227744, kTol);
  EXPECT_NEAR(m.log_loss, 0.8167826654070607, kTol);
}

TEST(MetricsTest, BinaryAucIsTheMannWhitneyStatisticWithTies) {
  // p1 = [0.9,0.4,0.4,0.4,0.2,0.8,0.1,0.6,0.6]; y = [1,0,1,0,0,1,0,0,1];
  // w = [1,2,1,1,0.5,1,3,1,2]; P = np.stack([1 - p1, p1], 1)
  const std::vector<double> p1 = {0.9, 0.4, 0.4, 0.4, 0.2, 0.8, 0.1, 0.6, 0.6};
  const std::vector<int32_t> y = {1, 0, 1, 0, 0, 1, 0, 0, 1};
  const std::vector<double> w = {1, 2, 1, 1, 0.5, 1, 3, 1, 2};
  std::vector<double> p;
  std::vector<uint8_t> positive;
  for (size_t i = 0; i < p1.size(); ++i) {
    p.push_back(1 - p1[i]);
    p.push_back(p1[i]);
    positive.push_back(y[i] == 1);
  }
  EXPECT_NEAR(BinaryRocAuc(p1, positive), 0.875, kTol);  // roc_auc_score(y, p1)
  // roc_auc_score(y, p1, sample_weight=w)
  EXPECT_NEAR(BinaryRocAuc(p1, positive, w), 0.9066666666666667, kTol);
  // Two classes: the AUC of class 1's probability.
  EXPECT_NEAR(RocAuc(p, 2, y), 0.875, kTol);
  EXPECT_NEAR(ComputeClassificationMetrics(p, 2, y).auc, 0.875, kTol);
  EXPECT_NEAR(LogLoss(p, 2, y), 0.44689627433226153, kTol);  // log_loss(y, P, labels=[0,1])
  // Without a negative (or a positive) the AUC is undefined.
  EXPECT_TRUE(std::isnan(BinaryRocAuc(p1, std::vector<uint8_t>(p1.size(), 1))));
  EXPECT_TRUE(std::isnan(BinaryRocAuc(p1, std::vector<uint8_t>(p1.size(), 0))));
  // All scores tied: one half.
  EXPECT_NEAR(BinaryRocAuc(std::vector<double>(9, 0.3), positive), 0.5, kTol);
}

TEST(MetricsTest, LogLossClipsAsScikitLearnDoes) {
  // log_loss([1,1,0], [[1,0],[0,1],[0.5,0.5]], labels=[0,1]): -log(eps) for the first row.
  const std::vector<double> p = {1, 0, 0, 1, 0.5, 0.5};
  EXPECT_NEAR(LogLoss(p, 2, std::vector<int32_t>{1, 1, 0}), 12.245600189892366, 1e-9);
  EXPECT_TRUE(std::isfinite(LogLoss(p, 2, std::vector<int32_t>{1, 0, 0})));
}

TEST(MetricsTest, MacroMeansSkipClassesNeitherTrueNorPredicted) {
  // Four classes, class 3 never a label nor a prediction: sklearn's default labels leave it out.
  // P4 = [[0.6,0.2,0.1,0.1],[0.1,0.7,0.1,0.1],[0.2,0.2,0.5,0.1],[0.5,0.3,0.1,0.1]];
  // y4 = [0,1,2,1]; pred4 = P4.argmax(1)
  const std::vector<double> p = {0.6, 0.2, 0.1, 0.1, 0.1, 0.7, 0.1, 0.1,
                                 0.2, 0.2, 0.5, 0.1, 0.5, 0.3, 0.1, 0.1};
  const std::vector<int32_t> y = {0, 1, 2, 1};
  const ClassificationMetrics m = ComputeClassificationMetrics(p, 4, y);
  EXPECT_NEAR(m.precision_macro, 0.8333333333333334, kTol);  // precision_score(.., "macro")
  EXPECT_NEAR(m.recall_macro, 0.8333333333333334, kTol);     // recall_score(.., "macro")
  EXPECT_NEAR(m.f1_macro, 0.7777777777777777, kTol);         // f1_score(.., "macro")
  EXPECT_EQ(m.precision[3], 0);
  EXPECT_EQ(m.support[3], 0);
  // The one-vs-rest mean over the classes with positives and negatives (0, 1, 2):
  // np.mean([roc_auc_score(y4 == k, P4[:, k]) for k in range(3)])
  EXPECT_NEAR(m.auc, 1.0, kTol);
  // One class only: no class has both positives and negatives.
  EXPECT_TRUE(std::isnan(RocAuc(p, 4, std::vector<int32_t>{1, 1, 1, 1})));
}

TEST(MetricsTest, SoftmaxKeepsTheLogitsArgMax) {
  // Logits one float ulp apart stay ordered, and a tie keeps the first.
  const std::vector<float> logits = {1.0f, std::nextafter(1.0f, 2.0f), -3.0f, 2.0f, 2.0f, 0.0f};
  const std::vector<double> p = SoftmaxProbabilities(logits, 3);
  EXPECT_EQ(ArgMaxClasses(p, 3), (std::vector<int32_t>{1, 0}));
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-15);
  // Large logits do not overflow.
  const std::vector<double> big = SoftmaxProbabilities(std::vector<float>{1e30f, 0.0f}, 2);
  EXPECT_EQ(big[0], 1.0);
  EXPECT_EQ(big[1], 0.0);
}

// An evaluation computes the metrics from its logits without holding the probabilities: the
// same bits as from SoftmaxProbabilities, ties and very unequal logits included.
TEST(MetricsTest, FromLogitsIsBitIdenticalToFromProbabilities) {
  std::vector<float> logits;
  std::vector<int32_t> labels;
  uint32_t x = 12345;
  const auto next = [&] { return x = x * 1664525u + 1013904223u; };
  for (int i = 0; i < 300; ++i) {
    for (int k = 0; k < 4; ++k) logits.push_back(static_cast<float>(next() % 2001) / 100.0f - 10);
    if (i % 7 == 0) logits[logits.size() - 1] = logits[logits.size() - 2];  // a tie
    if (i % 11 == 0) logits[logits.size() - 3] = 80.0f;                     // a sure one
    labels.push_back(static_cast<int32_t>(next() % 4));
  }
  const std::vector<double> w(300, 0.5);
  for (const std::vector<double>& weights : {std::vector<double>{}, w}) {
    const ClassificationMetrics a =
        ComputeClassificationMetrics(SoftmaxProbabilities(logits, 4), 4, labels, weights);
    const ClassificationMetrics b =
        ComputeClassificationMetricsFromLogits(logits, 4, labels, weights);
    EXPECT_EQ(a.accuracy, b.accuracy);
    EXPECT_EQ(a.auc, b.auc);
    EXPECT_EQ(a.log_loss, b.log_loss);
    EXPECT_EQ(a.f1_macro, b.f1_macro);
    EXPECT_EQ(a.confusion, b.confusion);
    EXPECT_EQ(a.precision, b.precision);
    EXPECT_EQ(a.weight_sum, b.weight_sum);
  }
}

TEST(MetricsTest, RegressionMatchesScikitLearn) {
  // y = [3,-0.5,2,7,4.25]; pred = [2.5,0,2,8,3]; w = [1,2,0.5,1,3]
  const std::vector<double> y = {3, -0.5, 2, 7, 4.25}, pred = {2.5, 0, 2, 8, 3};
  const std::vector<double> w = {1, 2, 0.5, 1, 3};
  // mean_squared_error(y, pred, squared=False), mean_absolute_error, r2_score
  RegressionMetrics r = ComputeRegressionMetrics(pred, y);
  EXPECT_NEAR(r.rmse, 0.7826237921249264, kTol);
  EXPECT_NEAR(r.mae, 0.65, kTol);
  EXPECT_NEAR(r.r2, 0.9002442996742671, kTol);
  r = ComputeRegressionMetrics(pred, y, w);  // the same with sample_weight=w
  EXPECT_NEAR(r.rmse, 0.9264628073124864, kTol);
  EXPECT_NEAR(r.mae, 0.8333333333333334, kTol);
  EXPECT_NEAR(r.r2, 0.8590714220560065, kTol);
  EXPECT_NEAR(r.weight_sum, 7.5, kTol);
  // A constant target: r2_score([2,2,2], [2,2,2]) = 1.0, r2_score([2,2,2], [2,1,2]) = 0.0.
  const std::vector<double> c = {2, 2, 2};
  EXPECT_EQ(ComputeRegressionMetrics(c, c).r2, 1.0);
  EXPECT_EQ(ComputeRegressionMetrics(std::vector<double>{2, 1, 2}, c).r2, 0.0);
  // Nothing weighs anything: NaN rather than a division by zero's infinity.
  const RegressionMetrics z = ComputeRegressionMetrics(pred, y, std::vector<double>(5, 0.0));
  EXPECT_TRUE(std::isnan(z.rmse) && std::isnan(z.mae) && std::isnan(z.r2));
}

TEST(MetricsTest, MetricNamesAndDirections) {
  ASSERT_NE(FindEvaluationMetric("f1_macro"), nullptr);
  EXPECT_TRUE(FindEvaluationMetric("auc")->higher_is_better);
  EXPECT_FALSE(FindEvaluationMetric("log_loss")->higher_is_better);
  EXPECT_FALSE(FindEvaluationMetric("loss")->higher_is_better);
  EXPECT_EQ(FindEvaluationMetric("f1"), nullptr);
  EXPECT_EQ(FindEvaluationMetric(""), nullptr);
  EXPECT_EQ(EvaluationMetricNames(Task::kClassification),
            "loss, accuracy, precision_macro, recall_macro, f1_macro, auc, log_loss");
  // A regression job's, and either task's ("loss" once).
  EXPECT_EQ(EvaluationMetricNames(Task::kRegression), "loss, rmse, mae, r2");
  EXPECT_EQ(EvaluationMetricNames(),
            "loss, accuracy, precision_macro, recall_macro, f1_macro, auc, log_loss, rmse, mae, "
            "r2");
  EXPECT_TRUE(FindEvaluationMetric("r2")->higher_is_better);
  EXPECT_FALSE(FindEvaluationMetric("rmse", Task::kRegression)->higher_is_better);
  EXPECT_EQ(FindEvaluationMetric("rmse", Task::kClassification), nullptr);
  EXPECT_EQ(FindEvaluationMetric("auc", Task::kRegression), nullptr);
  const ClassificationMetrics m = ComputeClassificationMetrics(kP, 3, kY);
  EXPECT_EQ(MetricValue(m, 0.25, "loss"), 0.25);
  EXPECT_EQ(MetricValue(m, 0.25, "auc"), m.auc);
  EXPECT_EQ(MetricValue(m, 0.25, "f1_macro"), m.f1_macro);
  EXPECT_TRUE(std::isnan(MetricValue(m, 0.25, "nope")));
}

// A two-class model's decision threshold (docs/job-spec.md#decision-threshold), by hand:
// p1 = [0.9, 0.6, 0.4, 0.35, 0.2, 0.1], y = [1, 0, 1, 1, 0, 0].
//   argmax (0.5): pred = [1, 1, 0, 0, 0, 0]: right 1, 4, 5 (rows 0, 4, 5) -> accuracy 3/6;
//     confusion [[2, 1], [2, 1]] (true 0 predicted 0: rows 4, 5; as 1: row 1; true 1 as 0:
//     rows 2, 3; as 1: row 0).
//   threshold 0.3: pred = [1, 1, 1, 1, 0, 0]: right rows 0, 2, 3, 4, 5 -> accuracy 5/6;
//     confusion [[2, 1], [0, 3]]; class 1's precision 3/4, recall 3/3, F1 6/7.
// The AUC and the log loss read the probabilities alone: the same under both.
TEST(MetricsTest, DecisionThresholdMovesThePredictedClassOnly) {
  const std::vector<double> p1 = {0.9, 0.6, 0.4, 0.35, 0.2, 0.1};
  std::vector<double> p;
  for (double v : p1) {
    p.push_back(1 - v);
    p.push_back(v);
  }
  const std::vector<int32_t> y = {1, 0, 1, 1, 0, 0};
  const ClassificationMetrics at_half = ComputeClassificationMetrics(p, 2, y);
  const ClassificationMetrics lowered = ComputeClassificationMetrics(p, 2, y, {}, 0.3);
  EXPECT_EQ(PredictedClasses(p, 2), (std::vector<int32_t>{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(PredictedClasses(p, 2, 0.3), (std::vector<int32_t>{1, 1, 1, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(at_half.accuracy, 3.0 / 6);
  EXPECT_EQ(at_half.confusion, (std::vector<double>{2, 1, 2, 1}));
  EXPECT_DOUBLE_EQ(lowered.accuracy, 5.0 / 6);
  EXPECT_EQ(lowered.confusion, (std::vector<double>{2, 1, 0, 3}));
  EXPECT_DOUBLE_EQ(lowered.precision[1], 3.0 / 4);
  EXPECT_DOUBLE_EQ(lowered.recall[1], 1.0);
  EXPECT_NEAR(lowered.f1[1], 6.0 / 7, 1e-15);
  EXPECT_EQ(lowered.auc, at_half.auc);
  EXPECT_EQ(lowered.log_loss, at_half.log_loss);
  // Above the threshold, not at it: p1 = 0.4 is class 0 at 0.4 (sklearn compares >=; see
  // docs/job-spec.md), and 0.5 exactly is the arg-max's tie, the first class.
  EXPECT_EQ(PredictedClasses(p, 2, 0.4), (std::vector<int32_t>{1, 1, 0, 0, 0, 0}));
  const std::vector<double> tie = {0.5, 0.5};
  EXPECT_EQ(PredictedClasses(tie, 2), (std::vector<int32_t>{0}));
  // Weighted: the counts are sums of weights (row 2, now right, weighs 4).
  const std::vector<double> w = {1, 1, 4, 1, 1, 1};
  EXPECT_DOUBLE_EQ(ComputeClassificationMetrics(p, 2, y, w, 0.3).accuracy, 8.0 / 9);
  // From logits the same: log-odds of p1 (z = [0, log(p1 / (1 - p1))]).
  std::vector<float> logits;
  for (double v : p1) {
    logits.push_back(0.0f);
    logits.push_back(static_cast<float>(std::log(v / (1 - v))));
  }
  const ClassificationMetrics from_logits =
      ComputeClassificationMetricsFromLogits(logits, 2, y, {}, 0.3);
  EXPECT_EQ(from_logits.confusion, lowered.confusion);
  // More than two classes: the threshold does not apply (the spec refuses one there).
  const std::vector<double> three = {0.2, 0.35, 0.45};
  EXPECT_EQ(PredictedClasses(three, 3, 0.3), (std::vector<int32_t>{2}));
}

// A regression evaluation's scatter: every example of a split of up to 1,000, else 1,000 spread
// evenly, floor(k * n / 1000), from the first example on.
TEST(MetricsTest, ScatterSampleIsBoundedAndEvenlySpread) {
  EXPECT_TRUE(ScatterSample(0).empty());
  EXPECT_EQ(ScatterSample(3), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(ScatterSample(1000).size(), 1000u);
  const std::vector<int64_t> big = ScatterSample(2500);
  ASSERT_EQ(big.size(), 1000u);
  EXPECT_EQ(big[0], 0);
  EXPECT_EQ(big[1], 2);  // 2.5 rounded down
  EXPECT_EQ(big[2], 5);
  EXPECT_EQ(big.back(), 2497);  // 999 * 2.5
  EXPECT_TRUE(std::is_sorted(big.begin(), big.end()));
  EXPECT_EQ(ScatterSample(1001).back(), 999);  // 999 * 1001 / 1000
  EXPECT_EQ(ScatterSample(10, 4), (std::vector<int64_t>{0, 2, 5, 7}));
}

}  // namespace
}  // namespace trainingd::engine
