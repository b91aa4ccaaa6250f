// model.json (api/model_json.h): written and read back equal to the float bit, strict reading
// with errors naming the field, and the file's absence explained.
#include "trainingd/api/model_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace trainingd::api {
namespace {

namespace eng = trainingd::engine;

eng::ModelInput TableInput() {
  eng::ModelInput in;
  in.example_shape = eng::Shape{3};
  in.num_classes = 2;
  in.class_names = {"no", "yes \"really\""};
  in.preprocessing = eng::Preprocessing::kStandard;
  // Values whose shortest decimal matters: each must come back as the same float.
  in.feature_mean = {0.1f, -12345.678f, 1e-30f};
  in.feature_std = {std::nextafter(1.0f, 2.0f), 3.4028235e38f, 7e-5f};
  in.dataset_name = "table";
  in.dataset_format = "csv";
  in.dataset_sha256 = std::string(64, 'c');
  in.model.layers = {eng::LayerSpec::Flatten(), eng::LayerSpec::Dense(4, eng::Activation::kRelu),
                     eng::LayerSpec::Dropout(0.25f),
                     eng::LayerSpec::Dense(2, eng::Activation::kNone)};
  return in;
}

eng::ModelInput ImageInput() {
  eng::ModelInput in;
  in.example_shape = eng::Shape{28, 28, 1};
  in.num_classes = 10;
  for (int c = 0; c < 10; ++c) in.class_names.push_back(std::to_string(c));
  in.preprocessing = eng::Preprocessing::kScale255;
  in.dataset_name = "fashion-mnist";
  in.dataset_format = "idx";
  in.model = *eng::PresetModel("cnn");
  return in;
}

// A table with a number and two categorical columns (their codes last in a row).
eng::ModelInput CategoricalInput() {
  eng::ModelInput in = TableInput();
  in.example_shape = eng::Shape{3};
  in.feature_mean = {0.5f};
  in.feature_std = {2.0f};
  in.feature_names = {"age"};
  in.feature_impute = {41.5f};
  in.categorical = {{"city", {"berlin", "paris"}}, {"plan", {"1", "2", "3"}}};
  in.missing_values = {"NA", "?"};
  eng::LayerSpec encoding = eng::LayerSpec::Of(eng::LayerType::kCategoricalEncoding);
  encoding.category_codes = {4, 5};
  encoding.embedding_dims = {0, 2};
  in.model.layers.insert(in.model.layers.begin(), encoding);
  return in;
}

// CategoricalInput with a "was missing" indicator for age: the model sees [age, age missing,
// city, plan] (data.md#missing-indicators); callers still give [age, city, plan].
eng::ModelInput IndicatorInput() {
  eng::ModelInput in = CategoricalInput();
  in.missing_indicators = {"age"};
  return in;
}

// CategoricalInput with city hashed into 2 buckets: 4 codes, as its encoding has.
eng::ModelInput HashedInput() {
  eng::ModelInput in = CategoricalInput();
  in.categorical[0].hash_buckets = 2;
  return in;
}

TEST(ModelJsonTest, RoundTripsEveryField) {
  for (const eng::ModelInput& in :
       {TableInput(), ImageInput(), CategoricalInput(), IndicatorInput(), HashedInput()}) {
    const std::string text = ModelInputToJson(in);
    auto back = ParseModelInput(text);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
    EXPECT_EQ(*back, in) << text;
  }
}

TEST(ModelJsonTest, ErrorsNameTheField) {
  const nlohmann::json good = nlohmann::json::parse(ModelInputToJson(TableInput()));
  struct Case {
    const char* what;
    nlohmann::json doc;
    const char* field;
  };
  auto with = [&](const char* key, nlohmann::json value) {
    nlohmann::json d = good;
    d[key] = std::move(value);
    return d;
  };
  auto without = [&](const char* key) {
    nlohmann::json d = good;
    d.erase(key);
    return d;
  };
  nlohmann::json bad_layer = good;
  bad_layer["model"]["layers"][1]["units"] = -3;
  nlohmann::json bad_dataset = good;
  bad_dataset["dataset"]["digest"] = "x";
  for (const Case& c : {
           Case{"an unknown key", with("colour", 1), "colour"},
           Case{"a later version", with("version", 2), "version"},
           Case{"no example shape", without("example_shape"), "example_shape"},
           Case{"a rank-2 example", with("example_shape", {3, 1}), "example_shape"},
           Case{"too many classes", with("num_classes", 257), "num_classes"},
           Case{"too few names", with("class_names", {"no"}), "class_names"},
           Case{"an unknown preprocessing", with("preprocessing", "zscore"), "preprocessing"},
           Case{"a zero std", with("feature_std", {1, 0, 1}), "feature_std[1]"},
           Case{"a short mean", with("feature_mean", {1, 2}), "feature_mean"},
           Case{"a bad layer", bad_layer, "model.layers[1]"},
           Case{"an unknown dataset key", bad_dataset, "dataset.digest"},
       }) {
    FieldError error;
    auto r = ParseModelInput(c.doc.dump(), &error);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), eng::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(error.field.rfind(c.field, 0), 0u) << c.what << ": " << error.message;
  }
  EXPECT_FALSE(ParseModelInput("[1, 2]").ok());
  EXPECT_FALSE(ParseModelInput("{").ok());
}

