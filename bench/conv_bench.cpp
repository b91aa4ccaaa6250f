// conv_bench: one convolution layer's forward and backward pass, im2col + GEMM against Winograd
// and the direct convolution (where they apply), on one thread, so the algorithms compare without
// the rest of the training step around them. Default shape: the tutorial CNN's second convolution
// (14x14x32 -> 64, 5x5, same, ReLU); its first: --h 28 --w 28 --c 1 --filters 32.
// Usage: conv_bench [--batch 50] [--h 14] [--w 14] [--c 32] [--filters 64] [--kernel 5]
//                   [--stride 1] [--relu 1] [--seconds 2] [--threads 1] [--input-gradient 1]
// ResNet-20's convolutions (no ReLU: batch norm follows them): --h 32 --w 32 --c 16 --filters 16
// --kernel 3 --relu 0 --batch 128, then 16x16x32 and 8x8x64; its strided ones --stride 2 (3x3 from
// 16 to 32 channels, 1x1 projections).
// --input-gradient 0 leaves the input gradient out of backward, as for a model's first layer.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/nn/conv2d_layer.h"

namespace eng = trainingd::engine;
using Clock = std::chrono::steady_clock;

namespace {

template <typename Fn>
double MillisecondsPerCall(double seconds, Fn&& fn) {
  fn();  // warm-up: buffers allocated
  int64_t calls = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    fn();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < seconds);
  return 1e3 * elapsed / static_cast<double>(calls);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 50, h = 14, w = 14, c = 32, filters = 64, kernel = 5;
  double seconds = 2;
  int threads = 1, input_gradient = 1, relu = 1;
  int64_t stride = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--batch")
      batch = std::atoll(v);
    else if (flag == "--h")
      h = std::atoll(v);
    else if (flag == "--w")
      w = std::atoll(v);
    else if (flag == "--c")
      c = std::atoll(v);
    else if (flag == "--filters")
      filters = std::atoll(v);
    else if (flag == "--kernel")
      kernel = std::atoll(v);
    else if (flag == "--seconds")
      seconds = std::atof(v);
    else if (flag == "--threads")
      threads = std::atoi(v);
    else if (flag == "--stride")
      stride = std::atoll(v);
    else if (flag == "--relu")
      relu = std::atoi(v);
    else if (flag == "--input-gradient")
      input_gradient = std::atoi(v);
    else {
      std::fprintf(stderr, "conv_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0 || batch < 1 || h < 1 || w < 1 || c < 1 || filters < 1 || kernel < 1 ||
      seconds <= 0 || threads < 1 || stride < 1 || (relu != 0 && relu != 1) ||
      (input_gradient != 0 && input_gradient != 1)) {
    std::fprintf(
        stderr,
        "conv_bench: flags take one positive value each (--input-gradient and --relu 0 or 1)\n");
    return 2;
  }
  eng::SetComputeThreads(threads);
  std::printf(
      "conv %lldx%lldx%lld -> %lld, %lldx%lld same, stride %lld%s, batch %lld, %d thread(s)%s\n",
      static_cast<long long>(h), static_cast<long long>(w), static_cast<long long>(c),
      static_cast<long long>(filters), static_cast<long long>(kernel),
      static_cast<long long>(kernel), static_cast<long long>(stride), relu ? ", ReLU" : "",
      static_cast<long long>(batch), threads, input_gradient ? "" : ", no input gradient");
  eng::Tensor y_im2col, dx_im2col, dk_im2col;  // to compare the algorithms' results
  for (eng::ConvAlgorithm algorithm :
       {eng::ConvAlgorithm::kIm2col, eng::ConvAlgorithm::kWinograd, eng::ConvAlgorithm::kDirect}) {
    eng::Conv2dLayer conv(
        "conv",
        eng::LayerSpec::Conv2d(filters, kernel, eng::Padding::kSame,
                               relu ? eng::Activation::kRelu : eng::Activation::kNone, stride));
    conv.set_algorithm(algorithm);
    eng::Rng rng(1);
    if (!conv.Build(eng::Shape{h, w, c}, rng).ok()) {
      std::fprintf(stderr, "conv_bench: bad shape\n");
      return 2;
    }
    if (conv.algorithm() != algorithm) continue;  // it does not apply to this shape
    eng::Tensor x(eng::Shape{batch, h, w, c}), y, dy, dx;
    for (int64_t i = 0; i < x.size(); ++i) x[i] = rng.Uniform();
    conv.Forward(x, y, eng::Mode::kTrain);
    dy.Resize(y.shape());
    for (int64_t i = 0; i < dy.size(); ++i) dy[i] = rng.Uniform() - 0.5f;
    const double fwd = MillisecondsPerCall(seconds, [&] { conv.Forward(x, y, eng::Mode::kTrain); });
    const double bwd = MillisecondsPerCall(
        seconds, [&] { conv.Backward(x, y, dy, input_gradient ? &dx : nullptr); });
    const double gflop = 1e-9 * static_cast<double>(conv.ForwardFlopsPerExample() * batch);
    const eng::Tensor& dk = conv.parameters()[0]->grad;
    if (algorithm == eng::ConvAlgorithm::kIm2col) {
      y_im2col = y;
      dx_im2col = dx;
      dk_im2col = dk;
    } else {
      // The gradients again, masked by im2col's output: an output within rounding of zero may
      // fall on the other side of it, and the ReLU then passes one algorithm's gradient there
      // and not the other's (that looked like a 1e-2 error once).
      conv.Backward(x, y_im2col, dy, input_gradient ? &dx : nullptr);
      // Largest difference from im2col, relative to the largest magnitude of the result.
      auto rel = [](const eng::Tensor& a, const eng::Tensor& b) {
        double diff = 0, scale = 0;
        for (int64_t i = 0; i < a.size(); ++i) {
          diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
          scale = std::max(scale, static_cast<double>(std::abs(b[i])));
        }
        return scale > 0 ? diff / scale : diff;
      };
      std::printf(
          "  %s vs im2col, max |difference| / max |value|: output %.2e, input "
          "gradient %.2e, kernel gradient %.2e\n",
          eng::ConvAlgorithmName(algorithm), rel(y, y_im2col), rel(dx, dx_im2col),
          rel(dk, dk_im2col));
    }
    std::printf("  %-9s forward %8.3f ms (%6.1f GFLOP/s)  backward %8.3f ms (%6.1f GFLOP/s)\n",
                eng::ConvAlgorithmName(algorithm), fwd, gflop / fwd * 1e3, bwd,
                2 * gflop / bwd * 1e3);
  }
  std::printf("GFLOP/s count direct-convolution multiply-adds (2 per MAC) for every algorithm.\n");
  return 0;
}
