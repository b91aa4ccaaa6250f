// Text for floats and doubles: error messages, the checkpoint state file (private to engine/src).
#pragma once

#include <charconv>
#include <string>

namespace trainingd::engine::internal {

// The shortest text that reads back as the same value ("1e-08", "0.9", "1764000000.5").
template <typename T>
std::string ShortestText(T value) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}
inline std::string FloatToString(float value) { return ShortestText(value); }
inline std::string DoubleToString(double value) { return ShortestText(value); }

}  // namespace trainingd::engine::internal
