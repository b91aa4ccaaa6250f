// FeatureStats: the per-feature mean and population standard deviation of a table's rows, for
// Preprocessing::kStandard. Values arrive as a flat row-major stream, in example order, and are
// accumulated in double (Welford's update), so a streaming probe and a load that feed the same
// values get the same numbers to the bit.
#pragma once

#include <cstdint>
#include <vector>

namespace trainingd::engine {

class FeatureStats {
 public:
  // `features` per row; 0 for none (Add and Finish then do nothing).
  explicit FeatureStats(int64_t features);

  // Adds `n` values that are elements [first, first + n) of the rows, counted from the first row
  // added. Calls must come in order, without gaps. A NaN (a missing value) is skipped: each
  // feature's statistics are those of its present values.
  void Add(int64_t first, const float* values, int64_t n);
  // The means and standard deviations as floats; a feature whose deviation is 0 (constant, or
  // too small for a float) gets 1, so that it maps to 0; one beyond float's range gets its
  // largest value; one without a present value mean 0 and deviation 1.
  void Finish(std::vector<float>* mean, std::vector<float>* stddev) const;

 private:
  int64_t features_;
  std::vector<double> count_, mean_, m2_;
};

// (value - mean) / stddev in place, computed in double and kept within float's range, for the first
// mean.size() values of `rows` rows of `stride` values (0: mean.size()). The npz and CSV readers
// share both.
void StandardizeRows(const std::vector<float>& mean, const std::vector<float>& stddev, float* data,
                     int64_t rows, int64_t stride = 0);

}  // namespace trainingd::engine
