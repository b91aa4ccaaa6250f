// BatchIterator: the training input pipeline, minibatches drawn from a Split epoch after epoch.
//
// Semantics follow TensorFlow's DataSet.next_batch
// (tensorflow/contrib/learn/python/learn/datasets/mnist.py): every batch has exactly batch_size
// examples; an epoch visits every example exactly once; when fewer than batch_size examples remain
// in an epoch, the batch takes the rest of this epoch followed by the start of the next epoch.
//
// Determinism: the example order of epoch e depends only on (seed, e). With shuffling it is a
// Fisher-Yates permutation of 0..N-1 drawn from Rng::ForStream(seed, e): for i = N-1 down to 1,
// swap positions i and UniformInt(i + 1). Without shuffling it is file order. So the position
// (state()) is all a checkpoint needs to resume the identical batch sequence with Restore().
//
// Augmentation (augmentation.h): with an Augmenter, each example is copied through it, with the
// draws of (its epoch, its index in the split), so the batches stay a function of the position.
//
// Not thread-safe. The iterator refers to the Split it was created from, which must outlive it and
// must not change while it is in use.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/augmentation.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

class BatchIterator {
 public:
  // The position in the batch sequence.
  struct State {
    int64_t epoch = 0;           // epochs completed; the next examples come from this epoch's order
    int64_t index_in_epoch = 0;  // examples of this epoch already returned, in [0, N]
  };

  // Returns InvalidArgument when batch_size is not in [1, split.size()] or the split's images and
  // labels disagree on the number of examples. The iterator starts at epoch 0, index 0.
  static Result<BatchIterator> Create(const Split& split, int64_t batch_size, uint64_t seed,
                                      bool shuffle = true);

  // Fills the next batch: `images` is resized to [batch_size, H, W, 1] and `labels` to batch_size.
  // Reuses their allocations; copies one example per memcpy (through the Augmenter, when set).
  void Next(Tensor& images, std::vector<int32_t>& labels);
  // The same step through the sequence, but only examples [slice_begin, slice_begin +
  // slice_count) of the batch are copied (one rank's share of a data-parallel global batch):
  // every rank advances through the same global order and takes its own slice of it.
  // A regression split's targets go to `targets`, a split's sample weights to `weights` (each
  // resized to slice_count) when it is not null.
  void Next(Tensor& images, std::vector<int32_t>& labels, int64_t slice_begin, int64_t slice_count,
            std::vector<float>* targets = nullptr, std::vector<float>* weights = nullptr);

  // Every example Next() copies from now on goes through `augmenter` (training only).
  void set_augmenter(Augmenter augmenter) { augmenter_ = std::move(augmenter); }

  State state() const { return {epoch_, index_in_epoch_}; }
  // Moves to `state` (e.g. one saved in a checkpoint), after which Next() returns exactly what it
  // returned after that state was saved. InvalidArgument if epoch < 0 or index_in_epoch is not in
  // [0, N]; the iterator is unchanged then.
  Status Restore(const State& state);

  // Epochs completed (the epoch the next example is taken from, except right after a batch that
  // ended exactly at the end of an epoch, where it is still that epoch's number).
  int64_t epoch() const { return epoch_; }
  int64_t batch_size() const { return batch_size_; }
  int64_t num_examples() const { return split_->size(); }

 private:
  BatchIterator(const Split& split, int64_t batch_size, uint64_t seed, bool shuffle);
  // Computes order_ for epoch_.
  void MakeOrder();

  const Split* split_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0;
  int64_t index_in_epoch_ = 0;
  std::vector<int64_t> order_;  // example indices of epoch_, in visiting order
  std::optional<Augmenter> augmenter_;
};

// Copies examples [begin, begin + count) of `split`, in order, into `images` (resized to
// [count, H, W, 1]) and `labels` (resized to count), and a regression split's targets into
// `targets` and its sample weights into `weights` when they are not null; for evaluation passes
// over a whole split, whose last batch may be short. Requires 0 <= begin, 0 <= count and begin +
// count <= split.size().
void CopyRange(const Split& split, int64_t begin, int64_t count, Tensor& images,
               std::vector<int32_t>& labels, std::vector<float>* targets = nullptr,
               std::vector<float>* weights = nullptr);

}  // namespace trainingd::engine
