// Fuzz target: a checkpoint file's bytes through engine::ParseCheckpoint (what ReadCheckpointFile
// does after reading the file). A checkpoint that parses must satisfy the writer's rules, and
// writing it again must give back the same bytes (the format has one encoding per content).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/engine/io/checkpoint.h"

namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  engine::Result<engine::CheckpointData> parsed = engine::ParseCheckpoint(bytes, "fuzz.ckpt");
  if (!parsed.ok()) {
    Check(parsed.status().code() == engine::StatusCode::kDataLoss,
          "ParseCheckpoint failed with a code other than DataLoss", parsed.status().message());
    return 0;
  }
  engine::Result<std::string> encoded = engine::EncodeCheckpoint(*parsed);
  Check(encoded.ok(), "a parsed checkpoint breaks the writer's rules", encoded.status().message());
  Check(*encoded == bytes, "a parsed checkpoint does not encode back to its bytes");
  return 0;
}
