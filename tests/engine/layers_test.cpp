// Forward passes against direct reference implementations, and every layer's backward pass
// against central finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sanitized.h"
#include "test_util.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/conv2d_layer.h"
#include "trainingd/engine/nn/dense_layer.h"
#include "trainingd/engine/nn/elementwise_layers.h"
#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/nn/max_pool2d_layer.h"

namespace trainingd::engine {
namespace {

using testing::RandomTensor;

// Loss L = sum(out * r) for a fixed random r, so dL/dout = r.
double ProbeLoss(Layer& layer, const Tensor& in, const Tensor& r, Mode mode) {
  Tensor out;
  layer.Forward(in, out, mode);
  double s = 0;
  for (int64_t i = 0; i < out.size(); ++i) s += double(out[i]) * r[i];
  return s;
}

// Checks the analytic input and parameter gradients of `layer` against central differences, at
// about 97 elements of the input and of each parameter spread over the tensor (29 under the
// sanitizers, where each probe's two forward passes are ten times slower and what matters is
// how the backward pass uses memory). `reset` is called before every forward so stateful
// layers (dropout) replay the same mask.
void CheckGradients(
    Layer& layer, Tensor in, bool check_input, double tol = 2e-3,
    std::function<void()> reset = [] {}) {
  Rng rng(99);
  Tensor out;
  reset();
  layer.Forward(in, out, Mode::kTrain);
  Tensor r = RandomTensor(out.shape(), rng);
  Tensor din;
  layer.Backward(in, out, r, check_input ? &din : nullptr);
  const double h = 1e-2;
  auto numeric = [&](float* x) {
    const float saved = *x;
    *x = saved + float(h);
    reset();
    const double up = ProbeLoss(layer, in, r, Mode::kTrain);
    *x = saved - float(h);
    reset();
    const double down = ProbeLoss(layer, in, r, Mode::kTrain);
    *x = saved;
    return (up - down) / (2 * h);
  };
  auto expect_close = [&](double analytic, double num, const std::string& what) {
    EXPECT_NEAR(analytic, num, tol * std::max(1.0, std::fabs(num))) << what;
  };
  const int64_t probes = test_support::kSanitized ? 29 : 97;
  if (check_input) {
    ASSERT_EQ(din.shape(), in.shape());
    for (int64_t i = 0; i < in.size(); i += std::max<int64_t>(1, in.size() / probes)) {
      expect_close(din[i], numeric(&in[i]), "d input[" + std::to_string(i) + "]");
    }
  }
  for (Parameter* p : layer.parameters()) {
    const Tensor grad = p->grad;  // copy: the probes below run Forward only, but be safe
    for (int64_t i = 0; i < p->value.size(); i += std::max<int64_t>(1, p->value.size() / probes)) {
      expect_close(grad[i], numeric(&p->value[i]), p->name + "[" + std::to_string(i) + "]");
    }
  }
}

// Direct NHWC convolution with TF padding, for reference.
Tensor ReferenceConv(const Tensor& x, const Tensor& k, const Tensor& b, int64_t stride, bool same,
                     bool relu) {
  const int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const int64_t ks = k.shape()[0], oc = k.shape()[3];
  int64_t oh, ow, pt = 0, pl = 0;
  if (same) {
    oh = (h + stride - 1) / stride;
    ow = (w + stride - 1) / stride;
    pt = std::max<int64_t>((oh - 1) * stride + ks - h, 0) / 2;
    pl = std::max<int64_t>((ow - 1) * stride + ks - w, 0) / 2;
  } else {
    oh = (h - ks) / stride + 1;
    ow = (w - ks) / stride + 1;
  }
  Tensor y(Shape{n, oh, ow, oc});
  for (int64_t e = 0; e < n; ++e)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < oc; ++o) {
          double s = b[o];
          for (int64_t ky = 0; ky < ks; ++ky)
            for (int64_t kx = 0; kx < ks; ++kx) {
              const int64_t iy = oy * stride - pt + ky, ix = ox * stride - pl + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (int64_t ci = 0; ci < c; ++ci)
                s += double(x[((e * h + iy) * w + ix) * c + ci]) *
                     k[((ky * ks + kx) * c + ci) * oc + o];
            }
          y[((e * oh + oy) * ow + ox) * oc + o] = float(relu ? std::max(s, 0.0) : s);
        }
  return y;
}

struct ConvCase {
  int64_t h, w, c, filters, kernel, stride;
  Padding padding;
  Activation act;
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

// Every case runs with every algorithm where it applies (Winograd: stride 1, 3x3 or 5x5; direct:
// one input channel, stride 1), im2col where it does not.
constexpr ConvAlgorithm kAlgorithms[] = {ConvAlgorithm::kIm2col, ConvAlgorithm::kWinograd,
                                         ConvAlgorithm::kDirect};

ConvAlgorithm ExpectedAlgorithm(ConvAlgorithm requested, int64_t c, int64_t kernel,
                                int64_t stride) {
  const bool winograd = stride == 1 && (kernel == 3 || kernel == 5);
  const bool direct = stride == 1 && c == 1;
  if ((requested == ConvAlgorithm::kWinograd && winograd) ||
      (requested == ConvAlgorithm::kDirect && direct))
    return requested;
  return ConvAlgorithm::kIm2col;
}

TEST_P(ConvTest, ForwardMatchesDirectConvolutionWithOneAndTwoThreads) {
  const ConvCase cc = GetParam();
  // Every layer below starts from Rng(1): the same parameters and input, so one reference.
  std::optional<Tensor> ref;
  for (ConvAlgorithm algorithm : kAlgorithms)
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(ConvAlgorithmName(algorithm)) + ", threads " +
                   std::to_string(threads));
      SetComputeThreads(threads);
      LayerSpec spec = LayerSpec::Conv2d(cc.filters, cc.kernel, cc.padding, cc.act, cc.stride);
      spec.bias_init = 0.05f;
      Conv2dLayer conv("conv2d", spec);
      conv.set_algorithm(algorithm);
      Rng rng(1);
      ASSERT_TRUE(conv.Build(Shape{cc.h, cc.w, cc.c}, rng).ok());
      EXPECT_EQ(conv.algorithm(), ExpectedAlgorithm(algorithm, cc.c, cc.kernel, cc.stride));
      Tensor x = RandomTensor(Shape{5, cc.h, cc.w, cc.c}, rng);
      Tensor y;
      conv.Forward(x, y, Mode::kTrain);
      if (!ref) {
        ref = ReferenceConv(x, conv.parameters()[0]->value, conv.parameters()[1]->value, cc.stride,
                            cc.padding == Padding::kSame, cc.act == Activation::kRelu);
      }
      ASSERT_EQ(y.shape(), ref->shape());
      for (int64_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], (*ref)[i], 1e-4) << i;
    }
  SetComputeThreads(2);
}

