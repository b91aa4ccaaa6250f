// MpiCommunicator: the Communicator over MPI's world communicator (Open MPI 4.1). Its own library
// target (`engine_mpi`), linked only into `trainingd-mpi`, the program mpirun starts; this header
// does not include mpi.h.
//
// Errors are returned (MPI_ERRORS_RETURN), not fatal inside MPI: a failed collective is
// Unavailable naming the operation and MPI's error text. Open MPI 4.1 has no fault tolerance, so
// when a rank dies mpirun ends the whole job anyway; the daemon then restarts it.
#pragma once

#include <memory>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/dist/communicator.h"

namespace trainingd::engine {

class MpiCommunicator final : public Communicator {
 public:
  // MPI_Init_thread once per process (MPI_THREAD_FUNNELED: only the thread that initialised
  // calls MPI). FailedPrecondition when MPI cannot start.
  static Result<std::shared_ptr<MpiCommunicator>> Init(int* argc, char*** argv);
  // MPI_Finalize.
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // Ranks on this machine (MPI_COMM_TYPE_SHARED), which share its cores.
  int local_size() const { return local_size_; }

  Status AllreduceSum(std::span<float> data) override;
  Status AllreduceSum(std::span<double> data) override;
  Status AllreduceSum(std::span<int64_t> data) override;
  Status AllreduceMax(std::span<float> data) override;
  Status ReduceScatterSum(std::span<int64_t> data, std::span<const int64_t> bounds) override;
  Status AllgatherParts(std::span<float> data, std::span<const int64_t> bounds) override;
  Status Broadcast(std::span<std::byte> data, int root) override;
  Status Barrier() override;

  // Ends every rank of the job with `code` (MPI_Abort): for a rank that fails while the others
  // may be waiting for it in a collective.
  [[noreturn]] void Abort(int code);

 private:
  MpiCommunicator() = default;
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
};

}  // namespace trainingd::engine
