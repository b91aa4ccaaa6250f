// Text for floats in error messages (private to engine/src).
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

}  // namespace trainingd::engine::internal
