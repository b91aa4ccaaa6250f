// The searchers (searcher.h): rungs, plans, trial hyperparameters, and ASHA's decisions, checked
// against a simulation of a whole search with made-up metrics.
#include "trainingd/daemon/experiments/searcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace trainingd::daemon {
namespace {

using api::ParamRange;
using api::ParamType;
using api::SearcherSpec;

api::ExperimentSpec Asha(int64_t max_trials, int64_t min_steps, int64_t max_steps, int64_t eta) {
  api::ExperimentSpec spec;
  spec.name = "x";
  spec.searcher.name = SearcherSpec::Name::kAsha;
  spec.searcher.max_trials = max_trials;
  spec.searcher.min_steps = min_steps;
  spec.searcher.max_steps = max_steps;
  spec.searcher.reduction_factor = eta;
  spec.searcher.seed = 7;
  ParamRange lr;
  lr.path = "optimizer.learning_rate";
  lr.type = ParamType::kLog;
  lr.min = 1e-4;
  lr.max = 1e-1;
  spec.space.push_back(lr);
  return spec;
}

TEST(SearcherTest, RungsGrowByTheReductionFactorUpToMaxSteps) {
  EXPECT_EQ(RungSteps(Asha(16, 100, 1600, 4).searcher), (std::vector<int64_t>{100, 400, 1600}));
  EXPECT_EQ(RungSteps(Asha(16, 100, 1000, 4).searcher), (std::vector<int64_t>{100, 400, 1000}));
  EXPECT_EQ(RungSteps(Asha(16, 100, 1700, 4).searcher),
            (std::vector<int64_t>{100, 400, 1600, 1700}));
  EXPECT_EQ(RungSteps(Asha(16, 10, 80, 2).searcher), (std::vector<int64_t>{10, 20, 40, 80}));
  api::SearcherSpec random = Asha(16, 100, 1600, 4).searcher;
  random.name = SearcherSpec::Name::kRandom;
  EXPECT_EQ(RungSteps(random), (std::vector<int64_t>{1600}));
  // No overflow near the top of int64.
  api::SearcherSpec huge = Asha(4, 1, std::numeric_limits<int64_t>::max(), 1 << 20).searcher;
  const auto steps = RungSteps(huge);
  EXPECT_EQ(steps.back(), std::numeric_limits<int64_t>::max());
  for (size_t i = 1; i < steps.size(); ++i) EXPECT_GT(steps[i], steps[i - 1]);
}

TEST(SearcherTest, ThePlanCountsTrialsPerRungAndStepsWithResumption) {
  const api::ExperimentPlan plan = PlanExperiment(Asha(16, 100, 1600, 4));
  ASSERT_EQ(plan.rungs.size(), 3u);
  EXPECT_EQ(plan.rungs[0].max_trials, 16);
  EXPECT_EQ(plan.rungs[1].max_trials, 4);
  EXPECT_EQ(plan.rungs[2].max_trials, 1);
  // 16 x 100 + 4 x (400 - 100) + 1 x (1600 - 400): promotions resume, they do not restart.
  EXPECT_EQ(plan.max_total_steps, 1600 + 1200 + 1200);
  EXPECT_EQ(plan.trials, 16);
  EXPECT_EQ(plan.first_trials.size(), 5u);

  api::ExperimentSpec capped = Asha(16, 100, 1600, 4);
  capped.budget_max_steps = 2500;
  EXPECT_EQ(PlanExperiment(capped).max_total_steps, 2500);
}

TEST(SearcherTest, TrialsDependOnTheSeedAndIndexAlone) {
  api::ExperimentSpec spec = Asha(100, 10, 160, 4);
  ParamRange batch;
  batch.path = "batch_size";
  batch.type = ParamType::kInt;
  batch.min = 16;
  batch.max = 128;
  spec.space.push_back(batch);
  ParamRange opt;
  opt.path = "optimizer.type";
  opt.type = ParamType::kCategorical;
  opt.values = {"\"adam\"", "\"sgd\""};
  spec.space.push_back(opt);
  std::set<std::string> seen_opt;
  std::set<uint64_t> seeds;
  for (int64_t i = 0; i < 100; ++i) {
    const api::Hyperparameters hp = TrialHyperparameters(spec, i);
    EXPECT_EQ(hp, TrialHyperparameters(spec, i));  // the same every time
    ASSERT_EQ(hp.size(), 3u);
    const double lr = std::stod(hp[0].second);
    EXPECT_GE(lr, 1e-4 * 0.999999);
    EXPECT_LE(lr, 1e-1 * 1.000001);
    const int64_t b = std::stoll(hp[1].second);
    EXPECT_GE(b, 16);
    EXPECT_LE(b, 128);
    seen_opt.insert(hp[2].second);
    seeds.insert(TrialSeed(spec.searcher.seed, i));
  }
  EXPECT_EQ(seen_opt.size(), 2u);
  EXPECT_EQ(seeds.size(), 100u);
  api::ExperimentSpec other = spec;
  other.searcher.seed = 8;
  EXPECT_NE(TrialHyperparameters(spec, 3), TrialHyperparameters(other, 3));
  EXPECT_NE(TrialSeed(7, 3), TrialSeed(8, 3));
  // A log range spreads over its decades: about a third of 100 samples below 1e-3.
  int below = 0;
  for (int64_t i = 0; i < 100; ++i)
    below += std::stod(TrialHyperparameters(spec, i)[0].second) < 1e-3;
  EXPECT_GT(below, 15);
  EXPECT_LT(below, 55);
}

TEST(SearcherTest, TheGridListsEveryPointWithTheLastPathFastest) {
  api::ExperimentSpec spec;
  spec.searcher.name = SearcherSpec::Name::kGrid;
  spec.searcher.max_trials = 100;
  spec.searcher.max_steps = 50;
  ParamRange lr;
  lr.path = "optimizer.learning_rate";
  lr.type = ParamType::kLog;
  lr.min = 1e-3;
  lr.max = 1e-1;
  lr.count = 3;
  ParamRange units;
  units.path = "model.layers[1].units";
  units.type = ParamType::kInt;
  units.min = 2;
  units.max = 4;
  spec.space = {lr, units};
  EXPECT_EQ(GridSize(spec.space), 9);
  EXPECT_EQ(TrialCount(spec), 9);
  std::vector<std::string> points;
  for (int64_t i = 0; i < 9; ++i) {
    const auto hp = TrialHyperparameters(spec, i);
    points.push_back(hp[0].second + "/" + hp[1].second);
  }
  EXPECT_EQ(points, (std::vector<std::string>{"0.001/2", "0.001/3", "0.001/4", "0.01/2", "0.01/3",
                                              "0.01/4", "0.1/2", "0.1/3", "0.1/4"}));
  spec.searcher.max_trials = 4;
  EXPECT_EQ(TrialCount(spec), 4);
  EXPECT_EQ(PlanExperiment(spec).grid_size, 9);
  // A grid too large to list saturates.
  units.max = 1e9;
  EXPECT_EQ(GridSize({units, units}), api::kMaxTrials + 1);
}

// A made-up search: trial i's metric at rung k is f(i) + k / 100, so the ranking at every rung
// is f's. Runs the searcher one trial at a time as the manager does, and returns the order of
// its actions.
struct Simulated {
  std::vector<SearchAction> actions;
  std::vector<TrialProgress> trials;
};

Simulated Simulate(const api::ExperimentSpec& spec, double (*f)(int64_t)) {
  Simulated s;
  for (int guard = 0; guard < 10000; ++guard) {
    const SearchAction a = NextSearchAction(spec, s.trials);
    if (a.kind == SearchAction::Kind::kNone) break;
    s.actions.push_back(a);
    if (a.kind == SearchAction::Kind::kStart) {
      TrialProgress t;
      t.index = a.trial;
      t.bracket = TrialBracket(spec, a.trial);
      s.trials.push_back(t);
    }
    TrialProgress& t = s.trials[static_cast<size_t>(a.trial)];
    t.rung_metrics.push_back(f(a.trial) + a.rung / 100.0);  // trained to the rung: its result
  }
  return s;
}

double Pseudo(int64_t i) { return std::fmod(static_cast<double>(i) * 0.6180339887, 1.0); }

TEST(SearcherTest, AshaPromotesTheTopOfEachRungAndEndsWithTheBest) {
  const api::ExperimentSpec spec = Asha(16, 10, 160, 4);  // rungs 10, 40, 160
  const Simulated s = Simulate(spec, Pseudo);
  std::map<int, int> reached;
  for (const TrialProgress& t : s.trials) {
    for (size_t k = 0; k < t.rung_metrics.size(); ++k) ++reached[static_cast<int>(k)];
  }
  // Every trial at rung 0; at least the top quarter at rung 1 (asynchronous promotion may add
  // a trial promoted before better ones came); the last rung holds at least one.
  EXPECT_EQ(reached[0], 16);
  EXPECT_GE(reached[1], 4);
  EXPECT_LE(reached[1], 8);
  EXPECT_GE(reached[2], 1);
  EXPECT_LE(reached[2], reached[1] / 2);
  // The one that reached the last rung is the best of all 16 at rung 0.
  int64_t best = 0;
  for (int64_t i = 1; i < 16; ++i) best = Pseudo(i) > Pseudo(best) ? i : best;
  EXPECT_EQ(s.trials[static_cast<size_t>(best)].rung_metrics.size(), 3u);
  // Replayed: every promotion took a trial in the top floor(n / 4) of its rung at that moment.
  std::vector<TrialProgress> replay;
  for (const SearchAction& a : s.actions) {
    if (a.kind == SearchAction::Kind::kStart) {
      TrialProgress t;
      t.index = a.trial;
      replay.push_back(t);
    } else {
      std::vector<double> rung;
      for (const TrialProgress& t : replay) {
        if (static_cast<int>(t.rung_metrics.size()) >= a.rung)
          rung.push_back(t.rung_metrics[a.rung - 1]);
      }
      std::sort(rung.rbegin(), rung.rend());
      const double mine = replay[static_cast<size_t>(a.trial)].rung_metrics.back();
      const auto rank = std::find(rung.begin(), rung.end(), mine) - rung.begin();
      EXPECT_LT(rank, static_cast<int64_t>(rung.size()) / 4) << "trial " << a.trial;
    }
    replay[static_cast<size_t>(a.trial)].rung_metrics.push_back(Pseudo(a.trial) + a.rung / 100.0);
  }
  // Deterministic.
  const Simulated again = Simulate(spec, Pseudo);
  ASSERT_EQ(again.actions.size(), s.actions.size());
  for (size_t i = 0; i < s.actions.size(); ++i) {
    EXPECT_EQ(again.actions[i].kind, s.actions[i].kind);
    EXPECT_EQ(again.actions[i].trial, s.actions[i].trial);
    EXPECT_EQ(again.actions[i].rung, s.actions[i].rung);
  }
}

TEST(SearcherTest, AshaPromotesAsSoonAsARungHasRoomAndMinimizes) {
  api::ExperimentSpec spec = Asha(8, 10, 40, 2);  // rungs 10, 20, 40
  spec.searcher.maximize = false;
  std::vector<TrialProgress> trials(2);
  trials[0].index = 0;
  trials[0].rung_metrics = {0.9};
  trials[1].index = 1;
  trials[1].rung_metrics = {0.3};
  // Two results at rung 0, eta 2: one slot, taken by the lower (minimizing) metric.
  SearchAction a = NextSearchAction(spec, trials);
  EXPECT_EQ(a.kind, SearchAction::Kind::kPromote);
  EXPECT_EQ(a.trial, 1);
  EXPECT_EQ(a.rung, 1);
  EXPECT_EQ(RungCut(spec, trials, 0, 0), 0.3);
  trials[1].active = true;  // promoted, training
  a = NextSearchAction(spec, trials);
  EXPECT_EQ(a.kind, SearchAction::Kind::kStart);
  EXPECT_EQ(a.trial, 2);
  // A dropped trial is out of the rungs: its slot goes to nobody until results come.
  trials[1].dropped = true;
  EXPECT_EQ(RungCut(spec, trials, 0, 0), std::nullopt);
}

TEST(SearcherTest, NanRanksLastAndTiesGoByIndex) {
  EXPECT_TRUE(BetterMetric(0.1, std::nan(""), true));
  EXPECT_TRUE(BetterMetric(0.1, std::nan(""), false));
  EXPECT_FALSE(BetterMetric(std::nan(""), 0.1, true));
  api::ExperimentSpec spec = Asha(8, 10, 40, 2);
  std::vector<TrialProgress> trials(4);
  for (int i = 0; i < 4; ++i) {
    trials[static_cast<size_t>(i)].index = i;
    trials[static_cast<size_t>(i)].rung_metrics = {i == 0 ? std::nan("") : 0.5};
  }
  // Two slots: trials 1 and 2 (tied, by index); the NaN one is never promoted.
  SearchAction a = NextSearchAction(spec, trials);
  EXPECT_EQ(a.trial, 1);
  trials[1].active = true;
  a = NextSearchAction(spec, trials);
  EXPECT_EQ(a.trial, 2);
}

TEST(SearcherTest, AWaitingTrialIsPrunedOnlyWhenItsRungCanNoLongerPromoteIt) {
  const api::ExperimentSpec spec = Asha(8, 10, 40, 2);  // rung 0 holds 8: 4 slots
  std::vector<TrialProgress> trials;
  for (int i = 0; i < 5; ++i) {
    TrialProgress t;
    t.index = i;
    t.rung_metrics = {0.1 * (i + 1)};  // trial 4 best, trial 0 worst
    trials.push_back(t);
  }
  // 5 results and 3 trials to come: rung 0 holds at most 8, 4 slots. Trial 0 has 4 better
  // results: never promoted. Trial 1 has 3 better: it may be, if 3 worse results come.
  EXPECT_FALSE(CanStillBePromoted(spec, trials, 0));
  EXPECT_TRUE(CanStillBePromoted(spec, trials, 1));
  // A budget that has room for one more trial at most: 5 + 1 = 6 results, 3 slots; trial 1
  // has 3 better.
  EXPECT_FALSE(CanStillBePromoted(spec, trials, 1, /*steps_left=*/10));
  EXPECT_TRUE(CanStillBePromoted(spec, trials, 1, /*steps_left=*/30));
  // A trial at rung 1 (of the 5): rung 1 holds it, and at most the 4 others that are not pruned
  // plus the 3 to come -- 8, 4 slots; with the 4 others pruned, 1 + 3 = 4, 2 slots.
  trials[2].rung_metrics = {0.3, 0.9};
  EXPECT_TRUE(CanStillBePromoted(spec, trials, 2));
  for (int i : {0, 1, 3, 4}) trials[static_cast<size_t>(i)].pruned = true;
  trials[0].rung_metrics = {0.1, 0.95};
  trials[0].pruned = false;                          // at rung 1 too, better than trial 2
  EXPECT_TRUE(CanStillBePromoted(spec, trials, 2));  // 2 results + 3 to come: 2 slots, 1 better
  trials[1].rung_metrics = {0.2, 0.99};  // another better one at rung 1: 3 + 3 = 6, 3 slots
  EXPECT_TRUE(CanStillBePromoted(spec, trials, 2));
  trials[3].rung_metrics = {0.4, 0.97};  // 4 + 3 = 7, 3 slots, 3 better
  EXPECT_FALSE(CanStillBePromoted(spec, trials, 2));
  // At the last rung nothing is promoted.
  trials[4].rung_metrics = {0.5, 0.6, 0.7};
  EXPECT_FALSE(CanStillBePromoted(spec, trials, 4));
}

// Brackets (Determined's adaptive ASHA): bracket b skips the first b rungs; the trials are
// shared out by eta^(rungs - 1) / rungs and spread evenly over the indices.
TEST(SearcherTest, BracketsSkipRungsAndShareTheTrials) {
  api::ExperimentSpec spec = Asha(16, 100, 1600, 4);  // rungs 100, 400, 1600
  spec.searcher.brackets = 3;
  EXPECT_EQ(RungSteps(spec.searcher, 1), (std::vector<int64_t>{400, 1600}));
  EXPECT_EQ(RungSteps(spec.searcher, 2), (std::vector<int64_t>{1600}));
  // Weights 16/3, 4/2, 1/1 of 16 trials: 10, 3, 1 rounded down, the 2 left to bracket 0.
  EXPECT_EQ(api::BracketTrials(spec.searcher, 16), (std::vector<int64_t>{12, 3, 1}));
  std::vector<int64_t> counted(3, 0);
  std::vector<int> bracket_of;
  for (int64_t i = 0; i < 16; ++i) {
    bracket_of.push_back(TrialBracket(spec, i));
    ++counted[static_cast<size_t>(bracket_of.back())];
  }
  EXPECT_EQ(counted, (std::vector<int64_t>{12, 3, 1}));
  EXPECT_EQ(bracket_of[0], 0);
  // The lone full-length trial sits mid-search, bracket 1's three apart from each other.
  EXPECT_EQ(std::find(bracket_of.begin(), bracket_of.end(), 2) - bracket_of.begin(), 7);
  std::vector<int64_t> ones;
  for (int64_t i = 0; i < 16; ++i) {
    if (bracket_of[static_cast<size_t>(i)] == 1) ones.push_back(i);
  }
  EXPECT_EQ(ones, (std::vector<int64_t>{2, 8, 13}));  // (docs/experiments.md#brackets)
  // TrialsInBracket counts what TrialBracket says, over every range.
  for (int b = 0; b < 3; ++b)
    for (int64_t begin = 0; begin <= 16; ++begin)
      for (int64_t end = begin; end <= 16; ++end) {
        const auto n = std::count(bracket_of.begin() + begin, bracket_of.begin() + end, b);
        ASSERT_EQ(TrialsInBracket(spec, b, begin, end), n) << b << " " << begin << " " << end;
      }
  // Many trials: each bracket's share, and the count matches at the end.
  spec.searcher.max_trials = 1000;
  const std::vector<int64_t> shares = api::BracketTrials(spec.searcher, 1000);
  for (int b = 0; b < 3; ++b) EXPECT_EQ(TrialsInBracket(spec, b, 0, 1000), shares[b]);
  // The plan: each bracket's rungs, its trials cut by eta per rung.
  spec.searcher.max_trials = 16;
  const api::ExperimentPlan plan = PlanExperiment(spec);
  ASSERT_EQ(plan.rungs.size(), 6u);  // 3 + 2 + 1
  const std::vector<std::tuple<int, int, int64_t, int64_t>> want = {
      {0, 0, 100, 12}, {0, 1, 400, 3},  {0, 2, 1600, 0},
      {1, 0, 400, 3},  {1, 1, 1600, 0}, {2, 0, 1600, 1}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::make_tuple(plan.rungs[i].bracket, plan.rungs[i].index, plan.rungs[i].steps,
                              plan.rungs[i].max_trials),
              want[i])
        << i;
  }
  // 12 x 100 + 3 x 300 + 3 x 400 + 1 x 1600 steps.
  EXPECT_EQ(plan.max_total_steps, 1200 + 900 + 1200 + 1600);
  // One bracket is the plain search: every trial in bracket 0.
  spec.searcher.brackets = 1;
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(TrialBracket(spec, i), 0);
}

