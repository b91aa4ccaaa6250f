#include "trainingd/engine/job/job_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string>
#include <string_view>

#include "base/float_format.h"
#include "trainingd/engine/data/cross_validation.h"
#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/session/session.h"
#include "trainingd/engine/train/metrics.h"

namespace trainingd::engine {
namespace {

using internal::DoubleToString;
using internal::FloatToString;

// "<path>: <message>", the one error format of this file.
Status Bad(std::string_view path, const std::string& message) {
  return Status::InvalidArgument(std::string(path) + ": " + message);
}

// 'text', cut to its first 64 characters: user input is echoed, but never at any length.
std::string Quote(const std::string& text) {
  constexpr size_t kMax = 64;
  return "'" + (text.size() <= kMax ? text : text.substr(0, kMax) + "...") + "'";
}

// Re-roots a message of the form "<field> <rest>" (what OptimizerOptions::Validate and
// LearningRateSchedule::Validate return) as "<prefix>.<field>: <rest>". A bare `prefix` (no field
// appended) is used when `field_as_prefix` is the field the message names.
Status Reroot(const Status& status, std::string_view prefix, std::string_view field_as_prefix) {
  const std::string& m = status.message();
  const size_t space = m.find(' ');
  std::string field = space == std::string::npos ? m : m.substr(0, space);
  std::string rest = space == std::string::npos ? std::string() : m.substr(space + 1);
  if (!field.empty() && field.back() == ':') field.pop_back();
  if (!field_as_prefix.empty() && field == field_as_prefix) return Bad(prefix, rest);
  return Bad(std::string(prefix) + "." + field, rest);
}

Status CheckNonNegative(std::string_view path, int64_t value) {
  if (value >= 0) return Status::Ok();
  return Bad(path, "must be >= 0, got " + std::to_string(value));
}

Status CheckNonNegative(std::string_view path, double value) {
  if (std::isfinite(value) && value >= 0) return Status::Ok();
  return Bad(path, "must be a finite number >= 0, got " + DoubleToString(value));
}

Status CheckInRange(std::string_view path, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return Status::Ok();
  return Bad(path, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                       std::to_string(value));
}

// A periodic trigger, whose fields sit in the hook's own JSON object at `path`.
Status CheckTrigger(const std::string& path, const TriggerSpec& t) {
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative(path + ".every_steps", t.every_steps));
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative(path + ".every_secs", t.every_secs));
  if (t.every_steps > 0 && t.every_secs > 0) {
    return Bad(path, "give every_steps or every_secs, not both");
  }
  return Status::Ok();
}

Status CheckSplit(const std::string& path, const std::string& split) {
  for (const char* s : kSplits) {
    if (split == s) return Status::Ok();
  }
  return Bad(path, "must be one of train, validation, test; got " + Quote(split));
}

