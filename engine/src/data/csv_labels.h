// CsvLabels: the label column of a CSV table (or of its training and test files together), seen
// row by row in bounded memory, then decided: integer class ids or sorted string classes, and
// (LabelUse::kNumbers, kClassesOrNumbers) whether every label is a finite number, a regression
// target.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

inline constexpr size_t kMaxCsvLabelBytes = 256;

class CsvLabels {
 public:
  explicit CsvLabels(LabelUse use = LabelUse::kClasses) : use_(use) {}

  // Notes the label of `line` of `file` (column `column`, all three for messages).
  // InvalidArgument: an empty label, one over kMaxCsvLabelBytes; for kClasses more than
  // kMaxClasses distinct labels once they are known to be strings; for kNumbers a label that is
  // not a finite number within float32's range; for kClassesOrNumbers a label that makes both
  // fail.
  Status Add(std::string_view label, std::string_view file, int64_t line, std::string_view column);

  // Decides, over every label added: integers when every label is an optional '-' and digits
  // (then each must be in [0, kMaxClasses): InvalidArgument naming the first that is not),
  // strings otherwise (the distinct labels in byte order are classes 0..k-1). kNumbers: no
  // classes (num_classes 1). kClassesOrNumbers: classes when they can be, else none (num_classes
  // 0, not_classes() says why) as long as the labels are numbers.
  Status Finish();

  int num_classes() const { return num_classes_; }
  // After Finish: the labels are classes (Id maps them).
  bool classes() const { return use_ != LabelUse::kNumbers && num_classes_ > 0; }
  // Every label is a finite number (kNumbers, kClassesOrNumbers).
  bool numeric() const { return use_ != LabelUse::kClasses && numeric_.empty(); }
  // kClassesOrNumbers after Finish: why the labels are not classes, or empty.
  const std::string& not_classes() const { return not_classes_; }
  // A numeric label's value (float32), as Add read it.
  static float Number(std::string_view label);
  // numeric(): the labels' mean, population deviation, min and max into the label column's
  // summary.
  void Summarize(ColumnSummary* label) const;
  // The sorted class names for string labels; empty for integer labels.
  const std::vector<std::string>& class_names() const { return names_; }
  // After Finish: the class id of `label`, or -1 for a label Add never saw.
  int32_t Id(std::string_view label) const;

 private:
  bool all_integer_ = true;
  int64_t max_integer_ = -1;
  std::string out_of_range_;  // the message for the first integer label outside the range
  std::set<std::string, std::less<>> distinct_;  // at most kMaxClasses
  std::string too_many_;  // where a label past kMaxClasses distinct ones was seen
  bool integers_ = true;  // Finish's decision
  int num_classes_ = 0;
  std::vector<std::string> names_;
  LabelUse use_;
  std::string numeric_;  // where the first label that is not a finite number was seen
  std::string not_classes_;
  int64_t count_ = 0;  // the numbers' statistics (Welford's update, in double)
  double mean_ = 0, m2_ = 0, min_ = 0, max_ = 0;
};

}  // namespace trainingd::engine
