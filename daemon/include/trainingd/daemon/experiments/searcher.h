// The searchers of hyperparameter search (docs/experiments.md), as pure functions of the
// experiment's spec and of what its trials have done: no clock, no I/O, no state of their own.
// The ExperimentManager keeps the trials (in SQLite) and asks these what to do next, so a search
// restarted from its rows decides exactly as it would have.
//
// - Trial i's hyperparameters and training seed are functions of (searcher.seed, i) alone.
// - grid: the space's grid points in order, the last path varying fastest; random: samples.
//   Both train every trial to max_steps, in one rung.
// - asha: asynchronous successive halving with promotion (Li et al., "A System for Massively
//   Parallel Hyperparameter Tuning", 2018, Algorithm 2). Rung k trains to
//   min_steps * eta^k steps (the last rung: max_steps). When a trial may start, the searcher
//   looks for a promotion first, from the highest rung down: a trial waiting at rung k that is in
//   the top floor(n_k / eta) of the n_k results of rung k moves to rung k + 1 (its job resumes
//   from its checkpoint). Only when none can be promoted does a new trial start at rung 0.
//   Ties are broken by trial index, and a NaN metric ranks last, so the order is total.
//   With searcher.brackets B > 1 (Determined's adaptive ASHA), B such searches run side by side
//   on their own trials: bracket b's rungs are the first bracket's without its first b, and
//   a trial is ranked and promoted only within its bracket. The brackets' trials (api::
//   BracketTrials) are spread over the trial indices evenly, each bracket's about every
//   N / n_b-th index, centred, so a search one trial at a time meets every bracket early.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/api/experiment_service.h"

namespace trainingd::daemon {

// The number of points of the space's grid, saturating at kMaxTrials + 1.
int64_t GridSize(const std::vector<api::ParamRange>& space);

// The trials the experiment starts at most: max_trials, or the grid's size if smaller.
int64_t TrialCount(const api::ExperimentSpec& spec);

// The plan (POST /api/v1/experiments/preview): the rungs with the most trials each can hold,
// the trials, and the most steps the search trains, capped by the budget.
api::ExperimentPlan PlanExperiment(const api::ExperimentSpec& spec);

// Each bracket's rungs' steps (api::RungSteps of bracket 0, 1, ...): one bracket unless asha.
std::vector<std::vector<int64_t>> BracketRungSteps(const api::SearcherSpec& searcher);

// Trial `index`'s bracket (0 unless asha with brackets), and how many of the trials
// [begin, end) are in `bracket`.
int TrialBracket(const api::ExperimentSpec& spec, int64_t index);
int64_t TrialsInBracket(const api::ExperimentSpec& spec, int bracket, int64_t begin, int64_t end);

// Trial `index`'s hyperparameters and training seed. cross_validation: its fold
// ("dataset.fold") and the base job's own seed, so that the folds differ only in their data.
api::Hyperparameters TrialHyperparameters(const api::ExperimentSpec& spec, int64_t index);
uint64_t TrialSeed(uint64_t searcher_seed, int64_t index);
uint64_t TrialSeed(const api::ExperimentSpec& spec, int64_t index);

// A cross_validation experiment's result from its folds' metrics (by fold; nullopt = none yet,
// or the fold's trial failed): the mean over the folds with one and, from two of them, the
// sample standard deviation (n - 1).
api::CrossValidationInfo CrossValidationResult(const api::SearcherSpec& searcher,
                                               std::vector<std::optional<double>> fold_metrics);

// What the searcher knows of one trial.
struct TrialProgress {
  int64_t index = 0;
  int bracket = 0;                   // TrialBracket(spec, index)
  std::vector<double> rung_metrics;  // its results at its bracket's rungs 0..k (NaN: not a number)
  bool active = false;               // training toward its next rung (or stopped on its way there)
  bool dropped = false;              // failed for good: out of the rungs, never promoted
  bool pruned = false;  // its rung can no longer promote it: it will reach no other rung
};

// The next thing to do when a trial may start: promote a waiting trial to `rung`, or start trial
// `index` at rung 0, or nothing (every trial started, none promotable now).
struct SearchAction {
  enum class Kind { kNone, kStart, kPromote };
  Kind kind = Kind::kNone;
  int64_t trial = 0;
  int rung = 0;  // the rung of its bracket it trains to
};

// `trials` in index order, trials 0..trials.size()-1 started so far.
SearchAction NextSearchAction(const api::ExperimentSpec& spec,
                              const std::vector<TrialProgress>& trials);

// Whether trial `index`, waiting at rung k (below the last), may still be promoted: fewer than
// floor(M_k / eta) results of rung k are better than it, M_k being the most results rung k can
// come to hold -- those it has, plus every trial that may still reach it (those below it that
// are neither dropped nor pruned, and those not started yet), all in its bracket. Asynchronous
// promotion can send more than N / eta^k trials to rung k, so this bound is the honest one, not the
// plan's. `steps_left` (the budget's steps not yet given to trials; -1 = no budget) bounds the
// trials still to start.
bool CanStillBePromoted(const api::ExperimentSpec& spec, const std::vector<TrialProgress>& trials,
                        int64_t index, int64_t steps_left = -1);

// Whether `a` is a better metric than `b` (NaN is worse than any number).
bool BetterMetric(double a, double b, bool maximize);

// The metric a trial needs at rung k of `bracket` to be promoted now: the worst of the rung's
// top floor(n_k / eta); nullopt while there is no such slot.
std::optional<double> RungCut(const api::ExperimentSpec& spec,
                              const std::vector<TrialProgress>& trials, int bracket, int rung);

}  // namespace trainingd::daemon
