// Trainer: a model, its optimizer, an input pipeline over a training split and the global step.
//
// Step() performs one training step: next batch, forward, softmax cross-entropy, backward, one
// optimizer update, global_step + 1. Data-parallel (a Communicator of N ranks): every rank walks
// the same global batch sequence and trains on its run of whole blocks of each global batch
// (gradient_blocks.h); its gradients are exact fixed-point sums over its examples, divided by the
// global batch, and each rank forms the total of its own part of every parameter's gradient
// (ReduceGradients: the large dense kernels' rows from the inputs and output gradients their
// layers gathered (DenseLayer::set_step); an int64 reduce-scatter of the other sums). Each rank
// updates its part, and the ranks exchange the new values (ShareUpdatedParts). So N ranks compute
// what one process computes, to the last bit, whatever N and the thread counts. Evaluate() runs a
// whole split in inference mode. This is the numerical core that the monitored session drives; it
// owns no files and no threads of its own. Not thread-safe: one thread drives a Trainer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trainingd/engine/data/batch_iterator.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/dist/communicator.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/optim/optimizer.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::engine {

struct TrainerOptions {
  int64_t batch_size = 50;  // the global batch: of all ranks together in a data-parallel job
  uint64_t seed = 0;        // initialisation, dropout and shuffling all derive from it
  // The ranks of a data-parallel job (docs/distributed.md); null = one process. Must outlive
  // the Trainer.
  Communicator* communicator = nullptr;
  // The blocks every batch's gradient sums are cut into (gradient_blocks.h): results are the
  // same for any number of ranks up to min(reduction_blocks, batch_size).
  int reduction_blocks = kDefaultReductionBlocks;
  // The arithmetic of the training steps (layer.h's Precision); evaluations are float32.
  Precision precision = Precision::kFloat32;
  // The training loss's label smoothing, in [0, 1) (SoftmaxCrossEntropy); evaluations report the
  // plain cross-entropy.
  float label_smoothing = 0.0f;
  // The training split's augmentation (augmentation.h), drawn from a stream of `seed`; `units`
  // says how the split's values relate to the images' [0, 1] range (per-channel normalization).
  AugmentationSpec augmentation;
  ChannelUnits units;
  // What the model learns (the split's labels or targets): classification's softmax
  // cross-entropy over num_classes outputs, or a regression loss on one output, the standardized
  // target (loss.h).
  Task task = Task::kClassification;
  RegressionLoss regression_loss = RegressionLoss::kMse;
  float huber_delta = 1.0f;
  TargetScale target_scale;
  // Classification: each class's weight in the training loss (the job spec's class_weights,
  // ResolveClassWeights), num_classes of them; empty = all 1. A row's loss weighs its class's
  // weight times its sample weight (Split::weights); evaluations weigh sample weights only.
  std::vector<float> class_weights;
  // Classification with two classes: the decision threshold of the predicted class that
  // evaluations count (PredictedClasses); 0.5 = the arg-max. Training does not use it.
  double decision_threshold = kDefaultDecisionThreshold;
};

// One rank's latest step of a data-parallel job: its compute (input, forward, loss, backward)
// and its reductions (of the step before: a step's own is timed only once it is over).
struct RankTiming {
  double compute_seconds = 0;
  double allreduce_seconds = 0;
};

struct StepResult {
  int64_t global_step = 0;  // after the step
  double loss = 0;          // of the global batch (all ranks)
  double accuracy = 0;
  float learning_rate = 0;  // the rate this step's update used
  // Data-parallel: some rank voted to stop at this step (StepOptions::stop_vote), so every rank
  // stops after it.
  bool stop_agreed = false;
  // Data-parallel: the step's collectives failed (a rank is gone); no update was applied, or
  // only this rank's part of it, and the job cannot go on (nothing is saved: state_whole()).
  Status error;
  double allreduce_seconds = 0;  // time in the step's collectives, waiting for other ranks included
};

// What Evaluate() reports over a whole split: the cross-entropy and accuracy of its logits, and
// the classification metrics of their softmax probabilities (metrics.h).
struct SplitEvaluation : LossAndAccuracy {
  ClassificationMetrics metrics;
  // Regression: the split's ScatterSample, each example's target and prediction (target units).
  std::vector<double> actual, predicted;
};

// A minibatch given from outside the input pipeline (a "batch" feed).
struct Batch {
  Tensor images;                // [N, H, W, C], the model's example shape
  std::vector<int32_t> labels;  // N class ids (classification)
  std::vector<float> targets;   // N finite targets (regression)
  std::vector<float> weights;   // N sample weights (finite, >= 0); empty = all 1
};

// How one step runs; the defaults take the next batch from the input pipeline and trace nothing.
struct StepOptions {
  // Train on this batch instead; the input pipeline does not advance. The caller checks it
  // (Trainer::CheckBatch).
  const Batch* batch = nullptr;
  // When set, the step's phases and layers are appended to it.
  StepTrace* trace = nullptr;
  // Data-parallel: this rank asks all ranks to stop after this step (StepResult::stop_agreed).
  bool stop_vote = false;
  // Data-parallel: this rank asks that every rank hold the whole state after this step, as a
  // checkpoint needs (Trainer::state_whole). A stop vote implies it.
  bool whole_state_vote = false;
};

// Accumulated wall time per layer, filled while profiling is on.
struct LayerTimes {
  std::vector<double> forward_seconds;
  std::vector<double> backward_seconds;
  double loss_seconds = 0;
  double optimizer_seconds = 0;
  double input_seconds = 0;
  int64_t steps = 0;
};

