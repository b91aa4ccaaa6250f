// Strict JSON reading, one way for every document trainingd reads: the job spec, request bodies
// and the config file. Every error is an InvalidArgument "<path>: <what>" whose path is a JSON
// path ("optimizer.learning_rate", "model.layers[2].units"), so the HTTP layer can name the field
// (the part before the first ": " has no spaces) and a person can find it:
//
//   Parse("{\"a\": [1, }")  -> "a[1]: invalid JSON at byte 10: syntax error ..."
//   CheckObject(v, "", {"a"}) on {"b": 1}  -> "b: unknown field; known: a"
//   ReadInt(v, "batch_size", 1, 100, &n) on 1.5  -> "batch_size: must be an integer, got 1.5"
//
// Strict means: unknown keys are errors (CheckObject), integers must be integral and in range
// (1e3 is 1000, 1.5 is an error), numbers finite, and null is never a value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::api::strict_json {

using json = nlohmann::json;
using Keys = std::initializer_list<std::string_view>;

// Parses one JSON document. A syntax error names the member it is in and the byte
// ("model.layers[1].units: invalid JSON at byte 57: syntax error while parsing value - ...");
// a number beyond double range ("1e999") is "<path>: invalid JSON: number overflow ...".
engine::Result<json> Parse(std::string_view text);

// InvalidArgument "<path>: <message>" ("<message>" alone for the document itself, path "").
engine::Status Bad(const std::string& path, const std::string& message);
std::string Child(const std::string& path, std::string_view key);  // "a.b", or "b" at the top
std::string Index(const std::string& path, size_t i);              // "a[2]"
// 'text', cut to 64 characters: input is echoed in messages, but never at any length.
std::string Quote(std::string_view text);
const char* TypeName(const json& v);  // "object", "integer", "number", ...
// What a value was, for "got ...": a number itself ("1.5", "inf"), otherwise its type.
std::string Got(const json& v);

// OK if `v` is an object whose keys are all in `known`; else "<path>.<key>: unknown <noun>;
// known: ..." (a key that is not a plain identifier is quoted in the message, not the path).
engine::Status CheckObject(const json& v, const std::string& path,
                           std::span<const std::string_view> known,
                           std::string_view noun = "field");
inline engine::Status CheckObject(const json& v, const std::string& path, Keys known,
                                  std::string_view noun = "field") {
  return CheckObject(v, path, std::span(known.begin(), known.size()), noun);
}
// "<path>.<key>: required" unless `obj` has `key`.
engine::Status Require(const json& obj, const std::string& path, const char* key);

// Integers: integral JSON numbers within [lo, hi] (T's range by default).
engine::Status ReadInt(const json& v, const std::string& path, int64_t lo, int64_t hi,
                       int64_t* out);
engine::Status ReadUint64(const json& v, const std::string& path, uint64_t* out);
template <typename T>
engine::Status ReadInt(const json& v, const std::string& path, T lo, T hi, T* out) {
  static_assert(std::is_integral_v<T> && std::is_signed_v<T>);
  int64_t x = 0;
  TRAININGD_RETURN_IF_ERROR(ReadInt(v, path, lo, hi, &x));
  *out = static_cast<T>(x);
  return engine::Status::Ok();
}

engine::Status Read(const json& v, const std::string& path, int64_t* out);
engine::Status Read(const json& v, const std::string& path, int* out);
engine::Status Read(const json& v, const std::string& path, uint64_t* out);
engine::Status Read(const json& v, const std::string& path, double* out);  // finite
engine::Status Read(const json& v, const std::string& path, float* out);   // finite, in range
engine::Status Read(const json& v, const std::string& path, bool* out);
engine::Status Read(const json& v, const std::string& path, std::string* out);

template <typename T>
engine::Status Read(const json& v, const std::string& path, std::vector<T>* out) {
  if (!v.is_array()) return Bad(path, std::string("must be an array, got ") + TypeName(v));
  std::vector<T> items(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    TRAININGD_RETURN_IF_ERROR(Read(v[i], Index(path, i), &items[i]));
  }
  *out = std::move(items);
  return engine::Status::Ok();
}

// obj[key] into *out when present; *out keeps its default when absent.
template <typename T>
engine::Status Field(const json& obj, const std::string& path, const char* key, T* out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return engine::Status::Ok();
  return Read(*it, Child(path, key), out);
}

}  // namespace trainingd::api::strict_json