TEST_P(ConvTest, GradientsMatchFiniteDifferences) {
  const ConvCase cc = GetParam();
  // Finite differences straddle ReLU kinks; the fused ReLU is checked exactly below instead.
  for (ConvAlgorithm algorithm : kAlgorithms) {
    SCOPED_TRACE(ConvAlgorithmName(algorithm));
    LayerSpec spec =
        LayerSpec::Conv2d(cc.filters, cc.kernel, cc.padding, Activation::kNone, cc.stride);
    Conv2dLayer conv("conv2d", spec);
    conv.set_algorithm(algorithm);
    Rng rng(2);
    ASSERT_TRUE(conv.Build(Shape{cc.h, cc.w, cc.c}, rng).ok());
    CheckGradients(conv, RandomTensor(Shape{3, cc.h, cc.w, cc.c}, rng), /*check_input=*/true);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(ConvCase{8, 8, 1, 4, 5, 1, Padding::kSame, Activation::kNone},
                      ConvCase{7, 6, 3, 5, 3, 1, Padding::kValid, Activation::kNone},
                      ConvCase{9, 9, 2, 3, 3, 2, Padding::kSame, Activation::kRelu},
                      ConvCase{10, 8, 2, 3, 4, 3, Padding::kValid, Activation::kNone},
                      ConvCase{6, 6, 4, 2, 5, 2, Padding::kSame, Activation::kNone},
                      // Winograd: partial tiles at odd sizes, channel counts that are not whole
                      // vectors, valid padding, and the tutorial CNN's second convolution's input.
                      ConvCase{7, 9, 3, 4, 5, 1, Padding::kSame, Activation::kRelu},
                      ConvCase{9, 7, 2, 3, 3, 1, Padding::kValid, Activation::kNone},
                      ConvCase{6, 11, 17, 18, 3, 1, Padding::kSame, Activation::kRelu},
                      ConvCase{11, 10, 5, 33, 5, 1, Padding::kValid, Activation::kNone},
                      ConvCase{14, 14, 32, 24, 5, 1, Padding::kSame, Activation::kRelu},
                      // Colour and odd inputs (issue 23): RGB and RGBA first layers, non-square,
                      // a CIFAR-sized image, and the second convolution over their outputs.
                      ConvCase{32, 32, 3, 4, 3, 1, Padding::kSame, Activation::kRelu},
                      ConvCase{5, 7, 2, 4, 3, 1, Padding::kSame, Activation::kNone},
                      ConvCase{7, 5, 4, 6, 5, 1, Padding::kSame, Activation::kRelu},
                      ConvCase{9, 13, 4, 5, 3, 2, Padding::kValid, Activation::kNone},
                      ConvCase{5, 7, 3, 2, 5, 1, Padding::kValid, Activation::kNone},
                      ConvCase{8, 16, 32, 16, 5, 1, Padding::kSame, Activation::kRelu},
                      // One channel (direct): the tutorial CNN's first layer, output channels
                      // that are not whole vectors, valid padding, even and 1x1 kernels, and
                      // stride 2 (im2col).
                      ConvCase{28, 28, 1, 32, 5, 1, Padding::kSame, Activation::kRelu},
                      ConvCase{9, 7, 1, 20, 3, 1, Padding::kValid, Activation::kRelu},
                      ConvCase{6, 10, 1, 3, 4, 1, Padding::kSame, Activation::kNone},
                      ConvCase{5, 6, 1, 40, 1, 1, Padding::kValid, Activation::kNone},
                      ConvCase{11, 9, 1, 7, 7, 1, Padding::kSame, Activation::kRelu},
                      ConvCase{9, 9, 1, 5, 3, 2, Padding::kSame, Activation::kNone},
                      // ResNet's kinds (issue 51): 1x1 of stride 1 (a plain product) and 2 (the
                      // projection shortcut), a strided 3x3, and a stride-1 3x3 whose channels
                      // are not whole vectors, each with channel counts not multiples of 8.
                      ConvCase{7, 9, 5, 6, 1, 1, Padding::kSame, Activation::kNone},
                      ConvCase{6, 5, 3, 4, 1, 1, Padding::kValid, Activation::kRelu},
                      ConvCase{9, 8, 6, 10, 1, 2, Padding::kSame, Activation::kNone},
                      ConvCase{9, 11, 9, 10, 3, 2, Padding::kSame, Activation::kRelu},
                      ConvCase{8, 8, 12, 20, 3, 1, Padding::kSame, Activation::kNone}),
    [](const ::testing::TestParamInfo<ConvCase>& info) {
      const ConvCase& c = info.param;
      return std::to_string(c.h) + "x" + std::to_string(c.w) + "x" + std::to_string(c.c) + "_k" +
             std::to_string(c.kernel) + "s" + std::to_string(c.stride) + "f" +
             std::to_string(c.filters) + (c.padding == Padding::kSame ? "_same" : "_valid") +
             (c.act == Activation::kRelu ? "_relu" : "");
    });

TEST(ConvTest, FusedReluBackwardEqualsLinearBackwardOfTheMaskedGradient) {
  Rng rng(11);
  Conv2dLayer fused("conv2d", LayerSpec::Conv2d(3, 3, Padding::kSame, Activation::kRelu));
  Conv2dLayer linear("conv2d", LayerSpec::Conv2d(3, 3, Padding::kSame, Activation::kNone));
  Rng r1(5), r2(5);
  ASSERT_TRUE(fused.Build(Shape{6, 6, 2}, r1).ok());
  ASSERT_TRUE(linear.Build(Shape{6, 6, 2}, r2).ok());
  Tensor x = RandomTensor(Shape{4, 6, 6, 2}, rng);
  Tensor y_fused, y_linear, dx_fused, dx_linear;
  fused.Forward(x, y_fused, Mode::kTrain);
  linear.Forward(x, y_linear, Mode::kTrain);
  Tensor dy = RandomTensor(y_fused.shape(), rng), dy_masked = dy;
  int64_t active = 0;
  for (int64_t i = 0; i < dy.size(); ++i) {
    ASSERT_EQ(y_fused[i], std::max(y_linear[i], 0.0f));
    if (y_fused[i] > 0)
      ++active;
    else
      dy_masked[i] = 0;
  }
  ASSERT_GT(active, dy.size() / 5);
  ASSERT_LT(active, dy.size() * 4 / 5);
  fused.Backward(x, y_fused, dy, &dx_fused);
  linear.Backward(x, y_linear, dy_masked, &dx_linear);
  for (int64_t i = 0; i < x.size(); ++i) ASSERT_NEAR(dx_fused[i], dx_linear[i], 1e-6);
  for (size_t p = 0; p < 2; ++p) {
    const Tensor& a = fused.parameters()[p]->grad;
    const Tensor& b = linear.parameters()[p]->grad;
    for (int64_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-6);
  }
}

// One example on two threads (its output pixels or rows split between them, as in batch-1
// inference) is the same bits as that example's rows of a batch on one thread.
TEST(ConvTest, OneExampleOnTwoThreadsIsItsRowsOfABatch) {
  for (ConvAlgorithm algorithm : {ConvAlgorithm::kIm2col, ConvAlgorithm::kDirect}) {
    SCOPED_TRACE(ConvAlgorithmName(algorithm));
    Rng rng(12);
    Conv2dLayer conv("conv2d", LayerSpec::Conv2d(32, 5, Padding::kSame, Activation::kRelu));
    conv.set_algorithm(algorithm);
    Rng init(6);
    ASSERT_TRUE(conv.Build(Shape{28, 28, 1}, init).ok());
    ASSERT_EQ(conv.algorithm(), algorithm);
    const Tensor x = RandomTensor(Shape{3, 28, 28, 1}, rng);
    Tensor batch_out, one_out;
    SetComputeThreads(1);
    conv.Forward(x, batch_out, Mode::kEval);
    SetComputeThreads(2);
    const int64_t in_size = 28 * 28, out_size = 28 * 28 * 32;
    for (int64_t e = 0; e < 3; ++e) {
      Tensor one(Shape{1, 28, 28, 1});
      std::copy_n(x.data() + e * in_size, in_size, one.data());
      conv.Forward(one, one_out, Mode::kEval);
      ASSERT_EQ(std::memcmp(one_out.data(), batch_out.data() + e * out_size, 4 * out_size), 0) << e;
    }
    SetComputeThreads(1);
  }
}

// The direct convolution computes im2col's chains in another order of loops: the same bits
// forward, and in the kernel, bias and input gradients, on one and two threads, over one block
// and over several.
TEST(ConvTest, DirectIsIm2colBitForBit) {
  struct Case {
    int64_t h, w, filters, kernel;
    Padding padding;
    Activation act;
  };
  for (const Case& cc : {Case{28, 28, 32, 5, Padding::kSame, Activation::kRelu},
                         Case{9, 7, 20, 3, Padding::kValid, Activation::kRelu},
                         Case{6, 10, 35, 4, Padding::kSame, Activation::kNone},
                         Case{5, 6, 3, 1, Padding::kValid, Activation::kNone}}) {
    SCOPED_TRACE(std::to_string(cc.h) + "x" + std::to_string(cc.w) + " k" +
                 std::to_string(cc.kernel) + " f" + std::to_string(cc.filters));
    const LayerSpec spec = LayerSpec::Conv2d(cc.filters, cc.kernel, cc.padding, cc.act);
    Conv2dLayer im2col("conv2d", spec), direct("conv2d", spec);
    im2col.set_algorithm(ConvAlgorithm::kIm2col);
    direct.set_algorithm(ConvAlgorithm::kDirect);
    Rng r1(8), r2(8), rng(9);
    ASSERT_TRUE(im2col.Build(Shape{cc.h, cc.w, 1}, r1).ok());
    ASSERT_TRUE(direct.Build(Shape{cc.h, cc.w, 1}, r2).ok());
    ASSERT_EQ(direct.algorithm(), ConvAlgorithm::kDirect);
    const Tensor x = RandomTensor(Shape{7, cc.h, cc.w, 1}, rng);
    auto same = [](const Tensor& a, const Tensor& b) {
      return a.shape() == b.shape() &&
             std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<size_t>(a.size())) == 0;
    };
    for (int threads : {1, 2})
      for (int blocks : {1, 3}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + ", blocks " + std::to_string(blocks));
        SetComputeThreads(threads);
        Tensor y1, y2, dx1, dx2;
        im2col.Forward(x, y1, Mode::kTrain);
        direct.Forward(x, y2, Mode::kTrain);
        ASSERT_TRUE(same(y1, y2));
        Rng dy_rng(10);
        const Tensor dy = RandomTensor(y1.shape(), dy_rng);
        // One block (the whole batch: this also sizes the parameters' sums), then three.
        auto backward = [&](Conv2dLayer& conv, const Tensor& y, Tensor* dx) {
          if (blocks == 1) return conv.Backward(x, y, dy, dx);
          GradientBlocks b = GradientBlocks::ForRank(7, blocks, 0, 1, nullptr);
          conv.Backward(x, y, dy, dx, b);
        };
        backward(im2col, y1, &dx1);
        backward(direct, y2, &dx2);
        EXPECT_TRUE(same(dx1, dx2));
        for (size_t p = 0; p < 2; ++p)
          EXPECT_TRUE(same(im2col.parameters()[p]->grad, direct.parameters()[p]->grad)) << p;
        // Without the input gradient (a first layer) the parameters' gradients are the same.
        backward(direct, y2, nullptr);
        for (size_t p = 0; p < 2; ++p)
          EXPECT_TRUE(same(im2col.parameters()[p]->grad, direct.parameters()[p]->grad)) << p;
      }
  }
  SetComputeThreads(1);
}

