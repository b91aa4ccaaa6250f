// LearningRateSchedule: the learning rate as a function of the global step.
//
// The three kinds mirror TensorFlow 1.x: a constant, tf.train.exponential_decay and
// tf.train.piecewise_constant (called step decay here). A schedule is a plain value: copy it,
// compare nothing, check it once with Validate() and then ask it for rates. Immutable after set-up,
// so safe to read from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

struct LearningRateSchedule {
  enum class Type {
    kConstant,          // learning_rate at every step
    kExponentialDecay,  // tf.train.exponential_decay
    kStepDecay,         // tf.train.piecewise_constant
  };

  Type type = Type::kConstant;

  // kConstant: the rate. kExponentialDecay: the rate at step 0. Ignored by kStepDecay. Default
  // 0.001, tf.train.AdamOptimizer's default.
  float learning_rate = 0.001f;

  // kExponentialDecay: rate = learning_rate * decay_rate ^ (global_step / decay_steps), where the
  // division is real, or integer (floor) when `staircase` is set. TensorFlow has no defaults for
  // decay_steps and decay_rate, and neither do we: the zeros fail Validate() until they are set.
  int64_t decay_steps = 0;  // > 0
  float decay_rate = 0.0f;  // > 0 and finite; < 1 decays, > 1 grows
  bool staircase = false;

  // kStepDecay: values[0] while global_step <= boundaries[0], values[i] while
  // boundaries[i-1] < global_step <= boundaries[i], and values.back() after the last boundary.
  // Boundaries strictly increasing; values.size() == boundaries.size() + 1; every value > 0.
  std::vector<int64_t> boundaries;
  std::vector<float> values;

  // Convenience constructors for the three kinds.
  static LearningRateSchedule Constant(float learning_rate);
  static LearningRateSchedule ExponentialDecay(float learning_rate, int64_t decay_steps,
                                               float decay_rate, bool staircase = false);
  static LearningRateSchedule StepDecay(std::vector<int64_t> boundaries, std::vector<float> values);

  // The rate to use for the update made at `global_step` (0 for the first update). Computed in
  // double and rounded once to float. A negative step counts as 0. The schedule must be valid; an
  // invalid one yields an unspecified rate (never undefined behaviour).
  float LearningRateAt(int64_t global_step) const;

  // OK, or InvalidArgument whose message starts with the offending field's name ("learning_rate",
  // "decay_steps", "decay_rate", "boundaries", "values", "type"). Only the fields the type uses are
  // checked.
  Status Validate() const;
};

}  // namespace trainingd::engine
