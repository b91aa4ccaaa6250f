#include "trainingd/engine/optim/adam_optimizer.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <experimental/simd>

namespace trainingd::engine {
namespace {

// Per-update scalars, computed once per Apply.
struct AdamScalars {
  float lr_t;
  float one_minus_beta1;
  float one_minus_beta2;
  float epsilon;
};

namespace stdx = std::experimental;

// The widest float vector of the target (8 with AVX2, 16 with AVX-512). Its sqrt is the exact,
// correctly rounded instruction, like std::sqrt; Eigen's packet sqrt is an approximation under its
// default EIGEN_FAST_MATH, and a plain loop calling std::sqrt does not vectorise because sqrt may
// set errno.
using FloatVec = stdx::native_simd<float>;
static_assert(16 % FloatVec::size() == 0,
              "ParallelUpdate's chunks must start on a vector boundary");

// One pass over n elements: reads p, g, m, v once and writes p, m, v once, in the operation order
// of TensorFlow's ApplyAdam kernel. The last n % FloatVec::size() elements take the scalar loop;
// ParallelUpdate's chunking makes which elements those are independent of the thread count.
// GCC 12 reports a false -Wmaybe-uninitialized inside avx512fintrin.h's _mm512_sqrt_ps when it is
// inlined here (GCC PR 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
void AdamUpdate(float* __restrict p, const float* __restrict g, float* __restrict m,
                float* __restrict v, int64_t n, const AdamScalars& s) {
  constexpr int64_t kWidth = FloatVec::size();
  const FloatVec one_minus_beta1 = s.one_minus_beta1;
  const FloatVec one_minus_beta2 = s.one_minus_beta2;
  const FloatVec lr_t = s.lr_t;
  const FloatVec epsilon = s.epsilon;
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    const FloatVec gv(g + i, stdx::element_aligned);
    FloatVec mv(m + i, stdx::element_aligned);
    FloatVec vv(v + i, stdx::element_aligned);
    FloatVec pv(p + i, stdx::element_aligned);
    mv += (gv - mv) * one_minus_beta1;
    vv += (gv * gv - vv) * one_minus_beta2;
    pv -= (mv * lr_t) / (stdx::sqrt(vv) + epsilon);
    mv.copy_to(m + i, stdx::element_aligned);
    vv.copy_to(v + i, stdx::element_aligned);
    pv.copy_to(p + i, stdx::element_aligned);
  }
  for (; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * s.one_minus_beta1;
    const float vi = v[i] + (gi * gi - v[i]) * s.one_minus_beta2;
    m[i] = mi;
    v[i] = vi;
    p[i] -= (mi * s.lr_t) / (std::sqrt(vi) + s.epsilon);
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace

AdamOptimizer::AdamOptimizer(const OptimizerOptions& options)
    : Optimizer(options, {"Adam", "Adam_1"}) {}

void AdamOptimizer::ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) {
  const int64_t step = std::max<int64_t>(global_step, 0);
  const double t = static_cast<double>(step) + 1.0;
  const double beta1 = options().beta1;
  const double beta2 = options().beta2;
  const float lr_float = LearningRate(step);
  const double lr = lr_float;
  AdamScalars s;
  s.lr_t =
      static_cast<float>(lr * std::sqrt(1.0 - std::pow(beta2, t)) / (1.0 - std::pow(beta1, t)));
  s.one_minus_beta1 = 1.0f - options().beta1;
  s.one_minus_beta2 = 1.0f - options().beta2;
  s.epsilon = options().epsilon;
  for (const ParameterPart& part : parts) {
    Parameter* param = part.param;
    assert(param->grad.shape() == param->value.shape());
    float* p = param->value.data();
    const float* g = param->grad.data();
    Tensor* slots = SlotsFor(*param);
    float* m = slots[0].data();
    float* v = slots[1].data();
    const float decay = DecayFactor(*param, lr_float);
    ParallelUpdate(part, [=](int64_t begin, int64_t end) {
      if (decay != 0.0f) DecayWeights(p + begin, end - begin, decay);
      AdamUpdate(p + begin, g + begin, m + begin, v + begin, end - begin, s);
    });
  }
}

}  // namespace trainingd::engine
