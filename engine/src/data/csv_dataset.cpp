#include "trainingd/engine/data/csv_dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "data/csv_columns.h"
#include "data/csv_labels.h"
#include "data/csv_reader.h"
#include "data/feature_stats.h"
#include "trainingd/engine/base/random.h"

namespace trainingd::engine {
namespace {

// Opens one of the files (again) for a pass over it.
using Opener = std::function<Result<std::unique_ptr<ByteSource>>()>;

// The columns of a table, as its header row names them.
struct Layout {
  std::vector<std::string> columns;
  size_t label = 0;              // the label column's index
  std::optional<size_t> weight;  // the sample weight column's (DatasetSource::weight_column)
};

// A row's sample weight: a finite number >= 0 (spaces around it are not part of it).
Status ReadWeight(const CsvReader& r, const Layout& layout, float* weight) {
  std::string_view text = TrimCell(r.field(*layout.weight));
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0 ||
      v > std::numeric_limits<float>::max()) {
    return Status::InvalidArgument(r.name() + ": line " + std::to_string(r.line()) + ": column " +
                                   CsvQuote(layout.columns[*layout.weight]) + ": " +
                                   CsvQuote(r.field(*layout.weight)) +
                                   " is not a sample weight (a finite number >= 0; "
                                   "weight_column)");
  }
  *weight = static_cast<float>(v);
  return Status::Ok();
}

std::string At(const CsvReader& r) {
  return r.name() + ": line " + std::to_string(r.line()) + ": ";
}

Status ChangedWhileRead(const std::string& name) {
  return Status::DataLoss(name + ": changed while being read");
}

// Reads the header row of `r` into `layout`.
Status ReadCsvHeader(CsvReader& r, const std::string& label_column, Layout* layout) {
  bool end = false;
  TRAININGD_RETURN_IF_ERROR(r.Next(&end));
  if (end) return Status::InvalidArgument(r.name() + ": empty: no header row");
  std::unordered_map<std::string_view, size_t> seen;
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string_view name = r.field(i);
    if (name.empty()) {
      return Status::InvalidArgument(At(r) + "column " + std::to_string(i + 1) + " has no name");
    }
    const auto [it, added] = seen.emplace(name, i);
    if (!added) {
      return Status::InvalidArgument(At(r) + "column " + CsvQuote(name) +
                                     " appears twice (columns " + std::to_string(it->second + 1) +
                                     " and " + std::to_string(i + 1) + ")");
    }
    layout->columns.emplace_back(name);
  }
  const auto it = seen.find(label_column);
  if (it == seen.end()) {
    std::string names;
    constexpr size_t kListed = 20;
    for (size_t i = 0; i < layout->columns.size() && i < kListed; ++i) {
      names += (i ? ", " : "") + CsvQuote(layout->columns[i]);
    }
    if (layout->columns.size() > kListed) {
      names += ", ... (" + std::to_string(layout->columns.size()) + " in all)";
    }
    return Status::InvalidArgument(At(r) + "no label column " + CsvQuote(label_column) +
                                   "; the columns are " + names);
  }
  layout->label = it->second;
  if (layout->columns.size() < 2) {
    return Status::InvalidArgument(At(r) +
                                   "no feature columns: the header has only the label column " +
                                   CsvQuote(label_column));
  }
  return Status::Ok();
}

// The header of a test file (`r`) must be the training file's (`train`).
Status CheckSameHeader(const CsvReader& r, const Layout& train, const Layout& test,
                       const std::string& train_name) {
  if (test.columns == train.columns) return Status::Ok();
  const std::string differs = At(r) + "the header differs from " + train_name + "'s: ";
  if (test.columns.size() != train.columns.size()) {
    return Status::InvalidArgument(differs + std::to_string(test.columns.size()) +
                                   " columns, there " + std::to_string(train.columns.size()));
  }
  size_t i = 0;
  while (test.columns[i] == train.columns[i]) ++i;
  return Status::InvalidArgument(differs + "column " + std::to_string(i + 1) + " is " +
                                 CsvQuote(test.columns[i]) + ", there " +
                                 CsvQuote(train.columns[i]));
}

Status CheckFieldCount(const CsvReader& r, const Layout& layout) {
  if (r.size() == layout.columns.size()) return Status::Ok();
  return Status::InvalidArgument(At(r) + std::to_string(r.size()) +
                                 (r.size() == 1 ? " field" : " fields") + ", the header has " +
                                 std::to_string(layout.columns.size()));
}

