// A CSV table's columns (docs/data.md, "Columns"): typed from the whole file or by the user,
// missing values, their imputation, and what an upload reports of each column.
#include "trainingd/engine/data/table_columns.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "churn_csv_fixture.h"
#include "trainingd/engine/data/csv_dataset.h"

namespace trainingd::engine {
namespace {

using TableColumns = ChurnCsvTest;

TEST_F(TableColumns, TypedFromTheWholeFileWithWhatEachHolds) {
  source_.columns.ignore = {"id"};
  auto info = ProbeCsv(source_, options_, ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  ASSERT_EQ(info->columns.size(), 5u);
  const ColumnSummary& age = info->columns[0];
  EXPECT_EQ(age.name, "age");
  EXPECT_EQ(age.type, ColumnType::kNumber);
  EXPECT_FALSE(age.typed_by_user);
  EXPECT_EQ(age.missing, 2);  // an empty cell in train.csv, "NA" in test.csv
  EXPECT_EQ(age.present, 4);
  EXPECT_DOUBLE_EQ(age.mean, 32.5);
  EXPECT_DOUBLE_EQ(age.stddev, std::sqrt(875.0 / 4));
  EXPECT_EQ(age.min, 10);
  EXPECT_EQ(age.max, 50);
  const ColumnSummary& city = info->columns[1];
  EXPECT_EQ(city.type, ColumnType::kCategorical);
  EXPECT_EQ(city.missing, 1);  // "?"
  EXPECT_EQ(city.present, 5);
  EXPECT_EQ(city.levels, 4);
  EXPECT_EQ(city.top_levels, (std::vector<std::pair<std::string, int64_t>>{
                                 {"paris", 2}, {"berlin", 1}, {"rome", 1}, {"tokyo", 1}}));
  EXPECT_EQ(info->columns[2].missing, 2);
  EXPECT_DOUBLE_EQ(info->columns[2].mean, (100.0 + 400 + 200 + 150) / 4);
  EXPECT_EQ(info->columns[3].type, ColumnType::kIgnored);
  EXPECT_TRUE(info->columns[3].typed_by_user);
  EXPECT_EQ(info->columns[4].type, ColumnType::kLabel);
  EXPECT_EQ(info->feature_names, (std::vector<std::string>{"age", "income"}));
  EXPECT_EQ(info->example_shape, Shape{3});  // age, income, then the code of city
  // The first pass alone types the columns and counts what is missing.
  auto headers = ProbeCsv(source_, options_, ProbeDepth::kHeaders);
  ASSERT_TRUE(headers.ok());
  EXPECT_EQ(headers->columns[1].type, ColumnType::kCategorical);
  EXPECT_EQ(headers->columns[0].missing, 2);
}

TEST_F(TableColumns, ACategoricalColumnIsCodedByTheTrainSplitsLevels) {
  source_.columns.ignore = {"id"};
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // A row: the numbers (age, income), then city's code.
  EXPECT_EQ(d->train.example_shape(), Shape{3});
  EXPECT_EQ(d->feature_names, (std::vector<std::string>{"age", "income"}));
  ASSERT_EQ(d->categorical.size(), 1u);
  EXPECT_EQ(d->categorical[0].name, "city");
  EXPECT_EQ(d->categorical[0].levels, (std::vector<std::string>{"berlin", "paris", "rome"}));
  EXPECT_EQ(d->categorical[0].codes(), 5);
  std::vector<float> codes;
  for (int64_t r = 0; r < d->train.size(); ++r) codes.push_back(d->train.images[r * 3 + 2]);
  // paris, berlin, paris, "?" (missing), rome.
  EXPECT_EQ(codes, (std::vector<float>{3, 2, 3, 0, 4}));
  EXPECT_EQ(d->test.images[2], 1.0f);  // tokyo: not a level of the train split
  // The probe of a table with a categorical column reads it whole for its levels.
  auto headers = ProbeCsv(source_, options_, ProbeDepth::kHeaders);
  ASSERT_TRUE(headers.ok());
  EXPECT_EQ(headers->categorical, d->categorical);
  EXPECT_EQ(headers->example_shape, Shape{3});
}

TEST_F(TableColumns, RawTestExamplesGiveTheCategoricalValuesBackAsInTheFile) {
  source_.columns.ignore = {"id"};
  source_.path = Write("train.csv", std::string(kChurnTrain) + "20,,300,6,yes\n");
  source_.test_path = Write("test.csv", std::string(kChurnTest) + "25,,NA,7,no\n");
  auto raw = ReadTestExamples(source_, 0, 10);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->example_shape, Shape{2});  // the numbers; the categorical values apart
  EXPECT_EQ(raw->feature_names, (std::vector<std::string>{"age", "income"}));
  EXPECT_EQ(raw->categorical_names, (std::vector<std::string>{"city"}));
  // tokyo is in no training row, yet given back as it is; a blank is missing ("").
  EXPECT_EQ(raw->categorical, (std::vector<std::string>{"tokyo", ""}));
  ASSERT_EQ(raw->values.size(), 4u);
  EXPECT_TRUE(std::isnan(raw->values[0]));  // "NA"
  EXPECT_EQ(raw->values[1], 150);
  EXPECT_EQ(raw->values[2], 25);
}

TEST_F(TableColumns, LevelsSeenOnlyInValidationAreUnknown) {
  source_.columns.ignore = {"id"};
  options_.validation_size = 2;  // paris, berlin; the train split: paris, "?", rome
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->categorical[0].levels, (std::vector<std::string>{"paris", "rome"}));
  EXPECT_EQ(d->validation.images[2], 2.0f);  // paris
  EXPECT_EQ(d->validation.images[5], 1.0f);  // berlin: unknown
  // The numbers' statistics are the train split's too, and the code is not standardized.
  source_.standardize = true;
  auto s = LoadCsv(source_, options_);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->feature_mean.size(), 2u);
  EXPECT_EQ(s->validation.images[2], 2.0f);
}

