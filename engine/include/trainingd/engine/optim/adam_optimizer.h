// AdamOptimizer: Adam, as tf.train.AdamOptimizer (Kingma & Ba, with TensorFlow's "epsilon hat").
//
// For the update at global step s, with t = s + 1:
//   lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)      (beta powers in double, rounded once)
//   m += (g - m) * (1 - beta1)                          (= beta1 * m + (1 - beta1) * g)
//   v += (g * g - v) * (1 - beta2)                      (= beta2 * v + (1 - beta2) * g * g)
//   p -= (m * lr_t) / (sqrt(v) + epsilon)
//
// Two slots per parameter: "<param>/Adam" holds m and "<param>/Adam_1" holds v. TensorFlow's
// beta1_power and beta2_power variables are not kept: they follow from the global step.
// Not thread-safe (see Optimizer).
#pragma once

#include "trainingd/engine/optim/optimizer.h"

namespace trainingd::engine {

class AdamOptimizer final : public Optimizer {
 public:
  // `options` must be valid (MakeOptimizer checks); uses learning_rate, beta1, beta2, epsilon and
  // the weight decay.
  explicit AdamOptimizer(const OptimizerOptions& options);

  const char* name() const override {
    return options().type == OptimizerOptions::Type::kAdamW ? "AdamW" : "Adam";
  }
  void ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) override;
};

}  // namespace trainingd::engine
