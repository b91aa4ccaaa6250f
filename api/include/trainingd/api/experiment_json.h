// The experiment's JSON (docs/experiments.md, docs/openapi.yaml): the experiment spec read and
// written (canonical text), a trial's job spec built from the base job and its hyperparameters,
// and the REST answers about experiments, their trials and plans, with their readers for the
// client. Parsing is strict as job_spec_json.h's: every error is InvalidArgument
// "<path>: <what>" whose path is a JSON path ("searcher.max_trials",
// "space[\"optimizer.learning_rate\"].min", "base_job.batch_size"). No exception escapes these
// functions; all are stateless and safe to call from any thread.
//
// The space's order: JSON objects are unordered, so the space (and every trial's
// hyperparameters) is in the byte order of its paths, which is also the order they are written
// in. The grid searcher varies the last path fastest.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "trainingd/api/experiment_service.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::api {

// The categorical values of a whole space: each is put into the base job and parsed at submit
// (~0.1 ms each for the CNN), so their total is bounded besides each range's.
inline constexpr int64_t kMaxSpaceValues = 10000;

// The experiment spec (POST /api/v1/experiments, .../preview). Absent keys take the defaults of
// experiment_service.h; "name", "base_job" and (random, asha) "space" are required. "base_job" is
// read as POST /api/v1/jobs reads a job (its errors prefixed "base_job."), and base_job_json is
// its canonical text. Each space path must name a field of that canonical spec, and the spec
// must still parse with the range's min and max (each categorical value) put there. On failure
// fills *error (when not null) as ParseJobSpec does.
engine::Result<ExperimentSpec> ParseExperimentSpec(std::string_view json_text,
                                                   FieldError* error = nullptr);
engine::Result<ExperimentSpec> ExperimentSpecFromJson(const nlohmann::json& doc,
                                                      FieldError* error = nullptr);

// The canonical JSON of a parsed spec: every field written, "base_job" as its canonical object,
// "stop_when" null when absent. ExperimentSpecFromJson of the result equals `spec`.
nlohmann::json ExperimentSpecToJson(const ExperimentSpec& spec);

// Sets the field at `path` (the space's grammar: key(.key|[index])*) of `doc` to the JSON text
// `value_json`. InvalidArgument "<path>: ..." when the path is malformed, names a field `doc`
// does not have (saying which component is missing), or the value is not JSON.
engine::Status ApplyHyperparameter(nlohmann::json* doc, std::string_view path,
                                   std::string_view value_json);

// Trial `index`'s job: the base job with `hp` applied, "name" = "<experiment>-trial-<index>"
// (the experiment's name cut so that the whole stays a valid job name), "seed" and "max_steps"
// set. A hyperparameter that changes a "type" (optimizer.type, a layer's type) drops the fields
// of the old type that the new one does not take. Returns the spec and its canonical text
// (JobSpecToJson); InvalidArgument naming the hyperparameter when the result is not a valid job.
engine::Result<std::pair<engine::JobSpec, std::string>> TrialJobSpec(const ExperimentSpec& spec,
                                                                     const Hyperparameters& hp,
                                                                     int64_t index, uint64_t seed,
                                                                     int64_t max_steps);

// Hyperparameters as a JSON object path -> value (each value parsed from its text; a text that is
// not JSON is written as a string), and back (each value as compact JSON text).
nlohmann::json HyperparametersToJson(const Hyperparameters& hp);
engine::Result<Hyperparameters> HyperparametersFromJson(const nlohmann::json& v,
                                                        const std::string& path);
// The same from JSON text (the store keeps the object's compact text, DumpJson of the above).
engine::Result<Hyperparameters> HyperparametersFromText(std::string_view text);

// The answers. An experiment: {"id","name","state","searcher","metric","mode","created_at",
// "finished_at","error","reason","trials_started","max_trials","trials_by_state","steps_used",
// "budget":{"max_steps","max_seconds","seconds_used"},"best","disk_bytes","peak_disk_bytes",
// "plan"} and, with `detail`, "spec" (the canonical spec as an object). Times are null when 0,
// error and reason null when empty, best null when there is none.
nlohmann::json ExperimentToJson(const ExperimentInfo& experiment, bool detail);
// {"experiments":[summary...],"next_cursor": "..." or null}.
nlohmann::json ExperimentPageToJson(const ExperimentPage& page);
// {"index","job_id","hyperparameters","seed","state","rung","target_steps","rung_metrics",
//  "rung_recorded_at","metric","restarts","reason","checkpoints_kept","job_state","global_step","created_at",
//  "finished_at"}.
nlohmann::json TrialToJson(const TrialInfo& trial);
// {"trials":[...],"total","offset","limit"}.
nlohmann::json TrialPageToJson(const TrialPage& page, int64_t offset, int64_t limit);
// {"rungs":[{"index","steps","max_trials","trials","promoted","cut"}],"trials","grid_size",
//  "max_total_steps","first_trials":[hyperparameters...]}.
nlohmann::json PlanToJson(const ExperimentPlan& plan);

// The inverses, for the client: lenient on unknown keys, strict on the types of those read, as
// job_json.h's readers. "spec", when present, comes back as compact text in spec_json.
engine::Result<ExperimentInfo> ExperimentFromJson(const nlohmann::json& v);
engine::Result<ExperimentPage> ExperimentPageFromJson(const nlohmann::json& v);
engine::Result<TrialInfo> TrialFromJson(const nlohmann::json& v);
engine::Result<TrialPage> TrialPageFromJson(const nlohmann::json& v);
engine::Result<ExperimentPlan> PlanFromJson(const nlohmann::json& v);

}  // namespace trainingd::api