// ResNet's kinds of convolution (3x3 of stride 1 on Winograd, 3x3 of stride 2 and 1x1 of stride
// 2 on im2col, 1x1 of stride 1 as a plain GEMM): the output, the input gradient and the kernel
// and bias gradients are the same bits on one thread and on two, with the batch's gradient cut
// into 3 blocks (what N ranks need).
TEST(ConvTest, ResNetKindsAreTheSameBitsOnOneAndTwoThreads) {
  struct Kind {
    int64_t c, filters, kernel, stride;
  };
  for (const Kind k :
       {Kind{12, 20, 3, 1}, Kind{9, 10, 3, 2}, Kind{6, 10, 1, 2}, Kind{5, 6, 1, 1}}) {
    SCOPED_TRACE("kernel " + std::to_string(k.kernel) + ", stride " + std::to_string(k.stride));
    Conv2dLayer conv("conv2d", LayerSpec::Conv2d(k.filters, k.kernel, Padding::kSame,
                                                 Activation::kNone, k.stride));
    Rng init(4);
    ASSERT_TRUE(conv.Build(Shape{9, 11, k.c}, init).ok());
    Rng rng(5);
    const Tensor x = RandomTensor(Shape{7, 9, 11, k.c}, rng);
    // Copies of the results (a parameter's grad may be a view of a buffer the next pass reuses).
    std::vector<float> results[2];
    for (int threads : {1, 2}) {
      SetComputeThreads(threads);
      Tensor y, dx;
      conv.Forward(x, y, Mode::kTrain);
      Rng dy_rng(6);
      const Tensor dy = RandomTensor(y.shape(), dy_rng);
      conv.Backward(x, y, dy, &dx);  // sizes the parameters' sums
      GradientBlocks b = GradientBlocks::ForRank(7, 3, 0, 1, nullptr);
      conv.Backward(x, y, dy, &dx, b);
      std::vector<float>& r = results[threads - 1];
      for (const Tensor* t : {&y, &dx, &conv.parameters()[0]->grad, &conv.parameters()[1]->grad})
        r.insert(r.end(), t->data(), t->data() + t->size());
    }
    ASSERT_EQ(results[0].size(), results[1].size());
    EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), sizeof(float) * results[0].size()),
              0);
  }
  SetComputeThreads(1);
}

