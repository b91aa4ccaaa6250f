// model.json: what a trained model needs besides its weights (engine::ModelInput), as a file in
// its checkpoint directory. `trainingd run` and the daemon's runs write it before the first step
// (JobRunOptions::on_model_input); `trainingd export` and the model server read it, so neither
// needs the dataset. docs/models.md describes its fields:
//
//   {"version": 1, "example_shape": [28, 28, 1], "num_classes": 10,
//    "class_names": ["0", ..., "9"], "preprocessing": "scale_255",   // or "none", "standard",
//                                                                     // "per_channel"
//    "feature_mean": [...], "feature_std": [...],   // "standard" (per feature), "per_channel"
//    "dataset": {"name": "fashion-mnist", "format": "idx", "sha256": ""},
//    "model": {"layers": [...]}}                                     // as in a job spec
//
// Parsing is strict (unknown keys, wrong types and out-of-range values are errors naming the
// field, strict_json.h) and ends with engine::ValidateModelInput. Stateless; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "trainingd/api/job_spec_json.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/model_input.h"

namespace trainingd::api {

// The file's name in a checkpoint directory.
inline constexpr const char* kModelJsonFile = "model.json";

// The file's text, pretty-printed. Floats are written so that they read back to the same bits.
std::string ModelInputToJson(const engine::ModelInput& input);

// Parses model.json's text. InvalidArgument "<field>: <what>" (also in *error when not null).
engine::Result<engine::ModelInput> ParseModelInput(std::string_view text,
                                                   FieldError* error = nullptr);

// Writes <checkpoint_dir>/model.json atomically (engine::WriteFileAtomically), creating the
// directory if it is missing. ResourceExhausted on a full disk, IoError otherwise, naming the file.
engine::Status WriteModelJson(const std::string& checkpoint_dir, const engine::ModelInput& input);

// Reads and parses <checkpoint_dir>/model.json. NotFound when the directory does not exist, or
// when it has no model.json (a directory trained before trainingd wrote one, or not a checkpoint
// directory), saying which; IoError when it cannot be read; InvalidArgument "<path>: <field>:
// ..." when it is not a valid one.
engine::Result<engine::ModelInput> ReadModelJson(const std::string& checkpoint_dir);

}  // namespace trainingd::api
