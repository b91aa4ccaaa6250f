// Fuzz target: an .npz file's bytes through engine::ParseNpz (what LoadNpz does with an opened
// file), once without and once with standardization. A dataset that parses has splits whose
// sizes, shapes and labels agree with each other; any failure is one of the documented codes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/engine/data/npz_dataset.h"

namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

namespace {

void CheckSplit(const engine::Split& s, const engine::Shape& example, int num_classes) {
  Check(s.images.shape() == example.with_batch(s.size()), "a split's shape is not [N, example]",
        s.images.shape().ToString());
  for (int32_t label : s.labels) Check(label >= 0 && label < num_classes, "label out of range");
  for (int64_t i = 0; i < s.images.size(); ++i) {
    Check(std::isfinite(s.images[i]), "a non-finite feature");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool standardize : {false, true}) {
    engine::DatasetOptions options;
    options.validation_size = engine::kAutoValidationSize;
    engine::Result<engine::Datasets> ds = engine::ParseNpz(bytes, "fuzz.npz", options, standardize);
    if (!ds.ok()) {
      const engine::StatusCode code = ds.status().code();
      Check(code == engine::StatusCode::kInvalidArgument || code == engine::StatusCode::kDataLoss,
            "ParseNpz failed with an undocumented code", ds.status().ToString());
      Check(ds.status().message().find("fuzz.npz") != std::string::npos,
            "an error does not name the file", ds.status().ToString());
      continue;
    }
    const engine::Shape example = ds->train.example_shape();
    Check(example.rank() == 1 || example.rank() == 3, "example rank", example.ToString());
    Check(ds->num_classes >= 1 && ds->num_classes <= engine::kMaxClasses, "num_classes");
    Check(ds->train.size() >= 1, "an empty train split");
    const bool standard = ds->preprocessing == engine::Preprocessing::kStandard;
    Check(standard == standardize, "standardize was not applied as asked");
    if (standard) {
      Check(static_cast<int64_t>(ds->feature_std.size()) == example[0], "feature_std size");
      for (float s : ds->feature_std) Check(s > 0 && std::isfinite(s), "a std <= 0 or infinite");
    }
    for (const engine::Split* s : {&ds->train, &ds->validation, &ds->test}) {
      if (s->size() == 0) continue;
      CheckSplit(*s, example, ds->num_classes);
    }
  }
  return 0;
}
