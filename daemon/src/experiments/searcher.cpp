#include "trainingd/daemon/experiments/searcher.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "trainingd/engine/base/random.h"

namespace trainingd::daemon {
namespace {

using api::ParamRange;
using api::ParamType;

constexpr int kFirstTrialsShown = 5;

// Random streams of a search: one per trial for its hyperparameters, one per trial for its seed.
constexpr uint64_t kHyperparameterStream = 0x6870;  // "hp"
constexpr uint64_t kSeedStream = 0x7365;            // "se"

// Uniform in [0, 1) with 53 random bits.
double Uniform(engine::Rng& rng) {
  return static_cast<double>(rng.Next() >> 11) * (1.0 / 9007199254740992.0);
}

// A real value as the spec gets it: 6 significant digits, so the job's float and the number
// shown agree and the text is short ("0.00123457").
std::string RealText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string IntText(int64_t v) { return std::to_string(v); }

// The grid points of one parameter, as JSON texts.
std::vector<std::string> GridPoints(const ParamRange& p) {
  std::vector<std::string> points;
  switch (p.type) {
    case ParamType::kCategorical:
      return p.values;
    case ParamType::kInt: {
      const auto lo = static_cast<int64_t>(p.min), hi = static_cast<int64_t>(p.max);
      if (p.count <= 0 || p.count > hi - lo) {
        for (int64_t v = lo; v <= hi; ++v) points.push_back(IntText(v));
        return points;
      }
      int64_t last = std::numeric_limits<int64_t>::min();
      for (int64_t i = 0; i < p.count; ++i) {
        const double t =
            p.count == 1 ? 0 : static_cast<double>(i) / static_cast<double>(p.count - 1);
        const auto v = static_cast<int64_t>(std::llround(static_cast<double>(lo) + t * (hi - lo)));
        if (v != last) points.push_back(IntText(v));
        last = v;
      }
      return points;
    }
    case ParamType::kDouble:
    case ParamType::kLog: {
      const int64_t n = std::max<int64_t>(p.count, 1);
      for (int64_t i = 0; i < n; ++i) {
        const double t = n == 1 ? 0 : static_cast<double>(i) / static_cast<double>(n - 1);
        const double v = p.type == ParamType::kLog
                             ? std::exp(std::log(p.min) + t * (std::log(p.max) - std::log(p.min)))
                             : p.min + t * (p.max - p.min);
        points.push_back(RealText(v));
      }
      return points;
    }
  }
  return points;
}

// The number of grid points of one parameter without listing them (ints may have many).
int64_t GridPointCount(const ParamRange& p) {
  if (p.type == ParamType::kInt) {
    const double span = p.max - p.min;
    if (p.count <= 0 || static_cast<double>(p.count) > span) return static_cast<int64_t>(span) + 1;
    return static_cast<int64_t>(GridPoints(p).size());
  }
  return p.type == ParamType::kCategorical ? static_cast<int64_t>(p.values.size())
                                           : std::max<int64_t>(p.count, 1);
}

std::string SampleValue(const ParamRange& p, engine::Rng& rng) {
  switch (p.type) {
    case ParamType::kCategorical:
      return p.values[rng.UniformInt(p.values.size())];
    case ParamType::kInt: {
      const auto lo = static_cast<int64_t>(p.min), hi = static_cast<int64_t>(p.max);
      return IntText(lo + static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(hi - lo) + 1)));
    }
    case ParamType::kDouble:
      return RealText(p.min + Uniform(rng) * (p.max - p.min));
    case ParamType::kLog:
      return RealText(
          std::exp(std::log(p.min) + Uniform(rng) * (std::log(p.max) - std::log(p.min))));
  }
  return "null";
}

// Trial `index` of a grid: its point in mixed radix, the last parameter varying fastest.
api::Hyperparameters GridTrial(const std::vector<ParamRange>& space, int64_t index) {
  api::Hyperparameters hp(space.size());
  for (size_t i = space.size(); i-- > 0;) {
    const std::vector<std::string> points = GridPoints(space[i]);
    const auto n = static_cast<int64_t>(points.size());
    hp[i] = {space[i].path, points[static_cast<size_t>(index % n)]};
    index /= n;
  }
  return hp;
}

// A trial's results at `rung`, best first (ties by index); dropped trials are out of the rungs.
std::vector<const TrialProgress*> Ranked(const std::vector<TrialProgress>& trials, int rung,
                                         bool maximize) {
  std::vector<const TrialProgress*> ranked;
  for (const TrialProgress& t : trials) {
    if (!t.dropped && static_cast<int>(t.rung_metrics.size()) > rung) ranked.push_back(&t);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto* a, const auto* b) {
    return BetterMetric(a->rung_metrics[rung], b->rung_metrics[rung], maximize);
  });
  return ranked;
}

}  // namespace

bool BetterMetric(double a, double b, bool maximize) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return maximize ? a > b : a < b;
}

std::vector<int64_t> RungSteps(const api::SearcherSpec& s) {
  std::vector<int64_t> steps;
  if (s.name == api::SearcherSpec::Name::kAsha && s.min_steps > 0 && s.reduction_factor >= 2) {
    for (int64_t r = s.min_steps; r < s.max_steps; r *= s.reduction_factor) {
      steps.push_back(r);
      if (r > s.max_steps / s.reduction_factor) break;  // the next would pass max_steps
    }
  }
  steps.push_back(s.max_steps);
  return steps;
}