TEST(ConvTest, AutoUsesDirectForOneChannelAndWinogradForThreeAndFiveKernelsOverEnoughChannels) {
  auto chosen = [](int64_t c, int64_t kernel, int64_t stride) {
    Conv2dLayer conv("conv2d",
                     LayerSpec::Conv2d(8, kernel, Padding::kSame, Activation::kRelu, stride));
    Rng rng(4);
    EXPECT_TRUE(conv.Build(Shape{12, 12, c}, rng).ok());
    return conv.algorithm();
  };
  // The tutorial CNN: its first convolution (1 channel) goes direct, its second Winograd.
  EXPECT_EQ(chosen(1, 5, 1), ConvAlgorithm::kDirect);
  EXPECT_EQ(chosen(1, 5, 2), ConvAlgorithm::kIm2col);
  EXPECT_EQ(chosen(32, 5, 1), ConvAlgorithm::kWinograd);
  EXPECT_EQ(chosen(Conv2dLayer::kWinogradMinChannels, 3, 1), ConvAlgorithm::kWinograd);
  EXPECT_EQ(chosen(Conv2dLayer::kWinogradMinChannels - 1, 3, 1), ConvAlgorithm::kIm2col);
  EXPECT_EQ(chosen(32, 5, 2), ConvAlgorithm::kIm2col);
  EXPECT_EQ(chosen(32, 7, 1), ConvAlgorithm::kIm2col);
  EXPECT_EQ(chosen(32, 4, 1), ConvAlgorithm::kIm2col);
}

