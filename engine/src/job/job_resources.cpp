#include "trainingd/engine/job/job_resources.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/optim/optimizer.h"
#include "trainingd/engine/session/session.h"

namespace trainingd::engine {
namespace {

// Trainer::Evaluate's metrics: 4 (row max) + 8 (row sum) + 8 (a score) + 8 (its place in the
// order) + 1 (positive) + 4 (the prediction), rounded up.
constexpr int64_t kMetricsBytesPerExample = 40;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kFloat = sizeof(float);

int64_t Mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kMax : r;
}
int64_t Add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kMax : r;
}
template <typename... T>
int64_t Sum(int64_t a, T... rest) {
  if constexpr (sizeof...(rest) == 0) {
    return a;
  } else {
    return Add(a, Sum(rest...));
  }
}

// The process before it holds any job: code and libraries, the allocator's arenas, and per
// compute thread its stack and OpenBLAS's packing buffers as far as they get touched. Measured
// on the tutorial models (docs/benchmarks.md#memory-estimate): `trainingd --help` peaks at 6.5
// MiB; the rest is what a running job's threads and libraries add.
constexpr int64_t kRuntimeBytes = int64_t{24} << 20;
constexpr int64_t kRuntimeBytesPerThread = int64_t{8} << 20;

// Bytes on disk per item, upper bounds for the usual tags and lines.
constexpr int64_t kEventRecordBytes = 64;      // one scalar or checkpoint record in an event file
constexpr int64_t kLogLineBytes = 120;         // one line of the job's log
constexpr int64_t kTraceEventBytes = 160;      // one event of a profiler timeline
constexpr int64_t kCheckpointEntryBytes = 64;  // a tensor's name, shape and checksums

// How often a periodic hook fires over `steps` steps: by its every_steps; at most once a step
// for every_secs (the step rate is not known before the job runs); by `default_steps` when the
// spec gives neither.
int64_t Firings(const TriggerSpec& t, int64_t default_steps, int64_t steps) {
  if (t.every_steps > 0) return steps / t.every_steps + 1;
  if (t.every_secs > 0 || default_steps <= 0) return Add(steps, 1);
  return steps / default_steps + 1;
}

// The split a "<split>/..." name evaluates, or "" for a training fetch.
std::string SplitOf(const std::string& fetch) {
  const size_t slash = fetch.find('/');
  return slash == std::string::npos ? std::string() : fetch.substr(0, slash);
}

int64_t SplitSize(const DatasetInfo& data, const std::string& split) {
  if (split == "train") return data.train_examples;
  if (split == "validation") return data.validation_examples;
  if (split == "test") return data.test_examples;
  return 0;
}

// The largest split the job's hooks evaluate; 0 if none.
int64_t LargestEvaluatedSplit(const JobSpec& spec, const DatasetInfo& data) {
  const HooksSpec& h = spec.hooks;
  int64_t largest = 0;
  const auto use = [&](const std::string& split) {
    largest = std::max(largest, SplitSize(data, split));
  };
  if (h.evaluation.enabled) use(h.evaluation.split);
  if (h.final_eval.enabled) use(h.final_eval.split);
  if (h.early_stopping.enabled) use(SplitOf(h.early_stopping.monitor));
  if (h.logging.enabled) {
    for (const std::string& t : h.logging.tensors) use(SplitOf(t));
  }
  return largest;
}

int64_t TrainingSteps(const JobSpec& spec, const DatasetInfo& data) {
  int64_t steps = spec.max_steps > 0 ? spec.max_steps : kMax;
  if (spec.num_epochs > 0) {
    // Batches run across epoch ends, so num_epochs of N examples take ceil(epochs * N / batch).
    const int64_t examples = Mul(spec.num_epochs, data.train_examples);
    steps = std::min(steps, examples / spec.batch_size + (examples % spec.batch_size ? 1 : 0));
  }
  return steps;
}

bool HasParameters(LayerType type) {
  return type == LayerType::kConv2d || type == LayerType::kDense ||
         type == LayerType::kCategoricalEncoding;
}

}  // namespace

int64_t JobResources::memory() const {
  const int64_t training = Sum(dataset, parameters, optimizer, activations, scratch, checkpoint_io);
  return Add(runtime, std::max(load_peak, training));
}

int64_t JobResources::disk() const { return Sum(checkpoints, event_files, logs, profiler); }

