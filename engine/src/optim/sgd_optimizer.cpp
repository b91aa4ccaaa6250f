#include "trainingd/engine/optim/sgd_optimizer.h"

#include <cassert>

namespace trainingd::engine {
namespace {

// p -= g * lr over n elements, as TensorFlow's ApplyGradientDescent kernel.
void GradientDescentUpdate(float* __restrict p, const float* __restrict g, int64_t n, float lr) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) p[i] -= g[i] * lr;
}

}  // namespace

SgdOptimizer::SgdOptimizer(const OptimizerOptions& options) : Optimizer(options, {}) {}

void SgdOptimizer::ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) {
  const float lr = LearningRate(global_step);
  for (const ParameterPart& part : parts) {
    Parameter* param = part.param;
    assert(param->grad.shape() == param->value.shape());
    float* p = param->value.data();
    const float* g = param->grad.data();
    const float decay = DecayFactor(*param, lr);
    ParallelUpdate(part, [=](int64_t begin, int64_t end) {
      if (decay != 0.0f) DecayWeights(p + begin, end - begin, decay);
      GradientDescentUpdate(p + begin, g + begin, end - begin, lr);
    });
  }
}

}  // namespace trainingd::engine
