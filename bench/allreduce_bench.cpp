// allreduce_bench: the data-parallel step's reduction, measured (docs/benchmarks.md).
//
//   mpirun -np 2 ... build/bench/allreduce_bench [--model cnn] [--reps 50]
//
// Rank 0 prints: the model's flat gradient buffer (what one step reduces), the median and spread
// of MpiCommunicator::AllreduceSum over it, and the memory-bandwidth bound on one machine: every
// rank must at least read its own buffer and the others' and write its result, timed here as one
// memcpy-like pass (read + write) of the buffer per rank, with all ranks copying at once.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainingd/engine/mpi/mpi_communicator.h"
#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/nn/model_spec.h"

namespace eng = trainingd::engine;
using Clock = std::chrono::steady_clock;

namespace {
double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Stats {
  double median, min, max;
};
Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}
}  // namespace

int main(int argc, char** argv) {
  auto comm = eng::MpiCommunicator::Init(&argc, &argv);
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  std::string model_name = "cnn";
  int reps = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--model") model_name = argv[i + 1];
    if (std::string(argv[i]) == "--reps") reps = std::stoi(argv[i + 1]);
  }
  auto spec = eng::PresetModel(model_name);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().ToString().c_str());
    return 2;
  }
  auto model = eng::Model::Build(*spec, eng::Shape{28, 28, 1}, 10, 1);
  std::span<float> grads = (*model)->flat_gradients();
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 1e-3f * static_cast<float>(i % 97);
  const double mb = static_cast<double>(grads.size_bytes()) / 1e6;

  std::vector<double> reduce, copy;
  std::vector<float> scratch(grads.size());
  for (int r = 0; r < reps + 5; ++r) {
    (void)(*comm)->Barrier();
    auto t0 = Clock::now();
    eng::Status st = (*comm)->AllreduceSum(grads);
    const double t = Seconds(t0);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
    (void)(*comm)->Barrier();
    t0 = Clock::now();
    std::memcpy(scratch.data(), grads.data(), grads.size_bytes());
    const double c = Seconds(t0);
    if (r >= 5) {  // warm-up excluded
      reduce.push_back(t);
      copy.push_back(c);
    }
  }
  const Stats s = Summarize(reduce), m = Summarize(copy);
  if ((*comm)->is_chief()) {
    std::printf(
        "model %s: gradient buffer %.2f MB (%zu floats), %d ranks, %d reps\n"
        "allreduce: median %.3f ms (min %.3f, max %.3f), %.2f GB/s of buffer per rank\n"
        "one copy of the buffer (read + write) with every rank copying: median %.3f ms "
        "(min %.3f, max %.3f)\n"
        "allreduce / copy: %.2f\n",
        model_name.c_str(), mb, grads.size(), (*comm)->size(), reps, s.median * 1e3, s.min * 1e3,
        s.max * 1e3, mb / 1e3 / s.median, m.median * 1e3, m.min * 1e3, m.max * 1e3,
        s.median / m.median);
  }
  return 0;
}