Result<JobResources> PlanJob(const JobSpec& given, const DatasetInfo& data,
                             const JobRunLimits& limits) {
  TRAININGD_RETURN_IF_ERROR(ValidateJobSpec(given));
  // The job as it runs: a preset has the dataset's classes (RunJob does the same).
  JobSpec spec = given;
  TRAININGD_RETURN_IF_ERROR(
      FitModelToData(&spec, data.example_shape, data.num_classes, data.categorical));
  TRAININGD_RETURN_IF_ERROR(CheckClassWeights(spec, data.class_names, data.num_classes));
  TRAININGD_RETURN_IF_ERROR(CheckDecisionThreshold(spec, data.num_classes));
  if (spec.batch_size > data.train_examples) {
    return Status::InvalidArgument("batch_size: " + std::to_string(spec.batch_size) +
                                   " is more than the " + std::to_string(data.train_examples) +
                                   " examples in the training split of dataset '" +
                                   spec.dataset.name + "'");
  }
  auto model = Model::Plan(spec.model, data.example_shape, data.num_classes, spec.seed);
  if (!model.ok()) return model.status();
  (*model)->set_precision(spec.precision);
  auto optimizer = MakeOptimizer(spec.optimizer);
  if (!optimizer.ok()) return Status::InvalidArgument("optimizer." + optimizer.status().message());
  const int slots = (*optimizer)->slots_per_parameter();
  const int threads = std::max(1, limits.compute_threads);
  const HooksSpec& h = spec.hooks;

  JobResources r;
  r.steps = TrainingSteps(spec, data);
  r.num_parameters = (*model)->num_parameters();
  const int64_t largest_split = LargestEvaluatedSplit(spec, data);
  r.eval_batch = std::min(SessionConfig().eval_batch_size, largest_split);

  // --- memory
  const int64_t example = data.example_shape.num_elements();
  const int64_t batch = spec.batch_size;
  r.dataset = data.LoadedBytes();
  r.load_peak = data.PeakLoadBytes();
  const std::vector<ModelMemory> layers = (*model)->LayerMemoryUse(batch, r.eval_batch, threads);
  // What a layer's scratch holds for a single example: its parameter-sized buffers (per-thread
  // gradient sums), which do not grow with the batch.
  const std::vector<ModelMemory> single = (*model)->LayerMemoryUse(1, 0, threads);
  for (size_t i = 0; i < layers.size(); ++i) {
    const ModelMemory& m = layers[i];
    // A layer's slots are `slots` copies of its parameter values: a quarter of m.parameters
    // each (value and gradient, 4 bytes each, and the gradient's exact sum, 8).
    const int64_t layer_slots = Mul(m.parameters / 4, slots);
    r.parameters = Add(r.parameters, m.parameters);
    r.optimizer = Add(r.optimizer, layer_slots);
    r.activations = Sum(r.activations, m.activations, m.gradients);
    r.scratch = Add(r.scratch, m.scratch);
    r.layer_memory.push_back(Sum(m.parameters, layer_slots, m.activations, m.gradients, m.scratch));
    r.layer_batch_memory.push_back(
        Sum(m.activations, m.gradients, std::max<int64_t>(0, m.scratch - single[i].scratch)));
  }
  // The trainer's input batch and labels, the loss gradient, the evaluation batch and the
  // input pipeline's example order.
  r.activations = Sum(r.activations, Mul(batch, Mul(example, kFloat) + 4),
                      Mul(Mul(batch, data.num_classes), kFloat),
                      Mul(r.eval_batch, Mul(example, kFloat) + 4), Mul(data.train_examples, 8));
  // An evaluation's whole-split logits and its metrics' per-example scratch (metrics.h: each
  // row's max and softmax sum, one class's scores, order and flags, the predictions).
  r.activations = Add(r.activations,
                      Mul(largest_split, Mul(data.num_classes, kFloat) + kMetricsBytesPerExample));
  // Writing a checkpoint copies the state (values and slots) and streams the copy to the file;
  // restoring reads the file, then decodes it: twice the state.
  const int64_t state = Mul(Mul(r.num_parameters, 1 + slots), kFloat);
  r.checkpoint_io = h.checkpoint.enabled ? Mul(2, state) : 0;
  r.runtime = kRuntimeBytes + threads * kRuntimeBytesPerThread;

  // --- disk
  const int64_t steps = r.steps;
  int64_t tensors = 0;  // a kernel and a bias per layer with parameters
  for (const auto& layer : (*model)->layers()) tensors += layer->NumParameters() > 0 ? 2 : 0;
  r.checkpoint_file = Add(state, Mul(tensors * (1 + slots), kCheckpointEntryBytes));
  int64_t saves = 0;
  if (h.checkpoint.enabled) {
    // TF's default schedule is every 600 seconds, at most once a step here.
    saves = Add(Firings(h.checkpoint.trigger, 0, steps), 1);  // and a final one
    int64_t kept = std::min<int64_t>(h.checkpoint.max_to_keep, saves);
    if (h.checkpoint.keep_checkpoint_every_n_hours > 0) {
      kept = limits.max_checkpoints > 0 ? std::max<int64_t>(limits.max_checkpoints, kept) : saves;
    }
    // The best checkpoint (BestCheckpointHook) may be kept besides them.
    const bool best = h.checkpoint.keep_best && (h.evaluation.enabled || h.early_stopping.enabled);
    r.checkpoints_kept = Add(std::min(kept, saves), best ? 2 : 1);  // and the one being written
    r.checkpoints = Mul(r.checkpoint_file, r.checkpoints_kept);
  }
  int64_t lines = saves;  // "Saving checkpoints for N into ..."
  if (h.summary.enabled) {
    r.scalars = Add(r.scalars, Mul(3, Firings(h.summary.trigger, 100, steps)));  // loss, accuracy,
  }                                                                              // learning_rate
  if (h.step_counter.enabled && h.step_counter.every_steps > 0) {
    const int64_t n = steps / h.step_counter.every_steps + 1;
    r.scalars = Add(r.scalars, n);
    lines = Add(lines, n);
  }
  if (h.evaluation.enabled) {
    const int64_t n = Firings(h.evaluation.trigger, 1000, steps);
    r.scalars = Add(r.scalars, Mul(2, n));
    lines = Add(lines, n);
  }
  if (h.final_eval.enabled) {
    r.scalars = Add(r.scalars, 2);
    lines = Add(lines, 1);
  }
  if (h.logging.enabled) {
    const TriggerSpec t{h.logging.every_n_iter, h.logging.every_n_secs};
    lines = Add(lines, Firings(t, 100, steps));
  }
  r.event_files = Mul(Add(r.scalars, saves), kEventRecordBytes);
  if (limits.max_log_bytes > 0) {
    r.logs = std::min(Mul(lines, kLogLineBytes), Mul(2, limits.max_log_bytes));
  }
  if (h.profiler.enabled) {
    int64_t traces = Firings(h.profiler.trigger, 1000, steps);
    if (limits.max_profiler_traces > 0)
      traces = std::min<int64_t>(traces, limits.max_profiler_traces);
    const int64_t events = 2 * static_cast<int64_t>((*model)->layers().size()) + 8;
    r.profiler = Mul(traces, events * kTraceEventBytes + 256);
  }
  return r;
}

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 6) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " B", bytes);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::string DescribeJobResources(const JobResources& r) {
  std::string out =
      "memory (estimated peak): " + FormatBytes(r.memory()) + " (" + std::to_string(r.memory()) +
      " bytes): dataset " + FormatBytes(r.dataset) + ", parameters and gradients " +
      FormatBytes(r.parameters) + ", optimizer slots " + FormatBytes(r.optimizer) +
      ", activations " + FormatBytes(r.activations) + ", layer scratch " + FormatBytes(r.scratch) +
      ", checkpoint copies " + FormatBytes(r.checkpoint_io) + ", runtime " +
      FormatBytes(r.runtime) + "; loading the dataset " + FormatBytes(r.load_peak) + "\n";
  out += "disk (estimated, whole run): " + FormatBytes(r.disk()) + " (" + std::to_string(r.disk()) +
         " bytes): checkpoints " + std::to_string(r.checkpoints_kept) + " x " +
         FormatBytes(r.checkpoint_file) + ", event files " + FormatBytes(r.event_files) + ", log " +
         FormatBytes(r.logs) + ", profiler traces " + FormatBytes(r.profiler) + "\n";
  out += "assumed: " +
         (r.steps == kMax ? std::string("no step limit")
                          : std::to_string(r.steps) + " training steps") +
         ", evaluation batch " + std::to_string(r.eval_batch) + ", " +
         std::to_string(r.num_parameters) + " parameters\n";
  return out;
}

