#include "trainingd/engine/data/batch_iterator.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <numeric>
#include <utility>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/base/random.h"

namespace trainingd::engine {

Result<BatchIterator> BatchIterator::Create(const Split& split, int64_t batch_size, uint64_t seed,
                                            bool shuffle) {
  const Shape& shape = split.images.shape();
  if (shape.rank() < 1 || shape[0] != split.size() ||
      (!split.targets.empty() && !split.labels.empty() &&
       split.labels.size() != split.targets.size())) {
    return Status::InvalidArgument("split is inconsistent: images have shape " + shape.ToString() +
                                   " but there are " + std::to_string(split.size()) + " labels");
  }
  if (batch_size < 1 || batch_size > split.size()) {
    return Status::InvalidArgument("batch_size = " + std::to_string(batch_size) +
                                   " must be in [1, " + std::to_string(split.size()) +
                                   "] (the number of examples in the split)");
  }
  return BatchIterator(split, batch_size, seed, shuffle);
}

BatchIterator::BatchIterator(const Split& split, int64_t batch_size, uint64_t seed, bool shuffle)
    : split_(&split), batch_size_(batch_size), seed_(seed), shuffle_(shuffle) {
  MakeOrder();
}

void BatchIterator::MakeOrder() {
  const int64_t n = split_->size();
  order_.resize(static_cast<size_t>(n));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!shuffle_) return;
  Rng rng = Rng::ForStream(seed_, static_cast<uint64_t>(epoch_));
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(i + 1)));
    std::swap(order_[static_cast<size_t>(i)], order_[static_cast<size_t>(j)]);
  }
}

namespace {
// Below this many examples a batch is gathered on the calling thread.
constexpr int64_t kMinParallelExamples = 64;
}  // namespace

void BatchIterator::Next(Tensor& images, std::vector<int32_t>& labels) {
  Next(images, labels, 0, batch_size_);
}

void BatchIterator::Next(Tensor& images, std::vector<int32_t>& labels, int64_t slice_begin,
                         int64_t slice_count, std::vector<float>* targets,
                         std::vector<float>* weights) {
  assert(slice_begin >= 0 && slice_count >= 0 && slice_begin + slice_count <= batch_size_);
  const int64_t n = split_->size();
  const Shape example = split_->example_shape();
  const int64_t per_example = example.num_elements();
  images.Resize(example.with_batch(slice_count));
  const bool has_labels = !split_->labels.empty();
  labels.resize(has_labels ? static_cast<size_t>(slice_count) : 0);
  // Per-example floats the split has and the caller wants: resized, and where they go.
  const auto wanted = [&](std::vector<float>* out, const std::vector<float>& in) -> float* {
    if (!out) return nullptr;
    out->resize(in.empty() ? 0 : static_cast<size_t>(slice_count));
    return in.empty() ? nullptr : out->data();
  };
  float* target = wanted(targets, split_->targets);
  float* weight = wanted(weights, split_->weights);

  const float* src = split_->images.data();
  float* dst = images.data();
  const size_t bytes = static_cast<size_t>(per_example) * sizeof(float);
  const int64_t slice_end = slice_begin + slice_count;
  int64_t filled = 0;  // examples of the global batch passed, in this rank's slice or not
  while (filled < batch_size_) {
    if (index_in_epoch_ == n) {
      ++epoch_;
      index_in_epoch_ = 0;
      MakeOrder();
    }
    const int64_t take = std::min(batch_size_ - filled, n - index_in_epoch_);
    // The part of [filled, filled + take) inside the slice, copied to its place in the slice.
    const int64_t lo = std::max(filled, slice_begin);
    const int64_t hi = std::min(filled + take, slice_end);
    // A gather of scattered rows is bound by memory latency, which two threads overlap: the input
    // of softmax regression at batch 256 took a third of its step on one.
    if (hi > lo) {
      const int64_t first = index_in_epoch_ + (lo - filled);
      ParallelFor(hi - lo, kMinParallelExamples, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const int64_t example_index = order_[static_cast<size_t>(first + k)];
          const int64_t to = lo - slice_begin + k;
          if (augmenter_) {
            augmenter_->Apply(epoch_, example_index, src + example_index * per_example,
                              dst + to * per_example);
          } else {
            std::memcpy(dst + to * per_example, src + example_index * per_example, bytes);
          }
          if (has_labels) {
            labels[static_cast<size_t>(to)] = split_->labels[static_cast<size_t>(example_index)];
          }
          if (target) target[to] = split_->targets[static_cast<size_t>(example_index)];
          if (weight) weight[to] = split_->weights[static_cast<size_t>(example_index)];
        }
      });
    }
    index_in_epoch_ += take;
    filled += take;
  }
}

Status BatchIterator::Restore(const State& state) {
  if (state.epoch < 0) {
    return Status::InvalidArgument(
        "cannot restore batch iterator: epoch = " + std::to_string(state.epoch) + " is negative");
  }
  if (state.index_in_epoch < 0 || state.index_in_epoch > split_->size()) {
    return Status::InvalidArgument(
        "cannot restore batch iterator: index_in_epoch = " + std::to_string(state.index_in_epoch) +
        " is not in [0, " + std::to_string(split_->size()) + "]");
  }
  const bool new_epoch = state.epoch != epoch_;
  epoch_ = state.epoch;
  index_in_epoch_ = state.index_in_epoch;
  if (new_epoch) MakeOrder();
  return Status::Ok();
}

void CopyRange(const Split& split, int64_t begin, int64_t count, Tensor& images,
               std::vector<int32_t>& labels, std::vector<float>* targets,
               std::vector<float>* weights) {
  assert(begin >= 0 && count >= 0 && begin + count <= split.size());
  const Shape example = split.example_shape();
  const int64_t per_example = example.num_elements();
  images.Resize(example.with_batch(count));
  labels.resize(split.labels.empty() ? 0 : static_cast<size_t>(count));
  for (auto [out, in] : {std::pair{targets, &split.targets}, std::pair{weights, &split.weights}}) {
    if (out) out->resize(in->empty() ? 0 : static_cast<size_t>(count));
  }
  if (count == 0) return;
  std::memcpy(images.data(), split.images.data() + begin * per_example,
              static_cast<size_t>(count * per_example) * sizeof(float));
  if (!split.labels.empty()) std::copy_n(split.labels.begin() + begin, count, labels.begin());
  for (auto [out, in] : {std::pair{targets, &split.targets}, std::pair{weights, &split.weights}}) {
    if (out && !in->empty()) std::copy_n(in->begin() + begin, count, out->begin());
  }
}

}  // namespace trainingd::engine
