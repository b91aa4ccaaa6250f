// k-fold cross-validation of a training split (docs/experiments.md#cross-validation).
//
// The training split (what the job would train on with validation_size 0, so after
// max_train_examples) is divided into `folds` folds; fold i is the validation split of the job
// with dataset.fold = i, and the rest is its training split, in file order. Which fold an example
// is in is a pure function of (seed, folds, the examples' labels in file order): the same
// whichever trials run, in which order or process, and after a restart.
//
//   plain:      the examples are permuted (Fisher-Yates driven by SplitMix64 from `seed`; no
//               standard-library distribution, so every platform agrees) and the example at
//               position p of the permutation goes to fold p mod folds;
//   stratified: the same within each class (its own stream, from seed and the class id), the
//               positions continuing from class to class, so every fold holds floor or ceil of
//               count/folds of each class and the folds' sizes differ by at most one. A class
//               with fewer examples than folds is not an error (scikit-learn's StratifiedKFold
//               warns and does the same): its examples go to as many folds as it has.
#pragma once

#include <cstdint>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

inline constexpr int64_t kMinFolds = 2;
inline constexpr int64_t kMaxFolds = 20;

// The fold of each example (in [0, folds)), by the rule above. InvalidArgument for folds outside
// [kMinFolds, kMaxFolds], more folds than examples, or a label < 0.
Result<std::vector<int32_t>> AssignFolds(const std::vector<int32_t>& labels, int64_t folds,
                                         bool stratified, uint64_t seed);

// Replaces data->validation with fold `fold` of data->train and data->train with the other
// folds (both in file order), each example with its label, target and weight. A regression
// split (no class ids) is divided plainly: there are no classes to stratify by. Errors of
// AssignFolds; InvalidArgument for fold outside [0, folds).
Status ApplyFold(Datasets* data, int64_t folds, int64_t fold, bool stratified, uint64_t seed);

}  // namespace trainingd::engine
