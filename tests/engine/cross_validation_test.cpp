// k-fold cross-validation (cross_validation.h): the folds partition the training examples, are a
// pure function of (seed, folds, labels), keep each class's proportion when stratified, and
// ApplyFold makes fold i the validation split.
#include "trainingd/engine/data/cross_validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "test_util.h"

namespace trainingd::engine {
namespace {

// 3 classes in unequal numbers, in no order: 50 of class 0, 23 of 1, 7 of 2.
std::vector<int32_t> Labels() {
  std::vector<int32_t> labels;
  for (int i = 0; i < 80; ++i) labels.push_back(i % 16 < 10 ? 0 : i % 16 < 14 ? 1 : 2);
  while (std::count(labels.begin(), labels.end(), 2) > 7) {
    *std::find(labels.begin(), labels.end(), 2) = 1;
  }
  return labels;
}

TEST(CrossValidationTest, FoldsPartitionTheExamplesEvenly) {
  const std::vector<int32_t> labels = Labels();
  for (const bool stratified : {false, true}) {
    for (int64_t k : {2, 3, 5, 7, 20}) {
      auto folds = AssignFolds(labels, k, stratified, 42);
      ASSERT_TRUE(folds.ok()) << folds.status().ToString();
      ASSERT_EQ(folds->size(), labels.size());
      std::vector<int64_t> sizes(static_cast<size_t>(k), 0);
      for (int32_t f : *folds) {
        ASSERT_GE(f, 0);
        ASSERT_LT(f, k);
        ++sizes[static_cast<size_t>(f)];
      }
      const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*hi - *lo, 1) << "k " << k;
    }
  }
}

TEST(CrossValidationTest, FoldsAreAPureFunctionOfSeedFoldsAndLabels) {
  const std::vector<int32_t> labels = Labels();
  auto a = AssignFolds(labels, 5, true, 7);
  auto b = AssignFolds(labels, 5, true, 7);
  auto other_seed = AssignFolds(labels, 5, true, 8);
  auto plain = AssignFolds(labels, 5, false, 7);
  ASSERT_TRUE(a.ok() && b.ok() && other_seed.ok() && plain.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *other_seed);
  EXPECT_NE(*a, *plain);
  // Pinned: a change of the rule would move every job's folds (and a resumed experiment's).
  const std::vector<int32_t> first(a->begin(), a->begin() + 12);
  EXPECT_EQ(first, (std::vector<int32_t>{4, 2, 2, 2, 2, 3, 4, 3, 2, 4, 3, 0}))
      << ::testing::PrintToString(first);
}

TEST(CrossValidationTest, StratifiedFoldsKeepEachClassInProportion) {
  const std::vector<int32_t> labels = Labels();
  std::map<int32_t, int64_t> total;
  for (int32_t l : labels) ++total[l];
  const int64_t k = 5;
  auto folds = AssignFolds(labels, k, true, 3);
  ASSERT_TRUE(folds.ok());
  for (const auto& [label, n] : total) {
    for (int64_t f = 0; f < k; ++f) {
      int64_t in_fold = 0;
      for (size_t i = 0; i < labels.size(); ++i) {
        in_fold += labels[i] == label && (*folds)[i] == f;
      }
      EXPECT_GE(in_fold, n / k) << "class " << label << " fold " << f;
      EXPECT_LE(in_fold, (n + k - 1) / k) << "class " << label << " fold " << f;
    }
  }
  // A class with fewer examples than folds is spread over as many folds as it has.
  auto many = AssignFolds(labels, 10, true, 3);
  ASSERT_TRUE(many.ok());
  std::vector<int32_t> of_class_2;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == 2) of_class_2.push_back((*many)[i]);
  }
  std::sort(of_class_2.begin(), of_class_2.end());
  EXPECT_EQ(std::unique(of_class_2.begin(), of_class_2.end()), of_class_2.end());
}

TEST(CrossValidationTest, BadFoldCountsAreRefused) {
  const std::vector<int32_t> labels = {0, 1, 0};
  EXPECT_FALSE(AssignFolds(labels, 1, true, 0).ok());
  EXPECT_FALSE(AssignFolds(labels, 21, true, 0).ok());
  auto too_many = AssignFolds(labels, 4, false, 0);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("3 training examples"), std::string::npos);
}

TEST(CrossValidationTest, ApplyFoldMakesTheFoldTheValidationSplit) {
  auto base = testing::TwoClassTable(5, 103, 10);
  auto folds = AssignFolds(base->train.labels, 4, true, 11);
  ASSERT_TRUE(folds.ok());
  int64_t validation_total = 0;
  for (int64_t f = 0; f < 4; ++f) {
    Datasets data = *base;
    ASSERT_TRUE(ApplyFold(&data, 4, f, true, 11).ok());
    EXPECT_EQ(data.train.size() + data.validation.size(), 103);
    validation_total += data.validation.size();
    // The validation split is fold f's rows in file order, with their features.
    int64_t v = 0, t = 0;
    for (int64_t i = 0; i < 103; ++i) {
      const bool in_fold = (*folds)[static_cast<size_t>(i)] == f;
      const Split& s = in_fold ? data.validation : data.train;
      const int64_t row = in_fold ? v++ : t++;
      ASSERT_EQ(s.labels[static_cast<size_t>(row)], base->train.labels[static_cast<size_t>(i)]);
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(s.images[row * 3 + c], base->train.images[i * 3 + c]);
      }
    }
    EXPECT_EQ(data.test.size(), 10);
  }
  EXPECT_EQ(validation_total, 103);
  Datasets data = *base;
  EXPECT_FALSE(ApplyFold(&data, 4, 4, true, 11).ok());
}

// A regression split (targets, no class ids) with sample weights: its folds are plain (as
// AssignFolds without stratification), and each row keeps its target and weight.
TEST(CrossValidationTest, ARegressionSplitsFoldsCarryTargetsAndWeights) {
  Datasets data;
  data.task = Task::kRegression;
  data.train.images = Tensor(Shape{30, 1});
  for (int64_t i = 0; i < 30; ++i) {
    data.train.images[i] = static_cast<float>(i);
    data.train.targets.push_back(100.0f + static_cast<float>(i));
    data.train.weights.push_back(static_cast<float>(i % 3));
  }
  const Datasets base = data;
  auto plain = AssignFolds(std::vector<int32_t>(30, 0), 3, false, 5);
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(ApplyFold(&data, 3, 1, /*stratified=*/true, 5).ok());
  int64_t in_fold = 0;
  for (int32_t f : *plain) in_fold += f == 1;
  EXPECT_EQ(data.validation.size(), in_fold);
  EXPECT_EQ(data.train.size() + data.validation.size(), 30);
  for (const Split* s : {&data.train, &data.validation}) {
    ASSERT_EQ(s->targets.size(), static_cast<size_t>(s->size()));
    ASSERT_EQ(s->weights.size(), static_cast<size_t>(s->size()));
    EXPECT_TRUE(s->labels.empty());
    for (int64_t r = 0; r < s->size(); ++r) {
      const auto i = static_cast<int64_t>(s->images[r]);
      EXPECT_EQ((*plain)[static_cast<size_t>(i)] == 1, s == &data.validation) << i;
      EXPECT_EQ(s->targets[static_cast<size_t>(r)], base.train.targets[static_cast<size_t>(i)]);
      EXPECT_EQ(s->weights[static_cast<size_t>(r)], base.train.weights[static_cast<size_t>(i)]);
    }
  }
}

}  // namespace
}  // namespace trainingd::engine
