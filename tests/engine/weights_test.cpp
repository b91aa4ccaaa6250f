// Imbalance: class weights and a sample-weight column, in the training loss (Keras' sample_weight
// with SUM_OVER_BATCH_SIZE) and in the evaluations (sample weights only), against hand-computed
// cases.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {

DatasetSource WeightedTable() {
  DatasetSource s;
  s.format = DatasetSource::Format::kCsv;
  s.path = "t.csv";
  s.label_column = "y";
  s.weight_column = "w";
  s.test_fraction = 0.5;
  return s;
}

DatasetOptions AllTrainRows() {
  DatasetOptions o;
  o.validation_size = 0;
  return o;
}

// Two rows, two classes: logits (0, ln 3) and (ln 3, 0), labels 1 and 1. Row 0's loss is
// ln(4/3), row 1's ln 4.
TEST(WeightedLossTest, CrossEntropyByHand) {
  Tensor logits(Shape{2, 2});
  logits[0] = 0;
  logits[1] = std::log(3.0f);
  logits[2] = std::log(3.0f);
  logits[3] = 0;
  const std::vector<int32_t> labels = {1, 1};
  const std::vector<float> weights = {2.0f, 0.5f};
  Tensor plain_grad, grad;
  const LossAndAccuracy plain = SoftmaxCrossEntropy(logits, labels, &plain_grad);
  const LossAndAccuracy weighted = SoftmaxCrossEntropy(logits, labels, &grad, 0, 0.0f, weights);
  EXPECT_NEAR(weighted.loss_sum, 2 * std::log(4.0 / 3) + 0.5 * std::log(4.0), 1e-6);
  EXPECT_NEAR(weighted.loss, weighted.loss_sum / 2, 1e-12);  // over the batch, not the weights
  EXPECT_DOUBLE_EQ(weighted.weight_sum, 2.5);
  EXPECT_DOUBLE_EQ(weighted.weighted_correct, 2.0);  // row 0 is right
  EXPECT_EQ(weighted.correct, 1);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(grad[i], plain_grad[i] * weights[static_cast<size_t>(i / 2)]) << i;
  }
  // Without weights, the unweighted numbers.
  EXPECT_DOUBLE_EQ(plain.weight_sum, 2);
  EXPECT_NEAR(plain.loss_sum, std::log(4.0 / 3) + std::log(4.0), 1e-6);  // float logits
}

TEST(WeightedLossTest, RegressionByHand) {
  Tensor out(Shape{2, 1});
  out[0] = 1;
  out[1] = -1;
  const std::vector<float> y = {0, 0};
  const std::vector<float> w = {3, 1};
  Tensor grad;
  const RegressionSums s =
      RegressionLossOf(out, y, RegressionLoss::kMse, 1, TargetScale{}, &grad, 0, w);
  EXPECT_DOUBLE_EQ(s.loss_sum, 3 * 1 + 1 * 1);
  EXPECT_DOUBLE_EQ(s.weight_sum, 4);
  EXPECT_FLOAT_EQ(grad[0], 3 * 2 * 1.0f / 2);
  EXPECT_FLOAT_EQ(grad[1], 1 * 2 * -1.0f / 2);
}

TEST(ClassWeightsTest, BalancedIsScikitLearnsAndNamesAreClasses) {
  Datasets data;
  data.num_classes = 3;
  data.class_names = {"a", "b", "c"};
  data.train.labels = {0, 0, 0, 0, 0, 0, 1, 1, 2};  // 6, 2, 1
  JobSpec spec;
  spec.class_weights.balanced = true;
  auto w = ResolveClassWeights(spec, data);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // n / (classes * n_c): 9 / 18, 9 / 6, 9 / 3 (sklearn.utils.class_weight.compute_class_weight).
  EXPECT_EQ(*w, (std::vector<float>{0.5f, 1.5f, 3.0f}));
  spec.class_weights = {};
  spec.class_weights.by_name = {{"c", 4.0f}};
  EXPECT_EQ(*ResolveClassWeights(spec, data), (std::vector<float>{1, 1, 4}));
  spec.class_weights.by_name = {{"d", 4.0f}};
  auto bad = ResolveClassWeights(spec, data);
  EXPECT_EQ(bad.status().message(),
            "class_weights.d: the dataset has no class 'd'; its classes are 'a', 'b', 'c'");
  // Integer labels are named "0".."n-1".
  data.class_names.clear();
  spec.class_weights.by_name = {{"2", 0.25f}};
  EXPECT_EQ(*ResolveClassWeights(spec, data), (std::vector<float>{1, 1, 0.25f}));
  spec.class_weights = {};
  EXPECT_TRUE(ResolveClassWeights(spec, data)->empty());
}

