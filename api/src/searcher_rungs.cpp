// The searcher's rungs and brackets: what both the spec's validation (a bracket must get a
// trial) and the daemon's searcher (docs/experiments.md) work from.
#include <algorithm>
#include <cmath>
#include <vector>

#include "trainingd/api/experiment_service.h"

namespace trainingd::api {

std::vector<int64_t> RungSteps(const SearcherSpec& s, int bracket) {
  std::vector<int64_t> steps;
  if (s.name == SearcherSpec::Name::kAsha && s.min_steps > 0 && s.reduction_factor >= 2) {
    for (int64_t r = s.min_steps; r < s.max_steps; r *= s.reduction_factor) {
      steps.push_back(r);
      if (r > s.max_steps / s.reduction_factor) break;  // the next would pass max_steps
    }
  }
  steps.push_back(s.max_steps);
  const auto drop = std::min<size_t>(static_cast<size_t>(std::max(bracket, 0)), steps.size() - 1);
  steps.erase(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(drop));
  return steps;
}

std::vector<int64_t> BracketTrials(const SearcherSpec& s, int64_t trials) {
  const auto brackets = static_cast<int>(std::max<int64_t>(s.brackets, 1));
  const auto rungs = static_cast<int>(RungSteps(s).size());
  const auto eta = static_cast<double>(std::max<int64_t>(s.reduction_factor, 2));
  std::vector<double> weights;
  double sum = 0;
  for (int b = 0; b < brackets; ++b) {
    const int n = std::max(rungs - b, 1);
    weights.push_back(std::pow(eta, n - 1) / n);
    sum += weights.back();
  }
  std::vector<int64_t> counts;
  int64_t rest = trials;
  for (const double w : weights) {
    counts.push_back(static_cast<int64_t>(std::floor(w * static_cast<double>(trials) / sum)));
    rest -= counts.back();
  }
  counts[0] += rest;
  return counts;
}

}  // namespace trainingd::api
