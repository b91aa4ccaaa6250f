// MomentumOptimizer: gradient descent with momentum, as tf.train.MomentumOptimizer.
//
//   accum = accum * momentum + g
//   p -= accum * lr                            (use_nesterov = false)
//   p -= g * lr + accum * momentum * lr        (use_nesterov = true)
//
// One slot per parameter, "<param>/Momentum", holding accum. Not thread-safe (see Optimizer).
#pragma once

#include "trainingd/engine/optim/optimizer.h"

namespace trainingd::engine {

class MomentumOptimizer final : public Optimizer {
 public:
  // `options` must be valid (MakeOptimizer checks); uses learning_rate, momentum and use_nesterov
  // (and the weight decay, optimizer.h).
  explicit MomentumOptimizer(const OptimizerOptions& options);

  const char* name() const override { return "Momentum"; }
  void ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) override;
};

}  // namespace trainingd::engine
