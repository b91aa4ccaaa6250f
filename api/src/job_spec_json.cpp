#include "trainingd/api/job_spec_json.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "job_spec_names.h"
#include "table_columns_json.h"
#include "trainingd/api/strict_json.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::api {
namespace {

using engine::Status;
using namespace strict_json;  // NOLINT(google-build-using-namespace): this file's vocabulary

using namespace job_spec_names;  // NOLINT(google-build-using-namespace): the enums' names
// ---------------------------------------------------------------------------------------------
// Reading, on the strict JSON toolkit (strict_json.h). Every function returns OK or
// InvalidArgument "<path>: <message>".

template <typename E, size_t N>
Status ReadEnum(const json& v, const std::string& path, const EnumName<E> (&names)[N], E* out) {
  std::string s;
  TRAININGD_RETURN_IF_ERROR(Read(v, path, &s));
  for (const auto& n : names) {
    if (s == n.name) {
      *out = n.value;
      return Status::Ok();
    }
  }
  return Bad(path, "must be one of " + NameList(names) + "; got " + Quote(s));
}

template <typename E, size_t N>
Status EnumField(const json& obj, const std::string& path, const char* key,
                 const EnumName<E> (&names)[N], E* out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  return ReadEnum(*it, Child(path, key), names, out);
}

// Keys of `obj` outside `used` are fields of another `what` (a key unknown to every kind was
// already rejected by CheckObject).
Status CheckUsed(const json& obj, const std::string& path, Keys used, const std::string& what) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(used.begin(), used.end(), key) != used.end()) continue;
    std::string list;
    for (const auto k : used) list += (list.empty() ? "" : ", ") + std::string(k);
    return Bad(Child(path, key), "not used by " + what + " (which takes " + list + ")");
  }
  return Status::Ok();
}

Status ReadLayer(const json& v, const std::string& path, engine::LayerSpec* out) {
  using engine::LayerType;
  if (!v.is_object()) return Bad(path, std::string("must be an object, got ") + TypeName(v));
  const auto type_it = v.find("type");
  if (type_it == v.end()) {
    return Bad(Child(path, "type"), "required; one of " + NameList(kLayerTypes));
  }
  engine::LayerSpec l;
  TRAININGD_RETURN_IF_ERROR(ReadEnum(*type_it, Child(path, "type"), kLayerTypes, &l.type));
  switch (l.type) {
    case LayerType::kConv2d:
      TRAININGD_RETURN_IF_ERROR(
          CheckObject(v, path,
                      {"type", "name", "inputs", "filters", "kernel", "stride", "padding",
                       "activation", "initializer", "stddev", "bias_init"}));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "filters"));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "kernel"));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "filters", &l.filters));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "kernel", &l.kernel));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "stride", &l.stride));
      TRAININGD_RETURN_IF_ERROR(EnumField(v, path, "padding", kPaddings, &l.padding));
      break;
    case LayerType::kMaxPool2d:
    case LayerType::kAvgPool2d:
      l.stride = 0;  // = the pool size, tf.layers.max_pooling2d's rule
      TRAININGD_RETURN_IF_ERROR(CheckObject(v, path, {"type", "name", "inputs", "pool", "stride"}));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "pool", &l.pool));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "stride", &l.stride));
      break;
    case LayerType::kDense:
      TRAININGD_RETURN_IF_ERROR(CheckObject(
          v, path,
          {"type", "name", "inputs", "units", "activation", "initializer", "stddev", "bias_init"}));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "units"));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "units", &l.units));
      break;
    case LayerType::kDropout:
      TRAININGD_RETURN_IF_ERROR(CheckObject(v, path, {"type", "name", "inputs", "rate"}));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "rate"));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "rate", &l.rate));
      break;
    case LayerType::kRelu:
    case LayerType::kFlatten:
    case LayerType::kAdd:
    case LayerType::kConcat:
    case LayerType::kGlobalAvgPool:
    case LayerType::kSigmoid:
    case LayerType::kTanh:
    case LayerType::kGelu:
      TRAININGD_RETURN_IF_ERROR(CheckObject(v, path, {"type", "name", "inputs"}));
      break;
    case LayerType::kBatchNorm:
      TRAININGD_RETURN_IF_ERROR(
          CheckObject(v, path, {"type", "name", "inputs", "momentum", "epsilon"}));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "momentum", &l.momentum));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "epsilon", &l.epsilon));
      break;
    case LayerType::kCategoricalEncoding:
      // FitModelToData writes it from the data (and replaces one a spec gives): read back from a
      // job's canonical spec and model.json.
      TRAININGD_RETURN_IF_ERROR(
          CheckObject(v, path, {"type", "name", "inputs", "category_codes", "embedding_dims"}));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "category_codes"));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "embedding_dims"));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "category_codes", &l.category_codes));
      TRAININGD_RETURN_IF_ERROR(Field(v, path, "embedding_dims", &l.embedding_dims));
      break;
  }
  // The graph (engine/nn/model_spec.h): ValidateJobSpec checks the names and edges.
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "name", &l.name));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "inputs", &l.inputs));
  if (l.type == LayerType::kConv2d || l.type == LayerType::kDense) {
    TRAININGD_RETURN_IF_ERROR(EnumField(v, path, "activation", kActivations, &l.activation));
    TRAININGD_RETURN_IF_ERROR(EnumField(v, path, "initializer", kInitializers, &l.initializer));
    TRAININGD_RETURN_IF_ERROR(Field(v, path, "stddev", &l.stddev));
    TRAININGD_RETURN_IF_ERROR(Field(v, path, "bias_init", &l.bias_init));
  }
  *out = l;
  return Status::Ok();
}

