#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {
using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
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
  return t;
}

StepResult Trainer::Step(const StepOptions& options) {
  StepTrace* trace = options.trace;
  const bool timed = profiling_ || trace;
  Clock::time_point t0;
  if (timed) t0 = Clock::now();
  const Tensor* images = &images_;
  const std::vector<int32_t>* labels = &labels_;
  if (options.batch) {
    images = &options.batch->images;
    labels = &options.batch->labels;
  } else {
    input_->Next(images_, labels_);
  }
  if (profiling_) times_.input_seconds += Since(t0);
  if (trace) trace->Add("input", "input", t0);
  model_->set_trace(trace);
  const Tensor& logits = model_->Forward(*images, Mode::kTrain);
  if (timed) t0 = Clock::now();
  const LossAndAccuracy la = SoftmaxCrossEntropy(logits, *labels, &dlogits_);
  if (profiling_) times_.loss_seconds += Since(t0);
  if (trace) trace->Add("softmax_cross_entropy", "loss", t0);
  model_->Backward(dlogits_);
  model_->set_trace(nullptr);
  StepResult r;
  r.learning_rate = optimizer_->LearningRate(global_step_);
  if (timed) t0 = Clock::now();
  optimizer_->Apply(model_->parameters(), global_step_);
  if (trace) trace->Add(optimizer_->name(), "optimizer", t0);
  if (profiling_) {
    times_.optimizer_seconds += Since(t0);
    ++times_.steps;
  }
  r.global_step = ++global_step_;
  r.loss = la.loss;
  r.accuracy = la.accuracy;
  return r;
}

Status Trainer::CheckBatch(const Batch& batch) const {
  const Shape& example = model_->input_shape();
  const Shape& got = batch.images.shape();
  if (got.rank() != example.rank() + 1 || got.drop_front() != example) {
    return Status::InvalidArgument("batch.images: expected shape " +
                                   example.with_batch(-1).ToString() + " (N = any), got " +
                                   got.ToString());
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

LossAndAccuracy Trainer::Evaluate(const Split& split, int64_t batch_size) {
  LossAndAccuracy total;
  double loss_sum = 0;
  for (int64_t begin = 0; begin < split.size(); begin += batch_size) {
    const int64_t n = std::min(batch_size, split.size() - begin);
    CopyRange(split, begin, n, eval_images_, eval_labels_);
    const Tensor& logits = model_->Forward(eval_images_, Mode::kEval);
    const LossAndAccuracy la = SoftmaxCrossEntropy(logits, eval_labels_, nullptr);
    loss_sum += la.loss * static_cast<double>(n);
    total.correct += la.correct;
  }
  if (split.size() > 0) {
    total.loss = loss_sum / static_cast<double>(split.size());
    total.accuracy = static_cast<double>(total.correct) / static_cast<double>(split.size());
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
