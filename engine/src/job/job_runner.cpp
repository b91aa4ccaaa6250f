#include "trainingd/engine/job/job_runner.h"

#include <algorithm>
#include <filesystem>

#include "nn/gemm.h"
#include "session/hooks/hook_util.h"
#include "trainingd/engine/data/cross_validation.h"
#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/session/hooks/best_checkpoint_hook.h"
#include "trainingd/engine/session/hooks/early_stopping_hook.h"
#include "trainingd/engine/session/hooks/evaluation_hook.h"
#include "trainingd/engine/session/hooks/final_ops_hook.h"
#include "trainingd/engine/session/hooks/logging_tensor_hook.h"
#include "trainingd/engine/session/hooks/nan_tensor_hook.h"
#include "trainingd/engine/session/hooks/profiler_hook.h"
#include "trainingd/engine/session/hooks/stop_at_step_hook.h"
#include "trainingd/engine/session/monitored_training_session.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kDefaultEveryNIter = 100;
constexpr int64_t kDefaultEvaluationSteps = 1000;
constexpr int64_t kDefaultProfilerSteps = 1000;

// A spec trigger with both fields 0 takes `default_steps`.
TriggerSpec OrDefault(TriggerSpec t, int64_t default_steps) {
  if (t.every_steps <= 0 && t.every_secs <= 0) t.every_steps = default_steps;
  return t;
}

// Prefixes a hook's option error with the spec field it came from.
Status InField(const std::string& field, const Status& st) {
  return Status(st.code(), field + ": " + st.message());
}

struct BuiltHooks {
  std::vector<std::shared_ptr<SessionRunHook>> hooks;
  std::shared_ptr<StopAtStepHook> stop_at_step;
  std::shared_ptr<EvaluationHook> evaluation;
  std::shared_ptr<EarlyStoppingHook> early_stopping;
  std::shared_ptr<BestCheckpointHook> best_checkpoint;
  std::shared_ptr<FinalOpsHook> final_ops;
};

// The best checkpoint's hook, on every rank: by early stopping's monitor and trigger when it is
// on, else by the evaluation's loss; none without checkpoints, keep_best or an evaluation.
Result<std::shared_ptr<BestCheckpointHook>> BuildBestCheckpointHook(
    const JobSpec& spec, const TriggerSpec& eval_trigger,
    const std::shared_ptr<Communicator>& communicator) {
  const HooksSpec& h = spec.hooks;
  if (!h.checkpoint.enabled || !h.checkpoint.keep_best) {
    return std::shared_ptr<BestCheckpointHook>();
  }
  BestCheckpointHook::Options o;
  TriggerSpec t = eval_trigger;
  if (h.early_stopping.enabled) {
    o.monitor = h.early_stopping.monitor;
    o.mode = h.early_stopping.mode;
    o.min_delta = h.early_stopping.min_delta;
    o.restore_best = h.early_stopping.restore_best;
    const TriggerSpec& es = h.early_stopping.trigger;
    if (es.every_steps > 0 || es.every_secs > 0) t = es;
  } else if (h.evaluation.enabled) {
    o.monitor = h.evaluation.split + "/loss";
  } else {
    return std::shared_ptr<BestCheckpointHook>();
  }
  o.every_steps = t.every_steps;
  o.every_secs = t.every_secs;
  o.at_end = h.evaluation.enabled && h.evaluation.at_end;
  o.communicator = communicator;
  auto hook = BestCheckpointHook::Create(std::move(o));
  if (!hook.ok()) return InField("hooks.checkpoint.keep_best", hook.status());
  return *hook;
}

