// gemm_shapes: the engine's matrix products (engine/src/nn/gemm.h) against OpenBLAS's SGEMM
// (Debian's OpenMP build, the kernels it picks for this CPU), on the products the tutorial models'
// training steps perform, at 1 and 2 threads; and the engine's mixed-precision products
// (GemmBf16, its operands' rounding included), on each of the build's bfloat16 kernels. Each is
// timed A B C A B C and the better of two runs kept. Usage: gemm_shapes [seconds per measurement,
// default 0.3]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "nn/gemm.h"
#include "trainingd/engine/base/parallel.h"

namespace {

struct Product {
  const char* what;
  bool trans_a, trans_b;
  int m, n, k;
};

template <typename Fn>
double GflopsOf(const Product& p, double seconds, Fn&& fn) {
  fn();
  int reps = 0;
  double elapsed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    fn();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < seconds);
  return 2.0 * p.m * p.n * p.k * reps / elapsed * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.3;
  const Product products[] = {
      {"cnn dense forward     [50x3136]x[3136x1024]", false, false, 50, 1024, 3136},
      {"cnn dense input grad  [50x1024]x[3136x1024]^T", false, true, 50, 3136, 1024},
      {"cnn dense kernel grad [50x3136]^Tx[50x1024]", true, false, 3136, 1024, 50},
      {"cnn dense forward     [200x3136]x[3136x1024]", false, false, 200, 1024, 3136},
      {"cnn dense input grad  [200x1024]x[3136x1024]^T", false, true, 200, 3136, 1024},
      {"cnn dense_1 forward   [50x1024]x[1024x10]", false, false, 50, 10, 1024},
      {"cnn conv2d forward    [784x25]x[25x32]", false, false, 784, 32, 25},
      {"cnn conv2d kernel grad[784x25]^Tx[784x32]", true, false, 25, 32, 784},
      {"mlp dense forward     [100x784]x[784x128]", false, false, 100, 128, 784},
      {"mlp dense input grad  [100x128]x[32x128]^T", false, true, 100, 32, 128},
      {"softmax forward       [100x784]x[784x10]", false, false, 100, 10, 784},
      {"softmax kernel grad   [25x784]^Tx[25x10]", true, false, 784, 10, 25},
  };
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  namespace in = trainingd::engine::internal;
  std::printf("engine kernels: %s\n", in::GemmKernels());
  std::printf("bfloat16: %s kernels chosen\n", in::Bf16KernelsName(in::GemmBf16Kernels()));
  // A column for GemmBf16 on each of this build's bfloat16 kernels (the same bits each).
  std::vector<in::Bf16Kernels> bf16_kernels;
  std::string header;
  for (in::Bf16Kernels k :
       {in::Bf16Kernels::kInstructions, in::Bf16Kernels::kFloatFma, in::Bf16Kernels::kEmulated}) {
    if (!in::Bf16KernelsAvailable(k)) continue;
    bf16_kernels.push_back(k);
    header += std::string(" ") + in::Bf16KernelsName(k);
  }
  std::printf("%-46s   1 thread: engine blas%s   2 threads: engine blas%s\n", "product (GFLOP/s)",
              header.c_str(), header.c_str());
  for (const Product& p : products) {
    std::vector<float> a(static_cast<size_t>(p.m) * p.k), b(static_cast<size_t>(p.k) * p.n),
        c(static_cast<size_t>(p.m) * p.n),
        scratch(static_cast<size_t>(in::GemmBf16Floats(p.m, p.n, p.k)));
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    const int lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n;
    const auto engine = [&] {
      in::Gemm(p.trans_a, p.trans_b, p.m, p.n, p.k, a.data(), lda, b.data(), ldb, c.data(), p.n);
    };
    const auto blas = [&] {
      cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
                  p.trans_b ? CblasTrans : CblasNoTrans, p.m, p.n, p.k, 1.0f, a.data(), lda,
                  b.data(), ldb, 0.0f, c.data(), p.n);
    };
    const auto bf16 = [&] {
      in::GemmBf16(p.trans_a, p.trans_b, p.m, p.n, p.k, a.data(), lda, b.data(), ldb, c.data(), p.n,
                   scratch.data());
    };
    std::printf("%-46s", p.what);
    for (int threads : {1, 2}) {
      trainingd::engine::SetComputeThreads(threads);
      openblas_set_num_threads(threads);
      double e = 0, o = 0;
      std::vector<double> h(bf16_kernels.size(), 0.0);
      for (int round = 0; round < 2; ++round) {
        e = std::max(e, GflopsOf(p, seconds, engine));
        o = std::max(o, GflopsOf(p, seconds, blas));
        for (size_t i = 0; i < bf16_kernels.size(); ++i) {
          in::SetGemmBf16Kernels(bf16_kernels[i]);
          h[i] = std::max(h[i], GflopsOf(p, seconds, bf16));
        }
      }
      std::printf("   %6.1f %6.1f", e, o);
      for (double x : h) std::printf(" %6.1f", x);
    }
    std::printf("\n");
  }
  return 0;
}