Status CheckLayer(const std::string& path, const LayerSpec& l) {
  switch (l.type) {
    case LayerType::kCategoricalEncoding:
      if (l.category_codes.empty() || l.category_codes.size() != l.embedding_dims.size()) {
        return Bad(path + ".embedding_dims", "needs one value per category_codes value");
      }
      for (size_t c = 0; c < l.category_codes.size(); ++c) {
        const std::string at = "[" + std::to_string(c) + "]";
        TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".category_codes" + at, l.category_codes[c],
                                               CategoricalFeature::kFirstLevel,
                                               kMaxMaxLevels + CategoricalFeature::kFirstLevel));
        TRAININGD_RETURN_IF_ERROR(
            CheckInRange(path + ".embedding_dims" + at, l.embedding_dims[c], 0, kMaxEmbeddingDim));
      }
      return Status::Ok();
    case LayerType::kConv2d:
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".filters", l.filters, 1, 65536));
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".kernel", l.kernel, 1, 64));
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".stride", l.stride, 1, 64));
      break;
    case LayerType::kMaxPool2d:
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".pool", l.pool, 1, 64));
      // 0 = the pool size.
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".stride", l.stride, 0, 64));
      return Status::Ok();
    case LayerType::kDense:
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".units", l.units, 1, int64_t{1} << 20));
      break;
    case LayerType::kDropout:
      if (!(l.rate >= 0.0f && l.rate < 1.0f)) {
        return Bad(path + ".rate", "must be in [0, 1), got " + FloatToString(l.rate));
      }
      return Status::Ok();
    case LayerType::kAvgPool2d:
      TRAININGD_RETURN_IF_ERROR(CheckInRange(path + ".pool", l.pool, 1, 64));
      return CheckInRange(path + ".stride", l.stride, 0, 64);
    case LayerType::kBatchNorm:
      if (!(l.momentum >= 0.0f && l.momentum <= 1.0f)) {
        return Bad(path + ".momentum", "must be in [0, 1], got " + FloatToString(l.momentum));
      }
      if (!(l.epsilon > 0.0f && std::isfinite(l.epsilon))) {
        return Bad(path + ".epsilon",
                   "must be positive and finite, got " + FloatToString(l.epsilon));
      }
      return Status::Ok();
    case LayerType::kRelu:
    case LayerType::kFlatten:
    case LayerType::kAdd:
    case LayerType::kConcat:
    case LayerType::kGlobalAvgPool:
    case LayerType::kSigmoid:
    case LayerType::kTanh:
    case LayerType::kGelu:
      return Status::Ok();
    default:
      return Bad(path + ".type",
                 "is not a known layer type: " + std::to_string(static_cast<int>(l.type)));
  }
  // conv2d and dense: activation and initialisation.
  if (l.activation != Activation::kNone && l.activation != Activation::kRelu) {
    return Bad(path + ".activation", "is not a known activation");
  }
  if (l.initializer != Initializer::kGlorotUniform &&
      l.initializer != Initializer::kTruncatedNormal) {
    return Bad(path + ".initializer", "is not a known initializer");
  }
  if (!std::isfinite(l.stddev) || l.stddev <= 0.0f) {
    return Bad(path + ".stddev", "must be positive and finite, got " + FloatToString(l.stddev));
  }
  if (!std::isfinite(l.bias_init)) {
    return Bad(path + ".bias_init", "must be finite, got " + FloatToString(l.bias_init));
  }
  return Status::Ok();
}

Status CheckModel(const JobSpec& spec) {
  if (!spec.model_preset.empty()) {
    const Result<ModelSpec> preset = PresetModel(spec.model_preset);
    if (!preset.ok()) return Bad("model.preset", preset.status().message());
  }
  if (spec.model.layers.empty()) return Bad("model.layers", "the model has no layers");
  if (spec.model.layers.size() > kMaxLayers) {
    return Bad("model.layers", "at most " + std::to_string(kMaxLayers) + " layers, got " +
                                   std::to_string(spec.model.layers.size()));
  }
  for (size_t i = 0; i < spec.model.layers.size(); ++i) {
    TRAININGD_RETURN_IF_ERROR(
        CheckLayer("model.layers[" + std::to_string(i) + "]", spec.model.layers[i]));
  }
  // The graph's names and edges: cycles, dangling inputs, unused outputs (the shapes need the
  // dataset: PlanJob).
  const Result<std::vector<std::vector<int>>> graph = ResolveModelGraph(spec.model);
  return graph.ok() ? Status::Ok() : graph.status();
}

Status CheckOptimizer(const OptimizerOptions& options) {
  // The optimizer's own fields first, with the schedule replaced by a valid one, so that every
  // error is attributed to the right JSON object.
  OptimizerOptions own = options;
  own.learning_rate = LearningRateSchedule();
  if (Status s = own.Validate(); !s.ok()) return Reroot(s, "optimizer", "");
  const LearningRateSchedule& lr = options.learning_rate;
  if (Status s = lr.Validate(); !s.ok()) {
    // A constant schedule is written as a bare number at optimizer.learning_rate.
    return Reroot(s, "optimizer.learning_rate",
                  lr.type == LearningRateSchedule::Type::kConstant ? "learning_rate" : "");
  }
  return Status::Ok();
}

