// The columns of a table (a CSV upload): how each is typed, which cells are missing, how a
// missing number is filled in, and what a column holds (docs/data.md, "Columns"). Plain data.
#pragma once

#include <cstdint>
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
// The most frequent levels a column summary lists.
inline constexpr size_t kSummaryTopLevels = 10;

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

  friend bool operator==(const ColumnSummary&, const ColumnSummary&) = default;
};

}  // namespace trainingd::engine
