#include "trainingd/engine/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "base/float_format.h"
#include "trainingd/engine/nn/dense_layer.h"
#include "trainingd/engine/nn/gradient_blocks.h"

namespace trainingd::engine {
namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
// Rows [shard.begin, shard.begin + shard.count) of a batch: images, and labels or targets.
template <typename T>
void CopySlice(const std::vector<T>& from, Shard shard, std::vector<T>& to) {
  if (from.empty()) {
    to.clear();
  } else {
    to.assign(from.begin() + shard.begin, from.begin() + shard.begin + shard.count);
  }
}
void CopyRows(const Batch& batch, Shard shard, Tensor& out, std::vector<int32_t>& out_labels,
              std::vector<float>& out_targets, std::vector<float>& out_weights) {
  const Tensor& images = batch.images;
  const int64_t per_example = images.shape()[0] ? images.size() / images.shape()[0] : 0;
  out.Resize(images.shape().drop_front().with_batch(shard.count));
  std::copy_n(images.data() + shard.begin * per_example, shard.count * per_example, out.data());
  CopySlice(batch.labels, shard, out_labels);
  CopySlice(batch.targets, shard, out_targets);
  CopySlice(batch.weights, shard, out_weights);
}
std::span<float> AllOf(Tensor& t) { return {t.data(), static_cast<size_t>(t.size())}; }
// The bounds of `n` parts of a buffer that holds parameters one after the other, the j-th from
// offsets[j] (the last entry: the total): about even, and a cut inside a parameter moved back to
// a 16-float line of it, where an optimizer's part may begin (ParameterPart).
std::vector<int64_t> CutOnLines(const std::vector<int64_t>& offsets, int n) {
  const int64_t total = offsets.back();
  std::vector<int64_t> bounds(static_cast<size_t>(n) + 1, total);
  bounds[0] = 0;
  for (int k = 1; k < n; ++k) {
    const int64_t target = total * k / n;
    // The start of the parameter that holds `target`.
    const int64_t start = *(std::upper_bound(offsets.begin(), offsets.end(), target) - 1);
    bounds[static_cast<size_t>(k)] =
        std::max(bounds[static_cast<size_t>(k) - 1], start + (target - start) / 16 * 16);
  }
  return bounds;
}
}  // namespace

