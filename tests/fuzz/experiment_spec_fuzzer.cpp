// Fuzz target: an experiment spec's JSON text through api::ParseExperimentSpec (which reads the
// base job as ParseJobSpec does and puts every range's ends into it), then the properties a
// parsed spec promises: its canonical JSON parses back and is a fixed point, and with a space of
// one path the trial at the range's first value is a valid job.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"

namespace api = trainingd::api;
namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  api::FieldError error;
  engine::Result<api::ExperimentSpec> spec = api::ParseExperimentSpec(text, &error);
  if (!spec.ok()) {
    Check(spec.status().code() == engine::StatusCode::kInvalidArgument,
          "ParseExperimentSpec failed with a code other than InvalidArgument",
          spec.status().message());
    Check(error.message == spec.status().message(), "FieldError.message differs from the Status",
          error.message);
    Check(error.field.empty() || error.message.rfind(error.field + ": ", 0) == 0,
          "the message does not start with the field", error.message);
    return 0;
  }
  const api::SearcherSpec& s = spec->searcher;
  Check(s.max_trials >= 1 && s.max_steps >= 1 && s.max_concurrent_trials >= 1,
        "a parsed spec has a searcher bound out of range");
  Check(s.name != api::SearcherSpec::Name::kAsha || (s.min_steps >= 1 && s.min_steps < s.max_steps),
        "asha's min_steps out of range", std::to_string(s.min_steps));

  const std::string canonical = api::DumpJson(api::ExperimentSpecToJson(*spec));
  engine::Result<api::ExperimentSpec> again = api::ParseExperimentSpec(canonical);
  Check(again.ok(), "the canonical JSON of a valid spec does not parse",
        again.ok() ? canonical : again.status().message() + " in " + canonical);
  const std::string canonical_again = api::DumpJson(api::ExperimentSpecToJson(*again));
  Check(canonical_again == canonical, "the canonical JSON is not a fixed point",
        canonical + "\n  became\n" + canonical_again);

  if (spec->space.size() == 1) {
    const api::ParamRange& r = spec->space[0];
    std::string value;
    if (r.type == api::ParamType::kCategorical) {
      value = r.values.front();
    } else if (r.type == api::ParamType::kInt) {
      value = std::to_string(static_cast<int64_t>(r.min));
    } else {
      value = nlohmann::json(r.min).dump();
    }
    auto trial = api::TrialJobSpec(*spec, {{r.path, value}}, 0, s.seed, s.max_steps);
    Check(trial.ok(), "the trial at a checked value is not a valid job",
          trial.ok() ? "" : trial.status().message());
  }
  return 0;
}