Status ExpandPreset(const std::string& name, const std::string& path, engine::JobSpec* spec) {
  engine::Result<engine::ModelSpec> preset = engine::PresetModel(name);
  if (!preset.ok()) return Bad(path, preset.status().message());
  spec->model_preset = name;
  spec->model = std::move(preset).value();
  return Status::Ok();
}

// "model": a preset name, or {"preset": name} (expanded), or {"layers": [...]}. With both, the
// layers given are the model and the preset is kept as its name.
Status ReadModel(const json& root, engine::JobSpec* spec) {
  const auto it = root.find("model");
  if (it == root.end()) {
    return Bad("model", "required: a preset name (cnn, mlp, softmax) or {\"layers\": [...]}");
  }
  const json& m = *it;
  if (m.is_string()) return ExpandPreset(m.get<std::string>(), "model", spec);
  if (!m.is_object()) {
    return Bad("model", std::string("must be a preset name or an object, got ") + TypeName(m));
  }
  TRAININGD_RETURN_IF_ERROR(CheckObject(m, "model", {"preset", "layers"}));
  if (const auto p = m.find("preset"); p != m.end()) {
    std::string name;
    TRAININGD_RETURN_IF_ERROR(Read(*p, "model.preset", &name));
    TRAININGD_RETURN_IF_ERROR(ExpandPreset(name, "model.preset", spec));
  }
  const auto layers = m.find("layers");
  if (layers == m.end()) {
    if (spec->model_preset.empty()) return Bad("model", "give \"preset\" or \"layers\"");
    return Status::Ok();
  }
  if (!layers->is_array()) {
    return Bad("model.layers", std::string("must be an array, got ") + TypeName(*layers));
  }
  return LayersFromJson(*layers, "model.layers", &spec->model);
}

