#include "trainingd/engine/data/csv_dataset.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>

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
  size_t label = 0;  // the label column's index
  int64_t num_features() const { return static_cast<int64_t>(columns.size()) - 1; }
};

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

// Pass 1 over a file: the header, every row's field count and label. Nothing of the features.
// With `train` (a test file), the header must be train's.
Status ScanFile(const Opener& open, const std::string& name, const std::string& label_column,
                const Layout* train, const std::string& train_name, Layout* layout,
                CsvLabels* labels, int64_t* rows) {
  auto source = open();
  if (!source.ok()) return source.status();
  CsvReader r(source->get(), name);
  TRAININGD_RETURN_IF_ERROR(ReadCsvHeader(r, label_column, layout));
  if (train) TRAININGD_RETURN_IF_ERROR(CheckSameHeader(r, *train, *layout, train_name));
  *rows = 0;
  for (;;) {
    bool end = false;
    TRAININGD_RETURN_IF_ERROR(r.Next(&end));
    if (end) break;
    TRAININGD_RETURN_IF_ERROR(CheckFieldCount(r, *layout));
    TRAININGD_RETURN_IF_ERROR(
        labels->Add(r.field(layout->label), name, r.line(), layout->columns[layout->label]));
    ++*rows;
  }
  if (*rows == 0) return Status::InvalidArgument(name + ": no rows after the header");
  return Status::Ok();
}

// One feature's value: a decimal number (std::from_chars: digits, an optional fraction and
// exponent, a leading '-' or '+'), finite, and within float32's range.
Status ParseFeature(std::string_view text, const CsvReader& r, const std::string& column,
                    float* out) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  const auto fail = [&](const std::string& what) {
    return Status::InvalidArgument(At(r) + "column " + CsvQuote(column) + ": " + what);
  };
  if (text.empty()) return fail("empty; every feature needs a number");
  std::string_view digits = text;
  if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-') digits.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return fail(CsvQuote(text) + " is too large or too small in magnitude for a double");
  }
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return fail(CsvQuote(text) + " is not a number");
  }
  if (!std::isfinite(value)) return fail(CsvQuote(text) + " is not a finite number");
  const float f = static_cast<float>(value);
  if (!std::isfinite(f)) return fail(CsvQuote(text) + " is outside float32's range (±3.4e38)");
  *out = f;
  return Status::Ok();
}

