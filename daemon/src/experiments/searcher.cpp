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

// The results at `rung` of `bracket`, best first (ties by index); dropped trials are out of the
// rungs.
std::vector<const TrialProgress*> Ranked(const std::vector<TrialProgress>& trials, int bracket,
                                         int rung, bool maximize) {
  std::vector<const TrialProgress*> ranked;
  for (const TrialProgress& t : trials) {
    if (t.bracket == bracket && !t.dropped && static_cast<int>(t.rung_metrics.size()) > rung) {
      ranked.push_back(&t);
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto* a, const auto* b) {
    return BetterMetric(a->rung_metrics[rung], b->rung_metrics[rung], maximize);
  });
  return ranked;
}

int Brackets(const api::SearcherSpec& s) {
  return s.name == api::SearcherSpec::Name::kAsha
             ? static_cast<int>(std::max<int64_t>(s.brackets, 1))
             : 1;
}

// Bracket b's trials are the indices r (counted among those no later bracket took) where
// floor((r * n_b + h) / rest) steps up, h = rest / 2: n_b of the rest, evenly spaced and
// centred. Brackets B-1 down to 1 choose in turn; bracket 0 has what is left, trial 0 among it.
struct BracketSpread {
  std::vector<int64_t> trials;  // per bracket
  int64_t total = 0;
};

BracketSpread SpreadOf(const api::ExperimentSpec& spec) {
  BracketSpread s;
  s.total = TrialCount(spec);
  s.trials = api::BracketTrials(spec.searcher, s.total);
  return s;
}

// floor((r * n + rest / 2) / rest): bracket-with-n positions among the first r of `rest`.
int64_t Taken(int64_t r, int64_t n, int64_t rest) {
  return rest <= 0 ? 0 : (r * n + rest / 2) / rest;
}

}  // namespace

std::vector<std::vector<int64_t>> BracketRungSteps(const api::SearcherSpec& searcher) {
  std::vector<std::vector<int64_t>> out;
  for (int b = 0; b < Brackets(searcher); ++b) out.push_back(api::RungSteps(searcher, b));
  return out;
}

int TrialBracket(const api::ExperimentSpec& spec, int64_t index) {
  if (Brackets(spec.searcher) == 1) return 0;
  const BracketSpread s = SpreadOf(spec);
  int64_t rank = index, rest = s.total;
  for (int b = static_cast<int>(s.trials.size()) - 1; b >= 1; --b) {
    const int64_t n = s.trials[static_cast<size_t>(b)];
    const int64_t before = Taken(rank, n, rest), through = Taken(rank + 1, n, rest);
    if (through > before) return b;
    rank -= before;
    rest -= n;
  }
  return 0;
}

int64_t TrialsInBracket(const api::ExperimentSpec& spec, int bracket, int64_t begin, int64_t end) {
  if (end <= begin) return 0;
  if (Brackets(spec.searcher) == 1) return bracket == 0 ? end - begin : 0;
  const BracketSpread s = SpreadOf(spec);
  // In [0, len) for len = begin and end.
  const auto before = [&](int64_t len) {
    int64_t rest = s.total;
    for (int b = static_cast<int>(s.trials.size()) - 1; b >= 1; --b) {
      const int64_t n = s.trials[static_cast<size_t>(b)];
      const int64_t here = Taken(len, n, rest);
      if (b == bracket) return here;
      len -= here;
      rest -= n;
    }
    return len;
  };
  return before(end) - before(begin);
}

bool BetterMetric(double a, double b, bool maximize) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return maximize ? a > b : a < b;
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
  const std::vector<std::vector<int64_t>> brackets = BracketRungSteps(spec.searcher);
  const std::vector<int64_t> bracket_trials = api::BracketTrials(spec.searcher, plan.trials);
  for (size_t b = 0; b < brackets.size(); ++b) {
    const std::vector<int64_t>& steps = brackets[b];
    int64_t holds = bracket_trials[b], previous = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
      api::RungInfo rung;
      rung.bracket = static_cast<int>(b);
      rung.index = static_cast<int>(k);
      rung.steps = steps[k];
      rung.max_trials = holds;
      plan.max_total_steps += holds * (steps[k] - previous);
      plan.rungs.push_back(rung);
      previous = steps[k];
      holds /= std::max<int64_t>(spec.searcher.reduction_factor, 1);
    }
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
  if (spec.searcher.name == api::SearcherSpec::Name::kCrossValidation) {
    return {{"dataset.fold", std::to_string(index)}};
  }
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

