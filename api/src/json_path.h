// Paths into a JSON document, key(.key|[index])* ("optimizer.learning_rate",
// "model.layers[6].rate"): the experiment spec's space addresses the base job's canonical spec
// with them (experiment_spec_json.cpp).
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::api::json_path {

inline constexpr size_t kMaxPathLength = 256;

struct PathPart {
  std::string key;  // empty: an array index
  size_t index = 0;
};

// The parts of `path`, or InvalidArgument "not a path of the form ... (<what is wrong>)", with no
// field (the caller names it).
engine::Result<std::vector<PathPart>> SplitPath(std::string_view path);
// The first `n` parts as a path again.
std::string JoinPath(const std::vector<PathPart>& parts, size_t n);
// The value at `parts` in `doc`, or InvalidArgument saying which component is missing
// ("'optimizer' has no field 'lr'", "'model.layers' has 8 elements, no [9]").
engine::Result<nlohmann::json*> Locate(nlohmann::json* doc, const std::vector<PathPart>& parts);
// Whether `a` is `b` or lies above it.
bool IsPrefix(const std::vector<PathPart>& a, const std::vector<PathPart>& b);

}  // namespace trainingd::api::json_path
