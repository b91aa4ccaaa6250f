// Shared by the fuzz targets: a check that stops the run with a message when a property of the
// code under test does not hold. libFuzzer treats the abort as a crash and saves the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace trainingd::fuzz {

// Aborts with "<what>: <detail>" when `ok` is false.
inline void Check(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %.*s: %.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace trainingd::fuzz
