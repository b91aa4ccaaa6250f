#include "trainingd/engine/optim/momentum_optimizer.h"

#include <cassert>

namespace trainingd::engine {
namespace {

// One pass over n elements, in the operation order of TensorFlow's ApplyMomentum kernel.
void MomentumUpdate(float* __restrict p, const float* __restrict g, float* __restrict accum,
                    int64_t n, float lr, float momentum) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float a = accum[i] * momentum + g[i];
    accum[i] = a;
    p[i] -= a * lr;
  }
}

void NesterovMomentumUpdate(float* __restrict p, const float* __restrict g, float* __restrict accum,
                            int64_t n, float lr, float momentum) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float a = accum[i] * momentum + gi;
    accum[i] = a;
    p[i] -= gi * lr + a * momentum * lr;
  }
}

}  // namespace

MomentumOptimizer::MomentumOptimizer(const OptimizerOptions& options)
    : Optimizer(options, {"Momentum"}) {}

void MomentumOptimizer::ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) {
  const float lr = LearningRate(global_step);
  const float momentum = options().momentum;
  const bool nesterov = options().use_nesterov;
  for (const ParameterPart& part : parts) {
    Parameter* param = part.param;
    assert(param->grad.shape() == param->value.shape());
    float* p = param->value.data();
    const float* g = param->grad.data();
    float* accum = SlotsFor(*param)[0].data();
    const float decay = DecayFactor(*param, lr);
    ParallelUpdate(part, [=](int64_t begin, int64_t end) {
      if (decay != 0.0f) DecayWeights(p + begin, end - begin, decay);
      if (nesterov) {
        NesterovMomentumUpdate(p + begin, g + begin, accum + begin, end - begin, lr, momentum);
      } else {
        MomentumUpdate(p + begin, g + begin, accum + begin, end - begin, lr, momentum);
      }
    });
  }
}

}  // namespace trainingd::engine
