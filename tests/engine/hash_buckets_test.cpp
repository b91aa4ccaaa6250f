// Categorical columns hashed into N buckets (TableColumnOptions::hash_buckets,
// docs/data.md#hashed-columns): the hash (FNV-1a 64) checked against its published vectors and by
// hand, a level's code by its bucket, an unseen value unknown, a column over max_levels accepted
// when hashed and refused naming the column otherwise, and the options' errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "churn_csv_fixture.h"
#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/data/table_columns.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/job/model_input.h"

namespace trainingd::engine {
namespace hash_buckets_test {  // a name of its own: the test files build as one unit

TEST(HashBuckets, Fnv1a64AndTheBucketOfAValue) {
  // The published FNV-1a 64 test vectors (the empty string is the offset basis).
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
  // By hand (python: h ^= byte; h = h * 1099511628211 % 2**64, from 14695981039346656037).
  EXPECT_EQ(Fnv1a64("paris"), 0x0bf595a7a1aaec80ull);
  EXPECT_EQ(HashBucket("paris", 7), 0);
  EXPECT_EQ(HashBucket("berlin", 7), 0);  // 0x9e07c0c281129771 % 7
  EXPECT_EQ(HashBucket("rome", 7), 5);    // 0xa35c181ff0cab454 % 7
  EXPECT_EQ(HashBucket("a", 1024), 140);  // the low 10 bits of 0x...ec8c
  EXPECT_EQ(HashBucket("foobar", 1024), 1000);
}

TEST(HashBuckets, ALevelsCodeIsItsBucketsAndAnUnseenValueIsUnknown) {
  const CategoricalFeature city{"city", {"berlin", "paris", "rome"}, 7};
  EXPECT_EQ(city.codes(), 9);  // missing, unknown, 7 buckets
  EXPECT_EQ(city.CodeOf("paris"), 2);
  EXPECT_EQ(city.CodeOf("berlin"), 2);  // the same bucket as paris
  EXPECT_EQ(city.CodeOf("rome"), 7);
  // tokyo's bucket would be 0 too, but it is no level: unknown, as in the ONNX graph's
  // LabelEncoder (its default) and the model server.
  EXPECT_EQ(HashBucket("tokyo", 7), 0);
  EXPECT_EQ(city.CodeOf("tokyo"), CategoricalFeature::kUnknownLevel);
  EXPECT_EQ(CategoricalCode(city, " rome ", {"NA"}), 7);
  EXPECT_EQ(CategoricalCode(city, "NA", {"NA"}), CategoricalFeature::kMissingLevel);
  const CategoricalFeature plain{"city", {"berlin", "paris", "rome"}};
  EXPECT_EQ(plain.codes(), 5);
  EXPECT_EQ(plain.CodeOf("rome"), 4);
}

class HashedColumn : public ChurnCsvTest {
 protected:
  void SetUp() override {
    ChurnCsvTest::SetUp();
    source_.columns.ignore = {"id"};
    source_.columns.max_levels = 2;  // city has 4 levels over both files
  }
};

TEST_F(HashedColumn, OverTheCapRefusedNamingTheColumnUnlessHashed) {
  EXPECT_EQ(ProbeError(), source_.path +
                              ": line 6: column 'city': more than 2 distinct values (max_levels); "
                              "leave the column out (ignore=city), raise max_levels or hash it "
                              "into N buckets (hash_buckets=city:N)");
  source_.columns.hash_buckets = {{"city", 7}};
  auto info = ProbeCsv(source_, options_, ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  // The summary as for any categorical column, and the buckets.
  EXPECT_EQ(info->columns[1].levels, 4);
  EXPECT_EQ(info->columns[1].hash_buckets, 7);
  EXPECT_EQ(info->columns[1].top_levels[0], (std::pair<std::string, int64_t>{"paris", 2}));
  auto d = LoadCsv(source_, options_);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->categorical.size(), 1u);
  EXPECT_EQ(d->categorical[0].hash_buckets, 7);
  EXPECT_EQ(d->categorical[0].levels, (std::vector<std::string>{"berlin", "paris", "rome"}));
  EXPECT_EQ(d->categorical[0].codes(), 9);
  std::vector<float> codes;
  for (int64_t r = 0; r < d->train.size(); ++r) codes.push_back(d->train.images[r * 3 + 2]);
  // paris, berlin (paris's bucket), paris, "?" (missing), rome.
  EXPECT_EQ(codes, (std::vector<float>{2, 2, 2, 0, 7}));
  EXPECT_EQ(d->test.images[2], 1.0f);  // tokyo: not a level of the train split
  EXPECT_EQ(info->categorical, d->categorical);
  // The raw test examples give the values back as in the file.
  auto raw = ReadTestExamples(source_, 0, 10);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->categorical, (std::vector<std::string>{"tokyo"}));
  // The model's first layer encodes the buckets' codes; what it records is valid.
  JobSpec spec;
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  ASSERT_TRUE(FitModelToData(&spec, d->train.example_shape(), d->num_classes, d->categorical).ok());
  ASSERT_EQ(spec.model.layers[0].category_codes, (std::vector<int64_t>{9}));
  const ModelInput in = MakeModelInput(spec, *d);
  EXPECT_TRUE(ValidateModelInput(in).ok()) << ValidateModelInput(in).ToString();
}

TEST_F(HashedColumn, BadOptionsNameTheField) {
  source_.columns.hash_buckets = {{"city", 1}};
  EXPECT_EQ(ProbeError(), "hash_buckets.city: must be in [2, 1048576], got 1");
  source_.columns.hash_buckets = {{"city", kMaxHashBuckets + 1}};
  EXPECT_EQ(ProbeError(), "hash_buckets.city: must be in [2, 1048576], got 1048577");
  source_.columns.hash_buckets = {{"nope", 8}};
  EXPECT_EQ(ProbeError(), "hash_buckets: " + source_.path + " has no column 'nope'");
  source_.columns.hash_buckets = {{"churn", 8}};
  EXPECT_EQ(ProbeError(), "hash_buckets: 'churn' is the label column (label_column)");
  source_.columns.hash_buckets = {{"age", 8}};
  EXPECT_EQ(ProbeError(),
            "hash_buckets: column 'age' is number, not categorical (type it with categorical=age)");
  // A number column typed categorical can be hashed.
  source_.columns.categorical = {"age"};
  source_.columns.max_levels = 10;
  EXPECT_EQ(ProbeError(), "");
}

TEST(HashBuckets, AModelsBucketsAreChecked) {
  ModelInput in;
  in.example_shape = Shape{2};
  in.num_classes = 2;
  in.class_names = {"a", "b"};
  in.preprocessing = Preprocessing::kNone;
  in.feature_names = {"x"};
  in.categorical = {{"city", {"berlin", "paris"}, 4}};
  LayerSpec encoding = LayerSpec::Of(LayerType::kCategoricalEncoding);
  encoding.category_codes = {6};
  encoding.embedding_dims = {0};
  in.model.layers = {encoding, LayerSpec::Dense(2, Activation::kNone)};
  EXPECT_TRUE(ValidateModelInput(in).ok()) << ValidateModelInput(in).ToString();
  in.categorical[0].hash_buckets = 1;
  EXPECT_EQ(ValidateModelInput(in).message(),
            "categorical[0].hash_buckets: must be 0 or in [2, 1048576], got 1");
  in.categorical[0].hash_buckets = 5;  // 7 codes, the layer has 6
  EXPECT_EQ(ValidateModelInput(in).message().rfind("model.layers[0].category_codes[0]", 0), 0u);
}

}  // namespace hash_buckets_test
}  // namespace trainingd::engine
