// allreduce_bench: the data-parallel step's reduction, measured (docs/benchmarks.md).
//
//   mpirun -np 2 ... build/bench/allreduce_bench [--model cnn] [--reps 50]
//
// Rank 0 prints, for the model's flat buffer of exact gradient sums (64-bit integers,
// gradient_blocks.h), the median and spread of the step's collectives at batch 50
// (without their arithmetic: for each large dense layer an allgather of its inputs and of its
// output's columns in the forward pass, of its output gradients and of its input gradient's
// columns in the backward pass, and after the update one of its float kernel's rows in
// Trainer::ShareUpdatedParts; an int64 reduce-scatter of the other parameters' sums and an
// allgather of their float values) and of a plain
// int64 AllreduceSum of every sum; the same for an allreduce of the float gradient buffer (what the
// step did before the sums were exact); and the memory-bandwidth bound on one machine: every rank
// must at least read its own buffer and the others' and write its result, timed here as one
// memcpy-like pass (read + write) of the buffer per rank, with all ranks copying at once.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainingd/engine/mpi/mpi_communicator.h"
#include "trainingd/engine/nn/dense_layer.h"
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
  std::span<int64_t> sums = (*model)->flat_gradient_sums();
  std::span<float> grads = (*model)->flat_gradients();
  for (size_t i = 0; i < sums.size(); ++i) {
    sums[i] = static_cast<int64_t>(i % 97) << 40;
    grads[i] = 1e-3f * static_cast<float>(i % 97);
  }
  // Times `reduce` and one copy of `buffer` (both ranks at once), warm-up excluded.
  auto measure = [&](auto buffer, auto reduce, std::vector<double>& times,
                     std::vector<double>& copies) -> bool {
    std::vector<std::byte> scratch(buffer.size_bytes());
    for (int r = 0; r < reps + 5; ++r) {
      (void)(*comm)->Barrier();
      auto t0 = Clock::now();
      eng::Status st = reduce();
      const double t = Seconds(t0);
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        return false;
      }
      (void)(*comm)->Barrier();
      t0 = Clock::now();
      std::memcpy(scratch.data(), buffer.data(), buffer.size_bytes());
      const double c = Seconds(t0);
      if (r >= 5) {
        times.push_back(t);
        copies.push_back(c);
      }
    }
    return true;
  };
  // The step's collectives (DenseLayer's Forward and Backward, Trainer::ReduceGradients).
  constexpr int64_t kBatch = 50;
  const std::vector<eng::DenseLayer*> gathered = (*model)->MarkGatheredDenseLayers(kBatch);
  int64_t reduced = static_cast<int64_t>(sums.size());
  for (eng::DenseLayer* layer : gathered) reduced -= layer->in() * layer->units() + layer->units();
  std::vector<int64_t> reduced_sums(static_cast<size_t>(reduced), int64_t{1} << 40);
  std::vector<float> reduced_values(static_cast<size_t>(reduced), 1.0f);
  std::vector<float> rows;
  // The ranks' ShardOf parts of `n` elements.
  const auto parts = [&](size_t n) {
    std::vector<int64_t> bounds;
    for (int r = 0; r < (*comm)->size(); ++r)
      bounds.push_back(eng::ShardOf(static_cast<int64_t>(n), r, (*comm)->size()).begin);
    bounds.push_back(static_cast<int64_t>(n));
    return bounds;
  };
  // Every rank's part of `data` to every rank.
  const auto allgather = [&](std::span<float> data) {
    return (*comm)->AllgatherParts(data, parts(data.size()));
  };
  const auto step_reduction = [&] {
    for (eng::DenseLayer* layer : gathered) {
      // Forward: the inputs' rows, the output's columns; backward: the output gradients' rows,
      // the input gradient's columns.
      for (int64_t width : {layer->in(), layer->units(), layer->units(), layer->in()}) {
        rows.assign(static_cast<size_t>(kBatch * width), 1.0f);
        TRAININGD_RETURN_IF_ERROR(allgather(rows));
      }
    }
    TRAININGD_RETURN_IF_ERROR(
        (*comm)->ReduceScatterSum(std::span<int64_t>(reduced_sums), parts(reduced_sums.size())));
    // After the update: each rank's part of the other parameters, and the kernels' new rows.
    TRAININGD_RETURN_IF_ERROR(allgather(reduced_values));
    for (eng::DenseLayer* layer : gathered) {
      eng::Tensor& kernel = layer->parameters()[0]->value;
      TRAININGD_RETURN_IF_ERROR(
          allgather(std::span<float>(kernel.data(), static_cast<size_t>(kernel.size()))));
    }
    return eng::Status::Ok();
  };
  const auto int64_allreduce = [&] { return (*comm)->AllreduceSum(sums); };
  const auto float_allreduce = [&] { return (*comm)->AllreduceSum(grads); };
  std::vector<double> step_times, step_copies, sum_times, sum_copies, float_times, float_copies;
  if (!measure(sums, step_reduction, step_times, step_copies) ||
      !measure(sums, int64_allreduce, sum_times, sum_copies) ||
      !measure(grads, float_allreduce, float_times, float_copies)) {
    return 1;
  }
  if ((*comm)->is_chief()) {
    std::printf("model %s: %zu parameters (with padding), %d ranks, %d reps\n", model_name.c_str(),
                sums.size(), (*comm)->size(), reps);
    const auto report = [](const char* what, size_t bytes, const std::vector<double>& t,
                           const std::vector<double>& c) {
      const Stats s = Summarize(t), m = Summarize(c);
      const double mb = static_cast<double>(bytes) / 1e6;
      std::printf(
          "%s, %.2f MB: allreduce median %.3f ms (min %.3f, max %.3f); one copy median %.3f ms "
          "(min %.3f, max %.3f); allreduce / copy %.2f\n",
          what, mb, s.median * 1e3, s.min * 1e3, s.max * 1e3, m.median * 1e3, m.min * 1e3,
          m.max * 1e3, s.median / m.median);
    };
    report("the step's: dense rows and columns, the other parameters, allgather of kernels",
           sums.size_bytes(), step_times, step_copies);
    report("allreduce of the int64 sums", sums.size_bytes(), sum_times, sum_copies);
    report("float gradients", grads.size_bytes(), float_times, float_copies);
  }
  return 0;
}
