#include "trainingd/engine/optim/learning_rate.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "base/float_format.h"

namespace trainingd::engine {
namespace {

using internal::FloatToString;

bool PositiveFinite(float value) { return std::isfinite(value) && value > 0.0f; }

}  // namespace

LearningRateSchedule LearningRateSchedule::Constant(float learning_rate) {
  LearningRateSchedule s;
  s.type = Type::kConstant;
  s.learning_rate = learning_rate;
  return s;
}

LearningRateSchedule LearningRateSchedule::ExponentialDecay(float learning_rate,
                                                            int64_t decay_steps, float decay_rate,
                                                            bool staircase) {
  LearningRateSchedule s;
  s.type = Type::kExponentialDecay;
  s.learning_rate = learning_rate;
  s.decay_steps = decay_steps;
  s.decay_rate = decay_rate;
  s.staircase = staircase;
  return s;
}

LearningRateSchedule LearningRateSchedule::StepDecay(std::vector<int64_t> boundaries,
                                                     std::vector<float> values) {
  LearningRateSchedule s;
  s.type = Type::kStepDecay;
  s.boundaries = std::move(boundaries);
  s.values = std::move(values);
  return s;
}

LearningRateSchedule LearningRateSchedule::CosineDecay(float learning_rate, int64_t decay_steps,
                                                       float alpha, int64_t warmup_steps) {
  LearningRateSchedule s;
  s.type = Type::kCosineDecay;
  s.learning_rate = learning_rate;
  s.decay_steps = decay_steps;
  s.alpha = alpha;
  s.warmup_steps = warmup_steps;
  return s;
}

float LearningRateSchedule::LearningRateAt(int64_t global_step) const {
  const int64_t step = std::max<int64_t>(global_step, 0);
  switch (type) {
    case Type::kConstant:
      return learning_rate;
    case Type::kExponentialDecay: {
      if (decay_steps <= 0) return learning_rate;
      // Integer division for the staircase keeps the exponent exact at any step.
      const double exponent = staircase
                                  ? static_cast<double>(step / decay_steps)
                                  : static_cast<double>(step) / static_cast<double>(decay_steps);
      return static_cast<float>(static_cast<double>(learning_rate) *
                                std::pow(static_cast<double>(decay_rate), exponent));
    }
    case Type::kStepDecay: {
      if (values.empty()) return 0.0f;
      // The first boundary >= step: values[i] applies while step <= boundaries[i].
      const auto it = std::lower_bound(boundaries.begin(), boundaries.end(), step);
      const size_t i = std::min(static_cast<size_t>(it - boundaries.begin()), values.size() - 1);
      return values[i];
    }
    case Type::kCosineDecay: {
      const double peak = learning_rate;
      if (step < warmup_steps) {
        return static_cast<float>(peak * static_cast<double>(step) /
                                  static_cast<double>(warmup_steps));
      }
      if (decay_steps <= 0) return learning_rate;
      const double done = static_cast<double>(std::min(step - warmup_steps, decay_steps)) /
                          static_cast<double>(decay_steps);
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * done));
      const double a = alpha;
      return static_cast<float>(peak * ((1.0 - a) * cosine + a));
    }
  }
  return 0.0f;
}

Status LearningRateSchedule::Validate() const {
  switch (type) {
    case Type::kConstant:
    case Type::kExponentialDecay:
      if (!PositiveFinite(learning_rate)) {
        return Status::InvalidArgument("learning_rate must be positive and finite, got " +
                                       FloatToString(learning_rate));
      }
      if (type == Type::kConstant) return Status::Ok();
      if (decay_steps <= 0) {
        return Status::InvalidArgument("decay_steps must be positive, got " +
                                       std::to_string(decay_steps));
      }
      if (!PositiveFinite(decay_rate)) {
        return Status::InvalidArgument("decay_rate must be positive and finite, got " +
                                       FloatToString(decay_rate));
      }
      return Status::Ok();
    case Type::kCosineDecay:
      if (!PositiveFinite(learning_rate)) {
        return Status::InvalidArgument("learning_rate must be positive and finite, got " +
                                       FloatToString(learning_rate));
      }
      if (decay_steps <= 0) {
        return Status::InvalidArgument("decay_steps must be positive, got " +
                                       std::to_string(decay_steps));
      }
      if (warmup_steps < 0) {
        return Status::InvalidArgument("warmup_steps must be >= 0, got " +
                                       std::to_string(warmup_steps));
      }
      if (!(alpha >= 0.0f && alpha <= 1.0f)) {
        return Status::InvalidArgument("alpha must be in [0, 1], got " + FloatToString(alpha));
      }
      return Status::Ok();
    case Type::kStepDecay:
      for (size_t i = 1; i < boundaries.size(); ++i) {
        if (boundaries[i] <= boundaries[i - 1]) {
          return Status::InvalidArgument("boundaries must be strictly increasing, but boundaries[" +
                                         std::to_string(i) +
                                         "] = " + std::to_string(boundaries[i]) + " follows " +
                                         std::to_string(boundaries[i - 1]));
        }
      }
      if (values.size() != boundaries.size() + 1) {
        return Status::InvalidArgument("values must have one more entry than boundaries (" +
                                       std::to_string(boundaries.size() + 1) + "), got " +
                                       std::to_string(values.size()));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        if (!PositiveFinite(values[i])) {
          return Status::InvalidArgument("values[" + std::to_string(i) +
                                         "] must be positive and finite, got " +
                                         FloatToString(values[i]));
        }
      }
      return Status::Ok();
  }
  return Status::InvalidArgument("type is not a known schedule type: " +
                                 std::to_string(static_cast<int>(type)));
}

}  // namespace trainingd::engine
