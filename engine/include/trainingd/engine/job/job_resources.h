// Job admission: what a JobSpec will need, worked out from the spec and its dataset's shape before
// anything is allocated (docs/operations.md#admission).
//
// PlanJob checks a spec against its dataset -- the layers' shapes fit the examples, the batch fits
// the training split, an evaluated split is not empty -- and estimates its memory and disk:
//   memory: the dataset in memory, the parameters and their gradients, the optimizer's slots, the
//           activations, input gradients and layer scratch for the training batch and the
//           evaluation batch, a checkpoint being encoded, and the process itself;
//   disk:   the checkpoints kept at once (plus the one being written), event files, the log and
//           profiler traces over the job's whole run.
// CheckJobBudget compares the estimate with a budget and names the spec field that weighs most
// when it does not fit. The memory estimate is checked against the measured peak RSS of the
// tutorial models (tests/daemon/memory_estimate_test.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::engine {

// What the runner does that bounds a job's disk (and how many threads its layers chunk for).
struct JobRunLimits {
  int compute_threads = 1;
  // At most this many checkpoints on disk at once, the ones keep_checkpoint_every_n_hours
  // preserves included (CheckpointManagerOptions::max_checkpoints); 0 = no cap.
  int max_checkpoints = 0;
  // At most this many profiler timelines kept (ProfilerHook::Options::max_traces); 0 = no cap.
  int max_profiler_traces = 0;
  // The job's log is rotated at this size with one old file kept; 0 = no log file (stderr).
  int64_t max_log_bytes = 0;
};

// A job's needs in bytes. Byte counts saturate at INT64_MAX for absurd specs.
struct JobResources {
  // --- memory at the peak of a `trainingd run` of the job
  int64_t dataset = 0;        // the splits in memory
  int64_t parameters = 0;     // values and gradients
  int64_t optimizer = 0;      // the optimizer's slots
  int64_t activations = 0;    // layer outputs, input gradients, input batches
  int64_t scratch = 0;        // the layers' scratch buffers
  int64_t checkpoint_io = 0;  // a checkpoint's copy and encoding while it is written or read
  int64_t runtime = 0;        // the process: code, thread stacks, BLAS and allocator buffers
  int64_t load_peak = 0;      // while the dataset loads: the splits and the raw files
  int64_t memory() const;     // runtime + max(load_peak, everything else)

  // --- disk over the whole run
  int64_t checkpoint_file = 0;   // one checkpoint
  int64_t checkpoints_kept = 0;  // at most this many at once, counting one being written
  int64_t checkpoints = 0;       // checkpoint_file * checkpoints_kept
  int64_t event_files = 0;
  int64_t logs = 0;
  int64_t profiler = 0;
  int64_t disk() const;

  // --- what the estimate assumed
  int64_t steps = 0;       // training steps (max_steps, or num_epochs of the split)
  int64_t eval_batch = 0;  // examples per evaluation batch; 0 = the job never evaluates
  int64_t scalars = 0;     // scalar summaries written (each also a database row in the daemon)
  int64_t num_parameters = 0;

  // Per layer, the memory it accounts for (parameters with gradients and slots, its activations,
  // input gradients and scratch), in layer order.
  std::vector<int64_t> layer_memory;
  // The part of each that grows with the batch (activations, input gradients, scratch).
  std::vector<int64_t> layer_batch_memory;
};

// Checks `spec` (ValidateJobSpec, then against `data`) and estimates its needs for the model as
// it runs: a preset fitted to the data's example shape and classes (FitModelToData). The dataset
// is counted at its real size (DatasetInfo::LoadedBytes, PeakLoadBytes: any shape and element
// type). InvalidArgument naming the field: "model: the cnn preset needs images [H, W, C]; ...",
// "model.layers[0]: conv2d needs [H, W, C] examples; the dataset's are [13] (a table)",
// "model.layers[3].units: the last dense layer has 10 units but the dataset has 3 classes ...",
// "model.layers[3]: dense expects a flat input ...", "batch_size: 70000 is more than the 55000
// examples of the training split", "hooks.evaluation.split: the test split is empty ...".
Result<JobResources> PlanJob(const JobSpec& spec, const DatasetInfo& data,
                             const JobRunLimits& limits);

struct JobBudget {
  int64_t memory_bytes = 0;  // 0 = unlimited
  int64_t disk_bytes = 0;    // 0 = unlimited
};

// OK when `r` fits `budget`; otherwise InvalidArgument naming the field that weighs most (the
// heaviest layer "model.layers[i]", "batch_size", "dataset", "hooks.checkpoint.max_to_keep",
// "hooks.profiler", ...) with the estimate, its parts and the budget.
Status CheckJobBudget(const JobSpec& spec, const JobResources& r, const JobBudget& budget);

// "612.3 MiB" (binary units up to EiB).
std::string FormatBytes(int64_t bytes);

// The estimate as the lines `trainingd validate` prints: memory and disk with their parts.
std::string DescribeJobResources(const JobResources& r);

}  // namespace trainingd::engine
