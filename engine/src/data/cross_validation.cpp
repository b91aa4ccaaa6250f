#include "trainingd/engine/data/cross_validation.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

namespace trainingd::engine {
namespace {

// SplitMix64 (Steele, Lea and Flood, 2014): a small generator whose output is fixed by its seed.
class FoldRng {
 public:
  explicit FoldRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [0, n): the remainder (its bias, below n / 2^64, does not matter here).
  uint64_t Below(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

// Fisher-Yates over `items` from `seed`.
void Shuffle(std::vector<int64_t>* items, uint64_t seed) {
  FoldRng rng(seed);
  for (size_t i = items->size(); i > 1; --i) {
    std::swap((*items)[i - 1], (*items)[rng.Below(i)]);
  }
}

// The rows `rows` of `split`, in that order.
Split Gather(const Split& split, const std::vector<int64_t>& rows) {
  Split out;
  const Shape example = split.example_shape();
  const int64_t width = split.size() > 0 ? split.images.size() / split.size() : 0;
  out.images = Tensor(example.with_batch(static_cast<int64_t>(rows.size())));
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(out.images.data() + static_cast<int64_t>(i) * width,
                split.images.data() + rows[i] * width, static_cast<size_t>(width) * sizeof(float));
  }
  // Whichever per-example columns the split has: class ids, a regression's targets, weights.
  const auto take = [&](const auto& from, auto& to) {
    if (from.empty()) return;
    to.reserve(rows.size());
    for (int64_t r : rows) to.push_back(from[static_cast<size_t>(r)]);
  };
  take(split.labels, out.labels);
  take(split.targets, out.targets);
  take(split.weights, out.weights);
  return out;
}

}  // namespace

Result<std::vector<int32_t>> AssignFolds(const std::vector<int32_t>& labels, int64_t folds,
                                         bool stratified, uint64_t seed) {
  if (folds < kMinFolds || folds > kMaxFolds) {
    return Status::InvalidArgument("folds must be in [" + std::to_string(kMinFolds) + ", " +
                                   std::to_string(kMaxFolds) + "], got " + std::to_string(folds));
  }
  const auto n = static_cast<int64_t>(labels.size());
  if (folds > n) {
    return Status::InvalidArgument("folds: " + std::to_string(folds) + " folds of " +
                                   std::to_string(n) +
                                   " training examples: each fold needs at least one");
  }
  // The examples of each group (one group, or one per class), in file order.
  std::map<int32_t, std::vector<int64_t>> groups;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[static_cast<size_t>(i)];
    if (label < 0) return Status::InvalidArgument("label " + std::to_string(label) + " < 0");
    groups[stratified ? label : 0].push_back(i);
  }
  std::vector<int32_t> fold_of(static_cast<size_t>(n), 0);
  int64_t position = 0;  // continues across groups, so the folds stay within one of each other
  for (auto& [label, rows] : groups) {
    // Each class its own stream: a class's folds do not depend on the other classes' sizes.
    Shuffle(&rows, seed ^ (0x5851f42d4c957f2dULL * (static_cast<uint64_t>(label) + 1)));
    for (int64_t row : rows) {
      fold_of[static_cast<size_t>(row)] = static_cast<int32_t>(position++ % folds);
    }
  }
  return fold_of;
}

Status ApplyFold(Datasets* data, int64_t folds, int64_t fold, bool stratified, uint64_t seed) {
  if (fold < 0 || fold >= folds) {
    return Status::InvalidArgument("fold must be in [0, " + std::to_string(folds) + "), got " +
                                   std::to_string(fold));
  }
  // A regression split has no classes: its folds are plain, whatever `stratified` says.
  const bool classes = !data->train.labels.empty();
  auto fold_of =
      AssignFolds(classes ? data->train.labels
                          : std::vector<int32_t>(static_cast<size_t>(data->train.size()), 0),
                  folds, stratified && classes, seed);
  if (!fold_of.ok()) return fold_of.status();
  std::vector<int64_t> train_rows, validation_rows;
  for (size_t i = 0; i < fold_of->size(); ++i) {
    ((*fold_of)[i] == fold ? validation_rows : train_rows).push_back(static_cast<int64_t>(i));
  }
  Split validation = Gather(data->train, validation_rows);
  Split train = Gather(data->train, train_rows);
  data->validation = std::move(validation);
  data->train = std::move(train);
  return Status::Ok();
}

}  // namespace trainingd::engine