Result<std::unique_ptr<Trainer>> Trainer::Create(const ModelSpec& model_spec,
                                                 const OptimizerOptions& optimizer_options,
                                                 const Split& train, int num_classes,
                                                 const TrainerOptions& options) {
  if (options.batch_size <= 0 || options.batch_size > train.size()) {
    return Status::InvalidArgument("batch_size must be in [1, " + std::to_string(train.size()) +
                                   "] (the training examples), got " +
                                   std::to_string(options.batch_size));
  }
  std::unique_ptr<Trainer> t(new Trainer());
  auto model = Model::Build(model_spec, train.example_shape(), num_classes, options.seed);
  if (!model.ok()) return model.status();
  t->model_ = std::move(model).value();
  t->model_->set_precision(options.precision);
  t->num_classes_ = num_classes;
  auto opt = MakeOptimizer(optimizer_options);
  if (!opt.ok()) return Status::InvalidArgument("optimizer." + opt.status().message());
  t->optimizer_ = std::move(opt).value();
  TRAININGD_RETURN_IF_ERROR(t->optimizer_->CreateSlots(t->model_->parameters()));
  // The data order gets its own seed, so its per-epoch streams never coincide with the model's.
  const uint64_t data_seed = Rng::ForStream(options.seed, 0xDA7A).Next();
  auto input = BatchIterator::Create(train, options.batch_size, data_seed);
  if (!input.ok()) return input.status();
  t->input_ = std::make_unique<BatchIterator>(std::move(input).value());
  if (options.augmentation.enabled()) {
    // Its own stream too: the draws of (epoch, example) never coincide with the order's.
    auto augmenter = Augmenter::Create(options.augmentation, train.example_shape(),
                                       Rng::ForStream(options.seed, 0xA06).Next(), options.units);
    if (!augmenter.ok()) return augmenter.status();
    t->input_->set_augmenter(std::move(augmenter).value());
  }
  t->batch_size_ = options.batch_size;
  if (!(options.label_smoothing >= 0.0f && options.label_smoothing < 1.0f)) {
    return Status::InvalidArgument("label_smoothing must be in [0, 1), got " +
                                   internal::FloatToString(options.label_smoothing));
  }
  t->label_smoothing_ = options.label_smoothing;
  t->task_ = options.task;
  t->regression_loss_ = options.regression_loss;
  t->huber_delta_ = options.huber_delta;
  t->target_scale_ = options.target_scale;
  if (!options.class_weights.empty()) {
    if (options.task != Task::kClassification ||
        static_cast<int>(options.class_weights.size()) != num_classes) {
      return Status::InvalidArgument("class_weights: one per class of a classification job");
    }
    for (float w : options.class_weights) {
      if (!(w >= 0) || !std::isfinite(w)) {
        return Status::InvalidArgument("class_weights: each must be a finite number >= 0");
      }
    }
  }
  t->class_weights_ = options.class_weights;
  t->decision_threshold_ = options.decision_threshold;
  if (options.task == Task::kRegression && train.targets.empty()) {
    return Status::InvalidArgument("task: regression needs a split of targets (numbers)");
  }
  t->comm_ =
      options.communicator && options.communicator->size() > 1 ? options.communicator : nullptr;
  if (options.reduction_blocks < 1 || options.reduction_blocks > kMaxReductionBlocks) {
    return Status::InvalidArgument("reduction_blocks must be in [1, " +
                                   std::to_string(kMaxReductionBlocks) + "], got " +
                                   std::to_string(options.reduction_blocks));
  }
  t->reduction_blocks_ = options.reduction_blocks;
  // Which dense layers are gathered: decided by the batch alone, so one process sums their
  // gradients as the ranks of a data-parallel job do.
  std::vector<DenseLayer*> gathered = t->model_->MarkGatheredDenseLayers(options.batch_size);
  if (t->comm_) {
    const int n = t->comm_->size(), me = t->comm_->rank();
    t->gathered_ = std::move(gathered);
    for (DenseLayer* layer : t->gathered_) {
      std::vector<int64_t>& bounds = t->kernel_bounds_.emplace_back(static_cast<size_t>(n) + 1);
      for (int k = 0; k <= n; ++k) {
        const int64_t tile = k == n ? layer->NumTiles() : ShardOf(layer->NumTiles(), k, n).begin;
        bounds[static_cast<size_t>(k)] = layer->FirstRowOfTile(tile) * layer->units();
      }
      Parameter* kernel = layer->parameters()[0];
      t->update_parts_.push_back(
          {kernel, bounds[static_cast<size_t>(me)], bounds[static_cast<size_t>(me) + 1]});
    }
    for (Parameter* p : t->model_->parameters()) {
      bool kernel = false, bias = false;
      for (DenseLayer* layer : t->gathered_) {
        kernel = kernel || layer->parameters()[0] == p;
        bias = bias || layer->parameters()[1] == p;
      }
      if (bias) t->update_parts_.push_back({p, 0, p->value.size()});
      if (!kernel && !bias) t->reduced_.push_back(p);
    }
    t->reduced_offsets_ = {0};
    for (const Parameter* p : t->reduced_)
      t->reduced_offsets_.push_back(t->reduced_offsets_.back() + p->value.size());
    t->reduced_bounds_ = CutOnLines(t->reduced_offsets_, n);
    for (size_t j = 0; j < t->reduced_.size(); ++j) {
      const Shard own = t->OwnPartOfReduced(j);
      t->update_parts_.push_back({t->reduced_[j], own.begin, own.begin + own.count});
    }
  }
  if (t->comm_ && t->comm_->size() > t->BlocksOf(options.batch_size)) {
    return Status::InvalidArgument(
        "the " + std::to_string(t->comm_->size()) + " workers need at least as many blocks of " +
        "every batch, but a batch of " + std::to_string(options.batch_size) + " has " +
        std::to_string(t->BlocksOf(options.batch_size)) +
        " (min(batch_size, reduction_blocks)); each worker trains on whole blocks");
  }
  return t;
}