Status CheckJobBudget(const JobSpec& spec, const JobResources& r, const JobBudget& budget) {
  if (budget.memory_bytes > 0 && r.memory() > budget.memory_bytes) {
    // The field that weighs most: the dataset, or the layers; among the layers, what grows with
    // the training batch (unless the evaluation batch, which is fixed, is the larger one), one
    // heavy layer, or their number.
    std::string field = "dataset", alone;
    std::string advice = "; limit dataset.max_train_examples / max_test_examples";
    int64_t layers = 0, batch_part = 0;
    size_t heaviest = 0;
    for (size_t i = 0; i < r.layer_memory.size(); ++i) {
      layers = Add(layers, r.layer_memory[i]);
      batch_part = Add(batch_part, r.layer_batch_memory[i]);
      if (r.layer_memory[i] > r.layer_memory[heaviest]) heaviest = i;
    }
    if (layers > std::max(r.dataset, r.load_peak)) {
      const std::string layer = "model.layers[" + std::to_string(heaviest) + "]";
      alone = "; " + layer + " (" + LayerTypeName(spec.model.layers[heaviest].type) +
              ") alone needs " + FormatBytes(r.layer_memory[heaviest]);
      if (batch_part > layers / 2 && spec.batch_size >= r.eval_batch) {
        field = "batch_size";
        advice = "; lower batch_size";
      } else if (r.layer_memory[heaviest] >= layers / 4) {
        // A layer without parameters (flatten, relu, dropout, pooling) is as large as the output
        // of the layer with parameters before it: that one is to be made smaller.
        size_t maker = heaviest;
        while (maker > 0 && !HasParameters(spec.model.layers[maker].type)) --maker;
        if (!HasParameters(spec.model.layers[maker].type)) maker = heaviest;
        field = "model.layers[" + std::to_string(maker) + "]";
        if (maker != heaviest) {
          alone += ", for the output of " + field + " (" +
                   LayerTypeName(spec.model.layers[maker].type) + ")";
        }
        advice = "; make " + field + " smaller";
      } else {
        field = "model.layers";
        alone = "; its " + std::to_string(r.layer_memory.size()) + " layers together need " +
                FormatBytes(layers);
        advice = "; use fewer or smaller layers";
      }
    }
    return Status::InvalidArgument(
        field + ": the job needs an estimated " + FormatBytes(r.memory()) +
        " of memory, over the per-job budget of " + FormatBytes(budget.memory_bytes) +
        " (parameters and gradients " + FormatBytes(r.parameters) + ", optimizer slots " +
        FormatBytes(r.optimizer) + ", activations " + FormatBytes(r.activations) +
        ", layer scratch " + FormatBytes(r.scratch) + ", dataset " + FormatBytes(r.dataset) + ")" +
        alone + advice);
  }
  if (budget.disk_bytes > 0 && r.disk() > budget.disk_bytes) {
    struct Part {
      const char* field;
      const char* what;
      int64_t bytes;
    };
    const Part parts[] = {
        {"hooks.checkpoint.max_to_keep", "checkpoints", r.checkpoints},
        {"hooks.summary", "event files", r.event_files},
        {"hooks.logging", "the log", r.logs},
        {"hooks.profiler", "profiler traces", r.profiler},
    };
    const Part* worst = &parts[0];
    for (const Part& p : parts) {
      if (p.bytes > worst->bytes) worst = &p;
    }
    std::string field = worst->field;
    if (worst == &parts[0] && spec.hooks.checkpoint.keep_checkpoint_every_n_hours > 0 &&
        r.checkpoints_kept > spec.hooks.checkpoint.max_to_keep + 1) {
      field = "hooks.checkpoint.keep_checkpoint_every_n_hours";
    }
    return Status::InvalidArgument(
        field + ": the job needs an estimated " + FormatBytes(r.disk()) +
        " of disk over its run, over the per-job budget of " + FormatBytes(budget.disk_bytes) +
        " (checkpoints " + std::to_string(r.checkpoints_kept) + " x " +
        FormatBytes(r.checkpoint_file) + ", event files " + FormatBytes(r.event_files) + ", log " +
        FormatBytes(r.logs) + ", profiler traces " + FormatBytes(r.profiler) + "); " + worst->what +
        " weigh most");
  }
  return Status::Ok();
}

}  // namespace trainingd::engine