TEST(ConvTest, FirstLayerSkipsTheInputGradient) {
  Conv2dLayer conv("conv2d", LayerSpec::Conv2d(2, 3, Padding::kSame, Activation::kNone));
  Rng rng(3);
  ASSERT_TRUE(conv.Build(Shape{5, 5, 1}, rng).ok());
  CheckGradients(conv, RandomTensor(Shape{2, 5, 5, 1}, rng), /*check_input=*/false);
}

TEST(ConvTest, BuildRejectsBadShapesWithAClearMessage) {
  Rng rng(0);
  Conv2dLayer flat("conv2d", LayerSpec::Conv2d(2, 3, Padding::kSame, Activation::kNone));
  auto r = flat.Build(Shape{784}, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[784]"), std::string::npos);
  Conv2dLayer big("conv2d", LayerSpec::Conv2d(2, 9, Padding::kValid, Activation::kNone));
  EXPECT_FALSE(big.Build(Shape{5, 5, 1}, rng).ok());
  Conv2dLayer zero("conv2d", LayerSpec::Conv2d(0, 3, Padding::kSame, Activation::kNone));
  EXPECT_FALSE(zero.Build(Shape{5, 5, 1}, rng).ok());
}

TEST(MaxPoolTest, ForwardPicksWindowMaxima) {
  MaxPool2dLayer pool("max_pool2d", LayerSpec::MaxPool2d(2, 2));
  Rng rng(0);
  ASSERT_EQ(*pool.Build(Shape{4, 4, 1}, rng), (Shape{2, 2, 1}));
  Tensor x(Shape{1, 4, 4, 1});
  for (int i = 0; i < 16; ++i) x[i] = float((i * 7) % 16);  // a permutation of 0..15
  Tensor y;
  pool.Forward(x, y, Mode::kTrain);
  // Windows: {0,7,12,3}, {14,5,10,1}, {8,15,4,11}, {6,13,2,9}
  EXPECT_EQ(y[0], 12.0f);
  EXPECT_EQ(y[1], 14.0f);
  EXPECT_EQ(y[2], 15.0f);
  EXPECT_EQ(y[3], 13.0f);
}

TEST(MaxPoolTest, TiesGoToTheWindowsFirstMaximumInEveryChannel) {
  // After a ReLU most windows tie (at zero). 43 channels: runs of the kernel's width (16, 8 or 4
  // lanes, by instruction set) and some left over on every build.
  // Values from {0, 1, 2}, so most windows have ties; each value and gradient is checked against
  // the plain loops: the first maximum in (ky, kx) order wins and takes the whole gradient.
  for (auto [pool_size, stride, height] :
       {std::tuple{2, 2, 8}, std::tuple{2, 2, 7}, std::tuple{3, 2, 7}}) {
    SCOPED_TRACE("pool " + std::to_string(pool_size) + "/" + std::to_string(stride) + " on " +
                 std::to_string(height));
    const int64_t h = height, w = 6, c = 43;
    MaxPool2dLayer pool("max_pool2d", LayerSpec::MaxPool2d(pool_size, stride));
    Rng rng(8);
    const auto shape = pool.Build(Shape{h, w, c}, rng);
    ASSERT_TRUE(shape.ok());
    const int64_t oh = (*shape)[0], ow = (*shape)[1];
    Tensor x(Shape{2, h, w, c}), y, dy(Shape{2, oh, ow, c}), dx;
    for (int64_t i = 0; i < x.size(); ++i) x[i] = float(rng.UniformInt(3));
    for (int64_t i = 0; i < dy.size(); ++i) dy[i] = float(i + 1);
    pool.Forward(x, y, Mode::kTrain);
    pool.Backward(x, y, dy, &dx);
    std::vector<float> want_dx(size_t(x.size()), 0.0f);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t ch = 0; ch < c; ++ch) {
            int64_t first = -1;
            for (int64_t ky = 0; ky < pool_size; ++ky)
              for (int64_t kx = 0; kx < pool_size; ++kx) {
                const int64_t at = ((n * h + oy * stride + ky) * w + ox * stride + kx) * c + ch;
                if (first < 0 || x[at] > x[first]) first = at;
              }
            const int64_t o = ((n * oh + oy) * ow + ox) * c + ch;
            ASSERT_EQ(y[o], x[first]) << "output " << o;
            want_dx[size_t(first)] += dy[o];
          }
    for (int64_t i = 0; i < x.size(); ++i) ASSERT_EQ(dx[i], want_dx[size_t(i)]) << "input " << i;
  }
}

