// Session: one training run's state -- model, optimizer, input pipeline, global step -- and the
// named values a step can report.
//
// There is no graph: Run() performs exactly one training step and reports the fetches that were
// asked for; Fetch() reports values without training (FinalOpsHook, evaluation at the end).
// Fetch names (docs/session.md#fetches):
//   "loss", "accuracy"        of the step's minibatch (Fetch(): of the latest step; NaN before one)
//   "global_step"             after the step
//   "learning_rate"           the rate the step's update used (Fetch(): the latest step's rate,
//                             or the next step's before any step in this session)
//   "epoch"                   epochs of the input pipeline completed
//   "<split>/<metric>", split in {train, validation, test}, metric one of metrics.h's
//                             kClassificationMetrics (loss, accuracy, precision_macro,
//                             recall_macro, f1_macro, auc, log_loss): the whole split in
//                             inference mode, after the step; one pass per split and global step
//                             however many hooks ask for it
// Feed names:
//   "learning_rate" (number)  replaces the schedule's rate for this step
//   "batch" (Batch)           trains on this minibatch instead of the pipeline's next one
//
// Not thread-safe: one thread drives a session (the MonitoredSession that owns it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/dist/communicator.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/optim/optimizer.h"
#include "trainingd/engine/session/step_trace.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {

inline constexpr const char* kLossFetch = "loss";
inline constexpr const char* kAccuracyFetch = "accuracy";
inline constexpr const char* kGlobalStepFetch = "global_step";
inline constexpr const char* kLearningRateFetch = "learning_rate";
inline constexpr const char* kEpochFetch = "epoch";
inline constexpr const char* kLearningRateFeed = "learning_rate";
inline constexpr const char* kBatchFeed = "batch";
// The splits Evaluate() knows, as the "<split>/<metric>" fetches name them.
inline constexpr const char* kSplits[] = {"train", "validation", "test"};

using FeedValue = std::variant<double, std::shared_ptr<const Batch>>;
using Feeds = std::map<std::string, FeedValue>;

struct RunOptions {
  bool trace = false;  // record a StepTrace of the step (TF's FULL_TRACE)
  // Data-parallel: this rank votes to stop all ranks after this step (StepOptions::stop_vote).
  bool stop_vote = false;
  // Data-parallel: every rank must hold the whole state after this step, because a checkpoint
  // may follow it (Trainer::state_whole); a vote too. CheckpointSaverHook asks for it.
  bool whole_state = false;
};

// What a caller or a hook asks of one run (TF's SessionRunArgs).
struct RunArgs {
  std::vector<std::string> fetches;
  Feeds feeds;
  RunOptions options;
};

// What one run reported (TF's SessionRunValues).
struct RunValues {
  std::map<std::string, double> results;
  std::shared_ptr<const StepTrace> trace;  // set when a trace was requested

  bool contains(const std::string& name) const { return results.count(name) != 0; }
  // The value of `name`; NaN if it was not fetched.
  double get(const std::string& name) const;
};

struct SessionConfig {
  ModelSpec model;
  OptimizerOptions optimizer;
  int64_t batch_size = 50;
  uint64_t seed = 0;  // initialisation, dropout and shuffling
  // 0 = the input repeats forever. Otherwise Run() returns OutOfRange once this many epochs of the
  // training split were consumed (the last batch may take a few examples of the next epoch).
  int64_t num_epochs = 0;
  int64_t eval_batch_size = 1000;  // batch size of the "<split>/..." evaluations
  // The ranks of a data-parallel job; null = one process (docs/distributed.md). batch_size is
  // the global batch then, evaluations are sharded and reduced, and the chief's session creator
  // hands its state to the workers'.
  std::shared_ptr<Communicator> communicator;
  // The blocks each batch's gradients are summed in (TrainerOptions::reduction_blocks).
  int reduction_blocks = kDefaultReductionBlocks;
  // The arithmetic of the training steps (TrainerOptions::precision).
  Precision precision = Precision::kFloat32;
  // The training loss's label smoothing (TrainerOptions::label_smoothing).
  float label_smoothing = 0.0f;
  // The training split's augmentation (TrainerOptions::augmentation).
  AugmentationSpec augmentation;
  // A regression dataset's loss (TrainerOptions::regression_loss, huber_delta).
  RegressionLoss regression_loss = RegressionLoss::kMse;
  float huber_delta = 1.0f;
  // One weight per class, or empty (TrainerOptions::class_weights, ResolveClassWeights).
  std::vector<float> class_weights;
  // A two-class classifier's decision threshold (TrainerOptions::decision_threshold).
  double decision_threshold = kDefaultDecisionThreshold;
};