StepResult Trainer::Step(const StepOptions& options) {
  StepTrace* trace = options.trace;
  const bool timed = profiling_ || trace;
  Clock::time_point t0;
  if (timed || comm_) t0 = Clock::now();
  const Clock::time_point step_start = t0;
  const Tensor* images = &images_;
  const std::vector<int32_t>* labels = &labels_;
  const std::vector<float>* targets = &targets_;
  const std::vector<float>* sample_weights = &sample_weights_;
  const int64_t global_batch = options.batch ? options.batch->images.shape()[0] : batch_size_;
  GradientBlocks blocks = GradientBlocks::ForRank(
      global_batch, reduction_blocks_, comm_ ? comm_->rank() : 0, comm_ ? comm_->size() : 1, comm_);
  const Shard shard{blocks.first_example(), blocks.examples()};
  if (options.batch) {
    if (comm_) {
      // A fed batch is every rank's: each trains on its blocks of it.
      CopyRows(*options.batch, shard, images_, labels_, targets_, sample_weights_);
    } else {
      images = &options.batch->images;
      labels = &options.batch->labels;
      targets = &options.batch->targets;
      sample_weights = &options.batch->weights;
    }
  } else {
    input_->Next(images_, labels_, shard.begin, shard.count, &targets_, &sample_weights_);
  }
  if (profiling_) times_.input_seconds += Since(t0);
  if (trace) trace->Add("input", "input", t0);
  model_->set_trace(trace);
  model_->set_example_offset(shard.begin);
  for (DenseLayer* layer : gathered_) layer->set_step(&blocks);
  model_->set_step_blocks(&blocks);
  const Tensor& logits = model_->Forward(*images, Mode::kTrain);
  if (timed) t0 = Clock::now();
  LossAndAccuracy la;
  const std::span<const float> weights = RowWeights(*labels, *sample_weights);
  if (task_ == Task::kRegression) {
    la.loss_sum = RegressionLossOf(logits, *targets, regression_loss_, huber_delta_, target_scale_,
                                   &dlogits_, global_batch, weights)
                      .loss_sum;
    la.loss = shard.count ? la.loss_sum / static_cast<double>(shard.count) : 0;
  } else {
    la = SoftmaxCrossEntropy(logits, *labels, &dlogits_, global_batch, label_smoothing_, weights);
  }
  if (profiling_) times_.loss_seconds += Since(t0);
  if (trace) {
    trace->Add(
        task_ == Task::kRegression ? RegressionLossName(regression_loss_) : "softmax_cross_entropy",
        "loss", t0);
  }
  model_->Backward(dlogits_, blocks);
  model_->set_trace(nullptr);
  for (DenseLayer* layer : gathered_) layer->set_step(nullptr);
  model_->set_step_blocks(nullptr);
  StepResult r;
  bool whole_state_agreed = false;  // data-parallel: a stop or whole-state vote on this step
  if (comm_) {
    const Clock::time_point reduce_start = Clock::now();
    // The exact gradient sums become every rank's float gradients (ReduceGradients). Then
    // the step's loss, accuracy and stop votes and each rank's timings (in its own slots, zero
    // elsewhere) are summed over the ranks.
    r.error = blocks.status();
    if (r.error.ok()) r.error = ReduceGradients();
    const int n = comm_->size(), me = comm_->rank();
    std::vector<double>& sums = step_sums_;
    constexpr int kTimings = 4;  // loss, correct, stop votes, whole-state votes, then timings
    sums.assign(static_cast<size_t>(kTimings + 2 * n), 0.0);
    sums[0] = la.loss_sum;
    sums[1] = static_cast<double>(la.correct);
    sums[2] = options.stop_vote ? 1.0 : 0.0;
    sums[3] = options.whole_state_vote ? 1.0 : 0.0;
    sums[static_cast<size_t>(kTimings + 2 * me)] =
        std::chrono::duration<double>(reduce_start - step_start).count();
    sums[static_cast<size_t>(kTimings + 1 + 2 * me)] = last_allreduce_seconds_;
    if (r.error.ok()) r.error = comm_->AllreduceSum(std::span<double>(sums));
    r.allreduce_seconds = Since(reduce_start);
    rank_timings_.resize(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      rank_timings_[static_cast<size_t>(k)] = {sums[static_cast<size_t>(kTimings + 2 * k)],
                                               sums[static_cast<size_t>(kTimings + 1 + 2 * k)]};
    }
    if (trace) trace->Add("allreduce", "allreduce", reduce_start);
    if (!r.error.ok()) {
      r.global_step = global_step_;
      return r;
    }
    la.loss = sums[0] / static_cast<double>(global_batch);
    la.correct = static_cast<int64_t>(sums[1]);
    la.accuracy = sums[1] / static_cast<double>(global_batch);
    r.stop_agreed = sums[2] > 0;
    whole_state_agreed = r.stop_agreed || sums[3] > 0;
  }
  r.learning_rate = optimizer_->LearningRate(global_step_);
  if (timed) t0 = Clock::now();
  if (comm_) {
    optimizer_->ApplyParts(update_parts_, global_step_);
  } else {
    optimizer_->Apply(model_->parameters(), global_step_);
  }
  if (trace) trace->Add(optimizer_->name(), "optimizer", t0);
  if (profiling_) {
    times_.optimizer_seconds += Since(t0);
    ++times_.steps;
  }
  if (comm_) {
    // The ranks' new parts of the parameters, and on a whole-state or stop vote (a checkpoint
    // follows) their parts of the optimizer slots as well.
    const Clock::time_point share_start = Clock::now();
    r.error = ShareUpdatedParts(whole_state_agreed);
    r.allreduce_seconds += Since(share_start);
    if (trace) trace->Add("allgather", "allreduce", share_start);
    last_allreduce_seconds_ = r.allreduce_seconds;
    if (!r.error.ok()) {
      state_whole_ = false;  // a part of the update is missing: nothing is saved from it
      r.global_step = global_step_;
      return r;
    }
  }
  r.global_step = ++global_step_;
  r.loss = la.loss;
  r.accuracy = la.accuracy;
  return r;
}