class Trainer {
 public:
  // Builds the model for `train`'s example shape and `num_classes`, the optimizer and the input
  // pipeline. `train` must outlive the Trainer. Errors name the bad field (model.layers[i],
  // optimizer field, batch_size).
  static Result<std::unique_ptr<Trainer>> Create(const ModelSpec& model,
                                                 const OptimizerOptions& optimizer,
                                                 const Split& train, int num_classes,
                                                 const TrainerOptions& options);

  StepResult Step(const StepOptions& options = {});
  // OK if `batch` can be trained on: images of the model's example shape, as many labels as
  // images, each in [0, num_classes) (regression: as many finite targets). InvalidArgument
  // naming what is wrong otherwise.
  Status CheckBatch(const Batch& batch) const;
  // Loss, accuracy and the classification metrics (regression: loss, RMSE, MAE and R^2) over
  // the whole split in inference mode (dropout off), in batches, rows weighed by the split's
  // sample weights. A data-parallel job evaluates each rank's shard of the split (ShardOf), adds
  // up the loss and accuracy sums, and (classification) gathers the shards' logits in split
  // order, so every rank computes the metrics from the same whole split's logits, the same bits
  // for any number of ranks; an error only when a collective fails. Holds the split's logits
  // (examples x classes floats) while it runs.
  Result<SplitEvaluation> Evaluate(const Split& split, int64_t batch_size = 1000);

  int64_t global_step() const { return global_step_; }
  void set_global_step(int64_t step) { global_step_ = step; }
  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  Optimizer& optimizer() { return *optimizer_; }
  BatchIterator& input() { return *input_; }

  // Whether this rank holds the whole state, as a checkpoint captures it. A data-parallel step
  // updates only this rank's own part of the parameters and of their optimizer slots, then the
  // ranks exchange the parameters' parts; the slots' other parts stay behind until a step with
  // a whole-state vote, or MakeStateWhole, exchanges them too. Always true in one process, for
  // an optimizer without slots, and after a restore.
  bool state_whole() const { return state_whole_; }
  // Data-parallel, collective: every rank calls it at the same point (the session's end).
  // Exchanges the optimizer slots' parts, so that every rank holds the whole state; nothing when
  // it already does.
  Status MakeStateWhole();
  // RestoreTrainer: every rank that restored the same state holds all of it.
  void StateRestored() { state_whole_ = true; }

  // Data-parallel: every rank's latest step, in rank order (each step's small reduction carries
  // them, so every rank has all of them); empty in one process.
  const std::vector<RankTiming>& rank_timings() const { return rank_timings_; }

  // Per-layer timing of Step(); costs two clock reads per layer while on.
  void EnableProfiling(bool on);
  const LayerTimes& layer_times() const { return times_; }

 private:
  Trainer() = default;

  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<BatchIterator> input_;
  // The blocks a batch of `batch` examples is cut into.
  int64_t BlocksOf(int64_t batch) const;
  // A data-parallel step's exact gradient sums, made every rank's float gradients
  // (docs/distributed.md#the-step).
  Status ReduceGradients();
  // After the update: the ranks exchange their parts of the parameters, and of the optimizer
  // slots when `with_slots`.
  Status ShareUpdatedParts(bool with_slots);
  // Every rank's part of tensor_of(p) for every parameter p a rank updates in part.
  Status ShareParts(const std::function<Tensor&(Parameter&)>& tensor_of);
  // This rank's part of reduced_[j]'s elements.
  Shard OwnPartOfReduced(size_t j) const;

  Communicator* comm_ = nullptr;  // null or size 1: one process
  int reduction_blocks_ = kDefaultReductionBlocks;
  int64_t batch_size_ = 0;  // global
  float label_smoothing_ = 0.0f;
  Task task_ = Task::kClassification;
  RegressionLoss regression_loss_ = RegressionLoss::kMse;
  float huber_delta_ = 1.0f;
  TargetScale target_scale_;
  std::vector<float> class_weights_;
  double decision_threshold_ = kDefaultDecisionThreshold;
  std::vector<double> step_sums_;  // the step's small reduction: loss, correct, votes, timings
  // Data parallelism: the dense layers formed from gathered inputs, the other parameters (their
  // sums are reduced), and buffers of the reduction.
  std::vector<DenseLayer*> gathered_;
  // Per gathered layer, where each rank's rows of its kernel begin (in elements; the last entry
  // is the kernel's size): rank k forms and updates [bounds[k], bounds[k + 1]).
  std::vector<std::vector<int64_t>> kernel_bounds_;
  std::vector<ParameterPart> update_parts_;  // what this rank's optimizer updates
  bool state_whole_ = true;
  // The other parameters: their sums are reduced, laid out one after the other from
  // reduced_offsets_[j] (the last entry: their total), and rank k forms and updates the elements
  // [reduced_bounds_[k], reduced_bounds_[k + 1]) of that layout.
  std::vector<Parameter*> reduced_;
  std::vector<int64_t> reduced_offsets_, reduced_bounds_;
  std::vector<int64_t> reduced_sums_;
  std::vector<float> reduced_floats_;
  std::vector<RankTiming> rank_timings_;
  double last_allreduce_seconds_ = 0;
  int64_t global_step_ = 0;
  int num_classes_ = 0;
  Tensor images_, dlogits_, eval_images_;
  std::vector<int32_t> labels_, eval_labels_;
  std::vector<float> targets_, eval_targets_;
  std::vector<float> sample_weights_, eval_weights_, weights_;
  std::vector<float> eval_logits_;  // Evaluate(): the split's logits, [examples, classes]
  // The step's row weights (class weight times sample weight) into weights_; empty when every
  // row weighs 1.
  std::span<const float> RowWeights(const std::vector<int32_t>& labels,
                                    const std::vector<float>& sample_weights);
  bool profiling_ = false;
  LayerTimes times_;
};

}  // namespace trainingd::engine
