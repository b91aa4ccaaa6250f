#include "trainingd/api/strict_json.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace trainingd::api::strict_json {

using engine::Result;
using engine::Status;

namespace {

// Where in the document a parse error happened, as a field path ("optimizer.learning_rate",
// "model.layers[2].type"): a SAX pass that follows the keys and indices up to the error. "" when
// the error is outside any member (the document itself).
class PathAtError final : public json::json_sax_t {
 public:
  std::string path() const {
    std::string out;
    for (const Level& l : levels_) {
      if (l.array) {
        if (l.index >= 0) out += "[" + std::to_string(l.index) + "]";
      } else if (!l.key.empty()) {
        out += (out.empty() ? "" : ".") + l.key;
      }
    }
    return out;
  }
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    Value();
    levels_.push_back({false, -1, ""});
    return true;
  }
  bool key(string_t& k) override {
    levels_.back().key = k;
    return true;
  }
  bool end_object() override { return End(); }
  bool start_array(std::size_t) override {
    Value();
    levels_.push_back({true, -1, ""});
    return true;
  }
  bool end_array() override { return End(); }
  bool parse_error(std::size_t, const std::string&, const json::exception&) override {
    return false;
  }

 private:
  struct Level {
    bool array;
    int64_t index;    // arrays: the element being read
    std::string key;  // objects: the member being read
  };
  // A value starts: in an array it is the next element.
  bool Value() {
    if (!levels_.empty() && levels_.back().array) ++levels_.back().index;
    return true;
  }
  bool End() {
    levels_.pop_back();
    return true;
  }
  std::vector<Level> levels_;
};

std::string JsonPathAtError(std::string_view text) {
  PathAtError handler;
  json::sax_parse(text.begin(), text.end(), &handler, json::input_format_t::json, false);
  return handler.path();
}

// A parse error's status, "<path>: invalid JSON ..." when it happened inside a member.
Status ParseErrorStatus(std::string_view text, const std::string& what) {
  const std::string path = JsonPathAtError(text);
  return Status::InvalidArgument((path.empty() ? "" : path + ": ") + what);
}

// nlohmann's "[json.exception.out_of_range.406] number overflow ..." without the id.
std::string WithoutExceptionId(const std::string& what) {
  const size_t end = what.rfind("] ", 64);
  return what.empty() || what[0] != '[' || end == std::string::npos ? what : what.substr(end + 2);
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
// without the exception's id and position (the caller gives the byte).
std::string ParseErrorDetail(const std::string& what) {
  const size_t colon = what.find(": ");
  return colon == std::string::npos ? WithoutExceptionId(what) : what.substr(colon + 2);
}

}  // namespace

Status Bad(const std::string& path, const std::string& message) {
  return Status::InvalidArgument(path.empty() ? message : path + ": " + message);
}

std::string Child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// 'text', cut to 64 characters: user input is echoed in messages, but never at any length.
std::string Quote(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string quoted(1, '\'');
  quoted.append(text.substr(0, kMax));
  quoted.append(text.size() > kMax ? "...'" : "'");
  return quoted;
}

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "binary";
  }
}

// What a value was, for "got ...": a number itself ("1.5", "inf"), otherwise its type.
std::string Got(const json& v) {
  if (v.is_number_float()) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v.get<double>());
    return ec == std::errc() ? std::string(buf, end) : "number";
  }
  if (v.is_number()) return v.dump();
  return TypeName(v);
}

// OK if `v` is an object whose keys are all in `known`.
Status CheckObject(const json& v, const std::string& path, std::span<const std::string_view> known,
                   std::string_view noun) {
  if (!v.is_object()) return Bad(path, std::string("must be an object, got ") + TypeName(v));
  for (const auto& [key, value] : v.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    // A key that is not a plain identifier is named in the message, not in the path, so that
    // the path never contains ": " (callers split the message at the first one).
    const bool plain =
        !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        });
    const std::string unknown = "unknown " + std::string(noun);
    if (plain) return Bad(Child(path, key), unknown + "; known: " + list);
    return Bad(path, unknown + " " + Quote(key) + "; known: " + list);
  }
  return Status::Ok();
}

