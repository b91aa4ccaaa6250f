// The job spec's canonical JSON (JobSpecToJson): every field, the defaults written out, so that
// a job's recorded spec says exactly what ran (docs/job-spec.md#canonical-form). Its reader is
// job_spec_json.cpp.
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "job_spec_names.h"
#include "table_columns_json.h"
#include "trainingd/api/job_spec_json.h"

namespace trainingd::api {
namespace {

using json = nlohmann::json;
using namespace job_spec_names;  // NOLINT(google-build-using-namespace): the enums' names

// The shortest decimal that reads back as `f`, as the double nearest to it: 1e-4f is written
// 0.0001, not 9.999999747378752e-05.
json FloatValue(float f) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), f);
  if (ec == std::errc()) {
    const double d = std::strtod(std::string(buf, end).c_str(), nullptr);
    if (static_cast<float>(d) == f) return d;
  }
  return static_cast<double>(f);
}

json TriggerFields(const engine::TriggerSpec& t, json o) {
  o["every_steps"] = t.every_steps;
  o["every_secs"] = t.every_secs;
  return o;
}

json LayerValue(const engine::LayerSpec& l) {
  using engine::LayerType;
  json o = {{"type", NameOf(kLayerTypes, l.type)}};
  switch (l.type) {
    case LayerType::kConv2d:
      o["filters"] = l.filters;
      o["kernel"] = l.kernel;
      o["stride"] = l.stride;
      o["padding"] = NameOf(kPaddings, l.padding);
      break;
    case LayerType::kMaxPool2d:
    case LayerType::kAvgPool2d:
      o["pool"] = l.pool;
      o["stride"] = l.stride;
      break;
    case LayerType::kDense:
      o["units"] = l.units;
      break;
    case LayerType::kDropout:
      o["rate"] = FloatValue(l.rate);
      break;
    case LayerType::kRelu:
    case LayerType::kFlatten:
    case LayerType::kAdd:
    case LayerType::kConcat:
    case LayerType::kGlobalAvgPool:
    case LayerType::kSigmoid:
    case LayerType::kTanh:
    case LayerType::kGelu:
      break;
    case LayerType::kBatchNorm:
      o["momentum"] = FloatValue(l.momentum);
      o["epsilon"] = FloatValue(l.epsilon);
      break;
    case LayerType::kCategoricalEncoding:
      o["category_codes"] = l.category_codes;
      o["embedding_dims"] = l.embedding_dims;
      break;
  }
  // Only a graph's layers carry these, so a sequential stack's JSON is what it always was.
  if (!l.name.empty()) o["name"] = l.name;
  if (!l.inputs.empty()) o["inputs"] = l.inputs;
  if (l.type == LayerType::kConv2d || l.type == LayerType::kDense) {
    o["activation"] = NameOf(kActivations, l.activation);
    o["initializer"] = NameOf(kInitializers, l.initializer);
    o["stddev"] = FloatValue(l.stddev);
    o["bias_init"] = FloatValue(l.bias_init);
  }
  return o;
}

json ScheduleValue(const engine::LearningRateSchedule& s) {
  switch (s.type) {
    case ScheduleType::kConstant:
      return FloatValue(s.learning_rate);
    case ScheduleType::kExponentialDecay:
      return {{"type", NameOf(kScheduleTypes, s.type)},
              {"learning_rate", FloatValue(s.learning_rate)},
              {"decay_steps", s.decay_steps},
              {"decay_rate", FloatValue(s.decay_rate)},
              {"staircase", s.staircase}};
    case ScheduleType::kStepDecay: {
      json values = json::array();
      for (const float v : s.values) values.push_back(FloatValue(v));
      return {{"type", NameOf(kScheduleTypes, s.type)},
              {"boundaries", s.boundaries},
              {"values", std::move(values)}};
    }
    case ScheduleType::kCosineDecay:
      return {{"type", NameOf(kScheduleTypes, s.type)},
              {"learning_rate", FloatValue(s.learning_rate)},
              {"decay_steps", s.decay_steps},
              {"warmup_steps", s.warmup_steps},
              {"alpha", FloatValue(s.alpha)}};
  }
  return nullptr;
}

json OptimizerValue(const engine::OptimizerOptions& o) {
  json v = {{"type", NameOf(kOptimizerTypes, o.type)},
            {"learning_rate", ScheduleValue(o.learning_rate)}};
  switch (o.type) {
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW:
      v["beta1"] = FloatValue(o.beta1);
      v["beta2"] = FloatValue(o.beta2);
      v["epsilon"] = FloatValue(o.epsilon);
      break;
    case OptimizerType::kMomentum:
      v["momentum"] = FloatValue(o.momentum);
      v["use_nesterov"] = o.use_nesterov;
      break;
    case OptimizerType::kSgd:
      break;
  }
  // Written for every type, so that an experiment's space may set it over any base job.
  v["weight_decay"] = FloatValue(o.weight_decay);
  v["weight_decay_parameters"] = NameOf(kDecayedParameters, o.weight_decay_parameters);
  return v;
}

