// ExperimentService: what the HTTP API needs from the daemon's experiment manager
// (docs/experiments.md). An experiment is a hyperparameter search (grid, random or ASHA) whose
// trials are ordinary jobs of the JobService. As with job_service.h, api/ states the interface and
// the values, daemon/ implements it, and every byte on the wire is written by api/
// (experiment_json.h). Every method is thread-safe and returns quickly. Experiments' changes go
// out on the job list's event stream (ExperimentStateEvent, job_service.h).
//
// Errors map to HTTP as job_service.h says: InvalidArgument 400 (the message starts with the
// field, e.g. "space[\"optimizer.learning_rate\"].max: ..."), NotFound 404, FailedPrecondition 409,
// Unavailable 503.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/api/prometheus.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::api {

// The bounds the experiment spec is held to.
inline constexpr int64_t kMaxTrials = 100000;
inline constexpr int64_t kMaxConcurrentTrials = 64;  // = kMaxConcurrentJobs
inline constexpr int64_t kMaxSpaceParams = 64;
inline constexpr int64_t kMaxCategoricalValues = 1000;
inline constexpr int64_t kMaxTrialPage = 1000;

// One hyperparameter of the search space: a path into the job spec and its range.
//   int:         integers in [min, max];
//   double:      uniform in [min, max];
//   log:         log-uniform in [min, max] (0 < min);
//   categorical: one of `values` (JSON texts: "\"adam\"", "0.5", "true").
// `count` is the grid searcher's number of points for int, double and log (evenly spaced, in log
// space for log; 0 for int = every integer). `path` is a dotted path with [i] for array elements
// ("optimizer.learning_rate", "model.layers[6].rate"), which must name a field of the base job's
// canonical spec (JobSpecToJson).
enum class ParamType { kInt, kDouble, kLog, kCategorical };
const char* ParamTypeName(ParamType type);

struct ParamRange {
  std::string path;
  ParamType type = ParamType::kDouble;
  double min = 0;
  double max = 0;
  std::vector<std::string> values;  // categorical
  int64_t count = 0;                // grid
};

// A trial's hyperparameters: (path, JSON text of the value), in the space's order.
using Hyperparameters = std::vector<std::pair<std::string, std::string>>;

// The searcher. grid: the space's grid points in order (the last path varies fastest), at most
// max_trials of them; random: max_trials samples. Both train every trial to max_steps. asha:
// asynchronous successive halving (Li et al., 2018) with promotion: rung k trains to
// min_steps * reduction_factor^k steps (the last rung to max_steps), and a trial waiting at rung k
// is promoted (resumed from its checkpoint) while it is in the top 1/reduction_factor of its rung.
//
// cross_validation: k-fold cross-validation of the base job (docs/experiments.md): no space; trial
// i is the base job with dataset.folds = folds and dataset.fold = i (cross_validation.h), trained
// to max_steps with the base job's own seed; max_trials = folds. The result is each fold's
// metric, their mean and standard deviation (CrossValidationInfo).
struct SearcherSpec {
  enum class Name { kGrid, kRandom, kAsha, kCrossValidation };
  Name name = Name::kAsha;
  std::string metric = "validation/accuracy";  // a summary tag every trial records at its end
  bool maximize = true;                        // "mode": "max" | "min"
  int64_t max_trials = 16;
  int64_t max_concurrent_trials = 1;
  int64_t min_steps = 0;  // asha: the first rung's steps; 0 = max_steps / reduction_factor^3
  int64_t max_steps = 0;  // 0 = the base job's max_steps
  int64_t reduction_factor = 4;
  // asha: brackets of successive halving run side by side (Determined's adaptive ASHA), hedging
  // against a first rung too short to rank the trials. Bracket b drops the first b rungs, so
  // its trials start at rung b's steps; the last bracket may train every trial to max_steps.
  // Its trials are promoted only against each other. 1 = the single bracket of the paper.
  int64_t brackets = 1;
  uint64_t seed = 0;
  // cross_validation: the number of folds, in [2, 20], and whether each fold holds each class in
  // proportion (the folds' seed is the base job's dataset.split_seed).
  int64_t folds = 0;
  bool stratified = true;
};
const char* SearcherName(SearcherSpec::Name name);

// The steps of each rung of `bracket`: for asha min_steps * eta^k below max_steps, then
// max_steps, without the first `bracket` of them; for grid and random just max_steps.
std::vector<int64_t> RungSteps(const SearcherSpec& searcher, int bracket = 0);

