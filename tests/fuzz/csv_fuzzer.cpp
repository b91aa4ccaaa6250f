// Fuzz target: a CSV table's bytes through engine::ParseCsv (what LoadCsv does with a file, read
// from memory). The input's first byte picks the options: bit 0 standardize, bits 1-2 the
// test_fraction (0.1, 0.25, 0.5, 0.9), bit 3 an automatic or a zero validation_size; the rest is
// the file. A table that parses is consistent: every split has F features and labels in
// [0, num_classes), its values are finite, the rows add up, each categorical code is one of its
// column's, the statistics cover the number features, and string classes are sorted and
// distinct. Any failure is InvalidArgument.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/engine/data/csv_dataset.h"

namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  engine::DatasetSource source;
  source.format = engine::DatasetSource::Format::kCsv;
  source.path = "fuzz.csv";
  source.standardize = (flags & 1) != 0;
  constexpr double kFractions[] = {0.1, 0.25, 0.5, 0.9};
  source.test_fraction = kFractions[(flags >> 1) & 3];
  source.split_seed = flags;
  engine::DatasetOptions options;
  options.validation_size = (flags & 8) ? engine::kAutoValidationSize : 0;

  auto ds = engine::ParseCsv(bytes, source, options);
  if (!ds.ok()) {
    Check(ds.status().code() == engine::StatusCode::kInvalidArgument,
          "ParseCsv failed with an undocumented code", ds.status().ToString());
    Check(ds.status().message().rfind("fuzz.csv: ", 0) == 0, "the message does not name the file",
          ds.status().message());
    return 0;
  }
  Check(ds->num_classes >= 1 && ds->num_classes <= engine::kMaxClasses, "num_classes");
  Check(ds->train.size() >= 1 && ds->test.size() >= 1, "an empty train or test split");
  const int64_t features = ds->train.example_shape().num_elements();
  Check(features >= 1, "no features");
  for (const engine::Split* split : {&ds->train, &ds->validation, &ds->test}) {
    if (split->size() == 0) continue;
    Check(split->example_shape().num_elements() == features, "splits of different widths");
    Check(split->images.size() == split->size() * features, "images and labels disagree");
    for (int32_t label : split->labels) {
      Check(label >= 0 && label < ds->num_classes, "a label outside [0, num_classes)");
    }
    for (int64_t i = 0; i < split->images.size(); ++i) {
      Check(std::isfinite(split->images[i]), "a value is not finite");
    }
  }
  if (!ds->class_names.empty()) {
    Check(static_cast<int>(ds->class_names.size()) == ds->num_classes, "class_names' count");
    Check(std::adjacent_find(ds->class_names.begin(), ds->class_names.end(),
                             [](const std::string& a, const std::string& b) { return a >= b; }) ==
              ds->class_names.end(),
          "class_names not sorted and distinct");
  }
  // A row: its numbers, then one code per categorical feature, an integer in [0, codes).
  const auto categoricals = static_cast<int64_t>(ds->categorical.size());
  const int64_t numbers = features - categoricals;
  Check(numbers >= 0 && static_cast<int64_t>(ds->feature_names.size()) == numbers,
        "feature_names and the categorical features do not add up to a row");
  for (const engine::Split* split : {&ds->train, &ds->validation, &ds->test}) {
    for (int64_t r = 0; r < split->size(); ++r) {
      for (int64_t c = 0; c < categoricals; ++c) {
        const float code = split->images[r * features + numbers + c];
        Check(code == std::floor(code) && code >= 0 &&
                  code < static_cast<float>(ds->categorical[static_cast<size_t>(c)].codes()),
              "a categorical code outside its column's codes");
      }
    }
  }
  const bool standard = ds->preprocessing == engine::Preprocessing::kStandard;
  Check(standard == source.standardize, "preprocessing");
  if (standard) {
    Check(static_cast<int64_t>(ds->feature_std.size()) == numbers &&
              static_cast<int64_t>(ds->feature_mean.size()) == numbers,
          "statistics' sizes");
    for (int64_t j = 0; j < numbers; ++j) {
      Check(std::isfinite(ds->feature_mean[j]) && ds->feature_std[j] > 0 &&
                std::isfinite(ds->feature_std[j]),
            "a mean or std that is not finite and positive");
    }
  }
  return 0;
}