// A learning rate: a number (a constant) or a schedule object.
Status ReadSchedule(const json& v, const std::string& path, engine::LearningRateSchedule* out) {
  if (v.is_number()) {
    float rate = 0;
    TRAININGD_RETURN_IF_ERROR(Read(v, path, &rate));
    *out = engine::LearningRateSchedule::Constant(rate);
    return Status::Ok();
  }
  if (!v.is_object()) {
    return Bad(path, std::string("must be a number or a schedule object, got ") + TypeName(v));
  }
  TRAININGD_RETURN_IF_ERROR(
      CheckObject(v, path,
                  {"type", "learning_rate", "decay_steps", "decay_rate", "staircase", "boundaries",
                   "values", "warmup_steps", "alpha"}));
  engine::LearningRateSchedule s;
  TRAININGD_RETURN_IF_ERROR(EnumField(v, path, "type", kScheduleTypes, &s.type));
  const std::string what = std::string("schedule type ") + NameOf(kScheduleTypes, s.type);
  switch (s.type) {
    case ScheduleType::kConstant:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(v, path, {"type", "learning_rate"}, what));
      break;
    case ScheduleType::kExponentialDecay:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(
          v, path, {"type", "learning_rate", "decay_steps", "decay_rate", "staircase"}, what));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "decay_steps"));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "decay_rate"));
      break;
    case ScheduleType::kStepDecay:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(v, path, {"type", "boundaries", "values"}, what));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "boundaries"));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "values"));
      break;
    case ScheduleType::kCosineDecay:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(
          v, path, {"type", "learning_rate", "decay_steps", "warmup_steps", "alpha"}, what));
      TRAININGD_RETURN_IF_ERROR(Require(v, path, "decay_steps"));
      break;
  }
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "learning_rate", &s.learning_rate));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "decay_steps", &s.decay_steps));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "decay_rate", &s.decay_rate));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "staircase", &s.staircase));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "boundaries", &s.boundaries));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "values", &s.values));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "warmup_steps", &s.warmup_steps));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "alpha", &s.alpha));
  *out = std::move(s);
  return Status::Ok();
}

Status ReadOptimizer(const json& v, engine::OptimizerOptions* out) {
  const std::string path = "optimizer";
  TRAININGD_RETURN_IF_ERROR(
      CheckObject(v, path,
                  {"type", "learning_rate", "beta1", "beta2", "epsilon", "momentum", "use_nesterov",
                   "weight_decay", "weight_decay_parameters"}));
  engine::OptimizerOptions o;
  TRAININGD_RETURN_IF_ERROR(EnumField(v, path, "type", kOptimizerTypes, &o.type));
  const std::string what = std::string("optimizer type ") + NameOf(kOptimizerTypes, o.type);
  switch (o.type) {
    case OptimizerType::kAdam:
    case OptimizerType::kAdamW:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(v, path,
                                          {"type", "learning_rate", "beta1", "beta2", "epsilon",
                                           "weight_decay", "weight_decay_parameters"},
                                          what));
      break;
    case OptimizerType::kMomentum:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(v, path,
                                          {"type", "learning_rate", "momentum", "use_nesterov",
                                           "weight_decay", "weight_decay_parameters"},
                                          what));
      break;
    case OptimizerType::kSgd:
      TRAININGD_RETURN_IF_ERROR(CheckUsed(
          v, path, {"type", "learning_rate", "weight_decay", "weight_decay_parameters"}, what));
      break;
  }
  // tf.keras.optimizers.AdamW's default; the other types decay nothing unless asked.
  if (o.type == OptimizerType::kAdamW) {
    o.weight_decay = engine::OptimizerOptions::kDefaultAdamWWeightDecay;
  }
  if (const auto lr = v.find("learning_rate"); lr != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadSchedule(*lr, Child(path, "learning_rate"), &o.learning_rate));
  }
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "beta1", &o.beta1));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "beta2", &o.beta2));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "epsilon", &o.epsilon));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "momentum", &o.momentum));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "use_nesterov", &o.use_nesterov));
  TRAININGD_RETURN_IF_ERROR(Field(v, path, "weight_decay", &o.weight_decay));
  TRAININGD_RETURN_IF_ERROR(EnumField(v, path, "weight_decay_parameters", kDecayedParameters,
                                      &o.weight_decay_parameters));
  *out = std::move(o);
  return Status::Ok();
}

