// ServeConfig: how `trainingd serve` runs -- from a JSON config file, then command-line flags
// (docs/operations.md#configuration).
//
// {
//   "listen": "127.0.0.1:8080",         address:port; any non-loopback address needs a token
//   "data_dir": "var",                  the database (trainingd.db) and jobs/<id>/ directories
//   "data_root": "/usr/share/datasets", datasets are directories under it, named by jobs
//   "datasets_dir": "",                 uploaded datasets (docs/data.md); "" = <data_dir>/datasets,
//                                       or with the Slurm executor <job_root>/datasets (shared)
//   "max_dataset_bytes": 4294967296,    the largest upload (413 beyond it)
//   "web_dir": "",                      the dashboard's files; "" = <exe
//   dir>/../share/trainingd/web
//                                       (in a build tree: build/share/trainingd/web)
//   "max_concurrent_jobs": 1,
//   "threads_per_job": 0,               0 = cores / max_concurrent_jobs
//   "http_threads": 1,                  I/O threads: parse, write, stream events
//   "http_handler_threads": 2,          run the routes (these may wait for SQLite or the disk)
//   "token_file": "",                   a file whose first line is the API token
//   "allowed_hosts": [],                more Host names to answer ("name" or "name:port"),
//                                       besides localhost, 127.0.0.1, [::1] and the listen
//                                       address; needed with a wildcard address (0.0.0.0)
//   "allowed_origins": [],              more origins that may POST and DELETE
//                                       ("https://host[:port]")
//   "max_connections": 1024,            HTTP connections open at once (lowered at start to fit
//                                       the descriptor limit)
//   "max_job_memory_bytes": 0,          admission's per-job budgets: 0 = automatic (memory: 3/4
//   "max_job_disk_bytes": 0,            of RAM / max_concurrent_jobs; disk: half the free space
//                                       of data_dir at submit), -1 = no check
//   "max_checkpoints_per_job": 50,      checkpoints on disk at once (max_to_keep must fit)
//   "max_profiler_traces_per_job": 20,  profiler timelines kept per job
//   "max_log_bytes_per_job": 16777216,  a job's log rotates at this size (one old file kept)
//   "max_crash_restarts": 2,            a job running when the daemon died is queued again at
//                                       most this many times in a row, then failed
//   "audit_keep": 100000,               audit rows kept (the oldest are deleted beyond), 1000..2^32
//   "fair_share": {                     the order among equal priorities (scheduler.h)
//     "half_life_secs": 86400,          usage halves in this time
//     "estimate_secs": 300,             a run's charge at admission before any run ended
//     "weights": {"alice": 3}           per user (default 1): a larger weight, a larger share
//   },
//   "quotas": {                         per user; absent = no limit
//     "default": {"running_slots": 4, "queued_jobs": 100, "max_priority": 10},
//     "users": {"alice": {...}}         instead of "default" for that user
//   },
//   "preemption": {"enabled": true, "min_run_secs": 120},
//   "mpi": {                            data-parallel jobs (distributed.workers > 1) with the
//     "hostfile": "",                   local executor: an Open MPI hostfile of the hosts their
//                                       ranks run on ("" = this machine, loopback only)
//     "mpirun_options": []              more mpirun arguments, e.g. ["--mca", "plm_rsh_agent",
//   },                                  "/usr/local/bin/my-ssh"]
//   "executor": "local",                "local": jobs run here (threads, or mpirun for
//                                       distributed.workers > 1); "slurm": as Slurm batch jobs
//   "slurm": {                          with executor "slurm" (docs/slurm.md):
//     "job_root": "",                   required: the jobs' directories, shared with the nodes
//     "partition": "", "account": "",   sbatch --partition / --account ("" = the defaults)
//     "sbatch_options": [],             more sbatch options, e.g. ["--qos=high"]
//     "trainingd_path": "",             trainingd on the nodes ("" = this program's path)
//     "data_root": "",                  datasets on the nodes ("" = data_root)
//     "poll_secs": 1,                   squeue --json at most this often
//     "max_jobs": 64,                   jobs in Slurm at once (the rest wait here, queued)
//     "time_limit_minutes": 0,          sbatch --time (0 = the partition's)
//     "cpus_per_task": 1,               compute threads of each rank
//     "stop_grace_secs": 60             after a stop's SIGTERM, scancel
//   },
//   "serving": {                        the model server (docs/models.md#serving)
//     "memory_bytes": 1073741824,       the models it keeps loaded hold at most this much
//     "threads": 1,                     inference threads (never the HTTP or the jobs' threads)
//     "compute_threads": 0,             cores each inference thread uses (0 = all)
//     "max_batch": 64,                  examples in one batch
//     "max_delay_ms": 0,                how long a batch waits for more requests to join it
//     "max_queue": 4096                 examples waiting at most; more is 503 with Retry-After
//   }
// }
// Unknown keys and wrong types are errors naming the key; the token may also come from the
// environment variable TRAININGD_TOKEN.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/daemon/executors/slurm_options.h"
#include "trainingd/daemon/jobs/job_limits.h"
#include "trainingd/daemon/scheduler/scheduler.h"
#include "trainingd/daemon/service/flags.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

