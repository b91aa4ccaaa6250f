// A trial's hyperparameters as JSON text: an object {path: value} in the space's order, as the
// store keeps them and the API shows them.
#pragma once

#include <string>
#include <string_view>

#include "trainingd/api/experiment_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api {

// Each value is the JSON text of one value; one that does not parse is written as a string.
std::string HyperparametersToJson(const Hyperparameters& hyperparameters);
// The inverse; InvalidArgument for text that is not a JSON object.
engine::Result<Hyperparameters> HyperparametersFromJson(std::string_view text);

}  // namespace trainingd::api
