// Executor: the seam between JobManager -- which owns a job's states, the queue, admission and
// recovery -- and what runs the job. The manager hands a job over (Start) and may ask it to stop
// (RequestStop); the executor reports what the run does as a stream of events, in order, to the
// RunListener it was given. Nothing is shared but those calls, so a run may live anywhere:
//
// - LocalExecutor (local_executor.h) trains on threads of this process (engine::RunJob);
// - an executor that runs a job as processes (mpirun) or on a cluster (Slurm) reports the same
//   events, read from a pipe or a progress file its rank 0 writes.
//
// A run's events, in the order they happened: SessionCreated once its session exists (at the step
// it restored or initialised at), before any ScalarRecorded; LogWritten lines at any time (also
// while the session is created); RunEnded last, exactly once -- also when the run could not
// start. Events of one run never overlap; events of different runs may
// arrive at the same time on different threads.
#pragma once

#include <cstdint>
#include <string>

#include "trainingd/engine/base/logger.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/job/run_events.h"

namespace trainingd::daemon {

// What a run is given.
struct RunRequest {
  std::string job_id;
  engine::JobSpec spec;
  // The job's directory: its checkpoint_dir (checkpoints, event files, profiler timelines), which
  // a new run of the same job resumes from.
  std::string job_dir;
  // Caps on what the run keeps on disk (checkpoints, profiler timelines), as admission assumed.
  engine::JobRunLimits limits;
  // Admission's estimate of the run's peak memory (each rank's), for executors whose runs
  // outlive the daemon (what a cluster's scheduler is asked for); 0 = unknown.
  int64_t memory_bytes = 0;
};

// The run's events (engine/job/run_events.h): the same for a run on threads of this process, in
// MPI processes (which report them on a pipe, api/run_report.h) or on a cluster.
using engine::LogWritten;
using engine::RunEnded;
using engine::RunEvent;
using engine::ScalarRecorded;
using engine::SchedulerStatus;
using engine::SessionCreated;

class RunListener {
 public:
  virtual ~RunListener() = default;
  // Called on the executor's threads, in order for each run. May block briefly (the database's
  // backpressure); must not call back into the executor's Start or Shutdown.
  virtual void OnRunEvent(const std::string& job_id, RunEvent event) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;

  // How many runs it holds at once; the manager never starts more.
  virtual int slots() const = 0;

  // What runs a job with this spec, as the job's JSON shows it: "local", "mpi" or "slurm".
  virtual std::string Name(const engine::JobSpec&) const { return "local"; }

  // True when runs live on without this process (jobs on a cluster): a run found running when
  // the daemon starts did not take it down, and Start reattaches to it instead of starting anew.
  // Shutdown then leaves the runs going and only stops following them (their RunEnded says so).
  virtual bool RunsOutliveDaemon() const { return false; }

  // Starts the run and returns at once; its events go to `listener`, which must outlive the
  // run's RunEnded. The job must not be running already (FailedPrecondition); no slot free is
  // Unavailable; after Shutdown, Unavailable. An error here means no event comes for this run.
  virtual engine::Status Start(RunRequest request, RunListener& listener) = 0;

  // Asks the run to stop after its current step, with a final checkpoint and its end hooks; it
  // then ends with JobResult::Outcome::kStopped. A job that is not running: nothing. Any thread.
  virtual void RequestStop(const std::string& job_id) = 0;

  // Lets go at once of what this process keeps between runs and no run holds (a local executor's
  // idle datasets): called before a run starts elsewhere, in processes of its own, whose memory
  // admission counted as if nothing else were held. Any thread.
  virtual void FreeIdle() {}

  // Asks every run to stop (as RequestStop) and waits until each has reported RunEnded. Start
  // fails afterwards. Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace trainingd::daemon