Status CheckHooks(const HooksSpec& h, Task task) {
  TRAININGD_RETURN_IF_ERROR(CheckTrigger("hooks.checkpoint", h.checkpoint.trigger));
  if (h.checkpoint.max_to_keep < 1) {
    return Bad("hooks.checkpoint.max_to_keep",
               "must be >= 1, got " + std::to_string(h.checkpoint.max_to_keep));
  }
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("hooks.checkpoint.keep_checkpoint_every_n_hours",
                                             h.checkpoint.keep_checkpoint_every_n_hours));

  TRAININGD_RETURN_IF_ERROR(CheckTrigger("hooks.summary", h.summary.trigger));

  TRAININGD_RETURN_IF_ERROR(
      CheckNonNegative("hooks.step_counter.every_steps", h.step_counter.every_steps));

  const LoggingHookSpec& log = h.logging;
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("hooks.logging.every_n_iter", log.every_n_iter));
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("hooks.logging.every_n_secs", log.every_n_secs));
  if (log.every_n_iter > 0 && log.every_n_secs > 0) {
    return Bad("hooks.logging", "give every_n_iter or every_n_secs, not both");
  }
  if (log.enabled && log.tensors.empty()) {
    return Bad("hooks.logging.tensors", "must name at least one fetch when the hook is enabled");
  }
  std::set<std::string_view> seen;
  for (size_t i = 0; i < log.tensors.size(); ++i) {
    const std::string path = "hooks.logging.tensors[" + std::to_string(i) + "]";
    if (Status s = Session::CheckFetchNames({log.tensors[i]}, task); !s.ok()) {
      return Bad(path, s.message());
    }
    if (!seen.insert(log.tensors[i]).second) {
      return Bad(path, Quote(log.tensors[i]) + " is listed twice");
    }
  }

  TRAININGD_RETURN_IF_ERROR(CheckTrigger("hooks.evaluation", h.evaluation.trigger));
  TRAININGD_RETURN_IF_ERROR(CheckSplit("hooks.evaluation.split", h.evaluation.split));

  TRAININGD_RETURN_IF_ERROR(CheckSplit("hooks.final_eval.split", h.final_eval.split));

  const EarlyStoppingHookSpec& es = h.early_stopping;
  {
    const size_t slash = es.monitor.find('/');
    const std::string metric = slash == std::string::npos ? "" : es.monitor.substr(slash + 1);
    bool known_split = false;
    for (const char* s : kSplits) known_split = known_split || es.monitor.substr(0, slash) == s;
    if (!known_split || !FindEvaluationMetric(metric, task)) {
      return Bad("hooks.early_stopping.monitor",
                 "must be '<split>/<metric>' with split train, validation or test and a metric of "
                 "a " +
                     std::string(TaskName(task)) + " job, one of " + EvaluationMetricNames(task) +
                     "; got " + Quote(es.monitor));
    }
  }
  if (es.mode != "min" && es.mode != "max") {
    return Bad("hooks.early_stopping.mode", "must be 'min' or 'max', got " + Quote(es.mode));
  }
  if (es.patience < 1) {
    return Bad("hooks.early_stopping.patience", "must be >= 1, got " + std::to_string(es.patience));
  }
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("hooks.early_stopping.min_delta", es.min_delta));
  TRAININGD_RETURN_IF_ERROR(CheckTrigger("hooks.early_stopping", es.trigger));
  if (es.enabled && es.restore_best && !(h.checkpoint.enabled && h.checkpoint.keep_best)) {
    return Bad(
        "hooks.early_stopping.restore_best",
        "needs the best checkpoint: hooks.checkpoint.enabled and hooks.checkpoint.keep_best");
  }

  TRAININGD_RETURN_IF_ERROR(CheckTrigger("hooks.profiler", h.profiler.trigger));
  return Status::Ok();
}

