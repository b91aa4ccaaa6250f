// CsvColumns: the columns of a CSV table typed from the whole file, and what each holds
// (table_columns.h, docs/data.md "Columns"). csv_dataset.cpp feeds it every cell of both passes:
//   pass 1 (Scan): which cells are missing, and whether every present value of a column is a
//     number; Decide() then types each column (an option's type, else number when every present
//     value is one, else categorical) and drops a column whose every value is missing;
//   pass 2 (Read): each number parsed (missing: NaN), each categorical value counted as a level
//     (at most max_levels: more is an error naming the column), the numbers' statistics.
// Memory: one record of state per column, and each categorical column's levels.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "data/csv_reader.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/table_columns.h"

namespace trainingd::engine {

// A cell without the spaces and tabs around it.
std::string_view TrimCell(std::string_view cell);

class CsvColumns {
 public:
  // The header's names, the label column's index and the user's options. InvalidArgument naming
  // the option: a column named that the header lacks (the message lists the columns), a column
  // named in two options, the label column named in one, missing_values with an empty marker,
  // max_levels outside [1, kMaxMaxLevels], missing_indicator with kEveryNumberColumn and names.
  Status Resolve(const std::vector<std::string>& names, size_t label,
                 const TableColumnOptions& options, const std::string& file);

  size_t size() const { return columns_.size(); }
  bool IsMissing(std::string_view trimmed) const;

  // Pass 1: one row's cell of column `i` (not the label). A column the user typed number whose
  // present value is not a number is an error naming the line and column.
  Status Scan(size_t i, std::string_view cell, const CsvReader& r);
  // After pass 1 over every file: each column's type, and the features (the number columns that
  // are not dropped, in header order) and which of them have a missing indicator.
  // InvalidArgument when missing_indicator names a column that is not typed number.
  Status Decide();
  const std::vector<size_t>& features() const { return features_; }
  // The features with a "was missing" indicator, as positions in features(), ascending: the
  // number features with a missing cell that missing_indicator names (or every one, "*").
  const std::vector<size_t>& indicators() const { return indicators_; }
  ColumnType type(size_t i) const { return columns_[i].summary.type; }
  bool dropped(size_t i) const { return !columns_[i].summary.dropped.empty(); }

  // Pass 2: a number feature's value (NaN when missing): a decimal number, finite, within
  // float32's range; InvalidArgument naming the line and column otherwise.
  Status ReadNumber(size_t i, std::string_view cell, const CsvReader& r, float* out);
  // Pass 2: a categorical column's cell, counted, and its provisional code: kMissingLevel, or
  // kFirstLevel + the order in which the value first appeared. InvalidArgument past max_levels
  // levels.
  Status ReadLevel(size_t i, std::string_view cell, const CsvReader& r, float* code);
  // The categorical columns that are features (not dropped), in header order.
  const std::vector<size_t>& categoricals() const { return categoricals_; }

  // After pass 2: the categorical features, their levels those that `kept[c]` marks by
  // provisional code (the train split's), or every value when `kept` is null, in byte order;
  // and `final_code[c]`, per provisional code of categoricals()[c], its code in the feature
  // (kUnknownLevel for a value not kept).
  void Encode(const std::vector<std::vector<char>>* kept, std::vector<CategoricalFeature>* features,
              std::vector<std::vector<float>>* final_code) const;

  // After pass 2: every column's summary, in header order (the label's from `label_names`
  // and `label_counts`, which the caller keeps).
  std::vector<ColumnSummary> Summaries() const;

 private:
  Status ResolveIndicators(const std::vector<std::string>& names, size_t label,
                           const std::vector<std::string>& wanted, const std::string& file);

  struct Column {
    ColumnSummary summary;
    bool numeric = true;  // pass 1: every present value so far is a number
    int64_t numbers = 0;  // pass 2: the present numbers seen
    double m2 = 0;        // pass 2: Welford's sum of squares of the present numbers
    // Pass 2, categorical: each value's count and provisional code, and the values by code.
    std::map<std::string, std::pair<int64_t, int64_t>, std::less<>> levels;
    std::vector<const std::string*> by_code;
  };
  std::vector<Column> columns_;
  std::vector<std::string> missing_values_;
  int64_t max_levels_ = kDefaultMaxLevels;
  std::vector<std::string> indicator_names_;  // missing_indicator
  bool indicator_all_ = false;                // missing_indicator is {"*"}
  std::vector<size_t> features_;
  std::vector<size_t> indicators_;
  std::vector<size_t> categoricals_;
};

}  // namespace trainingd::engine
