// The columns of a table (a CSV upload): how each is typed, which cells are missing, how a
// missing number is filled in, and what a column holds (docs/data.md, "Columns"). Plain data.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainingd::engine {

// What a column is to a job.
enum class ColumnType {
  kNumber,       // a feature: a decimal number, or missing
  kCategorical,  // a value from a set of levels (any text), or missing
  kLabel,        // the label column
  kIgnored,      // left out by the user (an id, a free-text name)
};
const char* ColumnTypeName(ColumnType t);  // "number", "categorical", "label", "ignored"
std::optional<ColumnType> ColumnTypeNamed(std::string_view name);

// How a missing number is filled in: with the train split's mean or median of the column's
// present values.
enum class Impute { kMean, kMedian };
const char* ImputeName(Impute i);  // "mean", "median"
std::optional<Impute> ImputeNamed(std::string_view name);

// The markers that mean "missing" by default, besides an empty cell (H2O's and pandas' usual
// ones). A cell is compared after the spaces and tabs around it are taken off; a number that
// reads as NaN ("nan", "-NaN") is missing too.
inline const std::vector<std::string>& DefaultMissingValues() {
  static const std::vector<std::string> markers = {"NA", "NaN", "?", "null"};
  return markers;
}

// The most distinct values a categorical column may have (its levels), by default, and at most.
inline constexpr int64_t kDefaultMaxLevels = 10000;
inline constexpr int64_t kMaxMaxLevels = 1000000;
// The most buckets a hashed categorical column may have (TableColumnOptions::hash_buckets), and
// the fewest: a code is then at most 2^20 + 2, exact in a float.
inline constexpr int64_t kMaxHashBuckets = int64_t{1} << 20;
inline constexpr int64_t kMinHashBuckets = 2;
// The most frequent levels a column summary lists.
inline constexpr size_t kSummaryTopLevels = 10;

// missing_indicator's word for every number column.
inline constexpr const char* kEveryNumberColumn = "*";

// The names of TableColumnOptions' fields as an upload spells them: its query parameters and the
// JSON part beside a CSV (docs/data.md#columns), and the first word of a reader's message about
// one of them ("hash_buckets.city: ...").
inline constexpr std::array<std::string_view, 8> kTableColumnOptionNames = {
    "categorical",       "number",      "ignore", "missing_values", "impute", "max_levels",
    "missing_indicator", "hash_buckets"};

// The user's say over a table's columns (the upload's options, recorded with the dataset).
struct TableColumnOptions {
  // Columns typed categorical whatever their values (a numeric code: a zip code, a store id).
  std::vector<std::string> categorical;
  // Columns typed number: a value that is not a number is then an error naming its line.
  std::vector<std::string> number;
  // Columns left out.
  std::vector<std::string> ignore;
  // The cell texts that mean missing, besides the empty cell.
  std::vector<std::string> missing_values = DefaultMissingValues();
  Impute impute = Impute::kMean;
  // The most levels a categorical column may have; more is an error naming the column.
  int64_t max_levels = kDefaultMaxLevels;
  // The number columns that get a "was missing" indicator feature besides their imputed value
  // (scikit-learn's SimpleImputer(add_indicator=True)): 1 where the cell is missing, else 0.
  // Column names, or kEveryNumberColumn alone for every number column. A named column gets its
  // indicator when it has a missing cell in the uploaded files (ColumnSummary::missing > 0).
  std::vector<std::string> missing_indicator;
  // Categorical columns hashed into N buckets, by name: such a column may have more than
  // max_levels levels (up to kMaxMaxLevels), and a model codes a level by its bucket, HashBucket
  // (docs/data.md#hashed-columns). N in [kMinHashBuckets, kMaxHashBuckets].
  std::map<std::string, int64_t> hash_buckets;

  friend bool operator==(const TableColumnOptions&, const TableColumnOptions&) = default;
};

// What one column holds, over every row of the training and test files: what an upload reports.
struct ColumnSummary {
  std::string name;
  ColumnType type = ColumnType::kNumber;
  bool typed_by_user = false;  // an option named the column's type
  int64_t missing = 0;         // missing cells (a label has none)
  int64_t present = 0;         // cells with a value
  // kNumber: over the present values, in double (population standard deviation). NaN when none.
  double mean = 0, stddev = 0, min = 0, max = 0;
  // kCategorical (and a label's names): the number of distinct values and the most frequent
  // ones (most first; ties in byte order), at most kSummaryTopLevels.
  int64_t levels = 0;
  std::vector<std::pair<std::string, int64_t>> top_levels;
  // Why a number or categorical column is not a feature, or empty: "every value is missing".
  // A constant column stays a feature (its standardized value is 0); `note` says it is constant.
  std::string dropped;
  std::string note;
  // kNumber: the column has a "was missing" indicator feature (TableColumnOptions::
  // missing_indicator), which follows the number features in a row (Datasets::
  // missing_indicators).
  bool missing_indicator = false;
  // kCategorical: the buckets it is hashed into (TableColumnOptions::hash_buckets), or 0.
  int64_t hash_buckets = 0;