// With validation_size 0 the validation split is empty: no enabled hook may evaluate it.
Status CheckNoValidationUse(const HooksSpec& h) {
  const std::string why =
      "uses the validation split, which is empty with dataset.validation_size 0";
  if (h.evaluation.enabled && h.evaluation.split == "validation") {
    return Bad("hooks.evaluation.split", why);
  }
  if (h.final_eval.enabled && h.final_eval.split == "validation") {
    return Bad("hooks.final_eval.split", why);
  }
  if (h.early_stopping.enabled && h.early_stopping.monitor.rfind("validation/", 0) == 0) {
    return Bad("hooks.early_stopping.monitor", why);
  }
  if (h.logging.enabled) {
    for (size_t i = 0; i < h.logging.tensors.size(); ++i) {
      if (h.logging.tensors[i].rfind("validation/", 0) == 0) {
        return Bad("hooks.logging.tensors[" + std::to_string(i) + "]", why);
      }
    }
  }
  return Status::Ok();
}

bool IsHostEntry(const std::string& entry) {
  // "name" or "name:slots": a host name or address of [A-Za-z0-9.-] (IPv6 in brackets is not
  // accepted by mpirun's --host either), then optionally a slot count.
  const size_t colon = entry.find(':');
  const std::string name = entry.substr(0, colon);
  if (name.empty() || name.size() > 253) return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-';
    if (!ok || name.front() == '-') return false;
  }
  if (colon == std::string::npos) return true;
  const std::string slots = entry.substr(colon + 1);
  if (slots.empty() || slots.size() > 4) return false;
  return std::all_of(slots.begin(), slots.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoi(slots) > 0;
}

// DistributedSpec::reduction_blocks' default is GradientBlocks' (the struct holds strings, so it
// cannot be checked as a constant expression).
static_assert(kDefaultReductionBlocks == 4, "change DistributedSpec::reduction_blocks with it");

Status CheckDistributed(const JobSpec& spec) {
  const DistributedSpec& d = spec.distributed;
  if (d.workers < 1 || d.workers > kMaxWorkers) {
    return Bad("distributed.workers", "must be in [1, " + std::to_string(kMaxWorkers) + "], got " +
                                          std::to_string(d.workers));
  }
  if (d.hosts.size() > static_cast<size_t>(kMaxWorkers)) {
    return Bad("distributed.hosts", "at most " + std::to_string(kMaxWorkers) + " hosts");
  }
  for (size_t i = 0; i < d.hosts.size(); ++i) {
    if (!IsHostEntry(d.hosts[i])) {
      return Bad("distributed.hosts[" + std::to_string(i) + "]",
                 "must be a host name or address of [A-Za-z0-9.-], optionally followed by "
                 "':<slots>'; got " +
                     Quote(d.hosts[i]));
    }
  }
  if (!d.hostfile.empty()) {
    if (!d.hosts.empty()) return Bad("distributed.hostfile", "give hosts or a hostfile, not both");
    if (d.hostfile.front() != '/' || d.hostfile.size() > 4096 ||
        d.hostfile.find('\0') != std::string::npos) {
      return Bad("distributed.hostfile", "must be an absolute path; got " + Quote(d.hostfile));
    }
  }
  if (d.max_restarts < 0 || d.max_restarts > 100) {
    return Bad("distributed.max_restarts",
               "must be in [0, 100], got " + std::to_string(d.max_restarts));
  }
  if (!(d.stall_timeout_secs >= 1 && d.stall_timeout_secs <= 86400)) {
    return Bad("distributed.stall_timeout_secs", "must be in [1, 86400] seconds");
  }
  if (d.reduction_blocks < 1 || d.reduction_blocks > kMaxReductionBlocks) {
    return Bad("distributed.reduction_blocks", "must be in [1, " +
                                                   std::to_string(kMaxReductionBlocks) + "], got " +
                                                   std::to_string(d.reduction_blocks));
  }
  return CheckDistributable(spec, d.workers);
}

}  // namespace