TEST(MaxPoolTest, GradientsMatchFiniteDifferences) {
  // 8x6 with 2/2 is tiled exactly by its windows (the fast path); the others are not.
  for (auto [pool_size, stride, height] :
       {std::tuple{2, 2, 8}, std::tuple{2, 2, 7}, std::tuple{3, 2, 7}, std::tuple{2, 1, 7}}) {
    MaxPool2dLayer pool("max_pool2d", LayerSpec::MaxPool2d(pool_size, stride));
    Rng rng(4);
    ASSERT_TRUE(pool.Build(Shape{height, 6, 3}, rng).ok());
    // Distinct values spaced well beyond the probe step, so no window has a near-tie.
    Tensor x(Shape{2, height, 6, 3});
    std::vector<int> perm(size_t(x.size()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int(i);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.UniformInt(i)]);
    for (int64_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(perm[size_t(i)]);
    CheckGradients(pool, x, true);
  }
}

TEST(MaxPoolTest, GradientsMatchFiniteDifferencesOnColourAndOddInputs) {
  // RGB and RGBA, non-square, odd sizes whose last row and column no window covers.
  for (auto [pool_size, stride, height, width, channels] :
       {std::tuple{2, 2, 5, 7, 4}, std::tuple{2, 2, 8, 6, 4}, std::tuple{3, 3, 7, 11, 3},
        std::tuple{2, 1, 5, 3, 3}, std::tuple{2, 2, 32, 32, 3}}) {
    SCOPED_TRACE("pool " + std::to_string(pool_size) + "/" + std::to_string(stride) + " on " +
                 std::to_string(height) + "x" + std::to_string(width) + "x" +
                 std::to_string(channels));
    MaxPool2dLayer pool("max_pool2d", LayerSpec::MaxPool2d(pool_size, stride));
    Rng rng(6);
    const Shape in{height, width, channels};
    const auto out = pool.Build(in, rng);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(*out, (Shape{(height - pool_size) / stride + 1, (width - pool_size) / stride + 1,
                           channels}));
    Tensor x(in.with_batch(2));
    std::vector<int> perm(size_t(x.size()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int(i);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.UniformInt(i)]);
    for (int64_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(perm[size_t(i)]);
    CheckGradients(pool, x, true);
  }
}

TEST(DenseTest, ForwardIsAffineAndGradientsMatch) {
  for (Activation act : {Activation::kNone, Activation::kRelu}) {
    DenseLayer dense("dense", LayerSpec::Dense(7, act));
    Rng rng(5);
    ASSERT_EQ(*dense.Build(Shape{11}, rng), Shape{7});
    Tensor x = RandomTensor(Shape{4, 11}, rng);
    Tensor y;
    dense.Forward(x, y, Mode::kTrain);
    const Tensor& k = dense.parameters()[0]->value;
    for (int r = 0; r < 4; ++r)
      for (int u = 0; u < 7; ++u) {
        double s = 0;
        for (int i = 0; i < 11; ++i) s += double(x[r * 11 + i]) * k[i * 7 + u];
        if (act == Activation::kRelu) s = std::max(s, 0.0);
        EXPECT_NEAR(y[r * 7 + u], s, 1e-5);
      }
    CheckGradients(dense, x, true);
  }
}

// max |a - b| / max |a|.
double TensorRelativeDifference(const Tensor& a, const Tensor& b) {
  double largest = 0, diff = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::fabs(double(a[i])));
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
  }
  return diff / largest;
}

