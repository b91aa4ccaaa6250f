// One dataset in two formats, loaded the way a job loads it (engine::LoadDataset), alternating
// A B A B: Fashion-MNIST's IDX directory against the same arrays in an .npz file
// (docs/benchmarks.md#datasets).
//
//   dataset_load_bench IDX_DIR NPZ_FILE [--rounds N]
//
// Prints each load's wall time and peak-to-date RSS, then the medians [min-max] per format.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "trainingd/engine/data/dataset.h"

namespace eng = trainingd::engine;

namespace {

long RssKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dataset_load_bench IDX_DIR NPZ_FILE [--rounds N]\n");
    return 2;
  }
  int rounds = 5;
  if (argc == 5 && std::strcmp(argv[3], "--rounds") == 0) rounds = std::atoi(argv[4]);
  eng::DatasetSource idx, npz;
  idx.path = argv[1];
  npz.format = eng::DatasetSource::Format::kNpz;
  npz.path = argv[2];
  eng::DatasetOptions options;  // validation_size 5000 for both: the same splits
  std::vector<double> times[2];
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int which = (r % 2 == 0) ? k : 1 - k;  // A B, then B A
      const eng::DatasetSource& source = which == 0 ? idx : npz;
      const auto start = std::chrono::steady_clock::now();
      auto data = eng::LoadDataset(source, options);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!data.ok()) {
        std::fprintf(stderr, "%s: %s\n", source.path.c_str(), data.status().ToString().c_str());
        return 1;
      }
      times[which].push_back(secs);
      std::printf("round %d %s: %.3f s (%lld train, %lld test examples; peak RSS so far %.0f MB)\n",
                  r + 1, which == 0 ? "idx" : "npz", secs,
                  static_cast<long long>(data->train.size()),
                  static_cast<long long>(data->test.size()), RssKb("VmHWM:") / 1024.0);
    }
  }
  for (int which = 0; which < 2; ++which) {
    const auto [lo, hi] = std::minmax_element(times[which].begin(), times[which].end());
    std::printf("%s: median %.3f s [%.3f-%.3f] over %d loads\n", which == 0 ? "idx" : "npz",
                Median(times[which]), *lo, *hi, rounds);
  }
  return 0;
}