bool IsSafeName(const std::string& name) {
  if (name.empty() || name.size() > 100 || name == "." || name == "..") return false;
  for (const char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsSha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Status ValidateJobSpec(const JobSpec& spec) {
  constexpr const char* kSafeNameRule =
      "must be 1-100 characters of [A-Za-z0-9._-], and not '.' or '..'";
  if (!IsSafeName(spec.name))
    return Bad("name", std::string(kSafeNameRule) + "; got " + Quote(spec.name));

  const DatasetSpec& d = spec.dataset;
  if (!IsSafeName(d.name)) {
    return Bad("dataset.name", std::string(kSafeNameRule) + "; got " + Quote(d.name));
  }
  if (d.format != "idx" && d.format != "npz" && d.format != "csv") {
    return Bad("dataset.format", "must be one of idx, npz, csv; got " + Quote(d.format));
  }
  if (d.format != "idx" && !IsSha256(d.sha256)) {
    return Bad("dataset.sha256", "an uploaded (" + d.format +
                                     ") dataset is named by its sha256, 64 lowercase hex digits; "
                                     "got " +
                                     Quote(d.sha256));
  }
  if (d.format == "idx" && !d.sha256.empty()) {
    return Bad("dataset.sha256", "only uploaded (npz, csv) datasets have one");
  }
  if (d.normalize != "none" && d.normalize != "standard" && d.normalize != "per_channel") {
    return Bad(
        "dataset.normalize",
        "must be none, standard (tables) or per_channel (images); got " + Quote(d.normalize));
  }
  if (d.format == "csv" && !d.test_file && !(d.test_fraction > 0 && d.test_fraction < 1)) {
    return Bad("dataset.test_fraction",
               "must be in (0, 1), got " + std::to_string(d.test_fraction));
  }
  if (d.validation_size != kAutoValidationSize) {
    TRAININGD_RETURN_IF_ERROR(CheckNonNegative("dataset.validation_size", d.validation_size));
  }
  if (d.folds != 0) {
    TRAININGD_RETURN_IF_ERROR(CheckInRange("dataset.folds", d.folds, kMinFolds, kMaxFolds));
    TRAININGD_RETURN_IF_ERROR(CheckInRange("dataset.fold", d.fold, 0, d.folds - 1));
    if (d.validation_size != kAutoValidationSize) {
      return Bad("dataset.validation_size",
                 "with dataset.folds the validation split is the fold: leave it out");
    }
  } else if (d.fold != 0) {
    return Bad("dataset.fold", "needs dataset.folds");
  }
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("dataset.max_train_examples", d.max_train_examples));
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("dataset.max_test_examples", d.max_test_examples));

  TRAININGD_RETURN_IF_ERROR(CheckModel(spec));
  TRAININGD_RETURN_IF_ERROR(CheckOptimizer(spec.optimizer));
  TRAININGD_RETURN_IF_ERROR(CheckInRange("categorical.one_hot_max_levels",
                                         spec.categorical.one_hot_max_levels, 0, kMaxOneHotLevels));
  TRAININGD_RETURN_IF_ERROR(CheckInRange("categorical.embedding_dim",
                                         spec.categorical.embedding_dim, 0, kMaxEmbeddingDim));
  if (!(spec.label_smoothing >= 0.0f && spec.label_smoothing < 1.0f)) {
    return Bad("label_smoothing",
               "must be in [0, 1), got " + internal::FloatToString(spec.label_smoothing));
  }
  for (const auto& [name, weight] : spec.class_weights.by_name) {
    if (!(weight >= 0.0f) || !std::isfinite(weight)) {
      return Bad("class_weights." + name,
                 "must be a finite number >= 0, got " + internal::FloatToString(weight));
    }
  }
  if (spec.decision_threshold) {
    const double t = *spec.decision_threshold;
    if (!(t > 0.0 && t < 1.0)) {
      return Bad("decision_threshold",
                 "must be a number in (0, 1) (the positive class's probability above which it "
                 "is predicted), got " +
                     internal::DoubleToString(t));
    }
  }
  if (spec.task == Task::kRegression) {
    if (spec.decision_threshold) {
      return Bad("decision_threshold",
                 "decides between a classifier's two classes: a regression job has none");
    }
    if (!spec.class_weights.empty()) {
      return Bad("class_weights",
                 "weigh a classifier's classes: a regression job has none "
                 "(a sample weight column weighs its rows: dataset.weight_column)");
    }
    if (spec.label_smoothing != 0.0f) {
      return Bad("label_smoothing", "smooths class labels: a regression job has none");
    }
    if (!(spec.huber_delta > 0.0f) || !std::isfinite(spec.huber_delta)) {
      return Bad("huber_delta",
                 "must be a finite number > 0, got " + internal::FloatToString(spec.huber_delta));
    }
  }

  TRAININGD_RETURN_IF_ERROR(CheckAugmentationValues(spec.augmentation));

  if (spec.batch_size < 1) {
    return Bad("batch_size", "must be >= 1, got " + std::to_string(spec.batch_size));
  }
  for (size_t i = 0; spec.batch_size == 1 && i < spec.model.layers.size(); ++i) {
    if (spec.model.layers[i].type == LayerType::kBatchNorm) {
      return Bad("batch_size", "1 is too small for model.layers[" + std::to_string(i) +
                                   "] (batch_norm): it trains on the statistics of each batch, "
                                   "which one example does not have; use 2 or more");
    }
  }
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("max_steps", spec.max_steps));
  TRAININGD_RETURN_IF_ERROR(CheckNonNegative("num_epochs", spec.num_epochs));
  if (spec.max_steps == 0 && spec.num_epochs == 0) {
    return Bad("max_steps", "the job would never end: give max_steps or num_epochs (or both) > 0");
  }
  TRAININGD_RETURN_IF_ERROR(CheckHooks(spec.hooks, spec.task));
  if (d.validation_size == 0) TRAININGD_RETURN_IF_ERROR(CheckNoValidationUse(spec.hooks));
  const ResourcesSpec& r = spec.resources;
  if (r.cpus_per_worker < 0 || r.cpus_per_worker > kMaxCpusPerWorker) {
    return Bad("resources.cpus_per_worker", "must be in [0, " + std::to_string(kMaxCpusPerWorker) +
                                                "] (0: the daemon's default), got " +
                                                std::to_string(r.cpus_per_worker));
  }
  if (!(r.time_limit_secs >= 0 && r.time_limit_secs <= kMaxTimeLimitSecs)) {
    return Bad("resources.time_limit_secs",
               "must be in [0, 31536000] seconds (a year; 0: no limit)");
  }
  if (spec.priority < kMinJobPriority || spec.priority > kMaxJobPriority) {
    return Bad("priority", "must be in [" + std::to_string(kMinJobPriority) + ", " +
                               std::to_string(kMaxJobPriority) + "] (higher starts first), got " +
                               std::to_string(spec.priority));
  }
  return CheckDistributed(spec);
}