Status ReadInt(const json& v, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
  const auto out_of_range = [&] {
    return Bad(path, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                         "], got " + Got(v));
  };
  int64_t i = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (!std::in_range<int64_t>(u)) return out_of_range();
    i = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    i = v.get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) {
      return Bad(path, "must be an integer, got " + Got(v));
    }
    // Beyond 2^53 a double no longer holds every integer: the value may not be what was written.
    if (std::fabs(d) > 9007199254740992.0) return out_of_range();
    i = static_cast<int64_t>(d);
  } else {
    return Bad(path, std::string("must be an integer, got ") + TypeName(v));
  }
  if (i < lo || i > hi) return out_of_range();
  *out = i;
  return Status::Ok();
}

Status ReadUint64(const json& v, const std::string& path, uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<uint64_t>();
    return Status::Ok();
  }
  // Not above INT64_MAX (those are unsigned): the signed reader, with the unsigned range named.
  int64_t i = 0;
  const Status st = ReadInt(v, path, 0, std::numeric_limits<int64_t>::max(), &i);
  if (st.ok()) {
    *out = static_cast<uint64_t>(i);
    return st;
  }
  if (st.message().find(": must be an integer in [") == std::string::npos) return st;
  return Bad(path, "must be an integer in [0, " +
                       std::to_string(std::numeric_limits<uint64_t>::max()) + "], got " + Got(v));
}

Status Read(const json& v, const std::string& path, int64_t* out) {
  return ReadInt(v, path, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                 out);
}

Status Read(const json& v, const std::string& path, int* out) {
  return ReadInt<int>(v, path, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                      out);
}

Status Read(const json& v, const std::string& path, uint64_t* out) {
  return ReadUint64(v, path, out);
}

Status Read(const json& v, const std::string& path, double* out) {
  if (!v.is_number()) return Bad(path, std::string("must be a number, got ") + TypeName(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) return Bad(path, "must be a finite number, got " + Got(v));
  *out = d;
  return Status::Ok();
}

Status Read(const json& v, const std::string& path, float* out) {
  double d = 0;
  TRAININGD_RETURN_IF_ERROR(Read(v, path, &d));
  if (std::fabs(d) > std::numeric_limits<float>::max()) {
    return Bad(path, "must be a finite number within float range, got " + Got(v));
  }
  *out = static_cast<float>(d);
  return Status::Ok();
}

Status Read(const json& v, const std::string& path, bool* out) {
  if (!v.is_boolean()) return Bad(path, std::string("must be a boolean, got ") + TypeName(v));
  *out = v.get<bool>();
  return Status::Ok();
}

Status Read(const json& v, const std::string& path, std::string* out) {
  if (!v.is_string()) return Bad(path, std::string("must be a string, got ") + TypeName(v));
  *out = v.get<std::string>();
  return Status::Ok();
}

Result<json> Parse(std::string_view text) {
  // nlohmann's lexer takes a NUL byte for the end of the input, so "2\0junk" would parse as 2.
  // A NUL is never valid JSON (not whitespace; escaped as \u0000 in strings).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return ParseErrorStatus(text.substr(0, nul),
                            "invalid JSON at byte " + std::to_string(nul + 1) + ": a NUL byte");
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return ParseErrorStatus(
        text, "invalid JSON at byte " + std::to_string(e.byte) + ": " + ParseErrorDetail(e.what()));
  } catch (const json::exception& e) {
    // A number too large for a double ("1e999") is out_of_range, with no position.
    return ParseErrorStatus(text, "invalid JSON: " + WithoutExceptionId(e.what()));
  }
}

Status Require(const json& obj, const std::string& path, const char* key) {
  if (obj.contains(key)) return Status::Ok();
  return Bad(Child(path, key), "required");
}

}  // namespace trainingd::api::strict_json