Status ReadDataset(const json& v, engine::DatasetSpec* d) {
  if (v.is_string()) return Read(v, "dataset", &d->name);
  if (!v.is_object()) {
    return Bad("dataset", std::string("must be a name or an object, got ") + TypeName(v));
  }
  TRAININGD_RETURN_IF_ERROR(
      CheckObject(v, "dataset",
                  {"name", "format", "sha256", "label_column", "weight_column", "test_file",
                   "test_fraction", "split_seed", "normalize", "columns", "validation_size",
                   "max_train_examples", "max_test_examples", "folds", "fold", "stratified"}));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "name", &d->name));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "format", &d->format));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "sha256", &d->sha256));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "label_column", &d->label_column));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "weight_column", &d->weight_column));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "test_file", &d->test_file));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "test_fraction", &d->test_fraction));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "split_seed", &d->split_seed));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "normalize", &d->normalize));
  if (const auto c = v.find("columns"); c != v.end()) {
    TRAININGD_RETURN_IF_ERROR(ColumnOptionsFromJson(*c, "dataset.columns", &d->columns));
  }
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "validation_size", &d->validation_size));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "max_train_examples", &d->max_train_examples));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "folds", &d->folds));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "fold", &d->fold));
  TRAININGD_RETURN_IF_ERROR(Field(v, "dataset", "stratified", &d->stratified));
  return Field(v, "dataset", "max_test_examples", &d->max_test_examples);
}

// One hook: absent (defaults kept), a boolean (enabled or not, other fields at their defaults) or
// an object (enabled unless it says "enabled": false). *obj is the object to read the hook's
// other fields from, or null when there is none.
Status OpenHook(const json& hooks, const char* key, Keys known, bool* enabled, const json** obj) {
  *obj = nullptr;
  const auto it = hooks.find(key);
  if (it == hooks.end()) return Status::Ok();
  const std::string path = Child("hooks", key);
  if (it->is_boolean()) {
    *enabled = it->get<bool>();
    return Status::Ok();
  }
  if (!it->is_object()) {
    return Bad(path, std::string("must be an object or a boolean, got ") + TypeName(*it));
  }
  TRAININGD_RETURN_IF_ERROR(CheckObject(*it, path, known));
  *enabled = true;
  TRAININGD_RETURN_IF_ERROR(Field(*it, path, "enabled", enabled));
  *obj = &*it;
  return Status::Ok();
}

Status ReadTrigger(const json& obj, const std::string& path, engine::TriggerSpec* t) {
  TRAININGD_RETURN_IF_ERROR(Field(obj, path, "every_steps", &t->every_steps));
  return Field(obj, path, "every_secs", &t->every_secs);
}