Status FitModelToData(JobSpec* spec, const Shape& example_shape, int64_t num_classes,
                      const std::vector<CategoricalFeature>& categorical) {
  TRAININGD_RETURN_IF_ERROR(CheckAugmentationFits(spec->augmentation, example_shape));
  std::vector<LayerSpec>& layers = spec->model.layers;
  std::erase_if(layers,
                [](const LayerSpec& l) { return l.type == LayerType::kCategoricalEncoding; });
  if (!spec->model_preset.empty() && IsPresetModel(spec->model_preset, spec->model)) {
    Result<ModelSpec> fitted = PresetModel(spec->model_preset, example_shape, num_classes);
    if (!fitted.ok()) return fitted.status();
    spec->model = std::move(fitted).value();
  }
  if (categorical.empty()) return Status::Ok();
  LayerSpec encoding = LayerSpec::Of(LayerType::kCategoricalEncoding);
  for (const CategoricalFeature& c : categorical) {
    encoding.category_codes.push_back(c.codes());
    encoding.embedding_dims.push_back(EmbeddingDimOf(c.codes(), spec->categorical));
  }
  if (spec->model.IsGraph()) {
    encoding.name = kCategoricalEncodingName;
    for (LayerSpec& l : layers) {
      for (std::string& in : l.inputs) {
        if (in == kModelInputName) in = kCategoricalEncodingName;
      }
    }
  }
  layers.insert(layers.begin(), std::move(encoding));
  return Status::Ok();
}

