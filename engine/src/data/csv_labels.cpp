#include "data/csv_labels.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "data/csv_reader.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {
namespace {

// The value of an integer label (an optional '-' and digits), clamped to int64's range; false
// for any other text.
bool ParseInteger(std::string_view s, int64_t* value) {
  const size_t digits = !s.empty() && s[0] == '-' ? 1 : 0;
  if (s.size() == digits) return false;
  for (size_t i = digits; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  if (ec == std::errc::result_out_of_range) {
    *value = digits ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  }
  return true;
}

// A finite number within float32's range (std::from_chars' syntax; no "nan" or "inf").
bool ParseNumber(std::string_view s, float* value) {
  if (s.size() > 1 && s[0] == '+' && s[1] != '-') s.remove_prefix(1);  // "+2", as features
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) ||
      std::abs(v) > std::numeric_limits<float>::max()) {
    return false;
  }
  *value = static_cast<float>(v);
  return true;
}

}  // namespace

float CsvLabels::Number(std::string_view label) {
  float v = 0;
  ParseNumber(label, &v);
  return v;
}

Status CsvLabels::Add(std::string_view label, std::string_view file, int64_t line,
                      std::string_view column) {
  const auto where = [&] {
    return std::string(file) + ": line " + std::to_string(line) + ": column " + CsvQuote(column) +
           ": ";
  };
  if (label.empty()) return Status::InvalidArgument(where() + "empty label");
  if (label.size() > kMaxCsvLabelBytes) {
    return Status::InvalidArgument(where() + "a label of " + std::to_string(label.size()) +
                                   " bytes (at most " + std::to_string(kMaxCsvLabelBytes) + ")");
  }
  float number = 0;
  if (use_ != LabelUse::kClasses && numeric_.empty() && !ParseNumber(label, &number)) {
    numeric_ = where() + CsvQuote(label) +
               " is not a finite number, which a regression job's target must be";
    if (use_ == LabelUse::kNumbers) return Status::InvalidArgument(numeric_);
  }
  if (use_ != LabelUse::kClasses && numeric_.empty()) {
    const double x = number;
    min_ = count_ ? std::min(min_, x) : x;
    max_ = count_ ? std::max(max_, x) : x;
    ++count_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(count_);
    m2_ += delta * (x - mean_);
  }
  if (use_ == LabelUse::kNumbers) return Status::Ok();
  int64_t value = 0;
  if (ParseInteger(label, &value)) {
    if (value >= 0 && value < kMaxClasses) {
      max_integer_ = std::max(max_integer_, value);
    } else if (out_of_range_.empty()) {
      out_of_range_ = where() + "label " + CsvQuote(label) + " is outside [0, " +
                      std::to_string(kMaxClasses) +
                      "): integer labels are class ids (labels with any non-integer are names)";
    }
  } else {
    all_integer_ = false;
  }
  if (too_many_.empty() && distinct_.find(label) == distinct_.end()) {
    if (distinct_.size() < static_cast<size_t>(kMaxClasses)) {
      distinct_.emplace(label);
    } else {
      too_many_ = where() + "more than " + std::to_string(kMaxClasses) +
                  " distinct labels (at most " + std::to_string(kMaxClasses) + " classes)";
    }
  }
  // Integer labels may have more spellings than classes ("1", "01"); names may not. An upload's
  // numbers are not an error (a regression target) unless one is not a number either.
  if (!all_integer_ && !too_many_.empty() && (use_ == LabelUse::kClasses || !numeric_.empty())) {
    return Status::InvalidArgument(too_many_);
  }
  return Status::Ok();
}

Status CsvLabels::Finish() {
  if (use_ == LabelUse::kNumbers) {
    num_classes_ = 1;
    names_.clear();
    return Status::Ok();
  }
  if (use_ == LabelUse::kClassesOrNumbers && numeric_.empty()) {
    // Numbers that are not classes: a regression target only.
    not_classes_ = !all_integer_ && !too_many_.empty() ? too_many_
                   : all_integer_                      ? out_of_range_
                                                       : std::string();
    if (!not_classes_.empty()) {
      integers_ = false;
      num_classes_ = 0;
      names_.clear();
      return Status::Ok();
    }
  }
  integers_ = all_integer_;
  if (integers_) {
    if (!out_of_range_.empty()) return Status::InvalidArgument(out_of_range_);
    num_classes_ = static_cast<int>(max_integer_ + 1);
    names_.clear();
    return Status::Ok();
  }
  names_.assign(distinct_.begin(), distinct_.end());  // std::string compares bytes as unsigned
  num_classes_ = static_cast<int>(names_.size());
  return Status::Ok();
}

void CsvLabels::Summarize(ColumnSummary* label) const {
  if (!numeric() || count_ == 0) return;
  label->mean = mean_;
  label->stddev = std::sqrt(m2_ / static_cast<double>(count_));
  label->min = min_;
  label->max = max_;
}

int32_t CsvLabels::Id(std::string_view label) const {
  if (integers_) {
    int64_t value = 0;
    if (!ParseInteger(label, &value) || value < 0 || value >= num_classes_) return -1;
    return static_cast<int32_t>(value);
  }
  const auto it = std::lower_bound(names_.begin(), names_.end(), label);
  if (it == names_.end() || *it != label) return -1;
  return static_cast<int32_t>(it - names_.begin());
}

}  // namespace trainingd::engine