Status ReadHooks(const json& v, engine::HooksSpec* h) {
  TRAININGD_RETURN_IF_ERROR(
      CheckObject(v, "hooks",
                  {"checkpoint", "summary", "step_counter", "logging", "nan_guard", "evaluation",
                   "final_eval", "early_stopping", "profiler"}));
  const json* o = nullptr;

  TRAININGD_RETURN_IF_ERROR(OpenHook(v, "checkpoint",
                                     {"enabled", "every_steps", "every_secs", "max_to_keep",
                                      "keep_checkpoint_every_n_hours", "keep_best"},
                                     &h->checkpoint.enabled, &o));
  if (o) {
    TRAININGD_RETURN_IF_ERROR(ReadTrigger(*o, "hooks.checkpoint", &h->checkpoint.trigger));
    TRAININGD_RETURN_IF_ERROR(
        Field(*o, "hooks.checkpoint", "max_to_keep", &h->checkpoint.max_to_keep));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.checkpoint", "keep_checkpoint_every_n_hours",
                                    &h->checkpoint.keep_checkpoint_every_n_hours));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.checkpoint", "keep_best", &h->checkpoint.keep_best));
  }

  TRAININGD_RETURN_IF_ERROR(
      OpenHook(v, "summary", {"enabled", "every_steps", "every_secs"}, &h->summary.enabled, &o));
  if (o) TRAININGD_RETURN_IF_ERROR(ReadTrigger(*o, "hooks.summary", &h->summary.trigger));

  TRAININGD_RETURN_IF_ERROR(
      OpenHook(v, "step_counter", {"enabled", "every_steps"}, &h->step_counter.enabled, &o));
  if (o) {
    TRAININGD_RETURN_IF_ERROR(
        Field(*o, "hooks.step_counter", "every_steps", &h->step_counter.every_steps));
  }

  TRAININGD_RETURN_IF_ERROR(
      OpenHook(v, "logging", {"enabled", "every_n_iter", "every_n_secs", "tensors", "at_end"},
               &h->logging.enabled, &o));
  if (o) {
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.logging", "every_n_iter", &h->logging.every_n_iter));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.logging", "every_n_secs", &h->logging.every_n_secs));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.logging", "tensors", &h->logging.tensors));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.logging", "at_end", &h->logging.at_end));
  }

  TRAININGD_RETURN_IF_ERROR(
      OpenHook(v, "nan_guard", {"enabled", "fail"}, &h->nan_guard.enabled, &o));
  if (o) TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.nan_guard", "fail", &h->nan_guard.fail));

  TRAININGD_RETURN_IF_ERROR(OpenHook(v, "evaluation",
                                     {"enabled", "every_steps", "every_secs", "split", "at_end"},
                                     &h->evaluation.enabled, &o));
  if (o) {
    TRAININGD_RETURN_IF_ERROR(ReadTrigger(*o, "hooks.evaluation", &h->evaluation.trigger));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.evaluation", "split", &h->evaluation.split));
    TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.evaluation", "at_end", &h->evaluation.at_end));
  }

  TRAININGD_RETURN_IF_ERROR(
      OpenHook(v, "final_eval", {"enabled", "split"}, &h->final_eval.enabled, &o));
  if (o) TRAININGD_RETURN_IF_ERROR(Field(*o, "hooks.final_eval", "split", &h->final_eval.split));

  engine::EarlyStoppingHookSpec& es = h->early_stopping;
  TRAININGD_RETURN_IF_ERROR(OpenHook(v, "early_stopping",
                                     {"enabled", "monitor", "mode", "patience", "min_delta",
                                      "every_steps", "every_secs", "restore_best"},
                                     &es.enabled, &o));
  if (o) {
    const std::string path = "hooks.early_stopping";
    TRAININGD_RETURN_IF_ERROR(Field(*o, path, "monitor", &es.monitor));
    es.mode = engine::DefaultMode(es.monitor);
    TRAININGD_RETURN_IF_ERROR(Field(*o, path, "mode", &es.mode));
    TRAININGD_RETURN_IF_ERROR(Field(*o, path, "patience", &es.patience));
    TRAININGD_RETURN_IF_ERROR(Field(*o, path, "min_delta", &es.min_delta));
    TRAININGD_RETURN_IF_ERROR(Field(*o, path, "restore_best", &es.restore_best));
    TRAININGD_RETURN_IF_ERROR(ReadTrigger(*o, path, &es.trigger));
  }

  TRAININGD_RETURN_IF_ERROR(
      OpenHook(v, "profiler", {"enabled", "every_steps", "every_secs"}, &h->profiler.enabled, &o));
  if (o) TRAININGD_RETURN_IF_ERROR(ReadTrigger(*o, "hooks.profiler", &h->profiler.trigger));
  return Status::Ok();
}

Status ReadDistributed(const json& v, engine::DistributedSpec* d) {
  constexpr const char* kPath = "distributed";
  TRAININGD_RETURN_IF_ERROR(CheckObject(
      v, kPath,
      {"workers", "hosts", "hostfile", "max_restarts", "stall_timeout_secs", "reduction_blocks"}));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "workers", &d->workers));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "hosts", &d->hosts));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "hostfile", &d->hostfile));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "max_restarts", &d->max_restarts));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "stall_timeout_secs", &d->stall_timeout_secs));
  return Field(v, kPath, "reduction_blocks", &d->reduction_blocks);
}

Status ReadResources(const json& v, engine::ResourcesSpec* r) {
  constexpr const char* kPath = "resources";
  TRAININGD_RETURN_IF_ERROR(CheckObject(v, kPath, {"cpus_per_worker", "time_limit_secs"}));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "cpus_per_worker", &r->cpus_per_worker));
  return Field(v, kPath, "time_limit_secs", &r->time_limit_secs);
}

