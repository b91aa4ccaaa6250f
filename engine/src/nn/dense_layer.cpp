#include "trainingd/engine/nn/dense_layer.h"

#include <algorithm>

#include "nn/activation_kernels.h"
#include "nn/gemm.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/initializers.h"

namespace trainingd::engine {

DenseLayer::DenseLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)), spec_(spec) {}

Result<Shape> DenseLayer::Configure(const Shape& input) {
  if (input.rank() != 1) {
    return Status::InvalidArgument("dense expects a flat input [features], got " +
                                   input.ToString() + "; add a flatten layer before it");
  }
  if (spec_.units <= 0 || spec_.units > (1 << 20)) {
    return Status::InvalidArgument("units must be in [1, 1048576], got " +
                                   std::to_string(spec_.units));
  }
  in_ = input[0];
  if (in_ * spec_.units > (int64_t{1} << 30)) {
    return Status::InvalidArgument("kernel [" + std::to_string(in_) + "," +
                                   std::to_string(spec_.units) + "] exceeds 2^30 weights");
  }
  return Shape{spec_.units};
}

void DenseLayer::InitializeParameters(Rng& init_rng) {
  InitKernelAndBias(name(), spec_, Shape{in_, spec_.units}, spec_.units, in_, spec_.units, init_rng,
                    kernel_, bias_);
}

int64_t DenseLayer::ScratchBytes(int64_t batch, Mode mode, int /*threads*/) const {
  // Backward's ReLU-masked output gradient.
  const bool relu = spec_.activation == Activation::kRelu;
  return mode == Mode::kTrain && relu ? 4 * batch * spec_.units : 0;
}

void DenseLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in.shape()[0], units = spec_.units;
  out.Resize(Shape{batch, units});
  internal::Gemm(false, false, batch, units, in_, 1.0f, in.data(), in_, kernel_.value.data(), units,
                 0.0f, out.data(), units);
  const float* b = bias_.value.data();
  const bool relu = spec_.activation == Activation::kRelu;
  ParallelFor(batch, 64, [&](int64_t begin, int64_t end) {
    internal::AddBiasActivation(out.data() + begin * units, end - begin, units, b, relu);
  });
}

void DenseLayer::Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din) {
  const int64_t batch = in.shape()[0], units = spec_.units;
  const float* g = dout.data();
  if (spec_.activation == Activation::kRelu) {
    dy_.Resize(dout.shape());
    internal::ReluGrad(out.data(), g, dy_.data(), dout.size());
    g = dy_.data();
  }
  // dW = x^T * dY; db = column sums of dY; dx = dY * W^T
  internal::Gemm(true, false, in_, units, batch, 1.0f, in.data(), in_, g, units, 0.0f,
                 kernel_.grad.data(), units);
  float* db = bias_.grad.data();
  std::fill(db, db + units, 0.0f);
  internal::AddColumnSums(g, batch, units, db);
  if (din) {
    din->Resize(in.shape());
    internal::Gemm(false, true, batch, in_, units, 1.0f, g, units, kernel_.value.data(), units,
                   0.0f, din->data(), in_);
  }
}

}  // namespace trainingd::engine
