// SlurmOptions: the Slurm executor's settings, the serve config's "slurm" section
// (docs/slurm.md#setup). Apart from the executor (slurm_executor.h) so that the config's parser
// does not depend on it.
#pragma once

#include <string>
#include <vector>

namespace trainingd::daemon {

struct SlurmOptions {
  std::string partition;                    // sbatch --partition; "" = the cluster's default
  std::string account;                      // sbatch --account; "" = none
  std::string job_root;                     // the jobs' directories, shared with the nodes
  std::vector<std::string> sbatch_options;  // more sbatch arguments, e.g. "--qos=high"
  std::string trainingd_path;               // trainingd on the nodes; "" = this program
  std::string data_root;                    // datasets on the nodes
  std::string datasets_dir;                 // uploaded datasets, on the shared job root
  double poll_secs = 1;                     // squeue --json at most this often
  int max_jobs = 64;                        // jobs in Slurm at once
  int time_limit_minutes = 0;               // sbatch --time; 0 = the partition's
  int cpus_per_task = 1;                    // compute threads of each rank
  double stop_grace_secs = 60;              // after the TERM of a stop, scancel the job
  // The commands (tests may give others).
  std::string sbatch = "sbatch", squeue = "squeue", scancel = "scancel";
};

}  // namespace trainingd::daemon