// Mixed precision: a training step's products take bfloat16 operands (8 bits of mantissa) and
// sum in float, so its outputs and gradients are float32's to about 2^-9 of their size, not to
// the last bit; evaluation is float32's, bit for bit.
TEST(DenseTest, MixedPrecisionTrainsOnBfloat16OperandsAndEvaluatesInFloat32) {
  DenseLayer f32("dense", LayerSpec::Dense(70, Activation::kRelu));
  DenseLayer mixed("dense", LayerSpec::Dense(70, Activation::kRelu));
  mixed.set_precision(Precision::kMixedBfloat16);
  Rng init1(5), init2(5), rng(6);
  ASSERT_TRUE(f32.Build(Shape{300}, init1).ok());
  ASSERT_TRUE(mixed.Build(Shape{300}, init2).ok());
  const Tensor x = RandomTensor(Shape{40, 300}, rng);
  Tensor y32, ymixed;
  f32.Forward(x, y32, Mode::kEval);
  mixed.Forward(x, ymixed, Mode::kEval);
  ASSERT_EQ(std::memcmp(y32.data(), ymixed.data(), 4 * y32.size()), 0);

  f32.Forward(x, y32, Mode::kTrain);
  mixed.Forward(x, ymixed, Mode::kTrain);
  EXPECT_GT(TensorRelativeDifference(y32, ymixed), 0);
  EXPECT_LT(TensorRelativeDifference(y32, ymixed), 1e-2);
  const Tensor dy = RandomTensor(y32.shape(), rng);
  Tensor dx32, dxmixed;
  // Through the same ReLU mask (float32's outputs): an output near zero may change sign.
  f32.Backward(x, y32, dy, &dx32);
  mixed.Backward(x, y32, dy, &dxmixed);
  EXPECT_GT(TensorRelativeDifference(dx32, dxmixed), 0);
  EXPECT_LT(TensorRelativeDifference(dx32, dxmixed), 1e-2);
  for (size_t p = 0; p < 2; ++p) {
    SCOPED_TRACE(f32.parameters()[p]->name);
    const Tensor& g32 = f32.parameters()[p]->grad;
    const Tensor& gmixed = mixed.parameters()[p]->grad;
    EXPECT_LT(TensorRelativeDifference(g32, gmixed), 1e-2);
  }
  EXPECT_GT(TensorRelativeDifference(f32.parameters()[0]->grad, mixed.parameters()[0]->grad), 0);
}

