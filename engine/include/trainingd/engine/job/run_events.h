// The events of one job run, in the order they happen: SessionCreated once its session exists,
// ScalarRecorded for each summary value, EvaluationRecorded for each whole evaluation of a split
// (after its scalars), LogWritten for each console line, RunEnded last. What an
// executor reports to the daemon's job manager (daemon/executor.h), and what rank 0 of an MPI job
// writes for the daemon to read (api/run_report.h).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/train/metrics.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {

// The run's session exists, at this global step (restored from a checkpoint, or 0).
struct SessionCreated {
  int64_t global_step = 0;
};

// A summary value, as the session recorded it (also in the job's event file).
struct ScalarRecorded {
  std::string tag;
  int64_t step = 0;
  double value = 0;
  double wall_time = 0;
};

// A split's whole evaluation (its confusion matrix and per-class values), recorded after the
// same evaluation's "<split>/..." scalars.
struct EvaluationRecorded {
  EvaluationSummary evaluation;
  double wall_time = 0;
};

// A line of the job's console (what `trainingd run` prints on stderr), without its severity
// prefix.
struct LogWritten {
  LogSeverity severity = LogSeverity::kInfo;
  std::string text;
};

// The run is over: how it ended, or why it could not start or went wrong (an error Status;
// ResourceExhausted when memory or the disk ran out).
struct RunEnded {
  Result<JobResult> result = Status::Internal("no result");
};

// Data-parallel runs under a supervisor (the daemon's MpiExecutor), which relaunches a run
// whose ranks died or stalled: an attempt began, from this global step (its latest checkpoint).
struct AttemptStarted {
  int attempt = 1;  // within this run, from 1
  int max_attempts = 1;
  int workers = 1;
  int64_t from_step = 0;
  double wall_time = 0;
};

// The attempt ended: how ("completed", "stopped", or what killed it).
struct AttemptEnded {
  int attempt = 1;
  std::string reason;
  double wall_time = 0;
};

// Every rank's latest step, reported about once a second while a data-parallel run trains.
struct RankTimings {
  int64_t global_step = 0;
  std::vector<RankTiming> ranks;  // in rank order
};

// Runs on a cluster scheduler (the daemon's SlurmExecutor): the scheduler's view of the run,
// reported when it changes.
struct SchedulerStatus {
  int64_t job_id = 0;  // the scheduler's id of the run (Slurm's job id)
  std::string state;   // the scheduler's word: PENDING, RUNNING, COMPLETED, ...
  std::string reason;  // why it waits ("Priority", "Resources"), or "None"
  std::string nodes;   // where it runs ("node[1-2]"); "" while pending
  int restarts = 0;    // how often the scheduler requeued it
};

using RunEvent = std::variant<SessionCreated, ScalarRecorded, LogWritten, RunEnded, AttemptStarted,
                              AttemptEnded, RankTimings, SchedulerStatus, EvaluationRecorded>;

}  // namespace trainingd::engine
