// JobLimits: what one job may use and leave behind -- admission's budgets, the caps on what it
// writes, and how often it may take the daemon down. One struct, read from the serve config and
// handed to the JobManager (docs/operations.md#admission).
#pragma once

#include <cstdint>

namespace trainingd::daemon {

struct JobLimits {
  // Admission budgets per job. Memory 0 = 3/4 of the machine's physical memory divided by the
  // jobs that run at once; disk 0 = half of the space free on the data directory's file system
  // when the job is submitted. A negative value turns that check off.
  int64_t max_job_memory_bytes = 0;
  int64_t max_job_disk_bytes = 0;
  // Caps on what fills a disk (engine::JobRunLimits): checkpoints on disk at once (max_to_keep
  // must fit; hourly-preserved ones count), profiler timelines kept, log size before rotation
  // (one rotated file is kept).
  int max_checkpoints_per_job = 50;
  int max_profiler_traces_per_job = 20;
  int64_t max_log_bytes_per_job = int64_t{16} << 20;
  // A job running when the daemon died is queued again at most this many times in a row.
  int max_crash_restarts = 2;
};

}  // namespace trainingd::daemon