  friend bool operator==(const ColumnSummary&, const ColumnSummary&) = default;
};

// A categorical feature as a model takes it: the column's name and its levels, the distinct
// values the train split's rows hold, in byte order. In an example (a row [F] of a CSV
// dataset) the column is one value, its code: kMissingLevel for a missing cell, kUnknownLevel
// for a value the train split does not hold (seen only in validation, test or serving), and
// LevelCode(k) for levels[k]: kFirstLevel + k, or for a column hashed into hash_buckets
// buckets kFirstLevel + HashBucket(levels[k], hash_buckets) (levels then share codes). A model
// encodes the code (CategoricalEncodingLayer): one-hot or a learned embedding.
struct CategoricalFeature {
  std::string name;
  std::vector<std::string> levels;
  int64_t hash_buckets = 0;  // 0: a code per level

  // The codes a column takes: levels.size() (or hash_buckets) + kFirstLevel.
  int64_t codes() const {
    return (hash_buckets > 0 ? hash_buckets : static_cast<int64_t>(levels.size())) + kFirstLevel;
  }
  // The code of levels[k].
  int64_t LevelCode(size_t k) const;
  // The code of a present value (kUnknownLevel when not a level). Missing values are the
  // caller's to recognize (a CSV's markers, JSON null): they are kMissingLevel.
  int64_t CodeOf(std::string_view value) const;

  static constexpr int64_t kMissingLevel = 0;
  static constexpr int64_t kUnknownLevel = 1;
  static constexpr int64_t kFirstLevel = 2;

  friend bool operator==(const CategoricalFeature&, const CategoricalFeature&) = default;
};

// FNV-1a, 64 bits, of a value's bytes (offset basis 14695981039346656037, prime 1099511628211):
// simple, fast, the same on every machine, and documented for anyone who wants to check.
uint64_t Fnv1a64(std::string_view bytes);
// A hashed column's bucket of `value`, in [0, buckets): Fnv1a64(value) % buckets.
int64_t HashBucket(std::string_view value, int64_t buckets);

// The texts a categorical value is missing as where it cannot be trimmed or parsed (the ONNX
// graph's LabelEncoder): the empty string, `missing_values` and the spellings of NaN
// std::from_chars reads ("nan", "NaN", "NAN", "-nan", ...), each once.
std::vector<std::string> CategoricalMissingTexts(const std::vector<std::string>& missing_values);
// The code of a categorical value as a CSV cell of the training file would get it: trimmed of
// spaces and tabs, missing (kMissingLevel) when empty, one of `missing_values` or a number that
// reads as NaN, else feature.CodeOf. What serving applies to a value it is sent.
int64_t CategoricalCode(const CategoricalFeature& feature, std::string_view value,
                        const std::vector<std::string>& missing_values);

// How a job's model encodes its categorical features (the job spec's `categorical`,
// docs/job-spec.md#categorical): one-hot for a column of at most one_hot_max_levels codes, else a
// learned embedding of embedding_dim values per code (0: EmbeddingDimFor's rule).
struct CategoricalOptions {
  int64_t one_hot_max_levels = 16;
  int64_t embedding_dim = 0;

  friend bool operator==(const CategoricalOptions&, const CategoricalOptions&) = default;
};
inline constexpr int64_t kMaxEmbeddingDim = 1024;
inline constexpr int64_t kMaxOneHotLevels = 4096;
// The embedding size of a column of `codes` codes by TensorFlow's rule of thumb for embedding
// columns (the fourth root of the number of categories, "Introducing TensorFlow Feature
// Columns", 2017), rounded up: ceil(codes^0.25).
int64_t EmbeddingDimFor(int64_t codes);
// The embedding size of a column of `codes` codes under `options`: 0 (one-hot) for at most
// one_hot_max_levels codes, else embedding_dim or, when that is 0, EmbeddingDimFor(codes).
int64_t EmbeddingDimOf(int64_t codes, const CategoricalOptions& options);

}  // namespace trainingd::engine
