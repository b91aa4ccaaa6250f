// A table's rows as the model server takes them (infer_json.h): TF Serving's instances as
// objects keyed by column name, and KServe v2's "input" beside "categorical" (BYTES), become the
// rows TrainedModel::Predict takes: the numbers, then each categorical value's code.
#include <gtest/gtest.h>

#include <cmath>

#include "trainingd/api/infer_json.h"

namespace trainingd::api {
namespace {

namespace eng = trainingd::engine;

// age and income (numbers), then city (berlin, paris, rome) and plan (a, b).
eng::ModelInput Churn() {
  eng::ModelInput m;
  m.example_shape = eng::Shape{4};
  m.num_classes = 2;
  m.feature_names = {"age", "income"};
  m.categorical = {{"city", {"berlin", "paris", "rome"}}, {"plan", {"1", "2"}}};
  m.missing_values = {"NA", "?"};
  return m;
}

InferRequest MustParse(std::string_view body, bool predict) {
  auto r = predict ? ParsePredictRequest(body) : ParseInferRequest(body);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : InferRequest{};
}

std::string ResolveError(std::string_view body, bool predict) {
  auto r = predict ? ParsePredictRequest(body) : ParseInferRequest(body);
  if (!r.ok()) return r.status().message();
  InferRequest req = *r;
  return ResolveTableRequest(Churn(), &req).message();
}

TEST(InferTableTest, InstancesKeyedByColumnNameInTheModelsOrder) {
  InferRequest r = MustParse(R"({"instances": [
      {"city": "rome", "age": 41, "income": 1000.5, "plan": 2},
      {"plan": "1", "age": null, "city": " paris "},
      {"city": "tokyo", "income": 7, "age": 3, "plan": "NA"}]})",
                             true);
  ASSERT_EQ(r.rows.size(), 3u);
  ASSERT_TRUE(ResolveTableRequest(Churn(), &r).ok());
  EXPECT_EQ(r.shape, (std::vector<int64_t>{3, 4}));
  ASSERT_EQ(r.data.size(), 12u);
  EXPECT_EQ(std::vector<float>(r.data.begin(), r.data.begin() + 4),
            (std::vector<float>{41, 1000.5f, 4, 3}));  // rome = 2 + 2, "2" (a JSON integer) = 3
  // null and a column left out are missing: NaN for a number, the missing code for a category.
  EXPECT_TRUE(std::isnan(r.data[4]) && std::isnan(r.data[5]));
  EXPECT_EQ(r.data[6], 3);  // paris, trimmed as a CSV cell is
  EXPECT_EQ(r.data[7], 2);
  EXPECT_EQ(std::vector<float>(r.data.begin() + 8, r.data.end()),
            (std::vector<float>{3, 7, eng::CategoricalFeature::kUnknownLevel,
                                eng::CategoricalFeature::kMissingLevel}));
}

TEST(InferTableTest, KServesNumbersAndCategoricalInputsTogether) {
  InferRequest r = MustParse(R"({"inputs": [
      {"name": "categorical", "shape": [2, 2], "datatype": "BYTES",
       "data": ["berlin", "2", null, ""]},
      {"name": "input", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, null, 4]}]})",
                             false);
  ASSERT_TRUE(ResolveTableRequest(Churn(), &r).ok());
  EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(r.data[0], 1);
  EXPECT_EQ(r.data[2], 2);  // berlin
  EXPECT_EQ(r.data[3], 3);  // "2"
  EXPECT_TRUE(std::isnan(r.data[4]));
  EXPECT_EQ(r.data[6], 0);  // null
  EXPECT_EQ(r.data[7], 0);  // ""
}

TEST(InferTableTest, BadTableRequestsNameTheField) {
  EXPECT_EQ(ResolveError(R"({"instances": [{"age": 1, "town": "x"}]})", true),
            "instances[0].town: the model has no column 'town'; its columns are 'age', "
            "'income', 'city', 'plan'");
  EXPECT_EQ(ResolveError(R"({"instances": [{"age": "old"}]})", true),
            "instances[0].age: must be a number or null (a number column), got the string 'old'");
  EXPECT_EQ(ResolveError(R"({"instances": [{"plan": 1.5}]})", true),
            "instances[0].plan: must be a string, an integer or null (a categorical column)");
  EXPECT_EQ(ResolveError(R"({"instances": [{"age": 1}, [1, 2]]})", true),
            "instances[1]: must be an object of column values, as the first instance is; got "
            "array");
  EXPECT_EQ(ResolveError(R"({"instances": [{"age": [1]}]})", true),
            "instances[0].age: must be a number, a string or null, got array");
  EXPECT_EQ(ResolveError(R"({"instances": [[1, 2, 3, 4]]})", true),
            "instances: the model has categorical columns: send the rows as objects keyed by "
            "column name (instances), or 'input' (FP32, the 2 number columns) with 'categorical' "
            "(BYTES, the 2 categorical columns)");
  EXPECT_EQ(ResolveError(R"({"inputs": [{"name": "categorical", "shape": [1, 2],
      "datatype": "FP32", "data": [1, 2]}]})",
                         false),
            "inputs[0].datatype: must be BYTES, got 'FP32'");
  EXPECT_EQ(ResolveError(R"({"inputs": [{"name": "categorical", "shape": [1, 2],
      "datatype": "BYTES", "data": ["a", 3]}]})",
                         false),
            "inputs[0].data[1]: must be a string or null, got integer");
  EXPECT_EQ(ResolveError(R"({"inputs": [{"name": "categorical", "shape": [1, 2],
      "datatype": "BYTES", "data": ["a", "b"]}]})",
                         false),
            "inputs: needs the model's input 'input'");
  EXPECT_EQ(ResolveError(R"({"inputs": [
      {"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]},
      {"name": "categorical", "shape": [2, 2], "datatype": "BYTES", "data": ["a", "b", "c", "d"]}]})",
                         false),
            "inputs: 'categorical' must have shape [1, 2]: the batch of 'input' and the model's "
            "categorical columns");
  EXPECT_EQ(ResolveError(R"({"inputs": [
      {"name": "input", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]},
      {"name": "categorical", "shape": [1, 2], "datatype": "BYTES", "data": ["a", "b"]}]})",
                         false),
            "inputs[0].shape: must be [batch, 2]: the model's number columns");
  EXPECT_EQ(ResolveError(R"({"inputs": [
      {"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]},
      {"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]})",
                         false),
            "inputs[1].name: 'input' is given twice");
  // A model of numbers alone takes objects too, but not a "categorical" input.
  eng::ModelInput numbers = Churn();
  numbers.categorical.clear();
  numbers.example_shape = eng::Shape{2};
  InferRequest r = MustParse(R"({"instances": [{"income": 3}]})", true);
  ASSERT_TRUE(ResolveTableRequest(numbers, &r).ok());
  EXPECT_TRUE(std::isnan(r.data[0]));
  EXPECT_EQ(r.data[1], 3);
  r = MustParse(R"({"inputs": [
      {"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]},
      {"name": "categorical", "shape": [1, 1], "datatype": "BYTES", "data": ["a"]}]})",
                false);
  EXPECT_EQ(ResolveTableRequest(numbers, &r).message(),
            "inputs: the model has no categorical columns: give 'input' alone");
}

}  // namespace
}  // namespace trainingd::api
