// JobSpec: everything one training job needs, as plain data (no JSON here: api/ parses the JSON
// job spec into it, docs/job-spec.md). ValidateJobSpec checks what the types cannot, naming the
// field by its JSON path ("hooks.checkpoint.every_steps").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/augmentation.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/loss.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/optim/optimizer.h"

namespace trainingd::engine {

// A periodic trigger: every_steps global steps or every_secs seconds. Both 0 = the hook's default;
// both > 0 is an error (TF's rule).
struct TriggerSpec {
  int64_t every_steps = 0;
  double every_secs = 0;
};

struct DatasetSpec {
  // A dataset by name: an MNIST-format IDX directory under the data root, or a dataset uploaded
  // to the daemon (docs/data.md). Only [A-Za-z0-9._-], no "..": a job never names a path.
  std::string name = "fashion-mnist";
  // What an uploaded dataset is, as the daemon records it in the job's canonical spec at submit,
  // so that the spec names its exact data and a run anywhere reads it the same way:
  std::string format = "idx";          // "idx" (a directory under the data root), "npz" or "csv"
  std::string sha256;                  // npz, csv: the digest of the uploaded file(s); required
  std::string label_column = "label";  // csv
  // csv: a number column read as each row's sample weight, not a feature (the job's choice, not
  // the upload's; docs/job-spec.md#weights). Empty = every row weighs 1.
  std::string weight_column;
  bool test_file = false;      // csv: uploaded with a test file
  double test_fraction = 0.2;  // csv without a test file
  uint64_t split_seed = 0;     // csv without a test file
  // "none", "standard" (tables: an upload's, computed when it was uploaded) or "per_channel"
  // (uint8 images: computed on the train split as the job loads it, NormalizePerChannel).
  std::string normalize = "none";
  TableColumnOptions columns;  // csv: the columns' types and missing values
  // kAutoValidationSize: 5000 for IDX (TensorFlow's tutorials); for an upload, its own
  // validation split (x_val) or a tenth of the training examples. See DatasetOptions.
  int64_t validation_size = kAutoValidationSize;
  int64_t max_train_examples = 0;  // 0 = all
  int64_t max_test_examples = 0;   // 0 = all
  // k-fold cross-validation (cross_validation.h): when folds > 0 the validation split is fold
  // `fold` of the training split (validation_size must be left out), the training split the
  // other folds; the folds are a function of split_seed. A cross_validation experiment sets them.
  int64_t folds = 0;       // 0, or in [kMinFolds, kMaxFolds]
  int64_t fold = 0;        // in [0, folds)
  bool stratified = true;  // each fold holds each class in proportion
};

struct CheckpointHookSpec {
  bool enabled = true;
  TriggerSpec trigger;  // default: every 600 s (TF's save_checkpoint_secs)
  int max_to_keep = 5;
  double keep_checkpoint_every_n_hours = 0;
  // Keeps the best-evaluated checkpoint past max_to_keep (BestCheckpointHook): by
  // early_stopping's monitor when it is on, else by "<evaluation.split>/loss".
  bool keep_best = true;
};

struct SummaryHookSpec {
  bool enabled = true;
  TriggerSpec trigger;  // default: every 100 steps (TF's save_summaries_steps)
};

struct StepCounterHookSpec {
  bool enabled = true;
  int64_t every_steps = 100;  // TF's log_step_count_steps
};

struct LoggingHookSpec {
  bool enabled = true;
  int64_t every_n_iter = 0;  // both 0 = every 100 iterations
  double every_n_secs = 0;
  std::vector<std::string> tensors = {"global_step", "loss", "accuracy"};  // fetch names
  bool at_end = false;
};

struct NanGuardHookSpec {
  bool enabled = true;
  bool fail = true;  // true: the job fails; false: it stops cleanly (TF's fail_on_nan_loss)
};

struct EvaluationHookSpec {
  bool enabled = false;
  TriggerSpec trigger;  // default: every 1000 steps
  std::string split = "validation";
  bool at_end = true;  // once more when the run ends, unless its last step was just evaluated
};

struct FinalEvalHookSpec {
  bool enabled = false;
  std::string split = "test";
};

struct EarlyStoppingHookSpec {
  bool enabled = false;
  // A "<split>/<metric>" fetch, a metric of the job's task (metrics.h's kClassificationMetrics,
  // kRegressionMetrics).
  std::string monitor = "validation/loss";
  // "min" or "max"; a spec that leaves it out gets the monitored metric's direction
  // (DefaultMode: "max" for accuracy, precision_macro, recall_macro, f1_macro, auc, r2).
  std::string mode = "min";
  int64_t patience = 5;  // evaluations without improvement before stopping
  double min_delta = 0;  // smaller changes do not count as improvement
  TriggerSpec trigger;   // default: the evaluation hook's trigger
  // A completed run ends with the best checkpoint's state (Keras' restore_best_weights): the
  // final evaluation is the best model's. Needs hooks.checkpoint with keep_best.
  bool restore_best = false;
};

struct ProfilerHookSpec {
  bool enabled = false;
  TriggerSpec trigger;  // default: every 1000 steps
};

struct HooksSpec {
  CheckpointHookSpec checkpoint;
  SummaryHookSpec summary;
  StepCounterHookSpec step_counter;
  LoggingHookSpec logging;
  NanGuardHookSpec nan_guard;
  EvaluationHookSpec evaluation;
  FinalEvalHookSpec final_eval;
  EarlyStoppingHookSpec early_stopping;
  ProfilerHookSpec profiler;
};

// A data-parallel job (docs/distributed.md): `workers` processes (MPI ranks), rank 0 the chief.
// batch_size stays the global batch, so a job means the same thing for any number of workers.
struct DistributedSpec {
  int workers = 1;                 // 1 = one process, no MPI
  std::vector<std::string> hosts;  // mpirun --host entries, "name" or "name:slots"; empty = here
  std::string hostfile;            // an absolute path, instead of hosts
  int max_restarts = 3;            // relaunches from the latest checkpoint after a rank dies
  double stall_timeout_secs = 60;  // no step for this long: the job is restarted
  // The fixed blocks each batch's gradients are summed in (gradient_blocks.h): results are bit
  // for bit the same for any number of workers up to min(reduction_blocks, batch_size), and any
  // thread count. The default, 4, splits evenly over 1, 2 and 4 workers; 12 over 1, 2, 3, 4, 6
  // and 12, at a cost in speed for small batches.
  int reduction_blocks = 4;
};

// What each run of the job may use, whichever executor runs it (docs/job-spec.md#resources).
struct ResourcesSpec {
  // Compute threads of each worker (a Slurm task's CPUs); 0 = the daemon's default. The results
  // do not depend on it.
  int cpus_per_worker = 0;
  // Each run (a start or a resume) stops after this long, with a final checkpoint, and can be
  // resumed; under Slurm also the batch job's time limit, with a margin. 0 = none.
  double time_limit_secs = 0;
};

inline constexpr int kMaxCpusPerWorker = 1024;
// A year: longer is a mistake, and far beyond what a Slurm time limit holds.
inline constexpr double kMaxTimeLimitSecs = 365.0 * 86400;

struct JobSpec {
  std::string name;  // [A-Za-z0-9._-], 1-100 characters
  DatasetSpec dataset;
  std::string model_preset;  // "cnn", "mlp", "softmax" when the model was given by name
  ModelSpec model;           // the layers (a preset expanded)
  // The training steps' arithmetic: float32, or "mixed_bfloat16" (layer.h's Precision,
  // docs/job-spec.md#precision).
  Precision precision = Precision::kFloat32;
  OptimizerOptions optimizer;
  // What the job learns from its dataset's labels (docs/job-spec.md#task): their classes (the
  // default), or the numbers of a CSV's label column (regression: one output, trained on the
  // standardized target with `loss`, loss.h).
  Task task = Task::kClassification;
  RegressionLoss loss = RegressionLoss::kMse;  // regression only
  float huber_delta = 1.0f;  // loss huber: in the standardized target's units, > 0
  // Classification: how much each class's rows weigh in the training loss
  // (docs/job-spec.md#weights): `balanced`, or weights by class name (a class not named weighs
  // 1); neither = every class 1. ResolveClassWeights makes them one per class.
  struct ClassWeights {
    bool balanced = false;
    std::vector<std::pair<std::string, float>> by_name;
    bool empty() const { return !balanced && by_name.empty(); }
    friend bool operator==(const ClassWeights&, const ClassWeights&) = default;
  };
  ClassWeights class_weights;
  // Classification with two classes: the positive class's (class 1's) probability above which
  // the model predicts it (docs/job-spec.md#decision-threshold), in (0, 1). Post-processing only:
  // training does not use it; evaluations, predictions, the ONNX graph's "label" and the model
  // server do. Unset = 0.5, the arg-max (kDefaultDecisionThreshold).
  std::optional<double> decision_threshold;
  // The training loss's label smoothing, in [0, 1) (SoftmaxCrossEntropy, docs/optimizers.md);
  // classification only.
  float label_smoothing = 0.0f;
  // How the model encodes a table's categorical columns (docs/job-spec.md#categorical).
  CategoricalOptions categorical;
  // Random transforms of the training split's images (augmentation.h, docs/data.md#augmentation).
  AugmentationSpec augmentation;
  int64_t batch_size = 50;
  // The job ends at this global step (StopAtStepHook's last_step); 0 = no step limit.
  int64_t max_steps = 0;
  // The job ends after this many epochs of the training split; 0 = no epoch limit. At least one
  // of max_steps and num_epochs must be set.
  int64_t num_epochs = 0;
  uint64_t seed = 0;
  HooksSpec hooks;
  DistributedSpec distributed;
  ResourcesSpec resources;
  // The daemon's queue order: higher starts first, equal priorities in arrival order
  // (docs/job-spec.md#priority). It does not change what the job computes.
  int64_t priority = 0;
};

inline constexpr int64_t kMinJobPriority = -1000;
inline constexpr int64_t kMaxJobPriority = 1000;

inline constexpr int kMaxWorkers = 1024;

// The most layers a model may have (the tutorials' deepest has 8).
inline constexpr size_t kMaxLayers = 1000;

// OK, or InvalidArgument whose message starts with the JSON path of the first bad field,
// e.g. "hooks.logging.tensors[1]: unknown fetch 'los'".
Status ValidateJobSpec(const JobSpec& spec);

// Fits a preset to the dataset: when spec->model_preset is set and spec->model is that preset's
// layers (IsPresetModel), the model becomes PresetModel(preset, example_shape, num_classes), so
// the last dense layer has the dataset's classes as its units. Any other model is the user's
// own and is left as written (Model::Build then checks its last layer's units). InvalidArgument
// "model: ..." when the preset does not fit the examples (cnn on a table), "augmentation.<field>:
// ..." when the augmentation does not (a flip of a table, a padding over half the image). PlanJob
// and RunJob apply it; a caller that keeps the spec (the daemon's canonical spec) applies it too,
// so the spec it keeps is the model that runs.
//
// A table with `categorical` columns (Datasets::categorical) gets a categorical_encoding layer
// first, one-hot or embedding each column by spec->categorical (EncodedWidth), in place of any
// the model had: the data decides it, so fitting a spec again gives the same model. In a graph
// it is named "categorical_encoding" and takes the place of "input" in the layers' inputs.
Status FitModelToData(JobSpec* spec, const Shape& example_shape, int64_t num_classes,
                      const std::vector<CategoricalFeature>& categorical = {});

// The job's class weights for `data`, one per class (TrainerOptions::class_weights): balanced's
// n / (classes * n_c) over the train split's rows (scikit-learn's compute_class_weight; a class
// without a training row weighs 0), or the named classes' weights and 1 for the others; empty
// when the spec has none. InvalidArgument "class_weights.<name>: ..." for a name that is not one
// of data's classes (CheckClassWeights).
Result<std::vector<float>> ResolveClassWeights(const JobSpec& spec, const Datasets& data);
// Admission's part of it, from the dataset's class names (empty = "0".."n-1").
Status CheckClassWeights(const JobSpec& spec, const std::vector<std::string>& class_names,
                         int num_classes);

// The job's decision threshold, if it has one, fits its data: InvalidArgument
// "decision_threshold: ..." unless the dataset has two classes (admission and RunJob; the task
// and the range are ValidateJobSpec's).
Status CheckDecisionThreshold(const JobSpec& spec, int64_t num_classes);
// The threshold the job's model predicts with: the spec's, else kDefaultDecisionThreshold.
double DecisionThresholdOf(const JobSpec& spec);

// What a job must satisfy to run on `workers` > 1 ranks, with errors naming the field: at least
// one block of examples per worker in every batch, and the hooks that evaluate (collectively, on
// every rank) triggered by steps, which all ranks count alike, not by seconds, which each rank
// measures itself. ValidateJobSpec applies it to distributed.workers; a job started by mpirun
// applies it to the number of ranks it found.
Status CheckDistributable(const JobSpec& spec, int workers);

// True if `name` is a safe single path component: 1-100 of [A-Za-z0-9._-], not "." or "..".
bool IsSafeName(const std::string& name);

// True if `s` is a SHA-256 digest as 64 lowercase hex digits.
bool IsSha256(const std::string& s);

}  // namespace trainingd::engine
