#include "data/csv_columns.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace trainingd::engine {
namespace {

std::string CellAt(const CsvReader& r) {
  return r.name() + ": line " + std::to_string(r.line()) + ": ";
}

// A decimal number as std::from_chars reads it, also with a leading '+'. kNotANumber for any
// other text; kOutOfRange beyond a double's range.
enum class CellNumber { kOk, kNotANumber, kOutOfRange };
CellNumber ParseCellNumber(std::string_view text, double* value) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  if (ec == std::errc::result_out_of_range) return CellNumber::kOutOfRange;
  if (ec != std::errc() || end != text.data() + text.size()) return CellNumber::kNotANumber;
  return CellNumber::kOk;
}

const char* const kOptionNames[] = {"categorical", "number", "ignore"};

}  // namespace

std::string_view TrimCell(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Status CsvColumns::Resolve(const std::vector<std::string>& names, size_t label,
                           const TableColumnOptions& options, const std::string& file) {
  if (options.max_levels < 1 || options.max_levels > kMaxMaxLevels) {
    return Status::InvalidArgument("max_levels: must be in [1, " + std::to_string(kMaxMaxLevels) +
                                   "], got " + std::to_string(options.max_levels));
  }
  for (const std::string& m : options.missing_values) {
    if (TrimCell(m).empty()) {
      return Status::InvalidArgument(
          "missing_values: an empty marker (an empty cell is always missing)");
    }
  }
  missing_values_.clear();
  for (const std::string& m : options.missing_values) missing_values_.emplace_back(TrimCell(m));
  max_levels_ = options.max_levels;
  columns_.assign(names.size(), Column{});
  for (size_t i = 0; i < names.size(); ++i) {
    columns_[i].summary.name = names[i];
    columns_[i].summary.type = i == label ? ColumnType::kLabel : ColumnType::kNumber;
  }
  const std::vector<std::string>* lists[] = {&options.categorical, &options.number,
                                             &options.ignore};
  const ColumnType types[] = {ColumnType::kCategorical, ColumnType::kNumber, ColumnType::kIgnored};
  for (size_t o = 0; o < 3; ++o) {
    for (const std::string& name : *lists[o]) {
      const auto it = std::find(names.begin(), names.end(), name);
      const std::string option = kOptionNames[o];
      if (it == names.end()) {
        std::string known;
        for (size_t i = 0; i < names.size() && i < 20; ++i) {
          known += (i ? ", " : "") + CsvQuote(names[i]);
        }
        if (names.size() > 20) known += ", ... (" + std::to_string(names.size()) + " in all)";
        return Status::InvalidArgument(option + ": " + file + " has no column " + CsvQuote(name) +
                                       "; the columns are " + known);
      }
      Column& c = columns_[static_cast<size_t>(it - names.begin())];
      if (c.summary.type == ColumnType::kLabel) {
        return Status::InvalidArgument(option + ": " + CsvQuote(name) +
                                       " is the label column (label_column)");
      }
      if (c.summary.typed_by_user && c.summary.type != types[o]) {
        return Status::InvalidArgument(option + ": column " + CsvQuote(name) + " is also typed " +
                                       ColumnTypeName(c.summary.type));
      }
      c.summary.type = types[o];
      c.summary.typed_by_user = true;
    }
  }
  for (const auto& [name, buckets] : options.hash_buckets) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return Status::InvalidArgument("hash_buckets: " + file + " has no column " + CsvQuote(name));
    }
    if (static_cast<size_t>(it - names.begin()) == label) {
      return Status::InvalidArgument("hash_buckets: " + CsvQuote(name) +
                                     " is the label column (label_column)");
    }
    if (buckets < kMinHashBuckets || buckets > kMaxHashBuckets) {
      return Status::InvalidArgument(
          "hash_buckets." + name + ": must be in [" + std::to_string(kMinHashBuckets) + ", " +
          std::to_string(kMaxHashBuckets) + "], got " + std::to_string(buckets));
    }
    columns_[static_cast<size_t>(it - names.begin())].summary.hash_buckets = buckets;
  }
  return ResolveIndicators(names, label, options.missing_indicator, file);
}