// Pass 2 over a file: every feature parsed, every label mapped, and each row (its features and
// class id) given to visit(values, id) in file order. The file must still be what pass 1 saw.
template <typename Visit>
Status ReadValues(const Opener& open, const std::string& name, const std::string& label_column,
                  const Layout& layout, const CsvLabels& labels, int64_t rows, Visit visit) {
  auto source = open();
  if (!source.ok()) return source.status();
  CsvReader r(source->get(), name);
  Layout again;
  TRAININGD_RETURN_IF_ERROR(ReadCsvHeader(r, label_column, &again));
  if (again.columns != layout.columns) return ChangedWhileRead(name);
  std::vector<float> values(static_cast<size_t>(layout.num_features()));
  int64_t seen = 0;
  for (;;) {
    bool end = false;
    TRAININGD_RETURN_IF_ERROR(r.Next(&end));
    if (end) break;
    TRAININGD_RETURN_IF_ERROR(CheckFieldCount(r, layout));
    if (++seen > rows) return ChangedWhileRead(name);
    float* v = values.data();
    for (size_t i = 0; i < layout.columns.size(); ++i) {
      if (i == layout.label) continue;
      TRAININGD_RETURN_IF_ERROR(ParseFeature(r.field(i), r, layout.columns[i], v++));
    }
    const int32_t id = labels.Id(r.field(layout.label));
    if (id < 0) return ChangedWhileRead(name);
    visit(values.data(), id);
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

// Copies one row into example `index` of `split`.
void Store(const float* values, int32_t id, int64_t index, Split* split) {
  const int64_t f = split->images.shape()[1];
  std::copy(values, values + f, split->images.data() + index * f);
  split->labels[static_cast<size_t>(index)] = id;
}

void Allocate(int64_t examples, int64_t features, Split* split) {
  split->images.Resize(Shape{examples, features});
  split->labels.assign(static_cast<size_t>(examples), 0);
}

Status CheckOptions(const DatasetSource& source, const DatasetOptions& options, bool test_file) {
  TRAININGD_RETURN_IF_ERROR(CheckDatasetOptions(options));
  if (!test_file && !(source.test_fraction > 0.0 && source.test_fraction < 1.0)) {
    return Status::InvalidArgument("test_fraction must be in (0, 1), got " +
                                   std::to_string(source.test_fraction));
  }
  return Status::Ok();
}

// What ProbeCsv and LoadCsv share: pass 1 over the file(s) for the header, the labels and the
// counts (`info` without the statistics); with `values`, pass 2 for every feature and the
// statistics; with `ds` as well, the splits filled.
Status ReadCsv(const DatasetSource& source, const DatasetOptions& options, const Opener& train,
               const Opener* test, bool values, DatasetInfo* info, Datasets* ds) {
  TRAININGD_RETURN_IF_ERROR(CheckOptions(source, options, test != nullptr));
  const std::string& train_name = source.path;
  const std::string& test_name = source.test_path;
  Layout layout, test_layout;
  CsvLabels labels;
  int64_t file_rows = 0, test_file_rows = 0;
  TRAININGD_RETURN_IF_ERROR(
      ScanFile(train, train_name, source.label_column, nullptr, "", &layout, &labels, &file_rows));
  if (test) {
    TRAININGD_RETURN_IF_ERROR(ScanFile(*test, test_name, source.label_column, &layout, train_name,
                                       &test_layout, &labels, &test_file_rows));
  }
  TRAININGD_RETURN_IF_ERROR(labels.Finish());

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
  const int64_t features = layout.num_features();
  info->format = DatasetSource::Format::kCsv;
  info->example_shape = Shape{features};
  info->num_classes = labels.num_classes();
  info->class_names = labels.class_names();
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
  if (!values) return Status::Ok();

  if (ds) {
    Allocate(info->train_examples, features, &ds->train);
    Allocate(info->validation_examples, features, &ds->validation);
    Allocate(info->test_examples, features, &ds->test);
  }
  FeatureStats stats(source.standardize ? features : 0);
  int64_t train_seen = 0, test_seen = 0;
  const auto to_test = [&](const float* v, int32_t id) {
    if (ds && test_seen < info->test_examples) Store(v, id, test_seen, &ds->test);
    ++test_seen;
  };
  const auto to_train = [&](const float* v, int32_t id) {
    const int64_t t = train_seen++;
    if (t < validation) {
      if (ds) Store(v, id, t, &ds->validation);
      return;
    }
    if (source.standardize) stats.Add((t - validation) * features, v, features);
    if (ds && t - validation < info->train_examples) Store(v, id, t - validation, &ds->train);
  };
  RowSelector selector(source.split_seed, file_rows, test ? 0 : test_rows);
  TRAININGD_RETURN_IF_ERROR(ReadValues(train, train_name, source.label_column, layout, labels,
                                       file_rows, [&](const float* v, int32_t id) {
                                         if (selector.Next()) {
                                           to_test(v, id);
                                         } else {
                                           to_train(v, id);
                                         }
                                       }));
  if (test) {
    TRAININGD_RETURN_IF_ERROR(
        ReadValues(*test, test_name, source.label_column, layout, labels, test_file_rows, to_test));
  }
  if (source.standardize) stats.Finish(&info->feature_mean, &info->feature_std);
  if (ds) {
    ds->num_classes = info->num_classes;
    ds->class_names = info->class_names;
    ds->preprocessing = info->preprocessing;
    ds->feature_mean = info->feature_mean;
    ds->feature_std = info->feature_std;
    if (source.standardize) {
      for (Split* split : {&ds->train, &ds->validation, &ds->test}) {
        StandardizeRows(ds->feature_mean, ds->feature_std, split->images.data(), split->size());
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

Result<Datasets> LoadCsv(const DatasetSource& source, const DatasetOptions& options) {
  const Opener train = FileOpener(source.path);
  const Opener test = FileOpener(source.test_path);
  DatasetInfo info;
  Datasets ds;
  TRAININGD_RETURN_IF_ERROR(ReadCsv(source, options, train,
                                    source.test_path.empty() ? nullptr : &test, true, &info, &ds));
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
