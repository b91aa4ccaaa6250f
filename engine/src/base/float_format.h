// Text for floats and doubles: error messages, the checkpoint state file (private to engine/src).
#pragma once

#include <charconv>
#include <string>

namespace trainingd::engine::internal {

// The shortest text that reads back as the same float ("1e-08", "0.9").
inline std::string FloatToString(float value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

// The shortest text that reads back as the same double ("1764000000.5", "0.001").
inline std::string DoubleToString(double value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace trainingd::engine::internal