namespace {
std::string ClassName(const std::vector<std::string>& class_names, int c) {
  return c < static_cast<int>(class_names.size()) ? class_names[static_cast<size_t>(c)]
                                                  : std::to_string(c);
}
}  // namespace

Status CheckClassWeights(const JobSpec& spec, const std::vector<std::string>& class_names,
                         int num_classes) {
  for (const auto& [name, weight] : spec.class_weights.by_name) {
    bool found = false;
    for (int c = 0; c < num_classes && !found; ++c) found = ClassName(class_names, c) == name;
    if (!found) {
      std::string known;
      for (int c = 0; c < num_classes && c < 20; ++c) {
        known += (c ? ", " : "") + Quote(ClassName(class_names, c));
      }
      if (num_classes > 20) known += ", ...";
      return Bad("class_weights." + name,
                 "the dataset has no class " + Quote(name) + "; its classes are " + known);
    }
  }
  return Status::Ok();
}

Status CheckDecisionThreshold(const JobSpec& spec, int64_t num_classes) {
  if (!spec.decision_threshold || num_classes == 2) return Status::Ok();
  return Bad("decision_threshold",
             "decides between two classes (class 1's probability above it predicts class 1); "
             "the dataset has " +
                 std::to_string(num_classes) +
                 " classes, whose predicted class is the most probable one");
}

double DecisionThresholdOf(const JobSpec& spec) {
  return spec.decision_threshold.value_or(kDefaultDecisionThreshold);
}

Result<std::vector<float>> ResolveClassWeights(const JobSpec& spec, const Datasets& data) {
  if (spec.class_weights.empty()) return std::vector<float>{};
  TRAININGD_RETURN_IF_ERROR(CheckClassWeights(spec, data.class_names, data.num_classes));
  std::vector<float> weights(static_cast<size_t>(data.num_classes), 1.0f);
  if (spec.class_weights.balanced) {
    std::vector<int64_t> count(weights.size(), 0);
    for (int32_t y : data.train.labels) ++count[static_cast<size_t>(y)];
    const double n = static_cast<double>(data.train.labels.size());
    for (size_t c = 0; c < weights.size(); ++c) {
      weights[c] = count[c]
                       ? static_cast<float>(n / (static_cast<double>(weights.size()) * count[c]))
                       : 0.0f;
    }
  }
  for (const auto& [name, weight] : spec.class_weights.by_name) {
    for (int c = 0; c < data.num_classes; ++c) {
      if (ClassName(data.class_names, c) == name) weights[static_cast<size_t>(c)] = weight;
    }
  }
  return weights;
}

Status CheckDistributable(const JobSpec& spec, int workers) {
  if (workers <= 1) return Status::Ok();
  const std::string n = std::to_string(workers);
  if (spec.batch_size < workers) {
    return Bad("batch_size", std::to_string(spec.batch_size) + " is less than the " + n +
                                 " workers: each needs at least one example of every batch");
  }
  if (spec.distributed.reduction_blocks < workers) {
    return Bad("distributed.reduction_blocks",
               std::to_string(spec.distributed.reduction_blocks) + " is less than the " + n +
                   " workers: each trains on whole blocks of every batch, so it needs at least "
                   "one; a multiple of the worker counts you use keeps their shares even");
  }
  const HooksSpec& h = spec.hooks;
  const std::string why = "with " + n +
                          " workers this hook evaluates on every rank together, so it must be "
                          "triggered by steps, which all ranks count alike; use every_steps";
  if (h.evaluation.enabled && h.evaluation.trigger.every_secs > 0) {
    return Bad("hooks.evaluation.every_secs", why);
  }
  if (h.early_stopping.enabled && h.early_stopping.trigger.every_secs > 0) {
    return Bad("hooks.early_stopping.every_secs", why);
  }
  const bool logs_a_split =
      std::any_of(h.logging.tensors.begin(), h.logging.tensors.end(),
                  [](const std::string& t) { return t.find('/') != std::string::npos; });
  if (h.logging.enabled && logs_a_split && h.logging.every_n_secs > 0) {
    return Bad("hooks.logging.every_n_secs", why);
  }
  return Status::Ok();
}

}  // namespace trainingd::engine