Result<BuiltHooks> BuildHooks(const JobSpec& spec, const JobRunOptions& options,
                              const std::shared_ptr<SummaryWriter>& writer, bool is_chief) {
  BuiltHooks b;
  const HooksSpec& h = spec.hooks;
  if (spec.max_steps > 0) {
    auto hook = StopAtStepHook::Create(std::nullopt, spec.max_steps);
    if (!hook.ok()) return InField("max_steps", hook.status());
    b.stop_at_step = *hook;
    b.hooks.push_back(*hook);
  }
  if (h.nan_guard.enabled) b.hooks.push_back(std::make_shared<NanTensorHook>(h.nan_guard.fail));
  if (h.logging.enabled) {
    LoggingTensorHook::Options o{.every_n_iter = h.logging.every_n_iter,
                                 .every_n_secs = h.logging.every_n_secs,
                                 .at_end = h.logging.at_end};
    if (o.every_n_iter <= 0 && o.every_n_secs <= 0) o.every_n_iter = kDefaultEveryNIter;
    auto hook = LoggingTensorHook::Create(h.logging.tensors, o);
    if (!hook.ok()) return InField("hooks.logging", hook.status());
    b.hooks.push_back(*hook);
  }
  TriggerSpec eval_trigger = OrDefault(h.evaluation.trigger, kDefaultEvaluationSteps);
  if (h.evaluation.enabled) {
    auto hook = EvaluationHook::Create({.every_steps = eval_trigger.every_steps,
                                        .every_secs = eval_trigger.every_secs,
                                        .split = h.evaluation.split,
                                        .at_end = h.evaluation.at_end,
                                        .summary_writer = writer});
    if (!hook.ok()) return InField("hooks.evaluation", hook.status());
    b.evaluation = *hook;
    b.hooks.push_back(*hook);
  }
  if (h.early_stopping.enabled) {
    const TriggerSpec t =
        h.early_stopping.trigger.every_steps > 0 || h.early_stopping.trigger.every_secs > 0
            ? h.early_stopping.trigger
            : eval_trigger;
    auto hook = EarlyStoppingHook::Create({.monitor = h.early_stopping.monitor,
                                           .mode = h.early_stopping.mode == "max"
                                                       ? EarlyStoppingHook::Mode::kMax
                                                       : EarlyStoppingHook::Mode::kMin,
                                           .patience = h.early_stopping.patience,
                                           .min_delta = h.early_stopping.min_delta,
                                           .every_steps = t.every_steps,
                                           .every_secs = t.every_secs});
    if (!hook.ok()) return InField("hooks.early_stopping", hook.status());
    b.early_stopping = *hook;
    b.hooks.push_back(*hook);
  }
  if (auto best = BuildBestCheckpointHook(spec, eval_trigger, options.communicator); !best.ok()) {
    return best.status();
  } else if (*best) {
    b.best_checkpoint = *best;
    b.hooks.push_back(*best);
  }
  if (h.profiler.enabled && is_chief) {
    const TriggerSpec t = OrDefault(h.profiler.trigger, kDefaultProfilerSteps);
    auto hook = ProfilerHook::Create({.save_steps = t.every_steps,
                                      .save_secs = t.every_secs,
                                      .output_dir = options.checkpoint_dir,
                                      .max_traces = options.limits.max_profiler_traces});
    if (!hook.ok()) return InField("hooks.profiler", hook.status());
    b.hooks.push_back(*hook);
  }
  if (h.final_eval.enabled) {
    auto hook =
        FinalOpsHook::Create(internal::EvaluationFetches(h.final_eval.split, spec.task), writer);
    if (!hook.ok()) return InField("hooks.final_eval", hook.status());
    b.final_ops = *hook;
    b.hooks.push_back(*hook);
  }
  return b;
}

// A spec hook's trigger as MonitoredTrainingSession's steps/secs pair: off = steps 0; neither
// period given = both left unset, so MonitoredTrainingSession applies TF's default.
void SetTrigger(bool enabled, const TriggerSpec& t, std::optional<int64_t>& steps,
                std::optional<double>& secs) {
  if (!enabled) {
    steps = 0;
  } else if (t.every_steps > 0) {
    steps = t.every_steps;
  } else if (t.every_secs > 0) {
    secs = t.every_secs;
  }
}

