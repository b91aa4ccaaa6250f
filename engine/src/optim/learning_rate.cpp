#include "trainingd/engine/optim/learning_rate.h"

#include <algorithm>
#include <cmath>
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