TEST_F(TableColumns, ACategoricalValueIsCodedAsTheLoaderCodesACell) {
  CategoricalFeature city{"city", {"berlin", "paris", "rome"}};
  const std::vector<std::string> markers = {"NA", "?"};
  EXPECT_EQ(CategoricalCode(city, "paris", markers), 3);
  EXPECT_EQ(CategoricalCode(city, " rome\t", markers), 4);  // trimmed, as a cell
  EXPECT_EQ(CategoricalCode(city, "tokyo", markers), CategoricalFeature::kUnknownLevel);
  EXPECT_EQ(CategoricalCode(city, "Paris", markers), CategoricalFeature::kUnknownLevel);
  for (const char* missing : {"", "  ", "NA", "?", "nan", "-NaN"}) {
    EXPECT_EQ(CategoricalCode(city, missing, markers), CategoricalFeature::kMissingLevel)
        << missing;
  }
  EXPECT_EQ(CategoricalMissingTexts({"NA", "NaN", " ? "}),
            (std::vector<std::string>{"", "NA", "NaN", "?", "nan", "NAN", "-nan", "-NaN", "-NAN",
                                      "+nan", "+NaN", "+NAN"}));
  // TensorFlow's rule for the embedding size, and one-hot up to one_hot_max_levels codes.
  EXPECT_EQ(EmbeddingDimFor(10), 2);    // ceil(10^0.25) = ceil(1.78)
  EXPECT_EQ(EmbeddingDimFor(1000), 6);  // ceil(5.62)
  EXPECT_EQ(EmbeddingDimFor(10000), 10);
  EXPECT_EQ(EmbeddingDimFor(1000002), 32);
  EXPECT_EQ(EmbeddingDimOf(16, CategoricalOptions{}), 0);
  EXPECT_EQ(EmbeddingDimOf(17, CategoricalOptions{}), EmbeddingDimFor(17));
  EXPECT_EQ(EmbeddingDimOf(17, CategoricalOptions{.one_hot_max_levels = 16, .embedding_dim = 4}),
            4);
}

TEST_F(TableColumns, MissingNumbersTakeTheTrainSplitsMean) {
  source_.columns.ignore = {"city", "id"};
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const float age_mean = static_cast<float>(130.0 / 4);  // 30, 50, 40, 10
  const float income_mean = static_cast<float>(700.0 / 3);
  EXPECT_EQ(d->feature_impute, (std::vector<float>{age_mean, income_mean}));
  EXPECT_EQ(d->feature_names, (std::vector<std::string>{"age", "income"}));
  const std::vector<float> train(d->train.images.data(), d->train.images.data() + 10);
  EXPECT_EQ(train, (std::vector<float>{30, 100, age_mean, income_mean, 50, 400, 40, income_mean, 10,
                                       200}));
  EXPECT_EQ(d->test.images[0], age_mean);  // the test file's "NA" takes the train split's mean
  EXPECT_EQ(d->test.images[1], 150);
}

TEST_F(TableColumns, MissingNumbersTakeTheTrainSplitsMedian) {
  source_.columns.ignore = {"city", "id"};
  source_.columns.impute = Impute::kMedian;
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // age: 10 30 40 50 -> (30 + 40) / 2; income: 100 200 400 -> 200.
  EXPECT_EQ(d->feature_impute, (std::vector<float>{35, 200}));
  EXPECT_EQ(d->train.images[2], 35);
  EXPECT_EQ(d->train.images[3], 200);
}