// A hashed column's buckets: written only for such a column, and in range.
TEST(ModelJsonTest, HashBucketsAreInRange) {
  const nlohmann::json plain = nlohmann::json::parse(ModelInputToJson(CategoricalInput()));
  EXPECT_FALSE(plain["categorical"][0].contains("hash_buckets"));
  nlohmann::json doc = nlohmann::json::parse(ModelInputToJson(HashedInput()));
  EXPECT_EQ(doc["categorical"][0]["hash_buckets"], 2);
  doc["categorical"][0]["hash_buckets"] = 1;
  FieldError error;
  EXPECT_FALSE(ParseModelInput(doc.dump(), &error).ok());
  EXPECT_EQ(error.field, "categorical[0].hash_buckets") << error.message;
  doc["categorical"][0]["hash_buckets"] = 3;  // 5 codes; the layer has 4
  EXPECT_FALSE(ParseModelInput(doc.dump(), &error).ok());
  EXPECT_EQ(error.field, "model.layers[0].category_codes[0]") << error.message;
}

// missing_indicators: written only when there are some (a model.json without them reads as
// before), and each must name a number feature.
TEST(ModelJsonTest, MissingIndicatorsNameNumberFeatures) {
  const nlohmann::json plain = nlohmann::json::parse(ModelInputToJson(CategoricalInput()));
  EXPECT_FALSE(plain.contains("missing_indicators"));
  nlohmann::json doc = nlohmann::json::parse(ModelInputToJson(IndicatorInput()));
  EXPECT_EQ(doc["missing_indicators"], nlohmann::json::array({"age"}));
  EXPECT_EQ(doc["example_shape"], nlohmann::json::array({3}));  // the raw row
  for (const auto& [value, field] :
       {std::pair{nlohmann::json::array({"city"}), "missing_indicators[0]"},
        {nlohmann::json::array({"age", "age"}), "missing_indicators[1]"},
        {nlohmann::json("age"), "missing_indicators"}}) {
    doc["missing_indicators"] = value;
    FieldError error;
    auto r = ParseModelInput(doc.dump(), &error);
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(error.field, field) << error.message;
  }
}

TEST(ModelJsonTest, WritesAndReadsTheCheckpointDirectorysFile) {
  const std::string dir =
      ::testing::TempDir() + "/model_json_" + std::to_string(::getpid()) + "/a/b";
  std::filesystem::remove_all(dir);
  auto missing = ReadModelJson(dir);
  EXPECT_EQ(missing.status().code(), eng::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no such directory"), std::string::npos);

  ASSERT_TRUE(WriteModelJson(dir, ImageInput()).ok());  // creates the directory
  auto read = ReadModelJson(dir);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, ImageInput());

  std::filesystem::remove(dir + "/model.json");
  auto absent = ReadModelJson(dir);
  EXPECT_EQ(absent.status().code(), eng::StatusCode::kNotFound);
  EXPECT_NE(absent.status().message().find("no model.json (a directory trained before"),
            std::string::npos)
      << absent.status().message();

  std::ofstream(dir + "/model.json") << "{\"version\": 1}";
  auto invalid = ReadModelJson(dir);
  EXPECT_EQ(invalid.status().code(), eng::StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.status().message(), dir + "/model.json: example_shape: required");
  std::filesystem::remove_all(::testing::TempDir() + "/model_json_" + std::to_string(::getpid()));
}

}  // namespace
}  // namespace trainingd::api
