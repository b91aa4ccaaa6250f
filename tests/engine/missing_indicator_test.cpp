// The "was missing" indicator features of a CSV table's number columns (TableColumnOptions::
// missing_indicator, docs/data.md#missing-indicators): which columns get one, where they sit in a
// row, that they are neither imputed nor standardized, what a model records of them, that
// TrainedModel::Predict computes them from the raw row exactly as the loader did, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "churn_csv_fixture.h"
#include "session_test_util.h"
#include "test_util.h"
#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/data/table_columns.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/job/model_input.h"
#include "trainingd/engine/job/trained_model.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::engine {
namespace missing_indicator_test {  // a name of its own: the test files build as one unit

using testing::FailsNaming;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

class MissingIndicator : public ChurnCsvTest {
 protected:
  void SetUp() override {
    ChurnCsvTest::SetUp();
    source_.columns.ignore = {"id"};
  }
  static std::vector<float> Row(const Split& s, int64_t r) {
    const int64_t w = s.images.shape()[1];
    return std::vector<float>(s.images.data() + r * w, s.images.data() + (r + 1) * w);
  }
};

TEST_F(MissingIndicator, EveryNumberColumnWithAMissingCellGetsOneAfterTheNumbers) {
  source_.columns.missing_indicator = {kEveryNumberColumn};
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // A row: age, income, age was missing, income was missing, city's code.
  EXPECT_EQ(d->train.example_shape(), Shape{5});
  EXPECT_EQ(d->missing_indicators, (std::vector<std::string>{"age", "income"}));
  const float age = static_cast<float>(130.0 / 4), income = static_cast<float>(700.0 / 3);
  EXPECT_EQ(Row(d->train, 0), (std::vector<float>{30, 100, 0, 0, 3}));      // paris
  EXPECT_EQ(Row(d->train, 1), (std::vector<float>{age, income, 1, 1, 2}));  // berlin
  EXPECT_EQ(Row(d->train, 3), (std::vector<float>{40, income, 0, 1, 0}));   // "?"
  EXPECT_EQ(Row(d->test, 0), (std::vector<float>{age, 150, 1, 0, 1}));      // tokyo: unknown
  auto info = ProbeCsv(source_, options_, ProbeDepth::kFull);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->columns[0].missing_indicator);
  EXPECT_FALSE(info->columns[1].missing_indicator);  // city: categorical
  EXPECT_TRUE(info->columns[2].missing_indicator);
  EXPECT_EQ(info->example_shape, Shape{5});  // what the model's first layer sees
  // The indicators are known after the first pass.
  auto headers = ProbeCsv(source_, options_, ProbeDepth::kHeaders);
  ASSERT_TRUE(headers.ok());
  EXPECT_EQ(headers->example_shape, Shape{5});
  // Raw test examples are the values as in the file: no indicators.
  auto raw = ReadTestExamples(source_, 0, 10);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->example_shape, Shape{2});
}

TEST_F(MissingIndicator, NeitherImputedNorStandardized) {
  source_.columns.missing_indicator = {"income"};
  source_.columns.impute = Impute::kMedian;
  source_.standardize = true;
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->missing_indicators, (std::vector<std::string>{"income"}));
  EXPECT_EQ(d->train.example_shape(), Shape{4});
  ASSERT_EQ(d->feature_mean.size(), 2u);  // the numbers only
  std::vector<float> flags;
  for (int64_t r = 0; r < d->train.size(); ++r) flags.push_back(d->train.images[r * 4 + 2]);
  EXPECT_EQ(flags, (std::vector<float>{0, 1, 0, 1, 0}));
  EXPECT_EQ(d->test.images[2], 0.0f);
  // income's median 200, standardized with the present values' mean and deviation.
  EXPECT_FLOAT_EQ(d->train.images[4 + 1],
                  static_cast<float>((200 - 700.0 / 3) / d->feature_std[1]));
}

TEST_F(MissingIndicator, ANamedColumnWithoutAMissingCellGetsNone) {
  source_.columns.ignore.clear();
  source_.columns.ignore = {"city"};
  source_.columns.missing_indicator = {"id", "income"};
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->feature_names, (std::vector<std::string>{"age", "income", "id"}));
  EXPECT_EQ(d->missing_indicators, (std::vector<std::string>{"income"}));
  EXPECT_EQ(d->train.example_shape(), Shape{4});
}

TEST_F(MissingIndicator, BadOptionsNameTheOption) {
  source_.columns.missing_indicator = {"nope"};
  EXPECT_EQ(ProbeError(), "missing_indicator: " + source_.path +
                              " has no column 'nope'; the columns are 'age', 'city', 'income', "
                              "'id', 'churn'");
  source_.columns.missing_indicator = {"city"};
  EXPECT_EQ(ProbeError(),
            "missing_indicator: column 'city' is categorical, not a number column (an indicator "
            "is for numbers; a categorical column has its own missing level)");
  source_.columns.missing_indicator = {"id"};
  EXPECT_TRUE(FailsNaming(Status::InvalidArgument(ProbeError()),
                          "missing_indicator: column 'id' is ignored"));
  source_.columns.missing_indicator = {"churn"};
  EXPECT_EQ(ProbeError(), "missing_indicator: 'churn' is the label column (label_column)");
  source_.columns.missing_indicator = {"*", "age"};
  EXPECT_EQ(ProbeError(),
            "missing_indicator: \"*\" (every number column) stands alone, without names");
}