std::span<const float> Trainer::RowWeights(const std::vector<int32_t>& labels,
                                           const std::vector<float>& sample_weights) {
  if (class_weights_.empty()) return sample_weights;  // empty without a weight column
  weights_.resize(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    const float c = class_weights_[static_cast<size_t>(labels[i])];
    weights_[i] = sample_weights.empty() ? c : c * sample_weights[i];
  }
  return weights_;
}

// The large dense layers' kernels (most of a model's parameters) are not reduced at all: their
// Forward and Backward gathered the inputs and output gradients of the global batch (a few hundred
// KB), and each rank forms the gradient of its share of the kernel's row tiles over the whole
// batch, as one process does. The other parameters' sums go through one int64 reduce-scatter.
// Every element and every block partial is formed as in one process, so each rank's part of the
// gradients is the same bits.
Status Trainer::ReduceGradients() {
  const int n = comm_->size(), me = comm_->rank();
  for (DenseLayer* layer : gathered_) {
    const Shard tiles = ShardOf(layer->NumTiles(), me, n);
    layer->GatheredGradients(tiles.begin, tiles.begin + tiles.count);
  }
  // The other parameters' sums: each rank gets the total of its part and forms the gradient
  // there, which is all it updates.
  reduced_sums_.clear();
  for (const Parameter* p : reduced_)
    reduced_sums_.insert(reduced_sums_.end(), p->sum.begin(), p->sum.end());
  TRAININGD_RETURN_IF_ERROR(
      comm_->ReduceScatterSum(std::span<int64_t>(reduced_sums_), reduced_bounds_));
  for (size_t j = 0; j < reduced_.size(); ++j) {
    Parameter& p = *reduced_[j];
    const Shard own = OwnPartOfReduced(j);
    SumsToGradient(reduced_sums_.data() + reduced_offsets_[j] + own.begin, own.count,
                   p.sum_exponent, p.grad.data() + own.begin);
  }
  return Status::Ok();
}

Shard Trainer::OwnPartOfReduced(size_t j) const {
  const int me = comm_->rank();
  const int64_t offset = reduced_offsets_[j], size = reduced_offsets_[j + 1] - offset;
  const auto clamp = [&](int64_t bound) { return std::clamp<int64_t>(bound - offset, 0, size); };
  const int64_t begin = clamp(reduced_bounds_[static_cast<size_t>(me)]);
  return {begin, clamp(reduced_bounds_[static_cast<size_t>(me) + 1]) - begin};
}

