// checkpoint_compare A B: compares two checkpoint files variable by variable (the engine's own
// reader) and prints one JSON line: the largest absolute difference, the largest |value| of A,
// their ratio, whether every tensor and state record is bit-identical, and whether the global
// steps and the records (input position, random streams) agree. Exit 0 unless a file cannot be
// read or their variables differ in name or shape (exit 1).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "trainingd/engine/io/checkpoint.h"

namespace eng = trainingd::engine;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: checkpoint_compare A B\n");
    return 2;
  }
  auto a = eng::ReadCheckpointFile(argv[1]);
  auto b = eng::ReadCheckpointFile(argv[2]);
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "checkpoint_compare: %s\n",
                 (!a.ok() ? a.status() : b.status()).ToString().c_str());
    return 1;
  }
  if (a->tensors.size() != b->tensors.size()) {
    std::fprintf(stderr, "checkpoint_compare: %zu against %zu tensors\n", a->tensors.size(),
                 b->tensors.size());
    return 1;
  }
  double largest = 0, diff = 0;
  bool identical = a->states == b->states;
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    const auto& [name, x] = a->tensors[i];
    const auto& [other_name, y] = b->tensors[i];
    if (name != other_name || x.shape() != y.shape()) {
      std::fprintf(stderr, "checkpoint_compare: %s %s against %s %s\n", name.c_str(),
                   x.shape().ToString().c_str(), other_name.c_str(), y.shape().ToString().c_str());
      return 1;
    }
    identical = identical && std::memcmp(x.data(), y.data(), sizeof(float) * x.size()) == 0;
    for (int64_t k = 0; k < x.size(); ++k) {
      largest = std::max(largest, static_cast<double>(std::fabs(x[k])));
      diff = std::max(diff, static_cast<double>(std::fabs(x[k] - y[k])));
    }
  }
  std::printf(
      "{\"max_abs_diff\": %.9g, \"largest\": %.9g, \"relative\": %.9g, \"identical\": %s, "
      "\"steps\": [%lld, %lld], \"states_equal\": %s}\n",
      diff, largest, largest > 0 ? diff / largest : diff, identical ? "true" : "false",
      static_cast<long long>(a->global_step), static_cast<long long>(b->global_step),
      a->states == b->states ? "true" : "false");
  return 0;
}
