// Helpers shared by the writers and readers of the REST answers (job_json.cpp,
// job_json_read.cpp, experiment_json.cpp, experiment_json_read.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "trainingd/api/strict_json.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api::answer_json {

// Writers: a time (seconds since the epoch) or a text that is null when there is none.
inline nlohmann::json TimeOrNull(double seconds) {
  return seconds > 0 ? nlohmann::json(seconds) : nlohmann::json(nullptr);
}
inline nlohmann::json TextOrNull(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

// Readers: obj[key] into *out unless absent or null (what TimeOrNull and TextOrNull write).
template <typename T>
engine::Status Nullable(const nlohmann::json& obj, const std::string& path, const char* key,
                        T* out) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return engine::Status::Ok();
  return strict_json::Read(*it, strict_json::Child(path, key), out);
}

inline engine::Status NeedObject(const nlohmann::json& v, const std::string& path) {
  if (!v.is_object()) {
    return strict_json::Bad(path,
                            std::string("must be an object, got ") + strict_json::TypeName(v));
  }
  return engine::Status::Ok();
}

// OK when `v` is an object with an array at `key`.
inline engine::Status NeedArray(const nlohmann::json& v, const std::string& path, const char* key) {
  TRAININGD_RETURN_IF_ERROR(NeedObject(v, path));
  TRAININGD_RETURN_IF_ERROR(strict_json::Require(v, path, key));
  if (!v[key].is_array())
    return strict_json::Bad(strict_json::Child(path, key), "must be an array");
  return engine::Status::Ok();
}

}  // namespace trainingd::api::answer_json
