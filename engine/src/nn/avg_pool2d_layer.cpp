#include "trainingd/engine/nn/avg_pool2d_layer.h"

#include <cstring>
#include <vector>

#include "nn/pool_geometry.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine {

AvgPool2dLayer::AvgPool2dLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)),
      pool_(spec.pool),
      stride_(spec.stride > 0 ? spec.stride : spec.pool) {}

Result<Shape> AvgPool2dLayer::Configure(const Shape& input) {
  PoolGeometry g;
  Result<Shape> out = ConfigurePool("avg_pool2d", input, pool_, stride_, &g);
  h_ = g.h;
  w_ = g.w;
  c_ = g.c;
  oh_ = g.oh;
  ow_ = g.ow;
  return out;
}

void AvgPool2dLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in.shape()[0];
  out.Resize(Shape{batch, oh_, ow_, c_});
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  const float scale = 1.0f / static_cast<float>(pool_ * pool_);
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(c_));
    for (int64_t n = begin; n < end; ++n) {
      const float* x = in.data() + n * in_size;
      for (int64_t oy = 0; oy < oh_; ++oy) {
        for (int64_t ox = 0; ox < ow_; ++ox) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int64_t ky = 0; ky < pool_; ++ky) {
            for (int64_t kx = 0; kx < pool_; ++kx) {
              const float* px = x + ((oy * stride_ + ky) * w_ + ox * stride_ + kx) * c_;
              float* a = acc.data();
#pragma omp simd
              for (int64_t c = 0; c < c_; ++c) a[c] += px[c];
            }
          }
          float* y = out.data() + n * out_size + (oy * ow_ + ox) * c_;
          const float* a = acc.data();
#pragma omp simd
          for (int64_t c = 0; c < c_; ++c) y[c] = a[c] * scale;
        }
      }
    }
  });
}

void AvgPool2dLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                              Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  const int64_t batch = in.shape()[0];
  din->Resize(in.shape());
  const int64_t in_size = h_ * w_ * c_, out_size = oh_ * ow_ * c_;
  const float scale = 1.0f / static_cast<float>(pool_ * pool_);
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    std::memset(din->data() + begin * in_size, 0, sizeof(float) * (end - begin) * in_size);
    for (int64_t n = begin; n < end; ++n) {
      float* dx = din->data() + n * in_size;
      for (int64_t oy = 0; oy < oh_; ++oy) {
        for (int64_t ox = 0; ox < ow_; ++ox) {
          const float* dy = dout.data() + n * out_size + (oy * ow_ + ox) * c_;
          for (int64_t ky = 0; ky < pool_; ++ky) {
            for (int64_t kx = 0; kx < pool_; ++kx) {
              float* px = dx + ((oy * stride_ + ky) * w_ + ox * stride_ + kx) * c_;
#pragma omp simd
              for (int64_t c = 0; c < c_; ++c) px[c] += dy[c] * scale;
            }
          }
        }
      }
    }
  });
}

Result<Shape> GlobalAvgPoolLayer::Configure(const Shape& input) {
  if (input.rank() != 3) {
    return Status::InvalidArgument(
        "global_avg_pool expects an input of shape [height,width,channels], got " +
        input.ToString());
  }
  pixels_ = input[0] * input[1];
  c_ = input[2];
  return Shape{c_};
}

void GlobalAvgPoolLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in.shape()[0];
  out.Resize(Shape{batch, c_});
  const float scale = 1.0f / static_cast<float>(pixels_);
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* x = in.data() + n * pixels_ * c_;
      float* y = out.data() + n * c_;
      std::memset(y, 0, sizeof(float) * c_);
      for (int64_t p = 0; p < pixels_; ++p) {
        const float* px = x + p * c_;
#pragma omp simd
        for (int64_t c = 0; c < c_; ++c) y[c] += px[c];
      }
#pragma omp simd
      for (int64_t c = 0; c < c_; ++c) y[c] *= scale;
    }
  });
}

void GlobalAvgPoolLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                                  Tensor* din, GradientBlocks& /*blocks*/) {
  if (!din) return;
  const int64_t batch = in.shape()[0];
  din->Resize(in.shape());
  const float scale = 1.0f / static_cast<float>(pixels_);
  ParallelFor(batch, 2, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* dy = dout.data() + n * c_;
      float* dx = din->data() + n * pixels_ * c_;
      for (int64_t p = 0; p < pixels_; ++p) {
#pragma omp simd
        for (int64_t c = 0; c < c_; ++c) dx[p * c_ + c] = dy[c] * scale;
      }
    }
  });
}

}  // namespace trainingd::engine