class Session {
 public:
  // Builds and initialises the model from config.seed (a chief then restores a checkpoint over
  // it, see SessionCreator). `datasets` is shared with other sessions and never changed.
  // InvalidArgument naming the field (model.layers[i], optimizer.*, batch_size, num_epochs).
  static Result<std::unique_ptr<Session>> Create(const SessionConfig& config,
                                                 std::shared_ptr<const Datasets> datasets, Env* env,
                                                 std::shared_ptr<Logger> logger);

  // One training step, then the fetches. Fetches and feeds are checked first; on InvalidArgument
  // (an unknown name, a bad batch) no step is taken. OutOfRange when num_epochs are done.
  // `values` may be null.
  Status Run(const RunArgs& args, RunValues* values);
  // The fetches without a training step.
  Status Fetch(const std::vector<std::string>& fetches, RunValues* values);
  // Loss, accuracy and the classification metrics over "train", "validation" or "test" in
  // inference mode, cached per global step. NotFound for another name, FailedPrecondition for an
  // empty split.
  Result<SplitEvaluation> Evaluate(std::string_view split);

  // OK if every name is a known fetch (of a job of `task`, when given: "accuracy" is
  // classification's, "<split>/rmse" regression's); InvalidArgument naming the first unknown one
  // otherwise.
  static Status CheckFetchNames(const std::vector<std::string>& fetches,
                                std::optional<Task> task = std::nullopt);

  int64_t global_step() const { return trainer_->global_step(); }
  // Epochs of the training split consumed so far.
  int64_t epochs_completed() const;
  // True when the latest step's loss was NaN or infinite: the weights are no longer sound, so
  // nothing should be saved from them.
  bool diverged() const { return diverged_; }
  // The latest step's result, if a step ran in this session.
  const std::optional<StepResult>& last_step() const { return last_step_; }

  // The whole state (checkpoint.h, trainer_checkpoint.h), and putting one back. Restore checks
  // everything first and names the variable and both shapes on a mismatch.
  Result<CheckpointData> Capture();
  Status Restore(const CheckpointData& data);
  // Data-parallel: whether Capture() can succeed on this rank, and the collective that makes it
  // so (Trainer::state_whole, Trainer::MakeStateWhole).
  bool state_whole() const { return trainer_->state_whole(); }
  Status MakeStateWhole() { return trainer_->MakeStateWhole(); }

  const SessionConfig& config() const { return config_; }
  const Datasets& datasets() const { return *datasets_; }
  Task task() const { return datasets_->task; }
  Trainer& trainer() { return *trainer_; }
  Env& env() { return *env_; }
  Logger& logger() { return *logger_; }
  const std::shared_ptr<Logger>& shared_logger() const { return logger_; }

 private:
  Session() = default;
  Status CheckFeeds(const Feeds& feeds, const Batch** batch, std::optional<float>* rate) const;
  Status FillFetches(const std::vector<std::string>& fetches, RunValues* values);

  SessionConfig config_;
  std::shared_ptr<const Datasets> datasets_;
  Env* env_ = nullptr;
  std::shared_ptr<Logger> logger_;
  std::unique_ptr<Trainer> trainer_;
  std::optional<StepResult> last_step_;
  bool diverged_ = false;
  struct CachedEval {
    int64_t global_step = -1;
    SplitEvaluation value;
  };
  std::map<std::string, CachedEval, std::less<>> eval_cache_;
};

}  // namespace trainingd::engine