TEST_F(TableColumns, StandardizedAfterImputationWithThePresentValuesStatistics) {
  source_.columns.ignore = {"city", "id"};
  source_.standardize = true;
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->feature_mean.size(), 2u);
  EXPECT_FLOAT_EQ(d->feature_mean[0], 32.5f);
  EXPECT_FLOAT_EQ(d->feature_std[0], static_cast<float>(std::sqrt(875.0 / 4)));
  // A missing value becomes the mean, so 0 once standardized; a present one as before.
  EXPECT_EQ(d->train.images[2], 0.0f);
  EXPECT_FLOAT_EQ(d->train.images[0], static_cast<float>((30 - 32.5) / std::sqrt(875.0 / 4)));
  // Every value is finite: no NaN reaches training.
  for (const Split* s : {&d->train, &d->test}) {
    for (int64_t i = 0; i < s->images.size(); ++i) EXPECT_TRUE(std::isfinite(s->images[i]));
  }
}

TEST_F(TableColumns, UserTypesAndMarkers) {
  // A numeric code typed categorical; "?" no longer a marker, so city's "?" is a level.
  source_.columns.categorical = {"id"};
  source_.columns.missing_values = {"NA"};
  auto info = ProbeCsv(source_, options_, ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->columns[3].type, ColumnType::kCategorical);
  EXPECT_TRUE(info->columns[3].typed_by_user);
  EXPECT_EQ(info->columns[3].levels, 6);
  EXPECT_EQ(info->columns[1].missing, 0);
  EXPECT_EQ(info->columns[1].levels, 5);
  EXPECT_EQ(info->feature_names, (std::vector<std::string>{"age", "income"}));
}

TEST_F(TableColumns, AColumnWithoutAValueIsDroppedAndAConstantOneNoted) {
  source_.path = Write("train.csv", "a,b,c,label\n1,,5,0\n2,NA,5,1\n3,?,5,0\n");
  source_.test_path.clear();
  source_.label_column = "label";
  auto info = ProbeCsv(source_, options_, ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->columns[1].dropped, "every value is missing");
  EXPECT_TRUE(std::isnan(info->columns[1].mean));
  EXPECT_EQ(info->columns[2].dropped, "");
  EXPECT_EQ(info->columns[2].note, "constant: every present value is the same");
  EXPECT_EQ(info->feature_names, (std::vector<std::string>{"a", "c"}));
  // Nothing but dropped or left-out columns: no features.
  source_.columns.ignore = {"a", "c"};
  EXPECT_EQ(ProbeError(), source_.path +
                              ": no feature columns: every column but the label is left out "
                              "(ignore) or has no value");
}

TEST_F(TableColumns, BadOptionsNameTheOption) {
  source_.columns.ignore = {"nope"};
  EXPECT_EQ(ProbeError(), "ignore: " + source_.path +
                              " has no column 'nope'; the columns are 'age', 'city', 'income', "
                              "'id', 'churn'");
  source_.columns.ignore = {"id"};
  source_.columns.categorical = {"id"};
  EXPECT_EQ(ProbeError(), "ignore: column 'id' is also typed categorical");
  source_.columns = {};
  source_.columns.number = {"churn"};
  EXPECT_EQ(ProbeError(), "number: 'churn' is the label column (label_column)");
  source_.columns = {};
  source_.columns.missing_values = {" "};
  EXPECT_EQ(ProbeError(), "missing_values: an empty marker (an empty cell is always missing)");
  source_.columns = {};
  source_.columns.max_levels = 0;
  EXPECT_EQ(ProbeError(), "max_levels: must be in [1, 1000000], got 0");
}

TEST_F(TableColumns, MoreLevelsThanTheCapNameTheColumn) {
  source_.columns.max_levels = 3;
  // paris, berlin and rome in train.csv; tokyo in test.csv is one too many.
  EXPECT_EQ(ProbeError(), source_.test_path +
                              ": line 2: column 'city': more than 3 distinct values "
                              "(max_levels); leave the column out (ignore=city), raise "
                              "max_levels or hash it into N buckets (hash_buckets=city:N)");
  source_.columns.max_levels = 4;
  EXPECT_EQ(ProbeError(), "");
}

TEST_F(TableColumns, AMissingLabelIsAnError) {
  source_.path = Write("train.csv", "a,label\n1,x\n2,NA\n");
  source_.test_path.clear();
  source_.label_column = "label";
  EXPECT_EQ(ProbeError(), source_.path +
                              ": line 3: column 'label': the label is missing ('NA' is a "
                              "missing_values marker); every row needs one");
  source_.path = Write("train.csv", "a,label\n1,x\n2,\n");
  EXPECT_EQ(ProbeError(), source_.path + ": line 3: column 'label': empty label");
}

}  // namespace
}  // namespace trainingd::engine
