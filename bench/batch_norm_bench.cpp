// batch_norm_bench: batch norm and the ReLU after it, forward and backward, at ResNet-20's three
// shapes (32x32x16, 16x16x32, 8x8x64) at batch 128 in 4 blocks: batch norm then the relu layer,
// and batch norm with the ReLU fused (Layer::FuseRelu). Prints the median of 15 steps (after 3
// warm-up steps) of each. Usage: batch_norm_bench [threads] (default 1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/batch_norm_layer.h"
#include "trainingd/engine/nn/elementwise_layers.h"
#include "trainingd/engine/nn/gradient_blocks.h"
using namespace trainingd::engine;
using Clock = std::chrono::steady_clock;
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
int main(int argc, char** argv) {
  SetComputeThreads(argc > 1 ? atoi(argv[1]) : 1);
  for (const Shape& ex : {Shape{32, 32, 16}, Shape{16, 16, 32}, Shape{8, 8, 64}}) {
    Rng rng(1);
    Tensor x(ex.with_batch(128)), r(ex.with_batch(128));
    for (int64_t i = 0; i < x.size(); ++i) {
      x[i] = rng.Uniform(-1, 2);
      r[i] = rng.Uniform(-1, 1);
    }
    for (int fused = 0; fused < 2; ++fused) {
      BatchNormLayer bn("bn", LayerSpec::BatchNorm());
      Rng r2(1);
      (void)bn.Build(ex, r2);
      bn.FuseRelu(fused);
      ReluLayer relu("relu");
      const int64_t C = ex[2];
      std::vector<int64_t> s0(C), s1(C);
      bn.parameters()[0]->sum = s0;
      bn.parameters()[1]->sum = s1;
      Tensor z, y, dz, dx;
      std::vector<double> tf, tb;
      for (int it = 0; it < 18; ++it) {
        GradientBlocks b = GradientBlocks::ForRank(128, 4, 0, 1, nullptr);
        bn.set_step_blocks(&b);
        auto t0 = Clock::now();
        bn.Forward(x, z, Mode::kTrain);
        if (!fused) relu.Forward(z, y, Mode::kTrain);
        auto t1 = Clock::now();
        if (!fused) {
          relu.Backward(z, y, r, &dz, b);
          bn.Backward(x, z, dz, &dx, b);
        } else
          bn.Backward(x, z, r, &dx, b);
        auto t2 = Clock::now();
        if (it >= 3) {
          tf.push_back(std::chrono::duration<double>(t1 - t0).count() * 1e3);
          tb.push_back(std::chrono::duration<double>(t2 - t1).count() * 1e3);
        }
      }
      std::printf("%s %s: forward %.2f ms, backward %.2f ms\n", ex.ToString().c_str(),
                  fused ? "fused" : "unfused", Median(tf), Median(tb));
    }
  }
}
