#include "trainingd/engine/nn/merge_layers.h"

#include <cstring>

#include "nn/activation_kernels.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine {

Result<Shape> MergeLayer::Configure(const Shape& input) {
  return ConfigureInputs(std::span<const Shape>(&input, 1));
}

void MergeLayer::Forward(const Tensor& in, Tensor& out, Mode mode) {
  const Tensor* one = &in;
  ForwardInputs(std::span<const Tensor* const>(&one, 1), out, mode);
}

void MergeLayer::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                          GradientBlocks& /*blocks*/) {
  const Tensor* one = &in;
  BackwardInputs(std::span<const Tensor* const>(&one, 1), out, dout,
                 std::span<Tensor* const>(&din, 1));
}

Result<Shape> AddLayer::ConfigureInputs(std::span<const Shape> inputs) {
  for (size_t k = 1; k < inputs.size(); ++k) {
    if (inputs[k] != inputs[0]) {
      return Status::InvalidArgument("add needs inputs of one shape; input 0 is " +
                                     inputs[0].ToString() + ", input " + std::to_string(k) +
                                     " is " + inputs[k].ToString());
    }
  }
  flops_ = static_cast<int64_t>(inputs.size() - 1) * inputs[0].num_elements();
  return inputs[0];
}

void AddLayer::ForwardInputs(std::span<const Tensor* const> in, Tensor& out, Mode /*mode*/) {
  out.Resize(in[0]->shape());
  const int64_t n = out.size();
  const bool relu = relu_;
  ParallelFor(n, 1 << 16, [&](int64_t begin, int64_t end) {
    float* y = out.data();
    std::memcpy(y + begin, in[0]->data() + begin, sizeof(float) * (end - begin));
    for (size_t k = 1; k < in.size(); ++k) {
      const float* x = in[k]->data();
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) y[i] += x[i];
    }
    // The relu layer's kernel, on the chunk while it is in cache.
    if (relu) internal::Relu(y + begin, y + begin, end - begin);
  });
}

void AddLayer::BackwardInputs(std::span<const Tensor* const> in, const Tensor& out,
                              const Tensor& dout, std::span<Tensor* const> din) {
  for (size_t k = 0; k < in.size(); ++k) {
    if (din[k]) din[k]->Resize(in[k]->shape());
  }
  // Each input's gradient is dout (masked by the fused ReLU's out > 0, the relu layer's kernel):
  // the first is formed, the others copied from it, chunk by chunk while it is in cache.
  const bool relu = relu_;
  const float* y = out.data();
  const float* g = dout.data();
  ParallelFor(dout.size(), 1 << 16, [&](int64_t begin, int64_t end) {
    const float* first = nullptr;
    for (size_t k = 0; k < in.size(); ++k) {
      if (!din[k]) continue;
      float* d = din[k]->data() + begin;
      if (first) {
        std::memcpy(d, first, sizeof(float) * (end - begin));
      } else if (relu) {
        internal::ReluGrad(y + begin, g + begin, d, end - begin);
      } else {
        std::memcpy(d, g + begin, sizeof(float) * (end - begin));
      }
      if (!first) first = d;
    }
  });
}

Result<Shape> ConcatLayer::ConfigureInputs(std::span<const Shape> inputs) {
  const Shape& first = inputs[0];
  if (first.rank() != 1 && first.rank() != 3) {
    return Status::InvalidArgument("concat joins [H, W, C] or [F] inputs; input 0 is " +
                                   first.ToString());
  }
  widths_.clear();
  width_ = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& s = inputs[k];
    bool same = s.rank() == first.rank();
    for (int d = 0; same && d + 1 < s.rank(); ++d) same = s[d] == first[d];
    if (!same) {
      return Status::InvalidArgument(
          "concat joins inputs along their last axis, which must agree in every other; input 0 "
          "is " +
          first.ToString() + ", input " + std::to_string(k) + " is " + s.ToString());
    }
    widths_.push_back(s[s.rank() - 1]);
    width_ += s[s.rank() - 1];
  }
  rows_ = first.num_elements() / first[first.rank() - 1];
  Shape out = first;
  out[out.rank() - 1] = width_;
  return out;
}

void ConcatLayer::ForwardInputs(std::span<const Tensor* const> in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in[0]->shape()[0];
  Shape shape = in[0]->shape();
  shape[shape.rank() - 1] = width_;
  out.Resize(shape);
  ParallelFor(batch * rows_, 1 << 12, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* y = out.data() + r * width_;
      for (size_t k = 0; k < in.size(); ++k) {
        const int64_t w = widths_[k];
        std::memcpy(y, in[k]->data() + r * w, sizeof(float) * w);
        y += w;
      }
    }
  });
}

void ConcatLayer::BackwardInputs(std::span<const Tensor* const> in, const Tensor& /*out*/,
                                 const Tensor& dout, std::span<Tensor* const> din) {
  const int64_t batch = in[0]->shape()[0];
  for (size_t k = 0; k < in.size(); ++k) {
    if (din[k]) din[k]->Resize(in[k]->shape());
  }
  ParallelFor(batch * rows_, 1 << 12, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* g = dout.data() + r * width_;
      for (size_t k = 0; k < in.size(); ++k) {
        const int64_t w = widths_[k];
        if (din[k]) std::memcpy(din[k]->data() + r * w, g, sizeof(float) * w);
        g += w;
      }
    }
  });
}

}  // namespace trainingd::engine
