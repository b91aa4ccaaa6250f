// CsvLabels: the label column of a CSV table (or of its training and test files together), seen
// row by row in bounded memory, then decided: integer class ids or sorted string classes.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

inline constexpr size_t kMaxCsvLabelBytes = 256;

class CsvLabels {
 public:
  // Notes the label of `line` of `file` (column `column`, all three for messages).
  // InvalidArgument: an empty label, one over kMaxCsvLabelBytes, more than kMaxClasses distinct
  // labels once they are known to be strings.
  Status Add(std::string_view label, std::string_view file, int64_t line, std::string_view column);

  // Decides, over every label added: integers when every label is an optional '-' and digits
  // (then each must be in [0, kMaxClasses): InvalidArgument naming the first that is not),
  // strings otherwise (the distinct labels in byte order are classes 0..k-1).
  Status Finish();

  int num_classes() const { return num_classes_; }
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
};

}  // namespace trainingd::engine