// A model of rows [a, b] that fills in a missing a with 1 and b with 2 and has an indicator for b:
// its first layer sees [a, b, b was missing].
ModelInput IndicatorInput() {
  ModelInput in;
  in.example_shape = Shape{2};
  in.num_classes = 2;
  in.class_names = {"no", "yes"};
  in.preprocessing = Preprocessing::kNone;
  in.feature_names = {"a", "b"};
  in.feature_impute = {1.0f, 2.0f};
  in.missing_indicators = {"b"};
  in.dataset_name = "table";
  in.dataset_format = "csv";
  in.model.layers = {LayerSpec::Dense(4, Activation::kRelu),
                     LayerSpec::Dense(2, Activation::kNone)};
  return in;
}

void Save(const std::string& dir, const Model& model) {
  auto manager = CheckpointManager::Create(dir);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  CheckpointData data;
  data.global_step = 7;
  for (const Parameter* p : model.parameters()) data.tensors.emplace_back(p->name, p->value);
  data.states.push_back({"input_pipeline", {0, 0}});
  ASSERT_TRUE((*manager)->Save(data).ok());
}

TEST(MissingIndicatorModel, PredictComputesTheIndicatorsFromTheRawRow) {
  const ModelInput in = IndicatorInput();
  ASSERT_TRUE(ValidateModelInput(in).ok());
  EXPECT_EQ(ModelExampleShape(in), Shape{3});
  EXPECT_EQ(MissingIndicatorPositions(in), (std::vector<int64_t>{1}));
  testing::ScopedDir dir("missing_indicator_model");
  auto reference = Model::Build(in.model, Shape{3}, 2, 4);
  ASSERT_TRUE(reference.ok());
  Save(dir.path(), **reference);
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  EXPECT_EQ(trained->example_size(), 2);  // the caller gives the raw row
  const std::vector<float> raw = {5, kNan, kNan, 7, 3, 4};
  std::vector<float> got(6);
  ASSERT_TRUE(trained->Predict(raw.data(), 3, got.data(), nullptr).ok());
  // By hand: [5, NaN] -> [5, 2, 1]; [NaN, 7] -> [1, 7, 0]; [3, 4] -> [3, 4, 0].
  Tensor wide(Shape{3, 3});
  const std::vector<float> rows = {5, 2, 1, 1, 7, 0, 3, 4, 0};
  std::copy(rows.begin(), rows.end(), wide.data());
  const Tensor& want = (*reference)->Forward(wide, Mode::kEval);
  EXPECT_EQ(got, std::vector<float>(want.data(), want.data() + 6));
  // The indicator is not the imputed value: b given as 2 is not missing.
  const std::vector<float> given = {5, 2};
  std::vector<float> present(2);
  ASSERT_TRUE(trained->Predict(given.data(), 1, present.data(), nullptr).ok());
  EXPECT_NE(present, std::vector<float>(got.begin(), got.begin() + 2));
}

TEST(MissingIndicatorModel, ValidateNamesTheField) {
  ModelInput in = IndicatorInput();
  in.missing_indicators = {"c"};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "missing_indicators[0]"));
  in.missing_indicators = {"b", "a"};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "missing_indicators[1]"));
  in.missing_indicators = {"b", "b"};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "missing_indicators[1]"));
  in.missing_indicators = {"a"};
  in.feature_impute.clear();
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "missing_indicators"));
  // A model recorded before indicators: unchanged.
  in = IndicatorInput();
  in.missing_indicators.clear();
  in.model.layers[0].units = 4;
  EXPECT_EQ(ModelExampleShape(in), Shape{2});
  EXPECT_TRUE(ValidateModelInput(in).ok());
}

// The loader's rows and Predict on the raw test rows agree: MakeModelInput records the
// indicators, and Predict on the file's values (NaN where missing) gives what the model's
// Forward gives on the loaded, imputed and standardized test row.
TEST_F(MissingIndicator, PredictOnRawRowsIsForwardOnTheLoadersRows) {
  source_.columns.ignore = {"id", "city"};
  source_.columns.missing_indicator = {kEveryNumberColumn};
  source_.standardize = true;
  source_.path = Write("train.csv", std::string(kChurnTrain) + "NA,x,NA,6,yes\n");
  source_.test_path = Write("test.csv", std::string(kChurnTest) + "20,x,,7,no\n35,x,10,8,no\n");
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  JobSpec spec;
  spec.model.layers = {LayerSpec::Dense(5, Activation::kRelu),
                       LayerSpec::Dense(2, Activation::kNone)};
  const ModelInput in = MakeModelInput(spec, *d);
  EXPECT_EQ(in.example_shape, Shape{2});
  EXPECT_EQ(in.missing_indicators, (std::vector<std::string>{"age", "income"}));
  ASSERT_TRUE(ValidateModelInput(in).ok()) << ValidateModelInput(in).ToString();
  testing::ScopedDir dir("missing_indicator_rows");
  auto reference = Model::Build(in.model, d->train.example_shape(), 2, 9);
  ASSERT_TRUE(reference.ok());
  Save(dir.path(), **reference);
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  auto raw = ReadTestExamples(source_, 0, 10);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ASSERT_EQ(raw->size(), 3);
  std::vector<float> got(6);
  ASSERT_TRUE(trained->Predict(raw->values.data(), 3, got.data(), nullptr).ok());
  const Tensor& want = (*reference)->Forward(d->test.images, Mode::kEval);
  ASSERT_EQ(want.size(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
}

}  // namespace missing_indicator_test
}  // namespace trainingd::engine
