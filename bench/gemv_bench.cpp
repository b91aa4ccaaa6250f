// gemv_bench: one example through a dense layer, y [1 x n] = x [1 x k] * W [k x n] (W row-major
// [in, units], as the engine stores a dense kernel), by four products: the engine's Gemm on W as
// it is, the engine's GemmPackedB on W packed once (gemm.h's PackB, as TrainedModel does),
// OpenBLAS's sgemv (Debian's OpenMP build) and Eigen's (single-threaded: the engine builds Eigen
// with EIGEN_DONT_PARALLELIZE). Each measurement is rounds of A B C D in turn; prints each one's
// median and [min-max] GFLOP/s over the rounds, and the bytes of W read per second at the median.
// Usage: gemv_bench [k n threads rounds seconds], default 3136 1024 2 7 0.2
#include <cblas.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "nn/gemm.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/nn/tensor.h"

namespace {

template <typename Fn>
double CallsPerSecond(double seconds, Fn&& fn) {
  fn();
  int reps = 0;
  double elapsed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    fn();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < seconds);
  return reps / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  namespace in = trainingd::engine::internal;
  const int64_t k = argc > 1 ? std::atoll(argv[1]) : 3136;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 1024;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 7;
  const double seconds = argc > 5 ? std::atof(argv[5]) : 0.2;
  trainingd::engine::SetComputeThreads(threads);
  openblas_set_num_threads(threads);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(k)), w(static_cast<size_t>(k * n));
  for (float& v : x) v = normal(rng);
  for (float& v : w) v = normal(rng);
  std::vector<float, trainingd::engine::Align64Allocator<float>> packed(
      static_cast<size_t>(in::PackedBFloats(k, n)));
  in::PackB(k, n, w.data(), n, packed.data());
  std::vector<float> y0(static_cast<size_t>(n)), y1(y0), y2(y0), y3(y0);
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> we(w.data(), k, n);
  const Eigen::Map<const Eigen::RowVectorXf> xe(x.data(), k);
  Eigen::Map<Eigen::RowVectorXf> ye(y3.data(), n);
  const char* names[] = {"engine Gemm, W as is", "engine GemmPackedB, W packed", "OpenBLAS sgemv",
                         "Eigen (1 thread)"};
  std::vector<double> rates[4];
  for (int r = 0; r < rounds; ++r) {
    rates[0].push_back(CallsPerSecond(
        seconds, [&] { in::Gemm(false, false, 1, n, k, x.data(), k, w.data(), n, y0.data(), n); }));
    rates[1].push_back(CallsPerSecond(
        seconds, [&] { in::GemmPackedB(1, n, k, x.data(), k, packed.data(), y1.data(), n); }));
    rates[2].push_back(CallsPerSecond(seconds, [&] {
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(k), static_cast<int>(n), 1.0f,
                  w.data(), static_cast<int>(n), x.data(), 1, 0.0f, y2.data(), 1);
    }));
    rates[3].push_back(CallsPerSecond(seconds, [&] { ye.noalias() = xe * we; }));
  }
  const bool same = std::memcmp(y0.data(), y1.data(), y0.size() * sizeof(float)) == 0;
  std::printf(
      "[1x%lld] x [%lldx%lld], %d threads (Eigen 1), %d rounds of %.2f s; engine %s, "
      "packed == as is bit for bit: %s\n",
      static_cast<long long>(k), static_cast<long long>(k), static_cast<long long>(n), threads,
      rounds, seconds, in::GemmKernels(), same ? "yes" : "NO");
  for (int i = 0; i < 4; ++i) {
    std::vector<double> v = rates[i];
    std::sort(v.begin(), v.end());
    const double f = 2.0 * static_cast<double>(k * n) * 1e-9;
    std::printf("%-30s %7.2f GFLOP/s [%.2f-%.2f]  %6.1f us/call  %5.1f GB/s of W\n", names[i],
                f * v[v.size() / 2], f * v.front(), f * v.back(), 1e6 / v[v.size() / 2],
                4.0 * static_cast<double>(k * n) * v[v.size() / 2] * 1e-9);
  }
  return same ? 0 : 1;
}