// Pass 1 over a file: the header, every row's field count and label, and each cell's kind
// (missing, a number, other text) for `columns`. With `train` (a test file), the header must be
// train's; without, `columns` is resolved from the header and `options`.
Status ScanFile(const Opener& open, const std::string& name, const DatasetSource& source,
                const Layout* train, const std::string& train_name, Layout* layout,
                CsvColumns* columns, CsvLabels* labels, int64_t* rows) {
  auto file = open();
  if (!file.ok()) return file.status();
  CsvReader r(file->get(), name);
  TRAININGD_RETURN_IF_ERROR(ReadCsvHeader(r, source.label_column, layout));
  if (train) {
    TRAININGD_RETURN_IF_ERROR(CheckSameHeader(r, *train, *layout, train_name));
    layout->weight = train->weight;
  } else {
    // The weight column is no feature: left out as the user's ignored columns are.
    TableColumnOptions options = source.columns;
    if (!source.weight_column.empty()) {
      const auto& names = layout->columns;
      const auto it = std::find(names.begin(), names.end(), source.weight_column);
      if (it == names.end() || it - names.begin() == static_cast<std::ptrdiff_t>(layout->label)) {
        return Status::InvalidArgument(
            "weight_column: " + name + (it == names.end() ? " has no column " : ": column ") +
            CsvQuote(source.weight_column) + (it == names.end() ? "" : " is the label column"));
      }
      layout->weight = static_cast<size_t>(it - names.begin());
      for (auto* list : {&options.categorical, &options.number, &options.ignore}) {
        std::erase(*list, source.weight_column);
      }
      options.ignore.push_back(source.weight_column);
    }
    TRAININGD_RETURN_IF_ERROR(columns->Resolve(layout->columns, layout->label, options, name));
  }
  float weight = 0;
  *rows = 0;
  for (;;) {
    bool end = false;
    TRAININGD_RETURN_IF_ERROR(r.Next(&end));
    if (end) break;
    TRAININGD_RETURN_IF_ERROR(CheckFieldCount(r, *layout));
    const std::string_view label = r.field(layout->label);
    if (!label.empty() && columns->IsMissing(TrimCell(label))) {
      return Status::InvalidArgument(At(r) + "column " + CsvQuote(source.label_column) +
                                     ": the label is missing (" + CsvQuote(label) +
                                     " is a missing_values marker); every row needs one");
    }
    TRAININGD_RETURN_IF_ERROR(labels->Add(label, name, r.line(), layout->columns[layout->label]));
    if (layout->weight) TRAININGD_RETURN_IF_ERROR(ReadWeight(r, *layout, &weight));
    for (size_t i = 0; i < layout->columns.size(); ++i) {
      if (i != layout->label) TRAININGD_RETURN_IF_ERROR(columns->Scan(i, r.field(i), r));
    }
    ++*rows;
  }
  if (*rows == 0) return Status::InvalidArgument(name + ": no rows after the header");
  return Status::Ok();
}

// Pass 2 over a file: every number feature parsed (missing: NaN), every categorical value
// counted and given its provisional code (CsvColumns::ReadLevel), every label mapped, and each
// row (its number features, then its categorical codes; its class id, -1 when the labels are not
// classes; its target, 0 when they are not numbers; its sample weight, 1 without a weight column)
// given to visit(values, Label{id, target, weight}) in file order. The file must still be what pass
// 1 saw. Without `numbers` (a probe that wants the categorical levels alone), the number features
// are not parsed: they stay NaN. What a row says besides its features.
struct RowLabel {
  int32_t id = -1;
  float target = 0;
  float weight = 1;
};