Status Trainer::ShareParts(const std::function<Tensor&(Parameter&)>& tensor_of) {
  for (size_t i = 0; i < gathered_.size(); ++i) {
    Tensor& t = tensor_of(*gathered_[i]->parameters()[0]);
    TRAININGD_RETURN_IF_ERROR(comm_->AllgatherParts(AllOf(t), kernel_bounds_[i]));
  }
  if (reduced_.empty()) return Status::Ok();
  // The other parameters, packed into one buffer as their sums were.
  reduced_floats_.resize(static_cast<size_t>(reduced_offsets_.back()));
  for (size_t j = 0; j < reduced_.size(); ++j) {
    const Shard own = OwnPartOfReduced(j);
    std::copy_n(tensor_of(*reduced_[j]).data() + own.begin, own.count,
                reduced_floats_.data() + reduced_offsets_[j] + own.begin);
  }
  TRAININGD_RETURN_IF_ERROR(comm_->AllgatherParts(reduced_floats_, reduced_bounds_));
  for (size_t j = 0; j < reduced_.size(); ++j) {
    Tensor& t = tensor_of(*reduced_[j]);
    std::copy_n(reduced_floats_.data() + reduced_offsets_[j], t.size(), t.data());
  }
  return Status::Ok();
}

Status Trainer::ShareUpdatedParts(bool with_slots) {
  TRAININGD_RETURN_IF_ERROR(ShareParts([](Parameter& p) -> Tensor& { return p.value; }));
  state_whole_ = optimizer_->slots_per_parameter() == 0;
  return with_slots ? MakeStateWhole() : Status::Ok();
}

Status Trainer::MakeStateWhole() {
  if (state_whole_ || !comm_) return Status::Ok();
  for (int k = 0; k < optimizer_->slots_per_parameter(); ++k) {
    TRAININGD_RETURN_IF_ERROR(ShareParts(
        [&](Parameter& p) -> Tensor& { return optimizer_->SlotsOf(p)[static_cast<size_t>(k)]; }));
  }
  state_whole_ = true;
  return Status::Ok();
}

int64_t Trainer::BlocksOf(int64_t batch) const {
  return std::min<int64_t>(batch, reduction_blocks_);
}

Status Trainer::CheckBatch(const Batch& batch) const {
  const Shape& example = model_->input_shape();
  const Shape& got = batch.images.shape();
  if (got.rank() != example.rank() + 1 || got.drop_front() != example) {
    return Status::InvalidArgument("batch.images: expected shape " +
                                   example.with_batch(-1).ToString() + " (N = any), got " +
                                   got.ToString());
  }
  if (comm_ && got[0] > 0 && BlocksOf(got[0]) < comm_->size()) {
    return Status::InvalidArgument("batch.images: " + std::to_string(got[0]) + " examples make " +
                                   std::to_string(BlocksOf(got[0])) + " blocks for " +
                                   std::to_string(comm_->size()) +
                                   " workers; each needs at least one");
  }
  if (!batch.weights.empty()) {
    if (static_cast<int64_t>(batch.weights.size()) != got[0]) {
      return Status::InvalidArgument("batch.weights: expected " + std::to_string(got[0]) +
                                     " weights (one per example), got " +
                                     std::to_string(batch.weights.size()));
    }
    for (size_t i = 0; i < batch.weights.size(); ++i) {
      if (!(batch.weights[i] >= 0) || !std::isfinite(batch.weights[i])) {
        return Status::InvalidArgument("batch.weights[" + std::to_string(i) +
                                       "]: not a finite number >= 0");
      }
    }
  }
  if (task_ == Task::kRegression) {
    if (got[0] < 1 || static_cast<int64_t>(batch.targets.size()) != got[0]) {
      return Status::InvalidArgument("batch.targets: expected " + std::to_string(got[0]) +
                                     " targets (one per example, at least one), got " +
                                     std::to_string(batch.targets.size()));
    }
    for (size_t i = 0; i < batch.targets.size(); ++i) {
      if (!std::isfinite(batch.targets[i])) {
        return Status::InvalidArgument("batch.targets[" + std::to_string(i) +
                                       "]: not a finite number");
      }
    }
    return Status::Ok();
  }
  if (got[0] < 1 || static_cast<int64_t>(batch.labels.size()) != got[0]) {
    return Status::InvalidArgument("batch.labels: expected " + std::to_string(got[0]) +
                                   " labels (one per image, at least one), got " +
                                   std::to_string(batch.labels.size()));
  }
  for (size_t i = 0; i < batch.labels.size(); ++i) {
    if (batch.labels[i] < 0 || batch.labels[i] >= num_classes_) {
      return Status::InvalidArgument("batch.labels[" + std::to_string(i) +
                                     "]: " + std::to_string(batch.labels[i]) + " is not in [0, " +
                                     std::to_string(num_classes_) + ")");
    }
  }
  return Status::Ok();
}

