#include "trainingd/engine/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "base/float_format.h"
#include "trainingd/engine/optim/adam_optimizer.h"
#include "trainingd/engine/optim/momentum_optimizer.h"
#include "trainingd/engine/optim/sgd_optimizer.h"

namespace trainingd::engine {
namespace {

using internal::FloatToString;

// OK when 0 <= value < 1.
Status CheckUnitInterval(const char* field, float value) {
  if (value >= 0.0f && value < 1.0f) return Status::Ok();
  return Status::InvalidArgument(std::string(field) + " must be in [0, 1), got " +
                                 FloatToString(value));
}

}  // namespace

Status OptimizerOptions::Validate() const {
  switch (type) {
    case Type::kSgd:
      break;
    case Type::kMomentum:
      if (!std::isfinite(momentum) || momentum < 0.0f) {
        return Status::InvalidArgument("momentum must be non-negative and finite, got " +
                                       FloatToString(momentum));
      }
      break;
    case Type::kAdam:
    case Type::kAdamW:
      TRAININGD_RETURN_IF_ERROR(CheckUnitInterval("beta1", beta1));
      TRAININGD_RETURN_IF_ERROR(CheckUnitInterval("beta2", beta2));
      if (!std::isfinite(epsilon) || epsilon <= 0.0f) {
        return Status::InvalidArgument("epsilon must be positive and finite, got " +
                                       FloatToString(epsilon));
      }
      break;
    default:
      return Status::InvalidArgument("type is not a known optimizer type: " +
                                     std::to_string(static_cast<int>(type)));
  }
  if (!std::isfinite(weight_decay) || weight_decay < 0.0f) {
    return Status::InvalidArgument("weight_decay must be non-negative and finite, got " +
                                   FloatToString(weight_decay));
  }
  if (weight_decay_parameters != DecayedParameters::kKernels &&
      weight_decay_parameters != DecayedParameters::kAll) {
    return Status::InvalidArgument("weight_decay_parameters is not a known choice: " +
                                   std::to_string(static_cast<int>(weight_decay_parameters)));
  }
  return learning_rate.Validate();
}

Optimizer::Optimizer(const OptimizerOptions& options, std::vector<std::string> slot_kinds)
    : options_(options), slot_kinds_(std::move(slot_kinds)) {}

float Optimizer::DecayFactor(const Parameter& param, float lr) const {
  if (options_.weight_decay == 0.0f) return 0.0f;
  if (options_.weight_decay_parameters == OptimizerOptions::DecayedParameters::kKernels &&
      param.value.shape().rank() < 2) {
    return 0.0f;
  }
  return lr * options_.weight_decay;
}

void Optimizer::DecayWeights(float* __restrict p, int64_t n, float decay) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) p[i] -= p[i] * decay;
}

void Optimizer::Apply(std::span<Parameter* const> params, int64_t global_step) {
  std::vector<ParameterPart> parts;
  parts.reserve(params.size());
  for (Parameter* p : params) parts.push_back({p, 0, p->value.size()});
  ApplyParts(parts, global_step);
}

Tensor* Optimizer::SlotsFor(const Parameter& param) {
  auto it = slots_.find(param.name);
  if (it == slots_.end()) {
    it = slots_.emplace(param.name, std::vector<Tensor>(slot_kinds_.size())).first;
    for (Tensor& slot : it->second) slot = Tensor(param.value.shape());
  } else if (!it->second.empty() && it->second.front().shape() != param.value.shape()) {
    for (Tensor& slot : it->second) slot = Tensor(param.value.shape());
  }
  return it->second.data();
}

Status Optimizer::CreateSlots(std::span<Parameter* const> params) {
  std::set<std::string_view> seen;
  for (const Parameter* param : params) {
    if (!seen.insert(param->name).second) {
      return Status::InvalidArgument("parameter name '" + param->name + "' appears twice");
    }
    const auto it = slots_.find(param->name);
    if (it == slots_.end() || it->second.empty()) continue;
    const Shape& slot_shape = it->second.front().shape();
    if (slot_shape != param->value.shape()) {
      return Status::InvalidArgument("slot '" + param->name + "/" + slot_kinds_.front() +
                                     "' has shape " + slot_shape.ToString() +
                                     " but its parameter has shape " +
                                     param->value.shape().ToString());
    }
  }
  if (slot_kinds_.empty()) return Status::Ok();
  for (const Parameter* param : params) SlotsFor(*param);
  return Status::Ok();
}

std::vector<std::pair<std::string, const Tensor*>> Optimizer::Slots() const {
  std::vector<std::pair<std::string, const Tensor*>> out;
  out.reserve(slots_.size() * slot_kinds_.size());
  for (const auto& [param_name, slots] : slots_) {
    for (size_t k = 0; k < slots.size(); ++k) {
      out.emplace_back(param_name + "/" + slot_kinds_[k], &slots[k]);
    }
  }
  // Sorted by parameter name is not always sorted by slot name ("a.b/Adam" < "a/Adam").
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

Status Optimizer::RestoreSlot(const std::string& slot_name, const Tensor& value) {
  const size_t slash = slot_name.rfind('/');
  const auto kind = slash == std::string::npos ? slot_kinds_.end()
                                               : std::find(slot_kinds_.begin(), slot_kinds_.end(),
                                                           slot_name.substr(slash + 1));
  if (kind == slot_kinds_.end()) {
    std::string kinds;
    for (const std::string& k : slot_kinds_) kinds += (kinds.empty() ? "" : ", ") + k;
    return Status::NotFound("slot '" + slot_name + "' is not a slot of the " + name() +
                            " optimizer (its slots are '<parameter>/{" + kinds + "}')");
  }
  if (slash == 0) {
    return Status::InvalidArgument("slot '" + slot_name + "' has an empty parameter name");
  }
  const std::string param_name = slot_name.substr(0, slash);
  const size_t k = static_cast<size_t>(kind - slot_kinds_.begin());
  auto it = slots_.find(param_name);
  if (it == slots_.end()) {
    it = slots_.emplace(param_name, std::vector<Tensor>(slot_kinds_.size())).first;
    for (Tensor& slot : it->second) slot = Tensor(value.shape());
  } else if (it->second[k].shape() != value.shape()) {
    return Status::InvalidArgument(
        "slot '" + slot_name + "' restored with shape " + value.shape().ToString() +
        " but the parameter's slots have shape " + it->second[k].shape().ToString());
  }
  it->second[k] = value;
  return Status::Ok();
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerOptions& options) {
  TRAININGD_RETURN_IF_ERROR(options.Validate());
  switch (options.type) {
    case OptimizerOptions::Type::kSgd:
      return std::unique_ptr<Optimizer>(std::make_unique<SgdOptimizer>(options));
    case OptimizerOptions::Type::kMomentum:
      return std::unique_ptr<Optimizer>(std::make_unique<MomentumOptimizer>(options));
    case OptimizerOptions::Type::kAdam:
    case OptimizerOptions::Type::kAdamW:
      return std::unique_ptr<Optimizer>(std::make_unique<AdamOptimizer>(options));
  }
  return Status::Internal("unreachable optimizer type");
}

}  // namespace trainingd::engine
