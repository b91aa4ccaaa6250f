// The tables' features on N ranks (data_parallel_harness.h: ranks as threads through RunJob):
// categorical columns, "was missing" indicators and hashed columns loaded from a CSV file, a
// regression job and its scatter, a decision threshold, class and sample weights. Each trains and
// evaluates one process's bits on 2 and 3 ranks; the regression job, the weighted one and the
// CSV's, stopped on 2 ranks and resumed on 1, end where the straight run ends, bit for bit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data_parallel_harness.h"
#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/data/table_columns.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::engine {
namespace data_parallel_tables_test {  // a name of its own: the test files build as one unit

using namespace data_parallel;

// A table with categorical columns (categorical_encoding_layer.h): three numbers, then the codes
// of a one-hot column and of an embedded one, through the mlp preset. The embeddings' gradients
// are exact sums like every other's: 2 and 3 ranks and 2 threads train one process's bits.
TEST(DataParallelTest, CategoricalEmbeddingsAreBitIdenticalToOneProcess) {
  Datasets table = RandomDatasets(Shape{5}, 4, 3);
  Rng rng(4);
  for (Split* s : {&table.train, &table.test}) {
    for (int64_t r = 0; r < s->size(); ++r) {
      s->images[r * 5 + 3] = static_cast<float>(rng.UniformInt(5));   // 3 levels
      s->images[r * 5 + 4] = static_cast<float>(rng.UniformInt(30));  // 28 levels
    }
  }
  table.feature_names = {"a", "b", "c"};
  table.categorical = {{"small", {"x", "y", "z"}}, {"large", {}}};
  for (int i = 0; i < 28; ++i) table.categorical[1].levels.push_back("l" + std::to_string(10 + i));
  JobSpec spec = GatheredDenseJob(6);
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  ScopedDir d1("dpc1");
  const Outcome one = RunOnRanks(spec, 1, d1.path(), -1, 1, Clock::kReal, &table);
  ASSERT_EQ(one.global_step, 6);
  ASSERT_EQ(one.checkpoint.tensors.front().first,
            "categorical_encoding/embedding_1/embeddings");  // and it trained
  ScopedDir d2("dpc2");
  ExpectIdentical(one, RunOnRanks(spec, 1, d2.path(), -1, 2, Clock::kReal, &table));
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dpcn" + std::to_string(ranks));
    ExpectIdentical(one, RunOnRanks(spec, ranks, dn.path(), -1, 1, Clock::kReal, &table));
  }
}

// A regression job (huber on the standardized target): its gradients go through the same exact
// sums, so 2 and 3 ranks and 2 threads are one process, bit for bit, metrics included. So is the
// final evaluation's scatter (Trainer::Evaluate, from the outputs gathered in split order): of the
// 1,234 test examples (which neither 2 nor 3 ranks divide) the kScatterPoints of ScatterSample,
// each one's target and prediction.
TEST(DataParallelTest, RegressionIsBitIdenticalToOneProcess) {
  Datasets table = RandomDatasets(Shape{6}, 1, 5, 1234);
  for (Split* s : {&table.train, &table.test}) {
    const int64_t n = s->size();
    for (int64_t r = 0; r < n; ++r) {
      const float* x = s->images.data() + r * 6;
      s->targets.push_back(100 + 40 * x[0] - 25 * x[1] * x[2] + 3 * x[5]);
    }
    s->labels.clear();
  }
  table.task = Task::kRegression;
  table.target_mean = 100;
  table.target_std = 12;
  JobSpec spec = GatheredDenseJob(6);
  spec.task = Task::kRegression;
  spec.loss = RegressionLoss::kHuber;
  spec.huber_delta = 0.5f;
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  spec.hooks.logging.tensors = {"global_step", "loss"};
  ScopedDir d1("dpr1");
  const Outcome one = RunOnRanks(spec, 1, d1.path(), -1, 1, Clock::kReal, &table);
  ASSERT_EQ(one.global_step, 6) << one.reason;
  ASSERT_EQ(one.final_values.count("test/rmse"), 1u);
  ASSERT_FALSE(one.evaluations.empty());
  const EvaluationSummary& scatter = one.evaluations.back();
  ASSERT_EQ(scatter.task, Task::kRegression);
  ASSERT_EQ(scatter.split, "test");
  const std::vector<int64_t> sample = ScatterSample(table.test.size());
  ASSERT_EQ(sample.size(), static_cast<size_t>(kScatterPoints));
  ASSERT_EQ(scatter.actual.size(), sample.size());
  ASSERT_EQ(scatter.predicted.size(), sample.size());
  for (size_t k = 0; k < sample.size(); ++k) {
    ASSERT_EQ(scatter.actual[k], table.test.targets[static_cast<size_t>(sample[k])]) << k;
  }
  const auto expect_same_scatter = [&scatter](const Outcome& n) {
    ASSERT_FALSE(n.evaluations.empty());
    ExpectSameBits(n.evaluations.back().actual, scatter.actual, "actual");
    ExpectSameBits(n.evaluations.back().predicted, scatter.predicted, "predicted");
  };
  {
    SCOPED_TRACE("one process, 2 threads");
    ScopedDir d2("dpr2");
    const Outcome two_threads = RunOnRanks(spec, 1, d2.path(), -1, 2, Clock::kReal, &table);
    ExpectIdentical(one, two_threads);
    expect_same_scatter(two_threads);
  }
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dprn" + std::to_string(ranks));
    const Outcome n = RunOnRanks(spec, ranks, dn.path(), -1, 1, Clock::kReal, &table);
    ExpectIdentical(one, n);
    expect_same_scatter(n);
  }
  // Stopped after 3 steps on 2 ranks, resumed on 1: the straight run's bits.
  ExpectStopOnTwoRanksAndResumeOnOneIsStraight(spec, table, one, "dprresume");
}

