// The JSON job spec (docs/job-spec.md): parsing it into an engine::JobSpec, and writing a JobSpec
// back out in its canonical, fully expanded form.
//
// Parsing is strict: an unknown key, a value of the wrong type or a number out of range is an
// error naming the field by its JSON path ("hooks.checkpoint.every_steps",
// "model.layers[3].units"), and so is anything engine::ValidateJobSpec rejects. No exception
// escapes these functions. All of them are stateless and safe to call from any thread.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::api {

// Which field of a job spec is wrong, for the "field" of a REST error body.
struct FieldError {
  // The JSON path of the bad field ("batch_size", "hooks.logging.tensors[1]"); "" when the text
  // is not JSON at all or is not a JSON object.
  std::string field;
  // The whole human-readable message, which starts with `field` and ": " when field is not empty
  // (the same text as the returned Status' message).
  std::string message;
};

// Parses `json_text` and validates the result with engine::ValidateJobSpec. On failure returns
// InvalidArgument (message "<path>: <what is wrong>", or "invalid JSON at byte N: ..." for a syntax
// error) and, when `error` is not null, fills it in. Absent keys take the defaults of job_spec.h;
// "name" and "model" are required.
engine::Result<engine::JobSpec> ParseJobSpec(std::string_view json_text,
                                             FieldError* error = nullptr);

// The same for a document that is already parsed (e.g. the body of a larger request).
engine::Result<engine::JobSpec> JobSpecFromJson(const nlohmann::json& doc,
                                                FieldError* error = nullptr);

// The canonical JSON of `spec`: every field written out, the model as its layers (with "preset"
// kept when the spec has one), every hook with "enabled". ParseJobSpec of the result gives back a
// spec equal to `spec` in every field; fields the chosen type does not use (a dense layer's
// `filters`, Adam's `momentum`) are not written and come back as their defaults. Strings that are
// not valid UTF-8 are written with U+FFFD in place of the bad bytes.
nlohmann::json JobSpecToJsonValue(const engine::JobSpec& spec);
// JobSpecToJsonValue as text: compact with indent < 0, otherwise pretty-printed with `indent`
// spaces.
std::string JobSpecToJson(const engine::JobSpec& spec, int indent = -1);

// A model's layers as the job spec reads and writes them ("model.layers"), for the other files
// that record a model (model.json, api/model_json.h). LayersFromJson fails with InvalidArgument
// "<path>[i].<field>: ..." and leaves *out unchanged.
nlohmann::json LayersToJsonValue(const engine::ModelSpec& model);
engine::Status LayersFromJson(const nlohmann::json& layers, const std::string& path,
                              engine::ModelSpec* out);
// The shortest decimal that reads back as `f` (1e-4f is 0.0001, not 9.999999747378752e-05).
nlohmann::json FloatJsonValue(float f);

}  // namespace trainingd::api