json HooksValue(const engine::HooksSpec& h) {
  json v;
  v["checkpoint"] =
      TriggerFields(h.checkpoint.trigger,
                    {{"enabled", h.checkpoint.enabled},
                     {"max_to_keep", h.checkpoint.max_to_keep},
                     {"keep_checkpoint_every_n_hours", h.checkpoint.keep_checkpoint_every_n_hours},
                     {"keep_best", h.checkpoint.keep_best}});
  v["summary"] = TriggerFields(h.summary.trigger, {{"enabled", h.summary.enabled}});
  v["step_counter"] = {{"enabled", h.step_counter.enabled},
                       {"every_steps", h.step_counter.every_steps}};
  v["logging"] = {{"enabled", h.logging.enabled},
                  {"every_n_iter", h.logging.every_n_iter},
                  {"every_n_secs", h.logging.every_n_secs},
                  {"tensors", h.logging.tensors},
                  {"at_end", h.logging.at_end}};
  v["nan_guard"] = {{"enabled", h.nan_guard.enabled}, {"fail", h.nan_guard.fail}};
  v["evaluation"] = TriggerFields(h.evaluation.trigger, {{"enabled", h.evaluation.enabled},
                                                         {"split", h.evaluation.split},
                                                         {"at_end", h.evaluation.at_end}});
  v["final_eval"] = {{"enabled", h.final_eval.enabled}, {"split", h.final_eval.split}};
  const engine::EarlyStoppingHookSpec& es = h.early_stopping;
  v["early_stopping"] = TriggerFields(es.trigger, {{"enabled", es.enabled},
                                                   {"monitor", es.monitor},
                                                   {"mode", es.mode},
                                                   {"patience", es.patience},
                                                   {"min_delta", es.min_delta},
                                                   {"restore_best", es.restore_best}});
  v["profiler"] = TriggerFields(h.profiler.trigger, {{"enabled", h.profiler.enabled}});
  return v;
}

json DatasetValue(const engine::DatasetSpec& d) {
  json v = {{"name", d.name}, {"format", d.format}};
  if (d.format != "idx") {
    v["sha256"] = d.sha256;
    v["normalize"] = d.normalize;
  }
  if (!d.weight_column.empty()) v["weight_column"] = d.weight_column;
  if (d.format == "csv") {
    v["label_column"] = d.label_column;
    json columns = ColumnOptionsToJson(d.columns);
    if (!columns.empty()) v["columns"] = std::move(columns);
    v["test_file"] = d.test_file;
    if (!d.test_file) {
      v["test_fraction"] = d.test_fraction;
      v["split_seed"] = d.split_seed;
    }
  }
  // Absent = the dataset decides (engine::kAutoValidationSize).
  if (d.validation_size != engine::kAutoValidationSize) v["validation_size"] = d.validation_size;
  v["max_train_examples"] = d.max_train_examples;
  v["max_test_examples"] = d.max_test_examples;
  if (d.folds > 0) {  // cross-validation; absent otherwise
    v["folds"] = d.folds;
    v["fold"] = d.fold;
    v["stratified"] = d.stratified;
    v["split_seed"] = d.split_seed;  // the folds' seed, for every format
  }
  return v;
}

}  // namespace

json LayersToJsonValue(const engine::ModelSpec& model) {
  json layers = json::array();
  for (const engine::LayerSpec& l : model.layers) layers.push_back(LayerValue(l));
  return layers;
}

json FloatJsonValue(float f) { return FloatValue(f); }

json JobSpecToJsonValue(const engine::JobSpec& spec) {
  json model;
  if (!spec.model_preset.empty()) model["preset"] = spec.model_preset;
  model["layers"] = LayersToJsonValue(spec.model);
  json out = {{"name", spec.name},
              {"dataset", DatasetValue(spec.dataset)},
              {"model", std::move(model)},
              {"precision", NameOf(kPrecisions, spec.precision)},
              {"optimizer", OptimizerValue(spec.optimizer)},
              {"label_smoothing", FloatValue(spec.label_smoothing)},
              {"batch_size", spec.batch_size},
              {"max_steps", spec.max_steps},
              {"num_epochs", spec.num_epochs},
              {"seed", spec.seed},
              {"hooks", HooksValue(spec.hooks)},
              {"distributed",
               {{"workers", spec.distributed.workers},
                {"hosts", spec.distributed.hosts},
                {"hostfile", spec.distributed.hostfile},
                {"max_restarts", spec.distributed.max_restarts},
                {"stall_timeout_secs", spec.distributed.stall_timeout_secs},
                {"reduction_blocks", spec.distributed.reduction_blocks}}},
              {"resources",
               {{"cpus_per_worker", spec.resources.cpus_per_worker},
                {"time_limit_secs", spec.resources.time_limit_secs}}}};
  // Only when set, so the canonical spec of a job without one is what it always was.
  if (spec.priority != 0) out["priority"] = spec.priority;
  if (spec.task == engine::Task::kRegression) {
    out["task"] = NameOf(kTasks, spec.task);
    out["loss"] = NameOf(kRegressionLosses, spec.loss);
    if (spec.loss == engine::RegressionLoss::kHuber)
      out["huber_delta"] = FloatValue(spec.huber_delta);
  }
  if (spec.decision_threshold) out["decision_threshold"] = *spec.decision_threshold;
  if (spec.class_weights.balanced) out["class_weights"] = "balanced";
  if (!spec.class_weights.by_name.empty()) {
    json weights = json::object();
    for (const auto& [name, w] : spec.class_weights.by_name) weights[name] = FloatValue(w);
    out["class_weights"] = std::move(weights);
  }
  if (spec.categorical != engine::CategoricalOptions{}) {
    out["categorical"] = {{"one_hot_max_levels", spec.categorical.one_hot_max_levels},
                          {"embedding_dim", spec.categorical.embedding_dim}};
  }
  const engine::AugmentationSpec& a = spec.augmentation;
  if (a.enabled()) {
    json aug = {{"horizontal_flip", a.horizontal_flip},
                {"translate", FloatValue(a.translate)},
                {"brightness", FloatValue(a.brightness)},
                {"contrast", FloatValue(a.contrast)}};
    if (a.random_crop_padding > 0) aug["random_crop"] = {{"padding", a.random_crop_padding}};
    out["augmentation"] = std::move(aug);
  }
  return out;
}

std::string JobSpecToJson(const engine::JobSpec& spec, int indent) {
  return JobSpecToJsonValue(spec).dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainingd::api
