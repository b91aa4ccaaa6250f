// Fuzz target: a job spec's JSON text through api::ParseJobSpec (which runs
// engine::ValidateJobSpec), then the properties a parsed spec promises: it validates, its
// canonical JSON parses back, and that canonical form is a fixed point.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/engine/job_spec.h"

namespace api = trainingd::api;
namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  api::FieldError error;
  engine::Result<engine::JobSpec> spec = api::ParseJobSpec(text, &error);
  if (!spec.ok()) {
    Check(spec.status().code() == engine::StatusCode::kInvalidArgument,
          "ParseJobSpec failed with a code other than InvalidArgument", spec.status().message());
    Check(error.message == spec.status().message(), "FieldError.message differs from the Status",
          error.message);
    Check(error.field.empty() || error.message.rfind(error.field + ": ", 0) == 0,
          "the message does not start with the field", error.message);
    return 0;
  }
  const engine::Status valid = engine::ValidateJobSpec(*spec);
  Check(valid.ok(), "a parsed spec fails ValidateJobSpec", valid.message());
  // The admission step (the engine's resource estimate / job plan for a valid spec) belongs here
  // once the engine has it: a parsed, valid spec must be planned without crashing, and an
  // oversized one refused with a Status.

  const std::string canonical = api::JobSpecToJson(*spec);
  engine::Result<engine::JobSpec> again = api::ParseJobSpec(canonical);
  Check(again.ok(), "the canonical JSON of a valid spec does not parse",
        again.ok() ? canonical : again.status().message() + " in " + canonical);
  const std::string canonical_again = api::JobSpecToJson(*again);
  Check(canonical_again == canonical, "the canonical JSON is not a fixed point",
        canonical + "\n  became\n" + canonical_again);
  return 0;
}