template <typename Visit>
Status ReadValues(const Opener& open, const std::string& name, const std::string& label_column,
                  const Layout& layout, CsvColumns& columns, const CsvLabels& labels, int64_t rows,
                  bool numbers, Visit visit) {
  auto source = open();
  if (!source.ok()) return source.status();
  CsvReader r(source->get(), name);
  Layout again;
  TRAININGD_RETURN_IF_ERROR(ReadCsvHeader(r, label_column, &again));
  if (again.columns != layout.columns) return ChangedWhileRead(name);
  const std::vector<size_t>& features = columns.features();
  const std::vector<size_t>& categorical = columns.categoricals();
  std::vector<float> values(features.size() + categorical.size(),
                            std::numeric_limits<float>::quiet_NaN());
  int64_t seen = 0;
  for (;;) {
    bool end = false;
    TRAININGD_RETURN_IF_ERROR(r.Next(&end));
    if (end) break;
    TRAININGD_RETURN_IF_ERROR(CheckFieldCount(r, layout));
    if (++seen > rows) return ChangedWhileRead(name);
    for (size_t f = 0; numbers && f < features.size(); ++f) {
      TRAININGD_RETURN_IF_ERROR(
          columns.ReadNumber(features[f], r.field(features[f]), r, &values[f]));
    }
    for (size_t k = 0; k < categorical.size(); ++k) {
      const size_t i = categorical[k];
      TRAININGD_RETURN_IF_ERROR(columns.ReadLevel(i, r.field(i), r, &values[features.size() + k]));
    }
    const std::string_view label = r.field(layout.label);
    RowLabel row{labels.classes() ? labels.Id(label) : -1,
                 labels.numeric() ? CsvLabels::Number(label) : 0.0f, 1.0f};
    if (labels.classes() && row.id < 0) return ChangedWhileRead(name);
    if (layout.weight) TRAININGD_RETURN_IF_ERROR(ReadWeight(r, layout, &row.weight));
    visit(values.data(), row);
  }
  if (seen != rows) return ChangedWhileRead(name);
  return Status::Ok();
}

// Picks `pick` of `rows` rows, one row at a time in file order, each subset of that size equally
// likely (selection sampling, Knuth's algorithm S): the same rows for the same seed and counts
// on every machine.
class RowSelector {
 public:
  RowSelector(uint64_t seed, int64_t rows, int64_t pick) : rng_(seed), rows_(rows), pick_(pick) {}
  bool Next() {
    const bool picked =
        rows_ > 0 && rng_.UniformInt(static_cast<uint64_t>(rows_)) < static_cast<uint64_t>(pick_);
    --rows_;
    if (picked) --pick_;
    return picked;
  }

 private:
  Rng rng_;
  int64_t rows_, pick_;
};

// Copies one row into example `index` of `split`, with its class id, target and weight where the
// split holds them.
void Store(const float* values, const RowLabel& row, int64_t index, Split* split) {
  const int64_t f = split->images.shape()[1];
  const auto i = static_cast<size_t>(index);
  std::copy(values, values + f, split->images.data() + index * f);
  if (!split->labels.empty()) split->labels[i] = row.id;
  if (!split->targets.empty()) split->targets[i] = row.target;
  if (!split->weights.empty()) split->weights[i] = row.weight;
}

void Allocate(int64_t examples, int64_t features, const CsvLabels& labels, bool weights,
              Split* split) {
  split->images.Resize(Shape{examples, features});
  if (labels.classes()) split->labels.assign(static_cast<size_t>(examples), 0);
  if (labels.numeric()) split->targets.assign(static_cast<size_t>(examples), 0.0f);
  if (weights) split->weights.assign(static_cast<size_t>(examples), 1.0f);
}

Status CheckOptions(const DatasetSource& source, const DatasetOptions& options, bool test_file) {
  TRAININGD_RETURN_IF_ERROR(CheckDatasetOptions(options));
  if (!test_file && !(source.test_fraction > 0.0 && source.test_fraction < 1.0)) {
    return Status::InvalidArgument("test_fraction must be in (0, 1), got " +
                                   std::to_string(source.test_fraction));
  }
  return Status::Ok();
}

// Per number feature (the first `features` values of a row), the median of the present (not NaN)
// values of `split`'s rows: the middle one, or the mean of the two middle ones in double; 0 for a
// feature without a present value.
std::vector<float> MedianOfColumns(const Split& split, int64_t features) {
  const int64_t stride = split.images.shape()[1];
  std::vector<float> median(static_cast<size_t>(features), 0.0f);
  std::vector<float> column;
  for (int64_t k = 0; k < features; ++k) {
    column.clear();
    for (int64_t r = 0; r < split.size(); ++r) {
      const float v = split.images.data()[r * stride + k];
      if (!std::isnan(v)) column.push_back(v);
    }
    if (column.empty()) continue;
    const size_t mid = column.size() / 2;
    std::nth_element(column.begin(), column.begin() + static_cast<std::ptrdiff_t>(mid),
                     column.end());
    double m = column[mid];
    if (column.size() % 2 == 0) {
      const float below =
          *std::max_element(column.begin(), column.begin() + static_cast<std::ptrdiff_t>(mid));
      m = (double{below} + m) / 2;
    }
    median[static_cast<size_t>(k)] = static_cast<float>(m);
  }
  return median;
}

