// GradientBlocks: how a training step sums its parameter gradients over the examples of its global
// batch, so that the result is bit for bit the same whatever number of processes (data-parallel
// ranks) and threads share the work.
//
// The global batch of B examples is cut into nb = min(reduction_blocks, B) fixed blocks: block j
// holds the examples [floor(B j / nb), floor(B (j + 1) / nb)). A rank trains on a contiguous run
// of whole blocks (ForRank). A layer forms the partial gradient of each block in float, always the
// same way from the same examples, so a block's partial does not depend on who computes it. It
// then rounds the partial onto a fixed-point grid of step 2^-exponent, the same on every rank
// (its exponent comes from the largest magnitudes over the global batch, AgreeMax), and adds it
// to the parameter's 64-bit integer sum (Parameter::sum). Integer addition is exact and
// associative, so neither the threads' nor the ranks' order of adding the blocks, nor the
// ranks' allreduce of the integer sums, can change a bit. FinishGradients turns the sums into
// the float gradients. The grid keeps about 48 bits below the largest possible block partial,
// finer than the float partials it rounds. docs/distributed.md#how-exact has the measurements.
#pragma once

#include <climits>
#include <cstdint>
#include <span>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/dist/communicator.h"
#include "trainingd/engine/nn/layer.h"

namespace trainingd::engine {

// The most blocks a batch may be cut into: 2^12 block partials of at most 2^48 grid steps each
// add up to less than 2^62, so the integer sums cannot overflow.
inline constexpr int kMaxReductionBlocks = 4096;
// The default: whole blocks for 1, 2 and 4 ranks alike, and blocks large enough to cost little
// (docs/distributed.md#how-exact-bit-for-bit-for-any-number-of-workers-and-threads).
inline constexpr int kDefaultReductionBlocks = 4;

class GradientBlocks {
 public:
  // The whole local batch of `batch` examples as one block, in one process (layer tests).
  static GradientBlocks Whole(int64_t batch);
  // The blocks of a global batch of `global` examples cut into min(blocks, global) that `rank`
  // of `size` trains on; `size` must not exceed that number of blocks. `comm` (null in one
  // process) agrees the grids; it must outlive the step.
  static GradientBlocks ForRank(int64_t global, int blocks, int rank, int size, Communicator* comm);

  // The global index of this rank's first example, and how many examples it has.
  int64_t first_example() const { return bounds_.front(); }
  int64_t examples() const { return bounds_.back() - bounds_.front(); }
  // This rank's blocks; block k holds its local examples [begin(k), end(k)).
  int size() const { return static_cast<int>(bounds_.size()) - 1; }
  int64_t begin(int k) const { return bounds_[static_cast<size_t>(k)] - bounds_.front(); }
  int64_t end(int k) const { return bounds_[static_cast<size_t>(k) + 1] - bounds_.front(); }
  // Examples in the largest block of the global batch (the same on every rank).
  int64_t largest() const { return largest_; }
  // Every block of the batch is here (one process): a layer's sums are final when its Backward
  // has formed them, and it turns them into its parameters' gradients itself (FinishGradients).
  bool whole() const { return ranks_ == 1; }

  // Replaces every value by its maximum over the ranks. A failed reduction (a rank gone) is kept
  // in status() and leaves the values as they are; the step then fails.
  void AgreeMax(std::span<float> values);
  // Replaces every value by its sum over the ranks (exact: integers), with AgreeMax's failure
  // handling.
  void AgreeSum(std::span<int64_t> values);
  const Status& status() const { return status_; }

  // The ranks, for layers that split their work over them by columns rather than by examples
  // (DenseLayer::set_step). Like AgreeMax, every rank makes the same calls in the same order; a
  // failed exchange is kept in status() and leaves the outputs sized but unset.
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  int64_t global() const { return global_; }
  // `rank`'s first example in the global batch; ranks() gives global().
  int64_t FirstExampleOf(int rank) const;
  // The whole batch's rows, [global(), width], from every rank's [examples(), width] `local`.
  void GatherRows(const float* local, int64_t width, std::vector<float>& all);
  // `rank`'s share of `width` columns: begins on multiples of 16 (a cache line of floats).
  Shard ColumnsOf(int64_t width, int rank) const;
  // A [global(), width] result formed by columns: `parts` holds, from global() * c.begin for each
  // rank's share c, that rank's columns of every row as a [global(), c.count] matrix, and this
  // rank has formed its own. `out` [examples(), width] receives this rank's rows, every column.
  void ShareColumns(std::vector<float>& parts, int64_t width, float* out);

 private:
  // Rank r trains on blocks [FirstBlockOf(r), FirstBlockOf(r + 1)); block j holds the examples
  // from FirstExampleOfBlock(j) on.
  int64_t FirstBlockOf(int rank) const { return nb_ * rank / ranks_; }
  int64_t FirstExampleOfBlock(int64_t j) const { return global_ * j / nb_; }

  std::vector<int64_t> bounds_;  // global example indices: block k is [bounds_[k], bounds_[k+1])
  int64_t largest_ = 0;
  int64_t global_ = 0;
  int64_t nb_ = 1;  // blocks of the global batch
  int rank_ = 0;
  int ranks_ = 1;
  std::vector<int64_t> part_bounds_;  // GatherRows' and ShareColumns' parts, element offsets
  Communicator* comm_ = nullptr;
  Status status_;
};

// Parameter::sum_exponent when the bound was not finite (the step diverged): the gradient
// becomes NaN, as a float sum would.
inline constexpr int kNonFiniteExponent = INT_MIN;
// The grid exponent for block partials of magnitude at most `bound`: |partial| * 2^e < 2^48,
// leaving a factor of 8 for the rounding of the float partials below the integer conversion's
// limit of 2^51. 0 when the bound is 0 (every partial is 0).
int FixedPointExponent(double bound);

// Each parameter's gradient from its fixed-point sum: grad = sum * 2^-sum_exponent.
void FinishGradients(std::span<Parameter* const> params);
// The same for `n` sums of one parameter whose exponent is `exponent`.
void SumsToGradient(const int64_t* sums, int64_t n, int exponent, float* grad);

}  // namespace trainingd::engine