MonitoredTrainingSessionOptions SessionOptionsFor(const JobSpec& spec,
                                                  const JobRunOptions& options) {
  const HooksSpec& h = spec.hooks;
  MonitoredTrainingSessionOptions o;
  o.checkpoint_dir = options.checkpoint_dir;
  SetTrigger(h.checkpoint.enabled, h.checkpoint.trigger, o.save_checkpoint_steps,
             o.save_checkpoint_secs);
  o.max_to_keep = h.checkpoint.max_to_keep;
  o.keep_checkpoint_every_n_hours = h.checkpoint.keep_checkpoint_every_n_hours;
  if (options.limits.max_checkpoints > 0) {
    // The best checkpoint, kept past max_to_keep, counts too.
    const int best = h.checkpoint.keep_best ? 1 : 0;
    o.max_preserved_checkpoints =
        std::max(0, options.limits.max_checkpoints - o.max_to_keep - best);
  }
  SetTrigger(h.summary.enabled, h.summary.trigger, o.save_summaries_steps, o.save_summaries_secs);
  o.log_step_count_steps = h.step_counter.enabled ? h.step_counter.every_steps : 0;
  o.summary_sinks = options.summary_sinks;
  return o;
}

}  // namespace

const char* JobOutcomeName(JobResult::Outcome outcome) {
  switch (outcome) {
    case JobResult::Outcome::kCompleted:
      return "completed";
    case JobResult::Outcome::kStopped:
      return "stopped";
    case JobResult::Outcome::kFailed:
      return "failed";
  }
  return "failed";
}

const char* StopCauseName(JobResult::StopCause cause) {
  switch (cause) {
    case JobResult::StopCause::kNone:
      return "";
    case JobResult::StopCause::kRequest:
      return "request";
    case JobResult::StopCause::kTimeLimit:
      return "time_limit";
    case JobResult::StopCause::kDiskFull:
      return "disk_full";
  }
  return "";
}

namespace {

Status RegressionNeedsCsv(const DatasetSpec& dataset) {
  return Status::InvalidArgument(
      "task: regression reads a CSV table's label column as numbers; "
      "dataset '" +
      dataset.name + "' is " + dataset.format);
}

// An upload's file is named by its digest: not finding it means the data the job recorded was
// deleted (perhaps uploaded again under the same name, with other bytes).
Status UploadGone(const DatasetSpec& dataset, const std::string& detail) {
  return Status::InvalidArgument("dataset.sha256: dataset '" + dataset.name + "' with sha256 " +
                                 dataset.sha256 + " is no longer there (deleted?): " + detail);
}

}  // namespace

LabelUse LabelUseOf(Task task) {
  return task == Task::kRegression ? LabelUse::kNumbers : LabelUse::kClasses;
}

DatasetOptions JobDatasetOptions(const DatasetSpec& dataset) {
  DatasetOptions o;
  // Cross-validation takes its validation split from the folds of the whole training split.
  o.validation_size = dataset.folds > 0 ? 0 : dataset.validation_size;
  o.max_train_examples = dataset.max_train_examples;
  o.max_test_examples = dataset.max_test_examples;
  return o;
}

std::string UploadedDatasetFile(const std::string& sha256, const std::string& format,
                                bool test_file) {
  return sha256 + (test_file ? ".test." : ".") + format;
}