// How many of `trials` trials each bracket gets: in proportion to eta^(rungs - 1) / rungs, its
// number of rungs counted, as Determined's adaptive ASHA (and Hyperband) share them, so every
// bracket would train about as many steps; rounded down, the rest to bracket 0.
std::vector<int64_t> BracketTrials(const SearcherSpec& searcher, int64_t trials);

struct ExperimentSpec {
  std::string name;
  engine::JobSpec base_job;   // parsed and validated as POST /api/v1/jobs would
  std::string base_job_json;  // its canonical JSON (JobSpecToJson), which the paths address
  std::vector<ParamRange> space;
  SearcherSpec searcher;
  // The budget, 0 = none: the steps all trials train together, and the experiment's wall time
  // while it runs. No trial or promotion starts that would pass max_steps; at max_seconds the
  // running trials are stopped and the experiment completes.
  int64_t budget_max_steps = 0;
  double budget_max_seconds = 0;
  // Completes the experiment once a trial's metric reaches this (>= for max, <= for min).
  std::optional<double> stop_when;
  int64_t max_trial_restarts = 1;  // a failed trial is resumed from its checkpoint this often
  int64_t keep_best = 1;           // trials whose checkpoints are kept at the end
};

// One rung of the plan and, for a running experiment, what it holds.
struct RungInfo {
  int bracket = 0;
  int index = 0;      // within its bracket
  int64_t steps = 0;  // a trial at this rung has trained this many steps
  // The trials successive halving sends to this rung: N / eta^k. (Asynchronous promotion may
  // send a few more: a trial promoted early stays promoted when better ones come later.)
  int64_t max_trials = 0;
  // Running experiments only:
  int64_t trials = 0;         // results recorded at this rung
  int64_t promoted = 0;       // of those, promoted to the next rung
  std::optional<double> cut;  // the metric a trial needs to be promoted now (nullopt: none yet)
};

// What an experiment would run (POST /api/v1/experiments/preview, and part of every experiment).
struct ExperimentPlan {
  std::vector<RungInfo> rungs;  // by bracket, then rung; grid and random: one rung, at max_steps
  int64_t trials = 0;           // the trials it will start (grid: the grid's size if smaller)
  int64_t grid_size = 0;        // grid: the number of points of the space; otherwise 0
  // The steps it trains when each rung promotes its planned trials (ASHA resumes, so a promoted
  // trial adds only the steps between its rungs), capped by the budget.
  int64_t max_total_steps = 0;
  std::vector<Hyperparameters> first_trials;  // the first few trials' hyperparameters
};

// A trial's place in the search.
//   running:   its job trains (or is queued) toward `target_steps`;
//   waiting:   at a rung, with its checkpoint, until it is promoted or cannot be any more;
//   pruned:    cannot be promoted any more (its checkpoints are deleted unless kept);
//   completed: reached the last rung;
//   failed:    failed more than max_trial_restarts times, or ended without its metric (reason);
//   stopped:   stopped with the experiment (resumes with it).
enum class TrialState { kRunning, kWaiting, kPruned, kCompleted, kFailed, kStopped };
const char* TrialStateName(TrialState state);
std::optional<TrialState> ParseTrialState(std::string_view name);

struct TrialInfo {
  int64_t index = 0;
  std::string job_id;
  Hyperparameters hyperparameters;
  uint64_t seed = 0;  // the job's training seed, a function of (searcher seed, index)
  TrialState state = TrialState::kRunning;
  int bracket = 0;                   // asha: its bracket, a function of its index
  int rung = -1;                     // the highest rung it has a result at; -1 = none yet
  int64_t target_steps = 0;          // where its job stops next
  std::vector<double> rung_metrics;  // its metric at rungs 0..rung
  // When each of rung_metrics was recorded, seconds since the epoch (as long as rung_metrics; a
  // reader of an older answer may find it empty).
  std::vector<double> rung_recorded_at;
  std::optional<double> metric;  // its latest result (rung_metrics.back())
  int64_t restarts = 0;
  std::string reason;  // failed and pruned trials: why
  bool checkpoints_kept = true;
  // The job, as of now:
  JobState job_state = JobState::kQueued;
  int64_t global_step = 0;
  double created_at = 0;
  double finished_at = 0;  // the last time its job ended; 0 = running
};

