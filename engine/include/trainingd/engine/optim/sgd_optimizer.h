// SgdOptimizer: plain gradient descent, as tf.train.GradientDescentOptimizer.
//
//   p -= lr * g
//
// It keeps no state, so it has no slots. Not thread-safe (see Optimizer).
#pragma once

#include "trainingd/engine/optim/optimizer.h"

namespace trainingd::engine {

class SgdOptimizer final : public Optimizer {
 public:
  // `options` must be valid (MakeOptimizer checks); only its learning_rate is used (and the weight
  // decay, optimizer.h).
  explicit SgdOptimizer(const OptimizerOptions& options);

  const char* name() const override { return "GradientDescent"; }
  void ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) override;
};

}  // namespace trainingd::engine
