#include "trainingd/engine/nn/max_pool2d_layer.h"

#include <cstring>

#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine {

MaxPool2dLayer::MaxPool2dLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)),
      pool_(spec.pool),
      stride_(spec.stride > 0 ? spec.stride : spec.pool) {}

Result<Shape> MaxPool2dLayer::Configure(const Shape& input) {
  if (input.rank() != 3) {
    return Status::InvalidArgument(
        "max_pool2d expects an input of shape [height,width,channels], got " + input.ToString());
  }
  if (pool_ <= 0 || stride_ <= 0 || pool_ > 64 || stride_ > 64) {
    return Status::InvalidArgument("pool and stride must be in [1, 64], got pool " +
                                   std::to_string(pool_) + ", stride " + std::to_string(stride_));
  }
  h_ = input[0];
  w_ = input[1];
  c_ = input[2];
  if (pool_ > h_ || pool_ > w_) {
    return Status::InvalidArgument("pool " + std::to_string(pool_) + " is larger than the input " +
                                   input.ToString());
  }
  oh_ = (h_ - pool_) / stride_ + 1;
  ow_ = (w_ - pool_) / stride_ + 1;
  return Shape{oh_, ow_, c_};
}

int64_t MaxPool2dLayer::ScratchBytes(int64_t batch, Mode /*mode*/, int /*threads*/) const {
  // Forward records the argmax of every output element, in both modes.
  return static_cast<int64_t>(sizeof(int32_t)) * batch * oh_ * ow_ * c_;
}

void MaxPool2dLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in.shape()[0];
  out.Resize(Shape{batch, oh_, ow_, c_});
  argmax_.resize(static_cast<size_t>(out.size()));
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* x = in.data() + n * in_size;
      float* y = out.data() + n * out_size;
      int32_t* am = argmax_.data() + n * out_size;
      for (int64_t oy = 0; oy < oh_; ++oy) {
        for (int64_t ox = 0; ox < ow_; ++ox) {
          float* yo = y + (oy * ow_ + ox) * c_;
          int32_t* ao = am + (oy * ow_ + ox) * c_;
          const int32_t first = static_cast<int32_t>(((oy * stride_) * w_ + ox * stride_) * c_);
          for (int64_t c = 0; c < c_; ++c) {
            yo[c] = x[first + c];
            ao[c] = first + static_cast<int32_t>(c);
          }
          for (int64_t ky = 0; ky < pool_; ++ky) {
            for (int64_t kx = 0; kx < pool_; ++kx) {
              if (ky == 0 && kx == 0) continue;
              const int32_t off =
                  static_cast<int32_t>(((oy * stride_ + ky) * w_ + ox * stride_ + kx) * c_);
#pragma omp simd
              for (int64_t c = 0; c < c_; ++c) {
                const float v = x[off + c];
                const bool gt = v > yo[c];
                yo[c] = gt ? v : yo[c];
                ao[c] = gt ? off + static_cast<int32_t>(c) : ao[c];
              }
            }
          }
        }
      }
    }
  });
}

void MaxPool2dLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                              Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  const int64_t batch = in.shape()[0];
  din->Resize(in.shape());
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  // Non-overlapping windows that tile the input exactly: every input element belongs to one
  // window, so each is written once (its gradient or zero) and no zeroing pass is needed.
  const bool tiles = pool_ == stride_ && oh_ * pool_ == h_ && ow_ * pool_ == w_;
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    if (!tiles)
      std::memset(din->data() + begin * in_size, 0, sizeof(float) * (end - begin) * in_size);
    for (int64_t n = begin; n < end; ++n) {
      float* dx = din->data() + n * in_size;
      const float* dy = dout.data() + n * out_size;
      const int32_t* am = argmax_.data() + n * out_size;
      if (!tiles) {
        for (int64_t i = 0; i < out_size; ++i) dx[am[i]] += dy[i];
        continue;
      }
      for (int64_t oy = 0; oy < oh_; ++oy) {
        for (int64_t ox = 0; ox < ow_; ++ox) {
          const int64_t o = (oy * ow_ + ox) * c_;
          for (int64_t ky = 0; ky < pool_; ++ky) {
            for (int64_t kx = 0; kx < pool_; ++kx) {
              const int32_t off =
                  static_cast<int32_t>(((oy * pool_ + ky) * w_ + ox * pool_ + kx) * c_);
#pragma omp simd
              for (int64_t c = 0; c < c_; ++c) {
                dx[off + c] = am[o + c] == off + static_cast<int32_t>(c) ? dy[o + c] : 0.0f;
              }
            }
          }
        }
      }
    }
  });
}

}  // namespace trainingd::engine
