// `trainingd run JOB.json` and `trainingd validate JOB.json`: one job in the foreground, as
// running the tutorial script would, and a check of a spec without running it (docs/run.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trainingd/engine/dist/communicator.h"

namespace trainingd::daemon {

// `run` as one rank of a data-parallel job: what trainingd-mpi (the program mpirun starts, which
// links MPI; trainingd does not) hands to RunCommand.
struct RankRuntime {
  std::shared_ptr<engine::Communicator> communicator;
  int local_ranks = 1;             // ranks on this machine: they share its cores
  std::function<void(int)> abort;  // ends every rank with this exit code (MPI_Abort)
};

// Exit codes: 0 the job completed; 1 it failed or could not start (missing data, a checkpoint of
// another model); 2 bad arguments or an invalid spec; 130 / 143 stopped by SIGINT / SIGTERM
// (after the final checkpoint).
// Data-parallel (docs/distributed.md): with --workers N > 1, or distributed.workers > 1 in the
// spec, it starts `mpirun` with N ranks of trainingd-mpi and returns mpirun's exit code; started
// by mpirun itself (`mpirun -np N trainingd run JOB.json`), it hands over to trainingd-mpi, which
// calls it back with `rank`.
int RunCommand(const std::vector<std::string>& args, const RankRuntime* rank = nullptr);
// Exit codes: 0 valid; 1 the dataset cannot be loaded or the model does not fit it; 2 bad
// arguments or an invalid spec.
int ValidateCommand(const std::vector<std::string>& args);

}  // namespace trainingd::daemon