// A two-class job's decision threshold is post-processing of the gathered probabilities: 2 and
// 3 ranks report one process's metrics and confusion matrix, bit for bit, and they are not the
// arg-max's (the training is: the same checkpoint).
TEST(DataParallelTest, ADecisionThresholdIsBitIdenticalToOneProcess) {
  const Datasets table = RandomDatasets(Shape{64}, 2, 7);
  JobSpec spec = GatheredDenseJob(4);
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  ScopedDir d0("dpt0"), d1("dpt1");
  const Outcome argmax = RunOnRanks(spec, 1, d0.path(), -1, 1, Clock::kReal, &table);
  spec.decision_threshold = 0.45;
  const Outcome one = RunOnRanks(spec, 1, d1.path(), -1, 1, Clock::kReal, &table);
  ASSERT_EQ(one.global_step, 4) << one.reason;
  EXPECT_TRUE(BitIdentical(argmax.checkpoint, one.checkpoint));
  ASSERT_FALSE(one.evaluations.empty());
  EXPECT_NE(one.evaluations.back().metrics.confusion, argmax.evaluations.back().metrics.confusion);
  for (int ranks : {2, 3}) {
    ScopedDir dn("dptn" + std::to_string(ranks));
    const Outcome n = RunOnRanks(spec, ranks, dn.path(), -1, 1, Clock::kReal, &table);
    ExpectIdentical(one, n);
    EXPECT_EQ(n.evaluations.back().metrics.confusion, one.evaluations.back().metrics.confusion);
  }
}

// Class weights (balanced) and sample weights scale each row's loss and gradient before the exact
// sums: 2 and 3 ranks are one process, bit for bit.
TEST(DataParallelTest, ClassAndSampleWeightsAreBitIdenticalToOneProcess) {
  Datasets table = RandomDatasets(Shape{64}, 5, 6);
  Rng rng(6);
  for (Split* s : {&table.train, &table.test}) {
    for (int64_t r = 0; r < s->size(); ++r) s->weights.push_back(float(rng.UniformInt(4)) / 2);
  }
  JobSpec spec = GatheredDenseJob(6);
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  spec.class_weights.balanced = true;
  ScopedDir d1("dpw1");
  const Outcome one = RunOnRanks(spec, 1, d1.path(), -1, 1, Clock::kReal, &table);
  ASSERT_EQ(one.global_step, 6) << one.reason;
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dpwn" + std::to_string(ranks));
    ExpectIdentical(one, RunOnRanks(spec, ranks, dn.path(), -1, 1, Clock::kReal, &table));
  }
  // Stopped after 3 steps on 2 ranks, resumed on 1: the straight run's bits.
  ExpectStopOnTwoRanksAndResumeOnOneIsStraight(spec, table, one, "dpwresume");
}

