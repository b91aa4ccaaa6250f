// Fuzz target: an IDX file's bytes, raw or gzip-compressed, through engine::ParseIdx (what
// ReadIdxFile does with an opened file). An array that parses has the element count its
// dimensions declare; any failure is one of the documented codes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/engine/data/idx_file.h"

namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  engine::Result<engine::IdxArray> array = engine::ParseIdx(bytes, "fuzz.idx");
  if (!array.ok()) {
    const engine::StatusCode code = array.status().code();
    Check(code == engine::StatusCode::kInvalidArgument || code == engine::StatusCode::kDataLoss,
          "ParseIdx failed with an undocumented code", array.status().ToString());
    return 0;
  }
  Check(!array->dims.empty() && array->dims.size() <= engine::kMaxIdxRank, "bad rank");
  for (int64_t d : array->dims) Check(d > 0, "a dimension is not positive");
  Check(static_cast<int64_t>(array->data.size()) == array->num_elements(),
        "the data size is not the product of the dimensions");
  return 0;
}