api::CrossValidationInfo CrossValidationResult(const api::SearcherSpec& searcher,
                                               std::vector<std::optional<double>> fold_metrics) {
  api::CrossValidationInfo cv;
  cv.folds = searcher.folds;
  cv.stratified = searcher.stratified;
  fold_metrics.resize(static_cast<size_t>(std::max<int64_t>(searcher.folds, 0)));
  cv.fold_metrics = std::move(fold_metrics);
  double sum = 0;
  for (const auto& m : cv.fold_metrics) {
    if (!m) continue;
    ++cv.folds_done;
    sum += *m;
  }
  if (cv.folds_done == 0) return cv;
  const double mean = sum / static_cast<double>(cv.folds_done);
  cv.mean = mean;
  if (cv.folds_done < 2) return cv;
  double squares = 0;
  for (const auto& m : cv.fold_metrics) {
    if (m) squares += (*m - mean) * (*m - mean);
  }
  cv.std = std::sqrt(squares / static_cast<double>(cv.folds_done - 1));
  return cv;
}

uint64_t TrialSeed(const api::ExperimentSpec& spec, int64_t index) {
  if (spec.searcher.name == api::SearcherSpec::Name::kCrossValidation) return spec.base_job.seed;
  return TrialSeed(spec.searcher.seed, index);
}

SearchAction NextSearchAction(const api::ExperimentSpec& spec,
                              const std::vector<TrialProgress>& trials) {
  const int64_t eta = std::max<int64_t>(spec.searcher.reduction_factor, 2);
  const std::vector<std::vector<int64_t>> brackets = BracketRungSteps(spec.searcher);
  for (int b = 0; b < static_cast<int>(brackets.size()); ++b) {
    for (int k = static_cast<int>(brackets[static_cast<size_t>(b)].size()) - 2; k >= 0; --k) {
      const auto ranked = Ranked(trials, b, k, spec.searcher.maximize);
      const auto quota = static_cast<size_t>(static_cast<int64_t>(ranked.size()) / eta);
      for (size_t i = 0; i < quota && i < ranked.size(); ++i) {
        const TrialProgress& t = *ranked[i];
        const bool waiting_here = !t.active && static_cast<int>(t.rung_metrics.size()) == k + 1;
        if (waiting_here) return {SearchAction::Kind::kPromote, t.index, k + 1};
      }
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
  const std::vector<int64_t> rungs = api::RungSteps(spec.searcher, me->bracket);
  if (k + 1 >= static_cast<int>(rungs.size())) return false;  // the last rung
  const auto ranked = Ranked(trials, me->bracket, k, spec.searcher.maximize);
  int64_t to_start =
      TrialsInBracket(spec, me->bracket, static_cast<int64_t>(trials.size()), TrialCount(spec));
  if (steps_left >= 0) to_start = std::min(to_start, steps_left / std::max<int64_t>(rungs[0], 1));
  int64_t most = static_cast<int64_t>(ranked.size()) + to_start;
  for (const TrialProgress& t : trials) {
    if (t.bracket == me->bracket && !t.dropped && !t.pruned &&
        static_cast<int>(t.rung_metrics.size()) <= k) {
      ++most;
    }
  }
  int64_t better = 0;
  for (const TrialProgress* t : ranked) {
    if (t == me) break;
    ++better;
  }
  return better < most / std::max<int64_t>(spec.searcher.reduction_factor, 2);
}

std::optional<double> RungCut(const api::ExperimentSpec& spec,
                              const std::vector<TrialProgress>& trials, int bracket, int rung) {
  const auto ranked = Ranked(trials, bracket, rung, spec.searcher.maximize);
  const auto quota = static_cast<size_t>(static_cast<int64_t>(ranked.size()) /
                                         std::max<int64_t>(spec.searcher.reduction_factor, 2));
  if (quota == 0) return std::nullopt;
  return ranked[quota - 1]->rung_metrics[static_cast<size_t>(rung)];
}

}  // namespace trainingd::daemon