Result<DatasetSource> JobDatasetSource(const DatasetSpec& dataset, const std::string& data_root,
                                       const std::string& datasets_dir, LabelUse label_use) {
  if (!IsSafeName(dataset.name)) {
    return Status::InvalidArgument("dataset.name: '" + dataset.name +
                                   "' is not a plain directory name");
  }
  DatasetSource source;
  if (dataset.format == "idx") {
    source.path = data_root + "/" + dataset.name;
    return source;
  }
  if (datasets_dir.empty()) {
    return Status::InvalidArgument("dataset.format: " + dataset.format +
                                   " datasets are uploads, and this run has no datasets "
                                   "directory (trainingd run --datasets-dir)");
  }
  if (!IsSha256(dataset.sha256)) {
    return Status::InvalidArgument("dataset.sha256: an upload is named by its digest");
  }
  const std::string dir = datasets_dir + "/" + dataset.name + "/";
  source.format =
      dataset.format == "npz" ? DatasetSource::Format::kNpz : DatasetSource::Format::kCsv;
  source.path = dir + UploadedDatasetFile(dataset.sha256, dataset.format);
  if (dataset.test_file) source.test_path = dir + UploadedDatasetFile(dataset.sha256, "csv", true);
  source.label_column = dataset.label_column;
  source.label_use = label_use;
  source.weight_column = dataset.weight_column;
  if (!dataset.weight_column.empty() && dataset.format != "csv") {
    return Status::InvalidArgument(
        "dataset.weight_column: only a CSV table has columns; dataset '" + dataset.name + "' is " +
        dataset.format);
  }
  source.test_fraction = dataset.test_fraction;
  source.split_seed = dataset.split_seed;
  source.standardize = dataset.normalize == "standard";
  source.columns = dataset.columns;
  return source;
}

Result<std::shared_ptr<const Datasets>> LoadJobDatasets(const DatasetSpec& dataset,
                                                        const std::string& data_root,
                                                        const std::string& datasets_dir,
                                                        Task task) {
  auto source = JobDatasetSource(dataset, data_root, datasets_dir, LabelUseOf(task));
  if (!source.ok()) return source.status();
  if (task == Task::kRegression && source->format != DatasetSource::Format::kCsv) {
    return RegressionNeedsCsv(dataset);
  }
  if (!source.ok()) return source.status();
  auto data = LoadDataset(*source, JobDatasetOptions(dataset));
  if (!data.ok() && dataset.format != "idx" && data.status().code() == StatusCode::kNotFound) {
    return UploadGone(dataset, data.status().message());
  }
  if (!data.ok()) {
    return Status(data.status().code(),
                  "dataset '" + dataset.name + "': " + data.status().message());
  }
  if (dataset.folds > 0) {
    if (Status s =
            ApplyFold(&*data, dataset.folds, dataset.fold, dataset.stratified, dataset.split_seed);
        !s.ok()) {
      return Status::InvalidArgument("dataset." + s.message());
    }
  }
  if (dataset.normalize == "per_channel") {
    if (Status s = NormalizePerChannel(&*data); !s.ok()) {
      return Status::InvalidArgument("dataset." + s.message());
    }
  }
  return std::shared_ptr<const Datasets>(std::make_shared<Datasets>(std::move(data).value()));
}

bool HasCheckpointAt(const std::string& checkpoint_dir, int64_t step) {
  const auto kept = ListCheckpoints(checkpoint_dir);  // read-only
  return kept.ok() && !kept->empty() && kept->back().global_step == step;
}

