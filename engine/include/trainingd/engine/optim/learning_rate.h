// LearningRateSchedule: the learning rate as a function of the global step.
//
// The kinds mirror TensorFlow: a constant, tf.train.exponential_decay, tf.train.piecewise_constant
// (called step decay here) and tf.keras.optimizers.schedules.CosineDecay with linear warmup. A
// schedule is a plain value: copy it, compare nothing, check it once with Validate() and then ask
// it for rates. Immutable after set-up, so safe to read from any thread.
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
    kCosineDecay,       // tf.keras.optimizers.schedules.CosineDecay, with linear warmup
  };

  Type type = Type::kConstant;

  // kConstant: the rate. kExponentialDecay: the rate at step 0. kCosineDecay: the peak rate,
  // reached after the warmup (Keras' warmup_target; its initial_learning_rate without warmup).
  // Ignored by kStepDecay. Default 0.001, tf.train.AdamOptimizer's default.
  float learning_rate = 0.001f;

  // kExponentialDecay: rate = learning_rate * decay_rate ^ (global_step / decay_steps), where the
  // division is real, or integer (floor) when `staircase` is set. TensorFlow has no defaults for
  // decay_steps and decay_rate, and neither do we: the zeros fail Validate() until they are set.
  // kCosineDecay uses decay_steps too (the length of the cosine, after the warmup).
  int64_t decay_steps = 0;  // > 0
  float decay_rate = 0.0f;  // > 0 and finite; < 1 decays, > 1 grows
  bool staircase = false;

  // kStepDecay: values[0] while global_step <= boundaries[0], values[i] while
  // boundaries[i-1] < global_step <= boundaries[i], and values.back() after the last boundary.
  // Boundaries strictly increasing; values.size() == boundaries.size() + 1; every value > 0.
  std::vector<int64_t> boundaries;
  std::vector<float> values;

  // kCosineDecay, as Keras' CosineDecay(initial_learning_rate=0, decay_steps, alpha,
  // warmup_target=learning_rate, warmup_steps), with w = warmup_steps and d = decay_steps:
  //   s < w:  rate = learning_rate * s / w                      (linear from 0)
  //   s >= w: rate = learning_rate * ((1 - alpha) * c + alpha),
  //           c = 0.5 * (1 + cos(pi * min(s - w, d) / d))      (alpha * learning_rate after w + d)
  int64_t warmup_steps = 0;  // >= 0
  float alpha = 0.0f;        // in [0, 1]: the final rate as a fraction of learning_rate

  // Convenience constructors for the kinds.
  static LearningRateSchedule Constant(float learning_rate);
  static LearningRateSchedule ExponentialDecay(float learning_rate, int64_t decay_steps,
                                               float decay_rate, bool staircase = false);
  static LearningRateSchedule StepDecay(std::vector<int64_t> boundaries, std::vector<float> values);
  static LearningRateSchedule CosineDecay(float learning_rate, int64_t decay_steps,
                                          float alpha = 0.0f, int64_t warmup_steps = 0);

  // The rate to use for the update made at `global_step` (0 for the first update). Computed in
  // double and rounded once to float. A negative step counts as 0. The schedule must be valid; an
  // invalid one yields an unspecified rate (never undefined behaviour).
  float LearningRateAt(int64_t global_step) const;

  // OK, or InvalidArgument whose message starts with the offending field's name ("learning_rate",
  // "decay_steps", "decay_rate", "boundaries", "values", "warmup_steps", "alpha", "type"). Only the
  // fields the type uses are checked.
  Status Validate() const;
};

}  // namespace trainingd::engine