// Each NaN (a missing value) among the first impute.size() values of `rows` rows of `stride`
// values becomes its feature's value.
void ImputeRows(const std::vector<float>& impute, float* data, int64_t rows, int64_t stride) {
  const size_t features = impute.size();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = data + r * stride;
    for (size_t k = 0; k < features; ++k) {
      if (std::isnan(row[k])) row[k] = impute[k];
    }
  }
}

// What ProbeCsv and LoadCsv share: pass 1 over the file(s) for the header, the labels and the
// counts (`info` without the statistics); with `values`, pass 2 for every feature and the
// statistics; with `ds` as well, the splits filled.
Status ReadCsv(const DatasetSource& source, const DatasetOptions& options, const Opener& train,
               const Opener* test, bool values, DatasetInfo* info, Datasets* ds, bool raw = false) {
  TRAININGD_RETURN_IF_ERROR(CheckOptions(source, options, test != nullptr));
  const std::string& train_name = source.path;
  const std::string& test_name = source.test_path;
  Layout layout, test_layout;
  CsvColumns columns;
  CsvLabels labels(source.label_use);
  int64_t file_rows = 0, test_file_rows = 0;
  TRAININGD_RETURN_IF_ERROR(
      ScanFile(train, train_name, source, nullptr, "", &layout, &columns, &labels, &file_rows));
  if (test) {
    TRAININGD_RETURN_IF_ERROR(ScanFile(*test, test_name, source, &layout, train_name, &test_layout,
                                       &columns, &labels, &test_file_rows));
  }
  TRAININGD_RETURN_IF_ERROR(labels.Finish());
  TRAININGD_RETURN_IF_ERROR(columns.Decide());
  info->columns = columns.Summaries();
  labels.Summarize(&info->columns[layout.label]);
  bool categorical = false;
  for (size_t i = 0; i < columns.size(); ++i) {
    categorical |= columns.type(i) == ColumnType::kCategorical && !columns.dropped(i);
  }
  if (columns.features().empty() && !categorical) {
    return Status::InvalidArgument(train_name +
                                   ": no feature columns: every column but the label "
                                   "is left out (ignore) or has no value");
  }

  // The split: the test file, or `test_fraction` of the rows (at least one each way).
  int64_t test_rows = test_file_rows;
  int64_t train_rows = file_rows;
  if (!test) {
    if (file_rows < 2) {
      return Status::InvalidArgument(train_name +
                                     ": 1 row; splitting off test_fraction needs at "
                                     "least 2 (one to train, one to test)");
    }
    const double wanted = std::round(source.test_fraction * static_cast<double>(file_rows));
    test_rows = std::clamp(static_cast<int64_t>(wanted), int64_t{1}, file_rows - 1);
    train_rows = file_rows - test_rows;
  }
  int64_t validation = options.validation_size;
  if (validation == kAutoValidationSize) validation = train_rows / 10;
  if (validation >= train_rows) {
    return Status::InvalidArgument("validation_size = " + std::to_string(validation) +
                                   " must be less than the " + std::to_string(train_rows) +
                                   " training examples in " + train_name);
  }
  // A row: the number features, their "was missing" indicators (none raw: the values as in the
  // file), then the categorical features' codes.
  const int64_t numbers = static_cast<int64_t>(columns.features().size());
  const std::vector<size_t> no_indicators;
  const std::vector<size_t>& indicators = raw ? no_indicators : columns.indicators();
  const auto flags = static_cast<int64_t>(indicators.size());
  const int64_t features = numbers + flags + static_cast<int64_t>(columns.categoricals().size());
  info->feature_names.clear();
  for (size_t i : columns.features()) info->feature_names.push_back(layout.columns[i]);
  info->format = DatasetSource::Format::kCsv;
  info->example_shape = Shape{features};
  info->num_classes = labels.num_classes();
  info->class_names = labels.class_names();
  info->numeric_labels = labels.numeric();
  info->not_classes = labels.not_classes();
  info->preprocessing = source.standardize ? Preprocessing::kStandard : Preprocessing::kNone;
  info->element_type = "float32";
  info->file_train_examples = train_rows;
  info->file_test_examples = test_rows;
  info->validation_examples = validation;
  info->train_examples = train_rows - validation;
  if (options.max_train_examples > 0) {
    info->train_examples = std::min(info->train_examples, options.max_train_examples);
  }
  info->test_examples = test_rows;
  if (options.max_test_examples > 0) {
    info->test_examples = std::min(info->test_examples, options.max_test_examples);
  }
  // A categorical feature's levels, which size its encoding in the model, are known after pass 2
  // only: a table with one is read whole even by a kHeaders probe (its numbers not parsed).
  if (!values && columns.categoricals().empty()) return Status::Ok();

  if (ds) {
    const bool weights = layout.weight.has_value();
    Allocate(info->train_examples, features, labels, weights, &ds->train);
    Allocate(info->validation_examples, features, labels, weights, &ds->validation);
    Allocate(info->test_examples, features, labels, weights, &ds->test);
  }
  // The train split's statistics of each feature's present values: its mean fills a missing
  // value (Impute::kMean), and with `standardize` the mean and deviation scale every value.
  FeatureStats stats(numbers);
  // Regression: the train split's targets' (their mean and deviation standardize the target).
  FeatureStats target_stats(source.label_use == LabelUse::kNumbers ? 1 : 0);
  // Per categorical feature, the provisional codes the rows of the train split hold: its levels.
  std::vector<std::vector<char>> kept(columns.categoricals().size());
  int64_t train_seen = 0, test_seen = 0;
  double train_weight = 0;  // the train split's sample weights' sum
  // A row as pass 2 reads it (numbers, codes) with its indicators inserted: what a split holds.
  std::vector<float> widened(static_cast<size_t>(features));
  const auto widen = [&](const float* v) {
    if (flags == 0) return v;
    float* w = widened.data();
    std::copy_n(v, numbers, w);
    for (int64_t k = 0; k < flags; ++k) {
      w[numbers + k] = std::isnan(v[indicators[static_cast<size_t>(k)]]) ? 1.0f : 0.0f;
    }
    std::copy(v + numbers, v + (features - flags), w + numbers + flags);
    return static_cast<const float*>(w);
  };
  const auto to_test = [&](const float* v, const RowLabel& row) {
    if (ds && test_seen < info->test_examples) Store(widen(v), row, test_seen, &ds->test);
    ++test_seen;
  };
  const auto to_train = [&](const float* v, const RowLabel& row) {
    const int64_t t = train_seen++;
    if (t < validation) {
      if (ds) Store(widen(v), row, t, &ds->validation);
      return;
    }
    stats.Add((t - validation) * numbers, v, numbers);
    target_stats.Add(t - validation, &row.target, 1);
    if (t - validation >= info->train_examples) return;
    train_weight += row.weight;
    for (size_t k = 0; k < kept.size(); ++k) {
      const auto code = static_cast<size_t>(v[numbers + static_cast<int64_t>(k)]);
      if (code >= kept[k].size()) kept[k].resize(code + 1, 0);
      kept[k][code] = 1;
    }
    if (ds) Store(widen(v), row, t - validation, &ds->train);
  };
  RowSelector selector(source.split_seed, file_rows, test ? 0 : test_rows);
  TRAININGD_RETURN_IF_ERROR(ReadValues(train, train_name, source.label_column, layout, columns,
                                       labels, file_rows, values,
                                       [&](const float* v, const RowLabel& row) {
                                         if (selector.Next()) {
                                           to_test(v, row);
                                         } else {
                                           to_train(v, row);
                                         }
                                       }));
  if (test) {
    TRAININGD_RETURN_IF_ERROR(ReadValues(*test, test_name, source.label_column, layout, columns,
                                         labels, test_file_rows, values, to_test));
  }
  if (values) {
    info->columns = columns.Summaries();
    labels.Summarize(&info->columns[layout.label]);
  }
  if (values && layout.weight && !(train_weight > 0)) {
    return Status::InvalidArgument("weight_column: every sample weight of the train split (" +
                                   std::to_string(info->train_examples) + " rows of " + train_name +
                                   ") is 0");
  }
  std::vector<std::vector<float>> final_code;
  // Raw, every value of a column is a level, so that each code gives back its value.
  columns.Encode(raw ? nullptr : &kept, &info->categorical, &final_code);
  std::vector<float> mean, stddev;
  stats.Finish(&mean, &stddev);
  if (source.standardize && values) {
    info->feature_mean = mean;
    info->feature_std = stddev;
  }
  if (ds) {
    ds->num_classes = info->num_classes;
    ds->class_names = info->class_names;
    if (source.label_use == LabelUse::kNumbers) {
      ds->task = Task::kRegression;
      std::vector<float> mean, stddev;
      target_stats.Finish(&mean, &stddev);
      ds->target_mean = mean[0];
      ds->target_std = stddev[0];
    }
    ds->preprocessing = info->preprocessing;
    ds->feature_mean = info->feature_mean;
    ds->feature_std = info->feature_std;
    ds->feature_names = info->feature_names;
    ds->categorical = info->categorical;
    for (size_t k : indicators) ds->missing_indicators.push_back(ds->feature_names[k]);
    ds->feature_impute = source.columns.impute == Impute::kMedian
                             ? MedianOfColumns(ds->train, numbers)
                             : std::move(mean);
    for (Split* split : {&ds->train, &ds->validation, &ds->test}) {
      float* rows = split->images.data();
      for (int64_t r = 0; r < split->size(); ++r) {
        float* code = rows + r * features + numbers + flags;
        for (size_t k = 0; k < final_code.size(); ++k) {
          code[k] = final_code[k][static_cast<size_t>(code[k])];
        }
      }
      if (raw) continue;
      ImputeRows(ds->feature_impute, rows, split->size(), features);
      if (source.standardize) {
        StandardizeRows(ds->feature_mean, ds->feature_std, rows, split->size(), features);
      }
    }
  }
  return Status::Ok();
}