TEST(ClassWeightsTest, BadWeightsNameTheField) {
  JobSpec spec;
  spec.name = "w";
  spec.model_preset = "softmax";
  spec.model = *PresetModel("softmax");
  spec.max_steps = 1;
  spec.class_weights.by_name = {{"cat", -1.0f}};
  EXPECT_EQ(ValidateJobSpec(spec).message().rfind("class_weights.cat: must be a finite number", 0),
            0u);
  spec.class_weights = {};
  spec.class_weights.balanced = true;
  spec.task = Task::kRegression;
  spec.hooks.logging.tensors = {"loss"};
  EXPECT_EQ(ValidateJobSpec(spec).message().rfind("class_weights: weigh a classifier's", 0), 0u);
}

TEST(WeightColumnTest, ReadAsEachRowsWeightAndNotAFeature) {
  auto d = ParseCsv("a,w,y\n1,2,x\n2,0.5,y\n3,0,x\n4,+1e1,y\n", WeightedTable(), AllTrainRows());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->feature_names, std::vector<std::string>{"a"});
  EXPECT_EQ(d->train.example_shape(), Shape{1});
  ASSERT_EQ(d->train.weights.size(), d->train.labels.size());
  ASSERT_EQ(d->test.weights.size(), d->test.labels.size());
  // Each row's weight is the one of its row: a = 1, 2, 3, 4 weighs 2, 0.5, 0, 10.
  const float by_a[] = {2, 0.5f, 0, 10};
  for (const Split* s : {&d->train, &d->test}) {
    for (int64_t i = 0; i < s->size(); ++i) {
      const auto a = static_cast<int>(s->images[i]);
      EXPECT_EQ(s->weights[static_cast<size_t>(i)], by_a[a - 1]) << a;
    }
  }
}

TEST(WeightColumnTest, BadWeightsNameTheLineAndTheColumn) {
  const auto error = [](const std::string& csv, DatasetSource s = WeightedTable()) {
    auto d = ParseCsv(csv, s, AllTrainRows());
    return d.ok() ? std::string() : d.status().message();
  };
  EXPECT_EQ(error("a,w,y\n1,2,x\n2,-1,y\n3,1,x\n"),
            "t.csv: line 3: column 'w': '-1' is not a sample weight (a finite number >= 0; "
            "weight_column)");
  EXPECT_NE(error("a,w,y\n1,2,x\n2,,y\n3,1,x\n").find("line 3: column 'w': '' is not"),
            std::string::npos);
  EXPECT_NE(error("a,w,y\n1,2,x\n2,inf,y\n3,1,x\n").find("'inf' is not a sample weight"),
            std::string::npos);
  EXPECT_EQ(error("a,v,y\n1,2,x\n2,1,y\n"), "weight_column: t.csv has no column 'w'");
  DatasetSource label = WeightedTable();
  label.weight_column = "y";
  EXPECT_EQ(error("a,y\n1,x\n2,y\n", label),
            "weight_column: t.csv: column 'y' is the label column");
  // Every training row weighing 0 leaves nothing to learn.
  DatasetSource no_test = WeightedTable();
  no_test.test_fraction = 0.25;
  EXPECT_NE(error("a,w,y\n1,0,x\n2,0,y\n3,0,x\n4,0,y\n", no_test)
                .find("weight_column: every sample weight of the train split"),
            std::string::npos);
}

// A model whose logits ignore the input (a single dense layer with zero weights: every class
// equally likely) makes the weighted evaluation a hand computation: loss ln 2 for every row, and
// the accuracy the weight share of the rows whose label is class 0 (the arg-max of equal logits).
TEST(WeightColumnTest, EvaluationsWeighRowsBySampleWeightOnly) {
  Split split;
  split.images = Tensor(Shape{4, 1});
  for (int i = 0; i < 4; ++i) split.images[i] = static_cast<float>(i);
  split.labels = {0, 1, 1, 0};
  split.weights = {3, 1, 1, 1};
  ModelSpec model;
  model.layers = {LayerSpec::Dense(2, Activation::kNone)};
  model.layers[0].initializer = Initializer::kTruncatedNormal;
  model.layers[0].stddev = 0;
  model.layers[0].bias_init = 0;
  auto trainer = Trainer::Create(model, OptimizerOptions{}, split, 2,
                                 {.batch_size = 2, .class_weights = {10.0f, 0.1f}});
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  auto e = (*trainer)->Evaluate(split);
  ASSERT_TRUE(e.ok());
  EXPECT_NEAR(e->loss, std::log(2.0), 1e-6);
  EXPECT_DOUBLE_EQ(e->weight_sum, 6);
  EXPECT_DOUBLE_EQ(e->accuracy, 4.0 / 6);  // rows 0 and 3 (class 0) weigh 3 + 1 of 6
  EXPECT_EQ(e->correct, 2);
}

}  // namespace
}  // namespace trainingd::engine