Result<DatasetInfo> ProbeJobDataset(const DatasetSpec& dataset, const std::string& data_root,
                                    const std::string& datasets_dir, Task task) {
  auto source = JobDatasetSource(dataset, data_root, datasets_dir, LabelUseOf(task));
  if (source.ok() && task == Task::kRegression && source->format != DatasetSource::Format::kCsv) {
    return RegressionNeedsCsv(dataset);
  }
  if (!source.ok()) return source.status();
  auto info = ProbeDataset(*source, JobDatasetOptions(dataset));
  if (info.ok() && dataset.folds > 0) {
    // Fold i holds the positions p < n with p mod folds = i (AssignFolds).
    const int64_t n = info->train_examples;
    if (dataset.folds > n) {
      return Status::InvalidArgument("dataset.folds: " + std::to_string(dataset.folds) +
                                     " folds of " + std::to_string(n) +
                                     " training examples: each fold needs at least one");
    }
    info->validation_examples = n / dataset.folds + (dataset.fold < n % dataset.folds ? 1 : 0);
    info->train_examples = n - info->validation_examples;
  }
  if (info.ok() && dataset.normalize == "per_channel") {
    // NormalizePerChannel's condition, known from the headers; its statistics come at load.
    if (info->preprocessing != Preprocessing::kScale255 || info->example_shape.rank() != 3) {
      return Status::InvalidArgument(
          "dataset.normalize: per_channel applies to uint8 images [H, W, C]; dataset '" +
          dataset.name + "' holds " + info->example_shape.ToString() + " examples (" +
          info->element_type + ")");
    }
    info->preprocessing = Preprocessing::kPerChannel;
  }
  if (info.ok()) return info;
  const std::string& m = info.status().message();
  std::error_code ec;
  if (dataset.format != "idx" && info.status().code() == StatusCode::kNotFound) {
    return UploadGone(dataset, m);
  }
  if (dataset.format == "idx" && info.status().code() == StatusCode::kNotFound &&
      !fs::is_directory(data_root + "/" + dataset.name, ec)) {
    std::string known;
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(data_root, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory(ec) && IsSafeName(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    return Status::InvalidArgument("dataset.name: no dataset '" + dataset.name + "' in " +
                                   data_root + " (there are: " + (known.empty() ? "none" : known) +
                                   ")");
  }
  // What is wrong with the label column (a regression target that is not a number; labels that
  // cannot be classes) is the label column's fault, and the other task may read it.
  if (m.rfind("weight_column: ", 0) == 0 ||
      (!dataset.weight_column.empty() &&
       m.find(": column '" + dataset.weight_column + "': ") != std::string::npos)) {
    return Status::InvalidArgument("dataset.weight_column: dataset '" + dataset.name +
                                   "': " + (m.rfind("weight_column: ", 0) == 0 ? m.substr(15) : m));
  }
  if (dataset.format == "csv" &&
      m.find(": column '" + dataset.label_column + "': ") != std::string::npos) {
    const bool classes = task == Task::kClassification;
    return Status::InvalidArgument(
        "dataset.label_column: dataset '" + dataset.name + "': " + m +
        (classes && (m.find("distinct labels") != std::string::npos ||
                     m.find("integer labels are class ids") != std::string::npos)
             ? " (a regression job, task: regression, reads them as numbers)"
             : ""));
  }
  for (const char* option : {"validation_size", "max_train_examples", "max_test_examples"}) {
    if (m.rfind(option, 0) == 0) {
      return Status::InvalidArgument("dataset." + std::string(option) + ": " + m);
    }
  }
  return Status::InvalidArgument("dataset.name: dataset '" + dataset.name +
                                 "' cannot be read: " + m);
}

Result<JobResult> RunJob(const JobSpec& spec, const JobRunOptions& options) {
  TRAININGD_RETURN_IF_ERROR(ValidateJobSpec(spec));
  if (options.checkpoint_dir.empty()) {
    return Status::InvalidArgument("checkpoint_dir: required to run a job");
  }
  Env* env = options.env ? options.env : Env::Default();
  // resources.time_limit_secs counts from here: loading the data and restoring are the run's.
  const double limit = spec.resources.time_limit_secs;
  const double run_start = env->NowMonotonic();
  const auto out_of_time = [&] { return limit > 0 && env->NowMonotonic() - run_start >= limit; };
  std::shared_ptr<Logger> logger = options.logger ? options.logger : Logger::Stderr();
  std::shared_ptr<const Datasets> datasets = options.datasets;
  if (!datasets) {
    auto loaded = LoadJobDatasets(spec.dataset, options.data_root, options.datasets_dir, spec.task);
    if (!loaded.ok()) return loaded.status();
    datasets = *loaded;
  }

  // A preset gets the dataset's classes, as PlanJob admitted it.
  JobSpec fitted = spec;
  TRAININGD_RETURN_IF_ERROR(FitModelToData(&fitted, datasets->train.example_shape(),
                                           datasets->num_classes, datasets->categorical));

  SessionConfig config;
  config.model = fitted.model;
  config.optimizer = spec.optimizer;
  config.batch_size = spec.batch_size;
  config.seed = spec.seed;
  config.num_epochs = spec.num_epochs;
  config.reduction_blocks = spec.distributed.reduction_blocks;
  config.precision = spec.precision;
  config.label_smoothing = spec.label_smoothing;
  config.augmentation = spec.augmentation;
  config.regression_loss = spec.loss;
  config.huber_delta = spec.huber_delta;
  auto class_weights = ResolveClassWeights(spec, *datasets);
  if (!class_weights.ok()) return class_weights.status();
  config.class_weights = *std::move(class_weights);
  TRAININGD_RETURN_IF_ERROR(CheckDecisionThreshold(spec, datasets->num_classes));
  config.decision_threshold = DecisionThresholdOf(spec);
  const std::shared_ptr<Communicator>& comm = options.communicator;
  const bool distributed = comm && comm->size() > 1;
  if (distributed) {
    TRAININGD_RETURN_IF_ERROR(CheckDistributable(spec, comm->size()));
    config.communicator = comm;
  }
  const bool is_chief = !distributed || comm->is_chief();
  if (is_chief && options.on_model_input) {
    TRAININGD_RETURN_IF_ERROR(options.on_model_input(MakeModelInput(fitted, *datasets)));
  }

  if (spec.precision == Precision::kMixedBfloat16 && is_chief) {
    using internal::Bf16Kernels;
    switch (internal::GemmBf16Kernels()) {
      case Bf16Kernels::kInstructions:
        logger->Info("precision mixed_bfloat16: on this CPU's AVX512_BF16 instructions");
        break;
      case Bf16Kernels::kFloatFma:
        logger->Warning(
            std::string("precision mixed_bfloat16: ") +
            (internal::Bf16KernelsAvailable(Bf16Kernels::kInstructions)
                 ? "this CPU's AVX512_BF16 instructions are slower than its float32 FMAs"
                 : "this CPU has no AVX512_BF16 instructions") +
            ", so float32 FMAs take their steps (the same results, at about float32's speed)");
        break;
      case Bf16Kernels::kEmulated:
        logger->Warning(
            "precision mixed_bfloat16: this CPU has no AVX512_BF16 instructions, so they are "
            "emulated (the same results, more slowly than float32)");
        break;
    }
  }

  auto writer = std::make_shared<SummaryWriter>(env);
  auto hooks = BuildHooks(spec, options, writer, is_chief);
  if (!hooks.ok()) return hooks.status();
  MonitoredTrainingSessionOptions mts = SessionOptionsFor(spec, options);
  mts.is_chief = is_chief;
  mts.hooks = hooks->hooks;
  mts.hooks.insert(mts.hooks.end(), options.extra_hooks.begin(), options.extra_hooks.end());
  if (is_chief) mts.best_checkpoint = hooks->best_checkpoint;
  mts.session_options.env = env;
  mts.session_options.logger = logger;
  mts.session_options.summary_writer = writer;
  mts.session_options.max_recovery_attempts = distributed ? 0 : options.max_recovery_attempts;
  mts.session_options.stop_flag = options.stop;
  auto created = MonitoredTrainingSession(config, datasets, std::move(mts));
  if (!created.ok()) return created.status();
  MonitoredSession& ms = **created;
  if (options.on_session_created) options.on_session_created(ms);

  JobResult result;
  Status run_status;
  bool stopped_by_flag;
  // Out of time, the run stops as a stop request stops it: after the current step, with a final
  // checkpoint (in a data-parallel job a vote, so that every rank stops after the same step).
  bool time_up = false;
  while (!ms.ShouldStop()) {
    if (!time_up && out_of_time()) {
      time_up = true;
      ms.RequestStop();
      continue;
    }
    run_status = ms.Run({});
    if (!run_status.ok()) break;
  }
  // A stop that arrives during the step that reaches max_steps still counts as completed.
  const bool reached_max = spec.max_steps > 0 && ms.global_step() >= spec.max_steps;
  const bool asked = options.stop && options.stop->load();
  stopped_by_flag = !reached_max && (distributed ? ms.stop_agreed() : asked || time_up);
  // Another rank's vote may be its clock's: the time limit, unless this rank was asked to stop.
  time_up = stopped_by_flag && !asked && (time_up || out_of_time());
  result.global_step = ms.global_step();
  // restore_best applies to a run that completed; Close runs its End.
  if (hooks->best_checkpoint) {
    hooks->best_checkpoint->SetRunCompleted(
        !stopped_by_flag && (run_status.ok() || run_status.code() == StatusCode::kOutOfRange));
  }
  Status close_status = ms.Close();

  // A full disk, found by a step's writes or by the end hooks' (the final checkpoint, the last
  // summaries): stopped, if a final checkpoint still fitted; failed otherwise.
  const Status& disk_full =
      run_status.code() == StatusCode::kResourceExhausted ? run_status : close_status;
  if (disk_full.code() == StatusCode::kResourceExhausted) {
    if (HasCheckpointAt(options.checkpoint_dir, result.global_step)) {
      result.outcome = JobResult::Outcome::kStopped;
      result.stop_cause = JobResult::StopCause::kDiskFull;
      result.reason = "disk full (" + disk_full.message() +
                      "); stopped after a final checkpoint at global step " +
                      std::to_string(result.global_step);
    } else {
      result.outcome = JobResult::Outcome::kFailed;
      result.error = disk_full;
      result.reason = "disk full (" + disk_full.message() + "); no final checkpoint fitted";
    }
  } else if (!run_status.ok() && run_status.code() != StatusCode::kOutOfRange) {
    result.outcome = JobResult::Outcome::kFailed;
    result.error = run_status;
    result.reason = run_status.ToString();
  } else if (stopped_by_flag) {
    result.outcome = JobResult::Outcome::kStopped;
    result.stop_cause = time_up ? JobResult::StopCause::kTimeLimit : JobResult::StopCause::kRequest;
    result.reason = time_up ? "time limit of " + internal::FormatValue(limit) +
                                  " s reached (resources.time_limit_secs) at global step " +
                                  std::to_string(result.global_step)
                            : "stop requested";
  } else {
    result.outcome = JobResult::Outcome::kCompleted;
    if (run_status.code() == StatusCode::kOutOfRange) {
      result.reason = run_status.message();
    } else if (hooks->early_stopping && hooks->early_stopping->stopped_step()) {
      result.reason = "early stopping at global step " +
                      std::to_string(*hooks->early_stopping->stopped_step()) + " (best " +
                      hooks->early_stopping->monitor() + " at global step " +
                      std::to_string(hooks->early_stopping->best_step()) + ")";
    } else if (hooks->stop_at_step && result.global_step >= spec.max_steps) {
      result.reason = "reached max_steps " + std::to_string(spec.max_steps);
    } else {
      result.reason =
          "a hook requested the stop at global step " + std::to_string(result.global_step);
    }
    if (hooks->best_checkpoint && hooks->best_checkpoint->restored_step()) {
      result.reason += "; the final state is the best checkpoint's, global step " +
                       std::to_string(*hooks->best_checkpoint->restored_step()) + " (restore_best)";
    }
  }
  if (!close_status.ok() && disk_full.code() != StatusCode::kResourceExhausted) {
    if (result.error.ok()) result.error = close_status;
    if (result.outcome != JobResult::Outcome::kFailed) {
      result.outcome = JobResult::Outcome::kFailed;
      result.reason = "closing the session failed: " + close_status.ToString();
    }
  }
  // Final values are the final step's: an evaluation of an earlier one (at_end false) is not.
  if (hooks->evaluation && hooks->evaluation->last_evaluation() &&
      hooks->evaluation->last_evaluation()->global_step == result.global_step) {
    const auto& e = *hooks->evaluation->last_evaluation();
    for (const auto& [k, v] : e.values) result.final_values[k] = v;
  }
  if (hooks->final_ops) {
    for (const auto& [k, v] : hooks->final_ops->final_ops_values()) result.final_values[k] = v;
  }
  return result;
}

}  // namespace trainingd::engine
