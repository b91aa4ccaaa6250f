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
  b.global_ = batch;
  return b;
}

GradientBlocks GradientBlocks::ForRank(int64_t global, int blocks, int rank, int size,
                                       Communicator* comm) {
  const int64_t nb = std::clamp<int64_t>(blocks, 1, std::max<int64_t>(global, 1));
  GradientBlocks b;
  b.largest_ = (global + nb - 1) / nb;  // floor division's blocks differ by at most one example
  b.comm_ = comm;
  b.global_ = global;
  b.nb_ = nb;
  b.rank_ = rank;
  b.ranks_ = size;
  for (int64_t j = b.FirstBlockOf(rank); j <= b.FirstBlockOf(rank + 1); ++j)
    b.bounds_.push_back(b.FirstExampleOfBlock(j));
  return b;
}

int64_t GradientBlocks::FirstExampleOf(int rank) const {
  return FirstExampleOfBlock(FirstBlockOf(rank));
}

void GradientBlocks::GatherRows(const float* local, int64_t width, std::vector<float>& all) {
  all.resize(static_cast<size_t>(global_ * width));
  std::copy_n(local, examples() * width, all.data() + first_example() * width);
  part_bounds_.resize(static_cast<size_t>(ranks_) + 1);
  for (int k = 0; k <= ranks_; ++k)
    part_bounds_[static_cast<size_t>(k)] = FirstExampleOf(k) * width;
  if (comm_ && status_.ok()) status_ = comm_->AllgatherParts(all, part_bounds_);
}

Shard GradientBlocks::ColumnsOf(int64_t width, int rank) const {
  const auto begin = [&](int k) {
    return k >= ranks_ ? width : std::min(width, width * k / ranks_ / 16 * 16);
  };
  return {begin(rank), begin(rank + 1) - begin(rank)};
}

void GradientBlocks::ShareColumns(std::vector<float>& parts, int64_t width, float* out) {
  part_bounds_.resize(static_cast<size_t>(ranks_) + 1);
  for (int k = 0; k <= ranks_; ++k) {
    part_bounds_[static_cast<size_t>(k)] =
        global_ * (k == ranks_ ? width : ColumnsOf(width, k).begin);
  }
  if (comm_ && status_.ok()) status_ = comm_->AllgatherParts(parts, part_bounds_);
  const int64_t first = first_example(), rows = examples();
  for (int k = 0; k < ranks_; ++k) {
    const Shard c = ColumnsOf(width, k);
    const float* part = parts.data() + global_ * c.begin;
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(part + (first + r) * c.count, c.count, out + r * width + c.begin);
    }
  }
}

void GradientBlocks::AgreeMax(std::span<float> values) {
  if (comm_ && status_.ok()) status_ = comm_->AllreduceMax(values);
}

void GradientBlocks::AgreeSum(std::span<int64_t> values) {
  if (comm_ && status_.ok()) status_ = comm_->AllreduceSum(values);
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
}

}  // namespace trainingd::engine