Opener FileOpener(const std::string& path) {
  return [path]() { return OpenFileSource(path); };
}

}  // namespace

int64_t CsvLoadOverheadBytes(int64_t num_features) {
  constexpr int64_t kRecord = static_cast<int64_t>(kMaxCsvRecordBytes);
  constexpr int64_t kFields = static_cast<int64_t>(kMaxCsvFields);
  // The reader: its chunk, one record's bytes (in a string that may have doubled) and field ends.
  constexpr int64_t kReader = static_cast<int64_t>(kCsvChunkBytes) + 2 * kRecord + 8 * kFields;
  // The header's names twice (the layout and pass 2's copy; a string and a hash node each) and
  // the label set (at most kMaxClasses labels of kMaxCsvLabelBytes).
  constexpr int64_t kHeader = 2 * (kRecord + 96 * kFields);
  constexpr int64_t kLabels = int64_t{kMaxClasses} * (int64_t{kMaxCsvLabelBytes} + 64);
  // One row of floats, and the statistics (two doubles a feature).
  return kReader + kHeader + kLabels + num_features * (4 + 16);
}

Result<DatasetInfo> ProbeCsv(const DatasetSource& source, const DatasetOptions& options,
                             ProbeDepth depth) {
  const Opener train = FileOpener(source.path);
  const Opener test = FileOpener(source.test_path);
  DatasetInfo info;
  TRAININGD_RETURN_IF_ERROR(ReadCsv(source, options, train,
                                    source.test_path.empty() ? nullptr : &test,
                                    depth == ProbeDepth::kFull, &info, nullptr));
  return info;
}

Result<Datasets> LoadCsv(const DatasetSource& source, const DatasetOptions& options, bool raw) {
  const Opener train = FileOpener(source.path);
  const Opener test = FileOpener(source.test_path);
  DatasetInfo info;
  Datasets ds;
  TRAININGD_RETURN_IF_ERROR(ReadCsv(
      source, options, train, source.test_path.empty() ? nullptr : &test, true, &info, &ds, raw));
  return ds;
}

Result<Datasets> ParseCsv(std::string_view bytes, const DatasetSource& source,
                          const DatasetOptions& options) {
  const Opener train = [bytes, &source]() -> Result<std::unique_ptr<ByteSource>> {
    return MemorySource(bytes, source.path);
  };
  DatasetInfo info;
  Datasets ds;
  TRAININGD_RETURN_IF_ERROR(ReadCsv(source, options, train, nullptr, true, &info, &ds));
  return ds;
}

}  // namespace trainingd::engine
