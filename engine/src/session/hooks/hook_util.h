// Helpers shared by the built-in hooks (private to engine/src).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "base/float_format.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/format.h"
#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session.h"

namespace trainingd::engine::internal {

// What every timed hook does first in AfterCreateSession: take the session's Env and read its
// timer's clock from it from then on (tests drive time through a fake Env).
inline void UseSessionEnv(Session& session, Env*& env, SecondOrStepTimer& timer) {
  env = &session.env();
  timer.set_clock([e = env] { return e->NowMonotonic(); });
}

// A fetched value as TF prints it: integers without a fraction ("100"), others as the shortest
// text of the float32 ("0.3125", "nan").
inline std::string FormatValue(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return FloatToString(static_cast<float>(v));
}

}  // namespace trainingd::engine::internal