Status CsvColumns::ResolveIndicators(const std::vector<std::string>& names, size_t label,
                                     const std::vector<std::string>& wanted,
                                     const std::string& file) {
  indicator_all_ = false;
  indicator_names_.clear();
  for (const std::string& name : wanted) {
    if (name == kEveryNumberColumn) {
      if (wanted.size() != 1) {
        return Status::InvalidArgument(std::string("missing_indicator: \"") + kEveryNumberColumn +
                                       "\" (every number column) stands alone, without names");
      }
      indicator_all_ = true;
      return Status::Ok();
    }
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      std::string known;
      for (size_t i = 0; i < names.size() && i < 20; ++i) {
        known += (i ? ", " : "") + CsvQuote(names[i]);
      }
      if (names.size() > 20) known += ", ... (" + std::to_string(names.size()) + " in all)";
      return Status::InvalidArgument("missing_indicator: " + file + " has no column " +
                                     CsvQuote(name) + "; the columns are " + known);
    }
    if (static_cast<size_t>(it - names.begin()) == label) {
      return Status::InvalidArgument("missing_indicator: " + CsvQuote(name) +
                                     " is the label column (label_column)");
    }
    if (std::find(indicator_names_.begin(), indicator_names_.end(), name) ==
        indicator_names_.end()) {
      indicator_names_.push_back(name);
    }
  }
  return Status::Ok();
}

bool CsvColumns::IsMissing(std::string_view trimmed) const {
  if (trimmed.empty()) return true;
  for (const std::string& m : missing_values_) {
    if (trimmed == m) return true;
  }
  return false;
}

Status CsvColumns::Scan(size_t i, std::string_view cell, const CsvReader& r) {
  Column& c = columns_[i];
  if (c.summary.type == ColumnType::kIgnored) return Status::Ok();
  const std::string_view text = TrimCell(cell);
  double value = 0;
  const CellNumber parsed =
      IsMissing(text) ? CellNumber::kNotANumber : ParseCellNumber(text, &value);
  if (IsMissing(text) || (parsed == CellNumber::kOk && std::isnan(value))) {
    ++c.summary.missing;
    return Status::Ok();
  }
  ++c.summary.present;
  if (!c.numeric || c.summary.type == ColumnType::kCategorical) return Status::Ok();
  if (parsed == CellNumber::kNotANumber) {
    if (c.summary.typed_by_user) {
      return Status::InvalidArgument(CellAt(r) + "column " + CsvQuote(c.summary.name) + ": " +
                                     CsvQuote(text) +
                                     " is not a number (the column is typed "
                                     "number)");
    }
    c.numeric = false;
  }
  return Status::Ok();
}

Status CsvColumns::Decide() {
  features_.clear();
  categoricals_.clear();
  indicators_.clear();
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnSummary& s = columns_[i].summary;
    if (s.type == ColumnType::kLabel || s.type == ColumnType::kIgnored) continue;
    if (!s.typed_by_user)
      s.type = columns_[i].numeric ? ColumnType::kNumber : ColumnType::kCategorical;
    if (s.present == 0) {
      s.dropped = "every value is missing";
      continue;
    }
    if (s.type == ColumnType::kNumber) features_.push_back(i);
    if (s.type == ColumnType::kCategorical) categoricals_.push_back(i);
  }
  for (const Column& c : columns_) {
    if (c.summary.hash_buckets > 0 && c.summary.type != ColumnType::kCategorical) {
      return Status::InvalidArgument(
          "hash_buckets: column " + CsvQuote(c.summary.name) + " is " +
          ColumnTypeName(c.summary.type) +
          ", not categorical (type it with categorical=" + c.summary.name + ")");
    }
  }
  for (const std::string& name : indicator_names_) {
    for (const Column& c : columns_) {
      if (c.summary.name == name && c.summary.type != ColumnType::kNumber) {
        return Status::InvalidArgument("missing_indicator: column " + CsvQuote(name) + " is " +
                                       ColumnTypeName(c.summary.type) +
                                       ", not a number column (an indicator is for numbers; a "
                                       "categorical column has its own missing level)");
      }
    }
  }
  for (size_t f = 0; f < features_.size(); ++f) {
    ColumnSummary& s = columns_[features_[f]].summary;
    const bool named = indicator_all_ || std::find(indicator_names_.begin(), indicator_names_.end(),
                                                   s.name) != indicator_names_.end();
    if (named && s.missing > 0) {
      s.missing_indicator = true;
      indicators_.push_back(f);
    }
  }
  return Status::Ok();
}