int64_t GridSize(const std::vector<ParamRange>& space) {
  int64_t size = 1;
  for (const ParamRange& p : space) {
    const int64_t n = GridPointCount(p);
    if (n > 0 && size > (api::kMaxTrials + 1) / n) return api::kMaxTrials + 1;
    size *= n;
  }
  return std::min(size, api::kMaxTrials + 1);
}

int64_t TrialCount(const api::ExperimentSpec& spec) {
  if (spec.searcher.name != api::SearcherSpec::Name::kGrid) return spec.searcher.max_trials;
  return std::min(spec.searcher.max_trials, GridSize(spec.space));
}

api::ExperimentPlan PlanExperiment(const api::ExperimentSpec& spec) {
  api::ExperimentPlan plan;
  plan.trials = TrialCount(spec);
  if (spec.searcher.name == api::SearcherSpec::Name::kGrid) plan.grid_size = GridSize(spec.space);
  const std::vector<int64_t> steps = RungSteps(spec.searcher);
  int64_t holds = plan.trials, previous = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    api::RungInfo rung;
    rung.index = static_cast<int>(k);
    rung.steps = steps[k];
    rung.max_trials = holds;
    plan.max_total_steps += holds * (steps[k] - previous);
    plan.rungs.push_back(rung);
    previous = steps[k];
    holds /= std::max<int64_t>(spec.searcher.reduction_factor, 1);
  }
  if (spec.budget_max_steps > 0) {
    plan.max_total_steps = std::min(plan.max_total_steps, spec.budget_max_steps);
  }
  for (int64_t i = 0; i < std::min<int64_t>(plan.trials, kFirstTrialsShown); ++i) {
    plan.first_trials.push_back(TrialHyperparameters(spec, i));
  }
  return plan;
}

api::Hyperparameters TrialHyperparameters(const api::ExperimentSpec& spec, int64_t index) {
  if (spec.searcher.name == api::SearcherSpec::Name::kGrid) return GridTrial(spec.space, index);
  engine::Rng rng = engine::Rng::ForStream(spec.searcher.seed ^ kHyperparameterStream,
                                           static_cast<uint64_t>(index));
  api::Hyperparameters hp;
  for (const ParamRange& p : spec.space) hp.emplace_back(p.path, SampleValue(p, rng));
  return hp;
}

uint64_t TrialSeed(uint64_t searcher_seed, int64_t index) {
  engine::Rng rng =
      engine::Rng::ForStream(searcher_seed ^ kSeedStream, static_cast<uint64_t>(index));
  return rng.Next() >> 33;  // 31 bits: short to read, plenty apart
}

SearchAction NextSearchAction(const api::ExperimentSpec& spec,
                              const std::vector<TrialProgress>& trials) {
  const std::vector<int64_t> steps = RungSteps(spec.searcher);
  const int64_t eta = std::max<int64_t>(spec.searcher.reduction_factor, 2);
  for (int k = static_cast<int>(steps.size()) - 2; k >= 0; --k) {
    const auto ranked = Ranked(trials, k, spec.searcher.maximize);
    const auto quota = static_cast<size_t>(static_cast<int64_t>(ranked.size()) / eta);
    for (size_t i = 0; i < quota && i < ranked.size(); ++i) {
      const TrialProgress& t = *ranked[i];
      const bool waiting_here = !t.active && static_cast<int>(t.rung_metrics.size()) == k + 1;
      if (waiting_here) return {SearchAction::Kind::kPromote, t.index, k + 1};
    }
  }
  if (static_cast<int64_t>(trials.size()) < TrialCount(spec)) {
    return {SearchAction::Kind::kStart, static_cast<int64_t>(trials.size()), 0};
  }
  return {};
}

bool CanStillBePromoted(const api::ExperimentSpec& spec, const std::vector<TrialProgress>& trials,
                        int64_t index, int64_t steps_left) {
  const TrialProgress* me = nullptr;
  for (const TrialProgress& t : trials) {
    if (t.index == index) me = &t;
  }
  if (me == nullptr || me->dropped || me->rung_metrics.empty()) return false;
  const int k = static_cast<int>(me->rung_metrics.size()) - 1;
  const std::vector<int64_t> rungs = RungSteps(spec.searcher);
  if (k + 1 >= static_cast<int>(rungs.size())) return false;  // the last rung
  const auto ranked = Ranked(trials, k, spec.searcher.maximize);
  int64_t to_start = std::max<int64_t>(0, TrialCount(spec) - static_cast<int64_t>(trials.size()));
  if (steps_left >= 0) to_start = std::min(to_start, steps_left / std::max<int64_t>(rungs[0], 1));
  int64_t most = static_cast<int64_t>(ranked.size()) + to_start;
  for (const TrialProgress& t : trials) {
    if (!t.dropped && !t.pruned && static_cast<int>(t.rung_metrics.size()) <= k) ++most;
  }
  int64_t better = 0;
  for (const TrialProgress* t : ranked) {
    if (t == me) break;
    ++better;
  }
  return better < most / std::max<int64_t>(spec.searcher.reduction_factor, 2);
}

std::optional<double> RungCut(const api::ExperimentSpec& spec,
                              const std::vector<TrialProgress>& trials, int rung) {
  const auto ranked = Ranked(trials, rung, spec.searcher.maximize);
  const auto quota = static_cast<size_t>(static_cast<int64_t>(ranked.size()) /
                                         std::max<int64_t>(spec.searcher.reduction_factor, 2));
  if (quota == 0) return std::nullopt;
  return ranked[quota - 1]->rung_metrics[static_cast<size_t>(rung)];
}

}  // namespace trainingd::daemon