Result<SplitEvaluation> Trainer::Evaluate(const Split& split, int64_t batch_size) {
  const int n_ranks = comm_ ? comm_->size() : 1;
  const Shard shard =
      comm_ ? ShardOf(split.size(), comm_->rank(), n_ranks) : Shard{0, split.size()};
  const bool regression = task_ == Task::kRegression;
  // The whole split's logits (a regression model's outputs), in split order: this rank fills its
  // shard's rows, the ranks exchange theirs, and every rank computes the metrics on the same
  // data (metrics.h), the same bits for any number of ranks.
  const int64_t classes = num_classes_;
  eval_logits_.assign(static_cast<size_t>(split.size() * classes), 0.0f);
  // The sample weights' sum, the loss's (rows weighed by their sample weights only: a class
  // weight is a training device, not the data's) and the correct rows' count.
  double sums[3] = {0, 0, 0};
  for (int64_t begin = 0; begin < shard.count; begin += batch_size) {
    const int64_t n = std::min(batch_size, shard.count - begin);
    CopyRange(split, shard.begin + begin, n, eval_images_, eval_labels_, &eval_targets_,
              &eval_weights_);
    const Tensor& logits = model_->Forward(eval_images_, Mode::kEval);
    if (regression) {
      const RegressionSums r =
          RegressionLossOf(logits, eval_targets_, regression_loss_, huber_delta_, target_scale_,
                           nullptr, 0, eval_weights_);
      sums[0] += r.weight_sum;
      sums[1] += r.loss_sum;
    } else {
      const LossAndAccuracy la =
          SoftmaxCrossEntropy(logits, eval_labels_, nullptr, 0, 0.0f, eval_weights_);
      sums[0] += la.weight_sum;
      sums[1] += la.loss_sum;
      sums[2] += static_cast<double>(la.correct);
    }
    std::copy_n(logits.data(), n * classes, eval_logits_.data() + (shard.begin + begin) * classes);
  }
  if (comm_) {
    TRAININGD_RETURN_IF_ERROR(comm_->AllreduceSum(std::span<double>(sums)));
    std::vector<int64_t> bounds(static_cast<size_t>(n_ranks) + 1);
    for (int k = 0; k <= n_ranks; ++k) {
      bounds[static_cast<size_t>(k)] =
          (k == n_ranks ? split.size() : ShardOf(split.size(), k, n_ranks).begin) * classes;
    }
    TRAININGD_RETURN_IF_ERROR(comm_->AllgatherParts(eval_logits_, bounds));
  }
  SplitEvaluation total;
  total.loss_sum = sums[1];
  total.weight_sum = sums[0];
  if (split.size() == 0 || !(sums[0] > 0)) return total;
  total.loss = sums[1] / sums[0];
  const std::vector<double> weights(split.weights.begin(), split.weights.end());
  if (!regression) {
    total.correct = static_cast<int64_t>(sums[2]);
    total.metrics = ComputeClassificationMetricsFromLogits(eval_logits_, num_classes_, split.labels,
                                                           weights, decision_threshold_);
    total.accuracy = total.metrics.accuracy;
    total.weighted_correct = total.accuracy * total.metrics.weight_sum;
    return total;
  }
  // In the target's units: each output unscaled as Predict does.
  std::vector<double> predictions(eval_logits_.size()), targets(split.targets.size());
  for (size_t i = 0; i < predictions.size(); ++i) {
    predictions[i] = target_scale_.Unscale(eval_logits_[i]);
    targets[i] = split.targets[i];
  }
  const RegressionMetrics m = ComputeRegressionMetrics(predictions, targets, weights);
  total.rmse = m.rmse;
  total.mae = m.mae;
  total.r2 = m.r2;
  for (int64_t i : ScatterSample(split.size())) {
    total.actual.push_back(targets[static_cast<size_t>(i)]);
    total.predicted.push_back(predictions[static_cast<size_t>(i)]);
  }
  return total;
}

void Trainer::EnableProfiling(bool on) {
  profiling_ = on;
  if (on) {
    times_ = LayerTimes{};
    times_.forward_seconds.assign(model_->layers().size(), 0.0);
    times_.backward_seconds.assign(model_->layers().size(), 0.0);
    model_->set_layer_timers(&times_.forward_seconds, &times_.backward_seconds);
  } else {
    model_->set_layer_timers(nullptr, nullptr);
  }
}

}  // namespace trainingd::engine
