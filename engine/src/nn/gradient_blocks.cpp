#include "trainingd/engine/nn/gradient_blocks.h"

#include <algorithm>
#include <cmath>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/dist/communicator.h"

namespace trainingd::engine {

GradientBlocks GradientBlocks::Whole(int64_t batch) {
  GradientBlocks b;
  b.bounds_ = {0, batch};
  b.largest_ = batch;
  return b;
}

GradientBlocks GradientBlocks::ForRank(int64_t global, int blocks, int rank, int size,
                                       Communicator* comm) {
  const int64_t nb = std::clamp<int64_t>(blocks, 1, std::max<int64_t>(global, 1));
  const auto bound = [&](int64_t j) { return global * j / nb; };
  GradientBlocks b;
  for (int64_t j = nb * rank / size; j <= nb * (rank + 1) / size; ++j)
    b.bounds_.push_back(bound(j));
  b.largest_ = (global + nb - 1) / nb;  // floor division's blocks differ by at most one example
  b.comm_ = comm;
  return b;
}

void GradientBlocks::AgreeMax(std::span<float> values) {
  if (comm_ && status_.ok()) status_ = comm_->AllreduceMax(values);
}

int FixedPointExponent(double bound) {
  if (!std::isfinite(bound)) return kNonFiniteExponent;
  if (bound <= 0) return 0;
  int k = 0;
  std::frexp(bound, &k);  // bound < 2^k
  return 48 - k;
}

void SumsToGradient(const int64_t* sums, int64_t n, int exponent, float* grad) {
  if (exponent == kNonFiniteExponent) {
    std::fill(grad, grad + n, NAN);
    return;
  }
  const double scale = std::ldexp(1.0, -exponent);
  ParallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i) {
      grad[i] = static_cast<float>(static_cast<double>(sums[i]) * scale);
    }
  });
}

void FinishGradients(std::span<Parameter* const> params) {
  for (Parameter* p : params) {
    SumsToGradient(p->sum.data(), p->grad.size(), p->sum_exponent, p->grad.data());
  }
}

void Layer::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din) {
  const std::vector<Parameter*> params = parameters();
  own_sums_.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter& p = *params[i];
    if (static_cast<int64_t>(p.sum.size()) != p.value.size()) {
      own_sums_[i].assign(static_cast<size_t>(p.value.size()), 0);
      p.sum = own_sums_[i];
    }
  }
  GradientBlocks blocks = GradientBlocks::Whole(in.shape()[0]);
  Backward(in, out, dout, din, blocks);
  FinishGradients(params);
}

}  // namespace trainingd::engine
