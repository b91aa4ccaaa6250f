#include "data/feature_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainingd::engine {

FeatureStats::FeatureStats(int64_t features)
    : features_(features),
      count_(static_cast<size_t>(features), 0.0),
      mean_(static_cast<size_t>(features), 0.0),
      m2_(static_cast<size_t>(features), 0.0) {}

void FeatureStats::Add(int64_t first, const float* values, int64_t n) {
  if (features_ == 0) return;
  int64_t f = first % features_;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(f);
    const double v = values[i];
    if (!std::isnan(v)) {
      const double delta = v - mean_[k];
      mean_[k] += delta / (count_[k] += 1);
      m2_[k] += delta * (v - mean_[k]);
    }
    if (++f == features_) f = 0;
  }
}

void FeatureStats::Finish(std::vector<float>* mean, std::vector<float>* stddev) const {
  mean->assign(mean_.begin(), mean_.end());
  stddev->resize(mean_.size());
  if (features_ == 0) return;
  for (size_t k = 0; k < mean_.size(); ++k) {
    float s = count_[k] > 0 ? static_cast<float>(std::sqrt(m2_[k] / count_[k])) : 1.0f;
    if (!(s > 0)) s = 1.0f;                                    // constant, or below float's range
    if (std::isinf(s)) s = std::numeric_limits<float>::max();  // beyond it
    (*stddev)[k] = s;
  }
}

void StandardizeRows(const std::vector<float>& mean, const std::vector<float>& stddev, float* data,
                     int64_t rows, int64_t stride) {
  const size_t features = mean.size();
  if (stride == 0) stride = static_cast<int64_t>(features);
  constexpr double kMax = std::numeric_limits<float>::max();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = data + r * stride;
    // In double: a value and the mean may be further apart than a float can say.
    for (size_t k = 0; k < features; ++k) {
      const double z = (double{row[k]} - mean[k]) / stddev[k];
      row[k] = static_cast<float>(std::clamp(z, -kMax, kMax));
    }
  }
}

}  // namespace trainingd::engine