Status ReadAugmentation(const json& v, engine::AugmentationSpec* a) {
  constexpr const char* kPath = "augmentation";
  TRAININGD_RETURN_IF_ERROR(CheckObject(
      v, kPath, {"random_crop", "horizontal_flip", "translate", "brightness", "contrast"}));
  if (const auto it = v.find("random_crop"); it != v.end()) {
    const std::string path = Child(kPath, "random_crop");
    TRAININGD_RETURN_IF_ERROR(CheckObject(*it, path, {"padding"}));
    TRAININGD_RETURN_IF_ERROR(Require(*it, path, "padding"));
    TRAININGD_RETURN_IF_ERROR(ReadInt(it->at("padding"), Child(path, "padding"), int64_t{1},
                                      engine::kMaxCropPadding, &a->random_crop_padding));
  }
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "horizontal_flip", &a->horizontal_flip));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "translate", &a->translate));
  TRAININGD_RETURN_IF_ERROR(Field(v, kPath, "brightness", &a->brightness));
  return Field(v, kPath, "contrast", &a->contrast);
}

// "balanced", or {"<class name>": weight, ...}.
Status ReadClassWeights(const json& v, engine::JobSpec::ClassWeights* out) {
  if (v.is_string()) {
    if (v != "balanced") {
      return Bad("class_weights",
                 "must be \"balanced\" or an object of weights by class name, "
                 "got " +
                     Quote(v.get<std::string>()));
    }
    out->balanced = true;
    return Status::Ok();
  }
  if (!v.is_object() || v.empty()) {
    return Bad("class_weights", std::string("must be \"balanced\" or a non-empty object of "
                                            "weights by class name, got ") +
                                    TypeName(v));
  }
  for (const auto& [name, weight] : v.items()) {
    float w = 0;
    TRAININGD_RETURN_IF_ERROR(Read(weight, "class_weights." + name, &w));
    out->by_name.emplace_back(name, w);
  }
  return Status::Ok();
}

// `loss` and `huber_delta`: classification trains with cross_entropy (the only name it takes),
// regression with mse (the default), mae or huber.
Status ReadLoss(const json& root, engine::JobSpec* spec) {
  const auto it = root.find("loss");
  if (spec->task == engine::Task::kClassification) {
    if (it != root.end() && !(it->is_string() && *it == "cross_entropy")) {
      return Status::InvalidArgument(
          "loss: a classification job trains with cross_entropy; mse, mae and huber are "
          "regression's (task: regression)");
    }
    if (root.contains("huber_delta")) {
      return Status::InvalidArgument("huber_delta: for task regression with loss huber");
    }
    return Status::Ok();
  }
  TRAININGD_RETURN_IF_ERROR(EnumField(root, "", "loss", kRegressionLosses, &spec->loss));
  if (root.contains("huber_delta") && spec->loss != engine::RegressionLoss::kHuber) {
    return Status::InvalidArgument("huber_delta: for loss huber, not " +
                                   std::string(NameOf(kRegressionLosses, spec->loss)));
  }
  return Field(root, "", "huber_delta", &spec->huber_delta);
}

