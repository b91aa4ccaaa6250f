// RunJob: one JobSpec trained to its end inside a MonitoredTrainingSession -- what
// `trainingd run` does in the foreground and what the daemon's workers do per job.
//
// The spec's hooks become (docs/hooks.md#from-a-job-spec): the chief's automatic hooks from
// hooks.checkpoint / hooks.summary / hooks.step_counter, then StopAtStepHook(last_step =
// max_steps), NanTensorHook, LoggingTensorHook, EvaluationHook, EarlyStoppingHook, ProfilerHook
// and the final evaluation (FinalOpsHook), in that order. Running the same job again with the
// same checkpoint_dir resumes from its latest checkpoint.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/dist/communicator.h"
#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/job/model_input.h"
#include "trainingd/engine/session/monitored_session.h"

namespace trainingd::engine {

struct JobRunOptions {
  // Checkpoints, event files and profiler timelines go here. Required.
  std::string checkpoint_dir;
  // Where the spec's dataset is (JobDatasetSource): an IDX directory under data_root, or an
  // upload under datasets_dir.
  std::string data_root = "/usr/share/datasets";
  std::string datasets_dir;
  // Already loaded data for the spec's dataset (the daemon caches it); null = load it.
  std::shared_ptr<const Datasets> datasets;
  // Set (from any thread) to stop after the current step, with a final checkpoint.
  const std::atomic<bool>* stop = nullptr;
  // Called once by the chief with what the trained model needs besides its weights
  // (model_input.h), after the data is loaded and before the session is created, so before the
  // first step and on every resume; `trainingd run` and the daemon write it to
  // <checkpoint_dir>/model.json. An error fails RunJob before anything trains. Optional.
  std::function<Status(const ModelInput&)> on_model_input;
  // Called once the session exists (e.g. to keep a handle for RequestStop). Optional.
  std::function<void(MonitoredSession&)> on_session_created;
  std::vector<std::shared_ptr<SummarySink>> summary_sinks;
  // Further hooks, after the spec's (e.g. the progress reports of trainingd-mpi's chief).
  std::vector<std::shared_ptr<SessionRunHook>> extra_hooks;
  Env* env = nullptr;              // null = Env::Default()
  std::shared_ptr<Logger> logger;  // null = Logger::Stderr()
  int max_recovery_attempts = 5;
  // The ranks of a data-parallel run (docs/distributed.md); null or size 1 = one process. Rank 0
  // is the chief: it restores or initialises and hands its state to the others, and alone runs
  // the checkpoint, summary, step-counter and profiler hooks and writes to summary_sinks. Every
  // rank runs the other hooks; `stop` is a vote that ends all ranks after the same step. There
  // is no in-process recovery (max_recovery_attempts is ignored): a failed rank ends the job,
  // and its supervisor restarts it from the latest checkpoint.
  std::shared_ptr<Communicator> communicator;
  // Caps on what the job may leave on disk (the same ones PlanJob's estimate assumes):
  // max_checkpoints bounds the checkpoints keep_checkpoint_every_n_hours preserves,
  // max_profiler_traces the timelines kept. compute_threads and max_log_bytes are not used here.
  JobRunLimits limits;
};

struct JobResult {
  enum class Outcome {
    kCompleted,  // max_steps or num_epochs reached, or early stopping / a hook ended it
    kStopped,    // the stop flag was set, the run's time limit came, or the disk filled up
                 // after a final checkpoint (stop_cause says which)
    kFailed,     // a run failed (error holds why)
  };
  enum class StopCause {
    kNone,       // not kStopped
    kRequest,    // the stop flag: a user, the daemon, a signal
    kTimeLimit,  // resources.time_limit_secs
    kDiskFull,   // a final checkpoint, then the disk was full
  };
  Outcome outcome = Outcome::kCompleted;
  Status error;             // kFailed: the run's error; also a failed close after a good run
  std::string reason;       // one line: why the job ended
  int64_t global_step = 0;  // at the end
  // The final evaluation (e.g. "test/accuracy") and the last periodic one, if configured.
  std::map<std::string, double> final_values;
  StopCause stop_cause = StopCause::kNone;
};

const char* JobOutcomeName(JobResult::Outcome outcome);
// "request", "time_limit", "disk_full"; "" for kNone.
const char* StopCauseName(JobResult::StopCause cause);

// Where `dataset` is and how to read it: format idx is the directory "<data_root>/<name>"; an
// upload is "<datasets_dir>/<name>/<sha256>.npz", or "<sha256>.csv" with "<sha256>.test.csv"
// (UploadedDatasetFile). InvalidArgument naming the field for a name that is not a plain
// directory name (a job never names a path), or an upload without a datasets_dir. A CSV's label
// column is read as `label_use` says.
Result<DatasetSource> JobDatasetSource(const DatasetSpec& dataset, const std::string& data_root,
                                       const std::string& datasets_dir,
                                       LabelUse label_use = LabelUse::kClasses);
// How a job of `task` reads a CSV's label column: classes, or numbers (regression).
LabelUse LabelUseOf(Task task);
// The file an upload keeps under its dataset's directory: "<sha256>.<format>", or
// "<sha256>.test.csv" for a CSV's test file.
std::string UploadedDatasetFile(const std::string& sha256, const std::string& format,
                                bool test_file = false);
// The DatasetOptions the spec asks for.
DatasetOptions JobDatasetOptions(const DatasetSpec& dataset);

// Loads `spec.dataset` (JobDatasetSource) for a job of `task`, normalized per channel when it
// says so (NormalizePerChannel). Regression: a CSV's only ("task: ..." otherwise).
Result<std::shared_ptr<const Datasets>> LoadJobDatasets(const DatasetSpec& dataset,
                                                        const std::string& data_root,
                                                        const std::string& datasets_dir,
                                                        Task task = Task::kClassification);

// What `dataset` holds (ProbeMnistDirectory), with errors naming the spec's field:
// "dataset.name: no dataset 'x' in /usr/share/datasets (there are: fashion-mnist)",
// "dataset.validation_size: ...", or "dataset.name: dataset 'x' cannot be read: ...";
// "dataset.normalize: ..." for per_channel on data that is not uint8 images (the preprocessing is
// then kPerChannel, without its statistics, which LoadJobDatasets computes);
// "dataset.label_column: ..." for a regression job whose label is not a number (the message
// names the line and the column), "task: ..." for regression on data that is not a CSV table.
Result<DatasetInfo> ProbeJobDataset(const DatasetSpec& dataset, const std::string& data_root,
                                    const std::string& datasets_dir,
                                    Task task = Task::kClassification);

// Whether the latest checkpoint in `checkpoint_dir` is on disk and is the one of global step
// `step` (read-only: ListCheckpoints).
bool HasCheckpointAt(const std::string& checkpoint_dir, int64_t step);

// Runs the job, a preset fitted to the loaded dataset's example shape and classes
// (FitModelToData). Returns an error only when the job could not start (invalid spec, missing
// data, a model that does not fit the data, a checkpoint of another model); everything after
// that is in JobResult.
Result<JobResult> RunJob(const JobSpec& spec, const JobRunOptions& options);

}  // namespace trainingd::engine
