// The job spec's enums by their JSON names, shared by its reader (job_spec_json.cpp) and its
// writer (job_spec_json_write.cpp). Private to api/.
#pragma once

#include <cstddef>
#include <string>

#include "trainingd/engine/job/job_spec.h"

namespace trainingd::api::job_spec_names {

// ---------------------------------------------------------------------------------------------
// Names of the enums, shared by the reader and the writer.

template <typename E>
struct EnumName {
  const char* name;
  E value;
};

inline constexpr EnumName<engine::LayerType> kLayerTypes[] = {
    {"conv2d", engine::LayerType::kConv2d},
    {"max_pool2d", engine::LayerType::kMaxPool2d},
    {"dense", engine::LayerType::kDense},
    {"dropout", engine::LayerType::kDropout},
    {"flatten", engine::LayerType::kFlatten},
    {"relu", engine::LayerType::kRelu},
    {"add", engine::LayerType::kAdd},
    {"concat", engine::LayerType::kConcat},
    {"avg_pool2d", engine::LayerType::kAvgPool2d},
    {"global_avg_pool", engine::LayerType::kGlobalAvgPool},
    {"sigmoid", engine::LayerType::kSigmoid},
    {"tanh", engine::LayerType::kTanh},
    {"gelu", engine::LayerType::kGelu},
    {"batch_norm", engine::LayerType::kBatchNorm},
    {"categorical_encoding", engine::LayerType::kCategoricalEncoding}};
inline constexpr EnumName<engine::Padding> kPaddings[] = {{"same", engine::Padding::kSame},
                                                          {"valid", engine::Padding::kValid}};
inline constexpr EnumName<engine::Activation> kActivations[] = {
    {"relu", engine::Activation::kRelu}, {"none", engine::Activation::kNone}};
inline constexpr EnumName<engine::Initializer> kInitializers[] = {
    {"glorot_uniform", engine::Initializer::kGlorotUniform},
    {"truncated_normal", engine::Initializer::kTruncatedNormal}};
using OptimizerType = engine::OptimizerOptions::Type;
inline constexpr EnumName<OptimizerType> kOptimizerTypes[] = {
    {"adam", OptimizerType::kAdam},
    {"adamw", OptimizerType::kAdamW},
    {"sgd", OptimizerType::kSgd},
    {"momentum", OptimizerType::kMomentum}};
using DecayedParameters = engine::OptimizerOptions::DecayedParameters;
inline constexpr EnumName<DecayedParameters> kDecayedParameters[] = {
    {"kernels", DecayedParameters::kKernels}, {"all", DecayedParameters::kAll}};
using ScheduleType = engine::LearningRateSchedule::Type;
inline constexpr EnumName<ScheduleType> kScheduleTypes[] = {
    {"constant", ScheduleType::kConstant},
    {"exponential_decay", ScheduleType::kExponentialDecay},
    {"piecewise_constant", ScheduleType::kStepDecay},
    {"cosine", ScheduleType::kCosineDecay}};
inline constexpr EnumName<engine::Task> kTasks[] = {
    {"classification", engine::Task::kClassification}, {"regression", engine::Task::kRegression}};
inline constexpr EnumName<engine::RegressionLoss> kRegressionLosses[] = {
    {"mse", engine::RegressionLoss::kMse},
    {"mae", engine::RegressionLoss::kMae},
    {"huber", engine::RegressionLoss::kHuber}};
inline constexpr EnumName<engine::Precision> kPrecisions[] = {
    {engine::PrecisionName(engine::Precision::kFloat32), engine::Precision::kFloat32},
    {engine::PrecisionName(engine::Precision::kMixedBfloat16), engine::Precision::kMixedBfloat16}};

template <typename E, size_t N>
const char* NameOf(const EnumName<E> (&names)[N], E value) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::string NameList(const EnumName<E> (&names)[N]) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + std::string(n.name);
  return list;
}

}  // namespace trainingd::api::job_spec_names