struct BestTrial {
  int64_t index = 0;
  std::string job_id;
  double metric = 0;
  int64_t step = 0;  // the step the metric was measured at
  Hyperparameters hyperparameters;
};

// A cross_validation experiment's result: its folds' metrics (a fold's trial's metric at its end;
// nullopt while it has none) and, over the folds that have one, their mean and sample standard
// deviation (n - 1 in the denominator; nullopt below two folds).
struct CrossValidationInfo {
  int64_t folds = 0;
  bool stratified = true;
  std::vector<std::optional<double>> fold_metrics;  // by fold
  int64_t folds_done = 0;                           // folds with a metric
  std::optional<double> mean;
  std::optional<double> std;
};

struct ExperimentInfo {
  std::string id;  // URL-safe
  std::string name;
  ExperimentState state = ExperimentState::kRunning;
  std::string searcher;  // "asha", "grid", "random"
  std::string metric;
  bool maximize = true;
  double created_at = 0;
  double finished_at = 0;  // 0 = not yet
  std::string error;
  std::string reason;  // ended: why ("all trials done", "budget: max_steps", "stop_when", ...)
  // Progress and budget.
  int64_t trials_started = 0;
  int64_t max_trials = 0;
  std::map<std::string, int64_t> trials_by_state;  // TrialStateName -> count
  int64_t steps_used = 0;                          // steps trained by all trials together
  int64_t budget_max_steps = 0;
  double seconds_used = 0;  // wall time spent running
  double budget_max_seconds = 0;
  std::optional<BestTrial> best;
  std::optional<CrossValidationInfo> cross_validation;  // the cross_validation searcher's result
  // Disk: the bytes of the trials' job directories, now and at most so far.
  int64_t disk_bytes = 0;
  int64_t peak_disk_bytes = 0;
  ExperimentPlan plan;            // with each rung's live counts
  std::string spec_json;          // the canonical experiment spec (details only)
  std::string owner{kAdminUser};  // the user who submitted it; its trials' jobs are its too
};

struct ExperimentPage {
  std::vector<ExperimentInfo> experiments;  // newest first; summaries (no spec)
  std::string next_cursor;                  // empty = no more
};

// GET /api/v1/experiments/{id}/trials: sorted by "index", "metric", "state", "global_step" or a
// hyperparameter's path (numbers compare as numbers); paged by offset.
struct TrialQuery {
  std::string sort = "index";
  bool descending = false;
  std::optional<TrialState> state;
  int64_t offset = 0;
  int64_t limit = 100;  // 1..kMaxTrialPage
};

struct TrialPage {
  std::vector<TrialInfo> trials;
  int64_t total = 0;  // matching trials, all pages
};

class ExperimentService {
 public:
  virtual ~ExperimentService() = default;

  // The plan of `spec` without running it. InvalidArgument naming the field for a spec the
  // daemon cannot run (a trial job it would refuse, e.g. over the memory budget).
  virtual engine::Result<ExperimentPlan> Preview(const ExperimentSpec& spec) = 0;
  // Starts the experiment: its first trials are submitted at once. `spec_json` is its canonical
  // JSON (ExperimentSpecToJson), which the service keeps and answers with. `owner`: the user
  // submitting it (user_service.h).
  virtual engine::Result<ExperimentInfo> Submit(ExperimentSpec spec, std::string spec_json,
                                                std::string owner = std::string(kAdminUser)) = 0;
  virtual engine::Result<ExperimentPage> List(std::optional<ExperimentState> state, int64_t limit,
                                              const std::string& cursor) = 0;
  virtual engine::Result<ExperimentInfo> Get(const std::string& id) = 0;
  virtual engine::Result<TrialPage> Trials(const std::string& id, const TrialQuery& query) = 0;
  // Stops every running trial (each writes a final checkpoint); FailedPrecondition when it has
  // ended.
  virtual engine::Result<ExperimentInfo> Stop(const std::string& id) = 0;
  // A stopped or failed experiment goes on where it was.
  virtual engine::Result<ExperimentInfo> Resume(const std::string& id) = 0;
  // An experiment that is not running or stopping: its trials' jobs, rows and files.
  virtual engine::Status Delete(const std::string& id) = 0;
  virtual std::vector<Metric> Metrics() = 0;
};

}  // namespace trainingd::api
