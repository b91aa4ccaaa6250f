#include "trainingd/api/hyperparameters_json.h"

#include <nlohmann/json.hpp>

namespace trainingd::api {

std::string HyperparametersToJson(const Hyperparameters& hyperparameters) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [path, value] : hyperparameters) {
    auto parsed = nlohmann::ordered_json::parse(value, nullptr, /*allow_exceptions=*/false);
    object[path] = parsed.is_discarded() ? nlohmann::ordered_json(value) : std::move(parsed);
  }
  return object.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

engine::Result<Hyperparameters> HyperparametersFromJson(std::string_view text) {
  const auto object = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) {
    return engine::Status::InvalidArgument("hyperparameters: not a JSON object");
  }
  Hyperparameters out;
  for (const auto& [path, value] : object.items()) {
    out.emplace_back(path,
                     value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  }
  return out;
}

}  // namespace trainingd::api