TEST(SearcherTest, BracketsPromoteOnlyAgainstTheirOwnTrials) {
  api::ExperimentSpec spec = Asha(16, 100, 1600, 4);
  spec.searcher.brackets = 2;  // bracket 0: 100, 400, 1600; bracket 1: 400, 1600
  const Simulated s = Simulate(spec, Pseudo);
  // Every trial started, each at its bracket's first rung, and every promotion moved a trial
  // one rung up in its own bracket, ranked against its bracket only.
  ASSERT_EQ(s.trials.size(), 16u);
  std::vector<TrialProgress> replay;
  for (const SearchAction& a : s.actions) {
    if (a.kind == SearchAction::Kind::kStart) {
      TrialProgress t;
      t.index = a.trial;
      t.bracket = TrialBracket(spec, a.trial);
      replay.push_back(t);
    } else {
      const TrialProgress& me = replay[static_cast<size_t>(a.trial)];
      ASSERT_EQ(static_cast<int>(me.rung_metrics.size()), a.rung);
      int64_t better = 0, at_rung = 0;
      for (const TrialProgress& t : replay) {
        if (t.bracket != me.bracket || static_cast<int>(t.rung_metrics.size()) < a.rung) continue;
        ++at_rung;
        if (t.rung_metrics[a.rung - 1] > me.rung_metrics.back()) ++better;
      }
      EXPECT_LT(better, at_rung / 4) << "trial " << a.trial;
    }
    replay[static_cast<size_t>(a.trial)].rung_metrics.push_back(Pseudo(a.trial) + a.rung / 100.0);
  }
  // Bracket 1's trials reach at most 2 rungs, and its best one the last.
  int64_t best1 = -1;
  for (const TrialProgress& t : s.trials) {
    if (t.bracket != 1) continue;
    EXPECT_LE(t.rung_metrics.size(), 2u);
    if (best1 < 0 || Pseudo(t.index) > Pseudo(best1)) best1 = t.index;
  }
  ASSERT_GE(best1, 0);
  EXPECT_EQ(s.trials[static_cast<size_t>(best1)].rung_metrics.size(), 2u);
  // A waiting trial's prospects count its bracket alone: with every other trial of bracket 0
  // better at rung 0 and none to come, trial 0 cannot be promoted; bracket 1 does not count.
  std::vector<TrialProgress> trials;
  for (int64_t i = 0; i < 16; ++i) {
    TrialProgress t;
    t.index = i;
    t.bracket = TrialBracket(spec, i);
    t.rung_metrics = {i == 0 ? 0.0 : 1.0};
    trials.push_back(t);
  }
  EXPECT_FALSE(CanStillBePromoted(spec, trials, 0));
  for (TrialProgress& t : trials) {
    if (t.bracket == 0 && t.index != 0) t.rung_metrics = {-1.0};  // now it is bracket 0's best
  }
  EXPECT_TRUE(CanStillBePromoted(spec, trials, 0));
  // Each bracket's cut from its own results: bracket 0's third best of 12, bracket 1's best of 4.
  EXPECT_EQ(RungCut(spec, trials, 0, 0), -1.0);
  EXPECT_EQ(RungCut(spec, trials, 1, 0), 1.0);
}

}  // namespace
}  // namespace trainingd::daemon