Status CsvColumns::ReadNumber(size_t i, std::string_view cell, const CsvReader& r, float* out) {
  Column& c = columns_[i];
  const std::string_view text = TrimCell(cell);
  const auto fail = [&](const std::string& what) {
    return Status::InvalidArgument(CellAt(r) + "column " + CsvQuote(c.summary.name) + ": " + what);
  };
  double value = 0;
  const CellNumber parsed =
      IsMissing(text) ? CellNumber::kNotANumber : ParseCellNumber(text, &value);
  if (IsMissing(text) || (parsed == CellNumber::kOk && std::isnan(value))) {
    *out = std::numeric_limits<float>::quiet_NaN();
    return Status::Ok();
  }
  if (parsed == CellNumber::kOutOfRange) {
    return fail(CsvQuote(text) + " is too large or too small in magnitude for a double");
  }
  if (parsed != CellNumber::kOk) return fail(CsvQuote(text) + " is not a number");
  if (!std::isfinite(value)) return fail(CsvQuote(text) + " is not a finite number");
  const float f = static_cast<float>(value);
  if (!std::isfinite(f)) return fail(CsvQuote(text) + " is outside float32's range (±3.4e38)");
  *out = f;
  // The summary's statistics, over the float values as the model sees them.
  ColumnSummary& s = c.summary;
  const double v = f;
  const double seen = static_cast<double>(++c.numbers);
  if (seen == 1) {
    s.min = s.max = v;
  } else {
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  const double delta = v - s.mean;
  s.mean += delta / seen;
  c.m2 += delta * (v - s.mean);
  return Status::Ok();
}

Status CsvColumns::ReadLevel(size_t i, std::string_view cell, const CsvReader& r, float* code) {
  Column& c = columns_[i];
  const std::string_view text = TrimCell(cell);
  double value = 0;
  if (IsMissing(text) || (ParseCellNumber(text, &value) == CellNumber::kOk && std::isnan(value))) {
    *code = static_cast<float>(CategoricalFeature::kMissingLevel);
    return Status::Ok();
  }
  auto it = c.levels.find(text);
  if (it == c.levels.end()) {
    const bool hashed = c.summary.hash_buckets > 0;
    if (static_cast<int64_t>(c.levels.size()) == (hashed ? kMaxMaxLevels : max_levels_)) {
      if (hashed) {
        return Status::InvalidArgument(CellAt(r) + "column " + CsvQuote(c.summary.name) +
                                       ": more than " + std::to_string(kMaxMaxLevels) +
                                       " distinct values, the most a hashed column may have "
                                       "(its level-to-bucket table is one entry per level)");
      }
      return Status::InvalidArgument(
          CellAt(r) + "column " + CsvQuote(c.summary.name) + ": more than " +
          std::to_string(max_levels_) +
          " distinct values (max_levels); leave the column out (ignore=" + c.summary.name +
          "), raise max_levels or hash it into N buckets (hash_buckets=" + c.summary.name + ":N)");
    }
    const auto code_of_new = static_cast<int64_t>(c.by_code.size());
    it = c.levels.emplace(std::string(text), std::pair<int64_t, int64_t>{0, code_of_new}).first;
    c.by_code.push_back(&it->first);
  }
  ++it->second.first;
  // Exact in a float: a column has at most kMaxMaxLevels < 2^24 levels.
  *code = static_cast<float>(CategoricalFeature::kFirstLevel + it->second.second);
  return Status::Ok();
}

void CsvColumns::Encode(const std::vector<std::vector<char>>* kept,
                        std::vector<CategoricalFeature>* features,
                        std::vector<std::vector<float>>* final_code) const {
  features->clear();
  final_code->clear();
  for (size_t k = 0; k < categoricals_.size(); ++k) {
    const Column& c = columns_[categoricals_[k]];
    CategoricalFeature f;
    f.name = c.summary.name;
    // Raw (every value a level, each code giving back its value), a column is never hashed.
    if (kept) f.hash_buckets = c.summary.hash_buckets;
    std::vector<float> code(c.by_code.size() + CategoricalFeature::kFirstLevel,
                            static_cast<float>(CategoricalFeature::kUnknownLevel));
    code[CategoricalFeature::kMissingLevel] = static_cast<float>(CategoricalFeature::kMissingLevel);
    // The map is in byte order: the kept levels take their codes in that order.
    for (const auto& [value, count_code] : c.levels) {
      const size_t provisional =
          static_cast<size_t>(count_code.second + CategoricalFeature::kFirstLevel);
      if (kept && (provisional >= (*kept)[k].size() || !(*kept)[k][provisional])) continue;
      f.levels.push_back(value);
      code[provisional] = static_cast<float>(f.LevelCode(f.levels.size() - 1));
    }
    features->push_back(std::move(f));
    final_code->push_back(std::move(code));
  }
}

std::vector<ColumnSummary> CsvColumns::Summaries() const {
  std::vector<ColumnSummary> out;
  out.reserve(columns_.size());
  for (const Column& c : columns_) {
    ColumnSummary s = c.summary;
    if (s.type == ColumnType::kNumber) {
      const int64_t n = c.numbers;
      if (n == 0) {
        s.mean = s.stddev = s.min = s.max = std::numeric_limits<double>::quiet_NaN();
      } else {
        s.stddev = std::sqrt(c.m2 / static_cast<double>(n));
        if (s.min == s.max && s.dropped.empty())
          s.note = "constant: every present value is the same";
      }
    } else if (s.type == ColumnType::kCategorical) {
      s.levels = static_cast<int64_t>(c.levels.size());
      std::vector<std::pair<std::string, int64_t>> top;
      top.reserve(c.levels.size());
      for (const auto& [value, count_code] : c.levels) top.emplace_back(value, count_code.first);
      const size_t keep = std::min(top.size(), kSummaryTopLevels);
      std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(keep), top.end(),
                        [](const auto& a, const auto& b) {
                          return a.second != b.second ? a.second > b.second : a.first < b.first;
                        });
      top.resize(keep);
      s.top_levels = std::move(top);
      if (s.levels == 1 && s.missing == 0 && s.dropped.empty()) {
        s.note = "constant: every value is the same";
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

const char* ColumnTypeName(ColumnType t) {
  switch (t) {
    case ColumnType::kNumber:
      return "number";
    case ColumnType::kCategorical:
      return "categorical";
    case ColumnType::kLabel:
      return "label";
    case ColumnType::kIgnored:
      return "ignored";
  }
  return "number";
}

std::optional<ColumnType> ColumnTypeNamed(std::string_view name) {
  for (ColumnType t :
       {ColumnType::kNumber, ColumnType::kCategorical, ColumnType::kLabel, ColumnType::kIgnored}) {
    if (name == ColumnTypeName(t)) return t;
  }
  return std::nullopt;
}

const char* ImputeName(Impute i) { return i == Impute::kMedian ? "median" : "mean"; }

std::optional<Impute> ImputeNamed(std::string_view name) {
  if (name == "mean") return Impute::kMean;
  if (name == "median") return Impute::kMedian;
  return std::nullopt;
}

int64_t CategoricalFeature::LevelCode(size_t k) const {
  if (hash_buckets > 0) return kFirstLevel + HashBucket(levels[k], hash_buckets);
  return kFirstLevel + static_cast<int64_t>(k);
}

int64_t CategoricalFeature::CodeOf(std::string_view value) const {
  const auto it = std::lower_bound(levels.begin(), levels.end(), value,
                                   [](const std::string& a, std::string_view b) { return a < b; });
  if (it == levels.end() || *it != value) return kUnknownLevel;
  return LevelCode(static_cast<size_t>(it - levels.begin()));
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

int64_t HashBucket(std::string_view value, int64_t buckets) {
  return static_cast<int64_t>(Fnv1a64(value) % static_cast<uint64_t>(buckets));
}

std::vector<std::string> CategoricalMissingTexts(const std::vector<std::string>& missing_values) {
  std::vector<std::string> texts = {""};
  for (const std::string& m : missing_values) texts.emplace_back(TrimCell(m));
  for (const char* sign : {"", "-", "+"}) {
    for (const char* nan : {"nan", "NaN", "NAN"}) texts.push_back(std::string(sign) + nan);
  }
  std::vector<std::string> once;
  for (std::string& t : texts) {
    if (std::find(once.begin(), once.end(), t) == once.end()) once.push_back(std::move(t));
  }
  return once;
}

int64_t CategoricalCode(const CategoricalFeature& feature, std::string_view value,
                        const std::vector<std::string>& missing_values) {
  const std::string_view text = TrimCell(value);
  double number = 0;
  if (text.empty() || (ParseCellNumber(text, &number) == CellNumber::kOk && std::isnan(number))) {
    return CategoricalFeature::kMissingLevel;
  }
  for (const std::string& m : missing_values) {
    if (TrimCell(m) == text) return CategoricalFeature::kMissingLevel;
  }
  return feature.CodeOf(text);
}

int64_t EmbeddingDimFor(int64_t codes) {
  const double dim = std::ceil(std::pow(static_cast<double>(codes), 0.25));
  return std::clamp<int64_t>(static_cast<int64_t>(dim), 1, kMaxEmbeddingDim);
}

int64_t EmbeddingDimOf(int64_t codes, const CategoricalOptions& options) {
  if (codes <= options.one_hot_max_levels) return 0;
  return options.embedding_dim > 0 ? options.embedding_dim : EmbeddingDimFor(codes);
}

}  // namespace trainingd::engine
