#include "trainingd/engine/nn/elementwise_layers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/float_format.h"
#include "nn/activation_kernels.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine {
namespace {
// Below this many floats an element-wise pass stays on one thread: waking the other costs more.
constexpr int64_t kElementwiseMinParallel = 1 << 15;
}  // namespace

Result<Shape> ReluLayer::Configure(const Shape& input) { return input; }

void ReluLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  out.Resize(in.shape());
  const float* x = in.data();
  float* y = out.data();
  // Element-wise, so the threads' split changes no bit.
  ParallelFor(in.size(), kElementwiseMinParallel,
              [&](int64_t i0, int64_t i1) { internal::Relu(x + i0, y + i0, i1 - i0); });
}

void ReluLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout, Tensor* din,
                         GradientBlocks& /*blocks*/) {
  if (!din) return;
  din->Resize(in.shape());
  const float* x = in.data();
  const float* g = dout.data();
  float* d = din->data();
  ParallelFor(in.size(), kElementwiseMinParallel,
              [&](int64_t i0, int64_t i1) { internal::ReluGrad(x + i0, g + i0, d + i0, i1 - i0); });
}

Result<Shape> SmoothActivationLayer::Configure(const Shape& input) {
  if (kind_ != LayerType::kSigmoid && kind_ != LayerType::kTanh && kind_ != LayerType::kGelu) {
    return Status::InvalidArgument(std::string(LayerTypeName(kind_)) +
                                   " is not a smooth activation");
  }
  return input;
}

void SmoothActivationLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  out.Resize(in.shape());
  const float* x = in.data();
  float* y = out.data();
  const int64_t n = in.size();
  const LayerType kind = kind_;
  ParallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
    switch (kind) {
      case LayerType::kSigmoid:
        for (int64_t i = begin; i < end; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
        break;
      case LayerType::kTanh:
        for (int64_t i = begin; i < end; ++i) y[i] = std::tanh(x[i]);
        break;
      default:  // kGelu
        for (int64_t i = begin; i < end; ++i) {
          y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
        }
        break;
    }
  });
}

void SmoothActivationLayer::Backward(const Tensor& in, const Tensor& out, const Tensor& dout,
                                     Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  din->Resize(in.shape());
  const float* x = in.data();
  const float* y = out.data();
  const float* g = dout.data();
  float* d = din->data();
  const int64_t n = in.size();
  const LayerType kind = kind_;
  ParallelFor(n, 1 << 14, [&](int64_t begin, int64_t end) {
    switch (kind) {
      case LayerType::kSigmoid:
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) d[i] = g[i] * y[i] * (1.0f - y[i]);
        break;
      case LayerType::kTanh:
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) d[i] = g[i] * (1.0f - y[i] * y[i]);
        break;
      default:  // kGelu
        for (int64_t i = begin; i < end; ++i) {
          const float cdf = 0.5f * (1.0f + std::erf(x[i] * 0.70710678118654752f));
          const float pdf = 0.39894228040143268f * std::exp(-0.5f * x[i] * x[i]);
          d[i] = g[i] * (cdf + x[i] * pdf);
        }
        break;
    }
  });
}

DropoutLayer::DropoutLayer(std::string name, float rate, uint64_t seed)
    : Layer(std::move(name)), rate_(rate), rng_(seed) {}

Result<Shape> DropoutLayer::Configure(const Shape& input) {
  if (!(rate_ >= 0.0f && rate_ < 1.0f)) {
    return Status::InvalidArgument("rate must be in [0, 1), got " + internal::FloatToString(rate_));
  }
  elements_ = input.num_elements();
  return input;
}

int64_t DropoutLayer::ScratchBytes(int64_t batch, Mode mode, int /*threads*/) const {
  // The mask of a training forward pass.
  return mode == Mode::kTrain && rate_ > 0.0f ? 4 * batch * elements_ : 0;
}

void DropoutLayer::Forward(const Tensor& in, Tensor& out, Mode mode) {
  out.Resize(in.shape());
  last_mode_ = mode;
  const int64_t n = in.size();
  if (mode == Mode::kEval || rate_ == 0.0f) {
    std::memcpy(out.data(), in.data(), sizeof(float) * n);
    return;
  }
  mask_.resize(static_cast<size_t>(n));
  const float scale = 1.0f / (1.0f - rate_);
  // 24-bit uniforms compared against the rate: P(keep) = 1 - rate to within 2^-24.
  const uint32_t threshold = static_cast<uint32_t>(std::lround(rate_ * 16777216.0));
  const uint64_t key = rng_.Next();
  const int64_t batch = in.shape()[0];
  const int64_t per_example = batch ? n / batch : 0;
  for (int64_t b = 0; b < batch; ++b) {
    Rng rng = Rng::ForStream(key, static_cast<uint64_t>(example_offset_ + b));
    float* m = mask_.data() + b * per_example;
    for (int64_t i = 0; i < per_example; ++i) {
      m[i] = (rng.Next() >> 40) >= threshold ? scale : 0.0f;
    }
  }
  const float* x = in.data();
  const float* m = mask_.data();
  float* y = out.data();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * m[i];
}

void DropoutLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                            Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  din->Resize(in.shape());
  const int64_t n = in.size();
  if (last_mode_ == Mode::kEval || rate_ == 0.0f) {
    std::memcpy(din->data(), dout.data(), sizeof(float) * n);
    return;
  }
  const float* g = dout.data();
  const float* m = mask_.data();
  float* d = din->data();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = g[i] * m[i];
}

Result<Shape> FlattenLayer::Configure(const Shape& input) { return Shape{input.num_elements()}; }

void FlattenLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  // The same floats, seen as [batch, features]: the input outlives the output (the model keeps
  // both until Backward), and the next layer only reads it.
  const int64_t batch = in.shape()[0];
  out = Tensor::View(Shape{batch, batch ? in.size() / batch : 0}, const_cast<float*>(in.data()));
}

void FlattenLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                            Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  din->Resize(in.shape());
  std::memcpy(din->data(), dout.data(), sizeof(float) * dout.size());
}

}  // namespace trainingd::engine
