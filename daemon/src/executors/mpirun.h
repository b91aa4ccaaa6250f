// The one place that says how trainingd starts the ranks of a data-parallel job: the mpirun
// command line, used by `trainingd run --workers N` and by the daemon's MpiExecutor.
#pragma once

#include <string>
#include <vector>

#include "trainingd/engine/job/job_spec.h"

namespace trainingd::daemon {

// trainingd-mpi, installed beside the running program (/proc/self/exe's directory).
std::string RankProgramPath();

// mpirun [--allow-run-as-root as root] --oversubscribe --bind-to none --mca btl self,vader,tcp
//        --mca mpi_yield_when_idle 1
//        (--host a,b | --hostfile F | loopback only: btl/oob_tcp_if_include lo, except in a
//        Slurm allocation of several nodes, whose nodes mpirun finds itself)
//        -np WORKERS RANK_PROGRAM run RANK_ARGS...
// No binding: the ranks share a machine's cores through their compute threads.
std::vector<std::string> MpirunCommand(const engine::DistributedSpec& distributed, int workers,
                                       const std::string& rank_program,
                                       const std::vector<std::string>& rank_args);

}  // namespace trainingd::daemon
