// A number of seconds in a message ("no step for 30 s", "2.5 sec"), for the engine and the daemon.
#pragma once

#include <cstdio>
#include <string>

namespace trainingd::engine {

// printf's `format` of `secs`: by default "%g" (30, 0.25, 1e-06).
inline std::string FormatSeconds(double secs, const char* format = "%g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, secs);
  return buf;
}

}  // namespace trainingd::engine
