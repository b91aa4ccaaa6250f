// trainingd-mpi: one rank of a data-parallel job, the program mpirun starts
// (docs/distributed.md). It is `trainingd run` with an MPI communicator: the only program that
// links MPI, so the daemon's process never does. `trainingd run --workers N` starts it through
// mpirun; `mpirun -np N trainingd run JOB.json` hands over to it.
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "trainingd/daemon/commands/run_command.h"
#include "trainingd/engine/mpi/mpi_communicator.h"

int main(int argc, char** argv) {
  // A rank never outlives the mpirun that started it (which the daemon kills with its process
  // group, or which dies with the daemon): no orphans holding cores and files.
  const pid_t parent = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 1;
  auto comm = trainingd::engine::MpiCommunicator::Init(&argc, &argv);
  if (!comm.ok()) {
    std::fprintf(stderr, "trainingd-mpi: %s\n", comm.status().message().c_str());
    return 1;
  }
  if (argc < 2 || std::string(argv[1]) != "run") {
    std::fprintf(stderr, "usage: mpirun -np N trainingd-mpi run JOB.json [run options]\n");
    return 2;
  }
  trainingd::daemon::RankRuntime rank;
  rank.communicator = *comm;
  rank.local_ranks = (*comm)->local_size();
  rank.abort = [c = *comm](int code) { c->Abort(code); };
  return trainingd::daemon::RunCommand(std::vector<std::string>(argv + 2, argv + argc), &rank);
}