// A CSV table with blanks and markers in its number columns and a categorical column of 60 cities
// hashed into 40 buckets, loaded with missing_indicator=* and hash_buckets=city:40 (and the numbers
// standardized): the indicators and the bucket codes are features made at load time, the same on
// every load (each process of a distributed job loads its own copy), and the job trains and
// evaluates one process's bits on 2 and 3 ranks, and stopped on 2 ranks and resumed on 1.
TEST(DataParallelTest, MissingIndicatorsAndHashedColumnsAreBitIdenticalToOneProcess) {
  ScopedDir dir("dpmh");
  std::filesystem::create_directories(dir.path());
  Rng rng(8);
  const auto write = [&](const std::string& name, int rows) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream f(path);
    f << "age,city,income,plan,churn\n";
    for (int r = 0; r < rows; ++r) {
      const uint64_t age = 18 + rng.UniformInt(60), missing = rng.UniformInt(10);
      f << (missing == 0 ? "" : std::to_string(age)) << ",c" << rng.UniformInt(60) << ","
        << (missing == 1   ? "NA"
            : missing == 2 ? "?"
                           : std::to_string(rng.UniformInt(5000)))
        << ","
        << (missing == 3        ? ""
            : rng.UniformInt(2) ? "basic"
                                : "pro")
        << ","
        << "abc"[rng.UniformInt(3)] << "\n";
    }
    return path;
  };
  DatasetSource source;
  source.format = DatasetSource::Format::kCsv;
  source.path = write("train.csv", 150);
  source.test_path = write("test.csv", 60);
  source.label_column = "churn";
  source.standardize = true;
  source.columns.missing_indicator = {kEveryNumberColumn};
  source.columns.hash_buckets = {{"city", 40}};
  DatasetOptions options;
  options.validation_size = 0;
  auto loaded = LoadCsv(source, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Datasets& table = *loaded;
  // A row: age, income, age was missing, income was missing, city's bucket code, plan's code.
  ASSERT_EQ(table.train.example_shape(), Shape{6});
  ASSERT_EQ(table.missing_indicators, (std::vector<std::string>{"age", "income"}));
  ASSERT_EQ(table.categorical.size(), 2u);
  EXPECT_EQ(table.categorical[0].name, "city");
  EXPECT_EQ(table.categorical[0].hash_buckets, 40);
  EXPECT_EQ(table.categorical[0].codes(), 42);  // embedded (categorical_encoding_layer.h)
  int64_t indicated = 0;
  for (int64_t r = 0; r < table.train.size(); ++r) indicated += table.train.images[r * 6 + 2] == 1;
  EXPECT_GT(indicated, 0);  // some ages were missing
  {
    auto again = LoadCsv(source, options);
    ASSERT_TRUE(again.ok());
    for (auto [a, b] : {std::pair{&table.train, &again->train}, {&table.test, &again->test}}) {
      ASSERT_EQ(a->images.shape(), b->images.shape());
      EXPECT_EQ(std::memcmp(a->images.data(), b->images.data(), 4 * a->images.size()), 0);
      EXPECT_EQ(a->labels, b->labels);
    }
  }
  JobSpec spec = GatheredDenseJob(6);
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  ScopedDir d1("dpmh1");
  const Outcome one = RunOnRanks(spec, 1, d1.path(), -1, 1, Clock::kReal, &table);
  ASSERT_EQ(one.global_step, 6) << one.reason;
  ASSERT_EQ(one.checkpoint.tensors.front().first,
            "categorical_encoding/embedding_0/embeddings");  // the hashed city's
  ASSERT_FALSE(one.evaluations.empty());
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dpmhn" + std::to_string(ranks));
    const Outcome n = RunOnRanks(spec, ranks, dn.path(), -1, 1, Clock::kReal, &table);
    ExpectIdentical(one, n);
    ASSERT_FALSE(n.evaluations.empty());
    ExpectSameBits(n.evaluations.back().metrics.confusion, one.evaluations.back().metrics.confusion,
                   "confusion");
  }
  ExpectStopOnTwoRanksAndResumeOnOneIsStraight(spec, table, one, "dpmhresume");
}

}  // namespace data_parallel_tables_test
}  // namespace trainingd::engine
