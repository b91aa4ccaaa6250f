// What the store's tests share.
#pragma once

#include <cmath>
#include <limits>

namespace trainingd::daemon::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A stored double is the one written: equal, or both NaN.
inline bool Same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace trainingd::daemon::testing