TEST(DenseTest, RejectsUnflattenedInput) {
  DenseLayer dense("dense", LayerSpec::Dense(10, Activation::kNone));
  Rng rng(0);
  auto r = dense.Build(Shape{7, 7, 64}, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("flatten"), std::string::npos);
}

TEST(ReluTest, GradientsMatch) {
  ReluLayer relu("relu");
  Rng rng(6);
  ASSERT_TRUE(relu.Build(Shape{20}, rng).ok());
  Tensor x = RandomTensor(Shape{3, 20}, rng);
  for (int64_t i = 0; i < x.size(); ++i) x[i] += x[i] > 0 ? 0.05f : -0.05f;  // away from the kink
  CheckGradients(relu, x, true);
}

TEST(DropoutTest, TrainDropsAboutRateAndScalesEvalIsIdentity) {
  DropoutLayer drop("dropout", 0.4f, 123);
  Rng rng(0);
  ASSERT_TRUE(drop.Build(Shape{1000}, rng).ok());
  Tensor x(Shape{100, 1000}, 1.0f), y;
  drop.Forward(x, y, Mode::kTrain);
  int64_t zeros = 0;
  for (int64_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0.0f)
      ++zeros;
    else
      ASSERT_FLOAT_EQ(y[i], 1.0f / 0.6f);
  }
  EXPECT_NEAR(double(zeros) / double(y.size()), 0.4, 0.01);
  drop.Forward(x, y, Mode::kEval);
  for (int64_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 1.0f);
}

TEST(DropoutTest, GradientsMatchWithTheSameMask) {
  DropoutLayer drop("dropout", 0.5f, 7);
  Rng rng(0);
  ASSERT_TRUE(drop.Build(Shape{30}, rng).ok());
  const Rng::State start = drop.rng()->state();
  CheckGradients(drop, RandomTensor(Shape{2, 30}, rng), true, 2e-3,
                 [&] { drop.rng()->set_state(start); });
}

TEST(DropoutTest, RejectsRateOutOfRange) {
  Rng rng(0);
  DropoutLayer one("dropout", 1.0f, 1);
  EXPECT_FALSE(one.Build(Shape{3}, rng).ok());
  DropoutLayer neg("dropout", -0.1f, 1);
  EXPECT_FALSE(neg.Build(Shape{3}, rng).ok());
}

TEST(FlattenTest, ReshapesAndPassesGradients) {
  FlattenLayer flat("flatten");
  Rng rng(8);
  ASSERT_EQ(*flat.Build(Shape{3, 4, 2}, rng), Shape{24});
  CheckGradients(flat, RandomTensor(Shape{2, 3, 4, 2}, rng), true);
}

TEST(LossTest, MatchesDirectFormulaAndIsStableForHugeLogits) {
  Tensor logits(Shape{2, 3});
  const float z[] = {1.0f, 2.0f, 3.0f, 1000.0f, -1000.0f, 999.0f};
  for (int i = 0; i < 6; ++i) logits[i] = z[i];
  const int32_t labels[] = {0, 2};
  Tensor d;
  auto r = SoftmaxCrossEntropy(logits, labels, &d);
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1.0;
  const double l1 = std::log(1.0 + std::exp(-1.0)) + 1.0;  // 1000 vs 999, label 999
  EXPECT_NEAR(r.loss, (l0 + l1) / 2, 1e-6);                // float exponentials
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_DOUBLE_EQ(r.accuracy, 0.0);  // argmaxes are 2 and 0
  // Gradient rows sum to zero and match finite differences.
  for (int row = 0; row < 2; ++row)
    EXPECT_NEAR(d[row * 3] + d[row * 3 + 1] + d[row * 3 + 2], 0, 1e-6);
  Tensor small(Shape{2, 3});
  for (int i = 0; i < 6; ++i) small[i] = z[i] / 300.0f;
  SoftmaxCrossEntropy(small, labels, &d);
  for (int i = 0; i < 6; ++i) {
    const float saved = small[i];
    small[i] = saved + 1e-3f;
    const double up = SoftmaxCrossEntropy(small, labels, nullptr).loss;
    small[i] = saved - 1e-3f;
    const double down = SoftmaxCrossEntropy(small, labels, nullptr).loss;
    small[i] = saved;
    EXPECT_NEAR(d[i], (up - down) / 2e-3, 1e-4);
  }
}

}  // namespace
}  // namespace trainingd::engine
