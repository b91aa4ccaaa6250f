// Fuzz target: a job spec's JSON text through api::ParseJobSpec (which runs
// engine::ValidateJobSpec), then the properties a parsed spec promises: it validates, its
// canonical JSON parses back, and that canonical form is a fixed point.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_spec.h"

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
  // Admission: planned against a Fashion-MNIST-shaped dataset without allocating what the spec
  // sizes (the fuzzer's malloc limit catches an allocation that grows with it); a failure is an
  // InvalidArgument naming a field, and so is a budget refusal.
  engine::DatasetInfo fashion;
  fashion.example_shape = engine::Shape{28, 28, 1};
  fashion.num_classes = 10;
  fashion.train_examples = 55000;
  fashion.validation_examples = 5000;
  fashion.test_examples = 10000;
  fashion.file_train_examples = 60000;
  fashion.file_test_examples = 10000;
  engine::JobRunLimits limits;
  limits.compute_threads = 2;
  limits.max_checkpoints = 50;
  limits.max_profiler_traces = 20;
  limits.max_log_bytes = 16 << 20;
  engine::Result<engine::JobResources> plan = engine::PlanJob(*spec, fashion, limits);
  if (plan.ok()) {
    Check(plan->memory() > 0 && plan->disk() >= 0, "a plan with no memory or negative disk",
          std::to_string(plan->memory()));
    const engine::Status budget =
        engine::CheckJobBudget(*spec, *plan, {int64_t{1} << 34, int64_t{1} << 36});
    Check(budget.ok() || budget.code() == engine::StatusCode::kInvalidArgument,
          "CheckJobBudget failed with a code other than InvalidArgument", budget.message());
  } else {
    Check(plan.status().code() == engine::StatusCode::kInvalidArgument,
          "PlanJob failed with a code other than InvalidArgument", plan.status().message());
  }

  const std::string canonical = api::JobSpecToJson(*spec);
  engine::Result<engine::JobSpec> again = api::ParseJobSpec(canonical);
  Check(again.ok(), "the canonical JSON of a valid spec does not parse",
        again.ok() ? canonical : again.status().message() + " in " + canonical);
  const std::string canonical_again = api::JobSpecToJson(*again);
  Check(canonical_again == canonical, "the canonical JSON is not a fixed point",
        canonical + "\n  became\n" + canonical_again);
  return 0;
}
