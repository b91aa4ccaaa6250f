#include "executors/mpirun.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace trainingd::daemon {

std::string RankProgramPath() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "trainingd-mpi").string();
}

namespace {

bool InMultiNodeSlurmAllocation() {
  const char* nodes = std::getenv("SLURM_JOB_NUM_NODES");
  return nodes != nullptr && std::atoi(nodes) > 1;
}

}  // namespace

std::vector<std::string> MpirunCommand(const engine::DistributedSpec& d, int workers,
                                       const std::string& rank_program,
                                       const std::vector<std::string>& rank_args) {
  std::vector<std::string> cmd = {"mpirun"};
  if (::geteuid() == 0) cmd.emplace_back("--allow-run-as-root");
  // mpi_yield_when_idle: a rank waiting for another yields its core instead of spinning on it.
  // Open MPI does so by itself only when one mpirun has more ranks than a host has cores; two
  // mpiruns sharing a host (two jobs, or a job beside other programs) each see enough cores. It
  // costs nothing measurable when every rank has its core (docs/benchmarks.md#ranks-that-yield).
  for (const char* a : {"--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader,tcp",
                        "--mca", "mpi_yield_when_idle", "1"}) {
    cmd.emplace_back(a);
  }
  if (!d.hosts.empty()) {
    std::string hosts;
    for (const std::string& h : d.hosts) hosts += (hosts.empty() ? "" : ",") + h;
    cmd.emplace_back("--host");
    cmd.push_back(hosts);
  } else if (!d.hostfile.empty()) {
    cmd.emplace_back("--hostfile");
    cmd.push_back(d.hostfile);
  } else if (!InMultiNodeSlurmAllocation()) {
    // On one machine: loopback only. (Inside a Slurm allocation of several nodes mpirun finds
    // the nodes itself and needs their networks.)
    for (const char* a :
         {"--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"}) {
      cmd.emplace_back(a);
    }
  }
  cmd.emplace_back("-np");
  cmd.push_back(std::to_string(workers));
  cmd.push_back(rank_program);
  cmd.emplace_back("run");
  cmd.insert(cmd.end(), rank_args.begin(), rank_args.end());
  return cmd;
}

}  // namespace trainingd::daemon