struct ServeConfig {
  std::string listen_address = "127.0.0.1";
  int listen_port = 8080;
  std::string data_dir = "var";
  std::string data_root = "/usr/share/datasets";
  std::string datasets_dir;  // "" = <data_dir>/datasets (Slurm: <job_root>/datasets)
  int64_t max_dataset_bytes = int64_t{4} << 30;
  std::string web_dir;
  int max_concurrent_jobs = 1;
  int threads_per_job = 0;
  int http_threads = 1;
  int http_handler_threads = 2;
  std::string token_file;
  std::string token;  // resolved from token_file or TRAININGD_TOKEN; never from the file itself
  std::vector<std::string> allowed_hosts;    // checked with api::ParseHostAndPort
  std::vector<std::string> allowed_origins;  // checked with api::NormalizeOrigin
  int max_connections = 1024;
  JobLimits limits;             // the max_job_* and max_*_per_job keys, max_crash_restarts
  int64_t audit_keep = 100000;  // audit rows kept (users/audit_log.h: kDefaultAuditKeep)
  SchedulerOptions scheduler;   // "fair_share", "quotas", "preemption"
  std::string mpi_hostfile;     // "mpi": {"hostfile"}
  std::vector<std::string> mpirun_options;  // "mpi": {"mpirun_options"}
  std::string executor = "local";           // or "slurm"
  SlurmOptions slurm;                       // its data_root "" = data_root
  struct Serving {
    int64_t memory_bytes = int64_t{1} << 30;
    int threads = 1;
    int compute_threads = 0;  // 0 = the machine's cores
    int64_t max_batch = 64;
    int max_delay_ms = 0;
    int64_t max_queue = 4096;
  } serving;
};

// "ADDR:PORT" (or "[v6]:PORT"); InvalidArgument naming `field`.
engine::Status ParseListen(const std::string& text, const std::string& field, ServeConfig& config);

// Applies the JSON config file at `path` over `config`. NotFound / InvalidArgument naming the
// file and key.
engine::Status LoadConfigFile(const std::string& path, ServeConfig& config);

// LoadConfigFile's work on the file's contents: applies the JSON `text` over `config`, naming
// `path` in messages (InvalidArgument). Reads no file; the config fuzzer calls it directly.
engine::Status ParseConfigText(std::string_view text, const std::string& path, ServeConfig& config);

// The flags of `trainingd serve`, writing into `config`: --config FILE, --listen ADDR:PORT,
// --data-dir DIR, --data-root DIR, --web-dir DIR, --max-concurrent-jobs N, --max-connections N.
Flags ServeFlags(ServeConfig& config);

// Parses `trainingd serve`'s flags over `config`, the --config file first so that flags win; then
// resolves the token and checks the whole: InvalidArgument when a non-loopback address has no
// token. Errors name the flag ("--listen: ...") or the config key.
engine::Status ParseServeArgs(const std::vector<std::string>& args, ServeConfig& config);

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopback(const std::string& address);

}  // namespace trainingd::daemon