Status ReadJobSpec(const json& root, engine::JobSpec* spec) {
  TRAININGD_RETURN_IF_ERROR(CheckObject(root, "",
                                        {"name",
                                         "task",
                                         "loss",
                                         "huber_delta",
                                         "dataset",
                                         "model",
                                         "precision",
                                         "optimizer",
                                         "label_smoothing",
                                         "class_weights",
                                         "decision_threshold",
                                         "categorical",
                                         "augmentation",
                                         "batch_size",
                                         "max_steps",
                                         "num_epochs",
                                         "seed",
                                         "hooks",
                                         "distributed",
                                         "resources",
                                         "priority"}));
  TRAININGD_RETURN_IF_ERROR(Require(root, "", "name"));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "name", &spec->name));
  TRAININGD_RETURN_IF_ERROR(EnumField(root, "", "task", kTasks, &spec->task));
  TRAININGD_RETURN_IF_ERROR(ReadLoss(root, spec));
  if (const auto it = root.find("dataset"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadDataset(*it, &spec->dataset));
  }
  TRAININGD_RETURN_IF_ERROR(ReadModel(root, spec));
  TRAININGD_RETURN_IF_ERROR(EnumField(root, "", "precision", kPrecisions, &spec->precision));
  if (const auto it = root.find("optimizer"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadOptimizer(*it, &spec->optimizer));
  }
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "label_smoothing", &spec->label_smoothing));
  if (const auto it = root.find("class_weights"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadClassWeights(*it, &spec->class_weights));
  }
  if (const auto it = root.find("decision_threshold"); it != root.end()) {
    double t = 0;
    TRAININGD_RETURN_IF_ERROR(Read(*it, "decision_threshold", &t));
    spec->decision_threshold = t;
  }
  if (const auto it = root.find("categorical"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(
        CheckObject(*it, "categorical", {"one_hot_max_levels", "embedding_dim"}));
    TRAININGD_RETURN_IF_ERROR(
        Field(*it, "categorical", "one_hot_max_levels", &spec->categorical.one_hot_max_levels));
    TRAININGD_RETURN_IF_ERROR(
        Field(*it, "categorical", "embedding_dim", &spec->categorical.embedding_dim));
  }
  if (const auto it = root.find("augmentation"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadAugmentation(*it, &spec->augmentation));
  }
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "batch_size", &spec->batch_size));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "max_steps", &spec->max_steps));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "num_epochs", &spec->num_epochs));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "seed", &spec->seed));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "priority", &spec->priority));
  if (const auto it = root.find("hooks"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadHooks(*it, &spec->hooks));
  }
  // The logging hook's default tensors are a classifier's; a regression job has no accuracy.
  if (spec->task == engine::Task::kRegression &&
      spec->hooks.logging.tensors == engine::LoggingHookSpec{}.tensors) {
    spec->hooks.logging.tensors = {"global_step", "loss"};
  }
  if (const auto it = root.find("distributed"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadDistributed(*it, &spec->distributed));
  }
  if (const auto it = root.find("resources"); it != root.end()) {
    TRAININGD_RETURN_IF_ERROR(ReadResources(*it, &spec->resources));
  }
  return Status::Ok();
}

// A failed parse: fills *error (field = the message up to its first ": ", which every message
// built from a path has) and passes the status on.
engine::Result<engine::JobSpec> Fail(const Status& status, bool has_field, FieldError* error) {
  if (error) {
    const std::string& m = status.message();
    const size_t colon = has_field ? m.find(": ") : std::string::npos;
    error->field = colon == std::string::npos ? std::string() : m.substr(0, colon);
    error->message = m;
  }
  return status;
}

}  // namespace

engine::Result<engine::JobSpec> ParseJobSpec(std::string_view json_text, FieldError* error) {
  auto doc = Parse(json_text);
  if (!doc.ok()) {
    // A syntax error inside a member names it; one outside every member names no field.
    const Status& st = doc.status();
    return Fail(st, st.message().rfind("invalid JSON", 0) != 0, error);
  }
  return JobSpecFromJson(*doc, error);
}

engine::Result<engine::JobSpec> JobSpecFromJson(const json& doc, FieldError* error) {
  try {
    if (!doc.is_object()) {
      return Fail(Status::InvalidArgument(std::string("a job spec must be a JSON object, got ") +
                                          TypeName(doc)),
                  false, error);
    }
    engine::JobSpec spec;
    if (Status s = ReadJobSpec(doc, &spec); !s.ok()) return Fail(s, true, error);
    if (Status s = engine::ValidateJobSpec(spec); !s.ok()) return Fail(s, true, error);
    return spec;
  } catch (const std::exception& e) {
    return Fail(Status::Internal(std::string("reading the job spec failed: ") + e.what()), false,
                error);
  }
}

Status LayersFromJson(const json& layers, const std::string& path, engine::ModelSpec* out) {
  if (!layers.is_array()) {
    return Bad(path, std::string("must be an array, got ") + TypeName(layers));
  }
  std::vector<engine::LayerSpec> read(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    TRAININGD_RETURN_IF_ERROR(ReadLayer(layers[i], Index(path, i), &read[i]));
  }
  out->layers = std::move(read);
  return Status::Ok();
}

}  // namespace trainingd::api
