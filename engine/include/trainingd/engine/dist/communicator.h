// Communicator: the collective operations a data-parallel job needs between its processes
// (ranks): allreduce, broadcast and barrier. Rank 0 is the chief.
//
// The engine holds the interface and the one-process implementation (LocalCommunicator). The MPI
// implementation is its own library target (engine/mpi, `engine_mpi`), linked only into the
// `trainingd-mpi` program that `mpirun` starts, so nothing else links MPI.
//
// Every rank must make the same calls in the same order with the same sizes; a call blocks until
// all ranks have made it. An error (a rank gone, a transport failure) is Unavailable; the job
// cannot continue after it and ends, and its supervisor restarts it from a checkpoint.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_chief() const { return rank() == 0; }

  // Element-wise sum over all ranks, in place; every rank receives the sum. The sum of a given
  // element is formed in the same order on every call with the same sizes, so repeated runs are
  // bit-identical.
  virtual Status AllreduceSum(std::span<float> data) = 0;
  virtual Status AllreduceSum(std::span<double> data) = 0;
  // Integer sums are exact, so they do not depend on the order in which ranks are added.
  virtual Status AllreduceSum(std::span<int64_t> data) = 0;
  // Element-wise maximum over all ranks, in place (exact, like the integer sum).
  virtual Status AllreduceMax(std::span<float> data) = 0;
  // Each rank's part of `data` becomes that part's sum over all ranks, in place: rank r's part is
  // the elements [bounds[r], bounds[r + 1]); `bounds` has size() + 1 entries, from 0 up to
  // data.size(). The other elements are left unspecified. Exact, like AllreduceSum of integers.
  virtual Status ReduceScatterSum(std::span<int64_t> data, std::span<const int64_t> bounds) = 0;
  // Every rank's part of `data` to every rank, in place: rank r's part is the elements
  // [bounds[r], bounds[r + 1]); `bounds` has size() + 1 entries, from 0 up to data.size().
  virtual Status AllgatherParts(std::span<float> data, std::span<const int64_t> bounds) = 0;
  // `root`'s bytes into every rank's `data` (the same size on every rank).
  virtual Status Broadcast(std::span<std::byte> data, int root) = 0;
  virtual Status Barrier() = 0;
};

// size 1, rank 0: every operation returns at once and leaves the data as it is.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status AllreduceSum(std::span<float>) override { return Status::Ok(); }
  Status AllreduceSum(std::span<double>) override { return Status::Ok(); }
  Status AllreduceSum(std::span<int64_t>) override { return Status::Ok(); }
  Status AllreduceMax(std::span<float>) override { return Status::Ok(); }
  Status ReduceScatterSum(std::span<int64_t>, std::span<const int64_t>) override {
    return Status::Ok();
  }
  Status AllgatherParts(std::span<float>, std::span<const int64_t>) override {
    return Status::Ok();
  }
  Status Broadcast(std::span<std::byte>, int) override { return Status::Ok(); }
  Status Barrier() override { return Status::Ok(); }
};

// `root`'s string, of any length, into `bytes` on every rank (its size first, then the bytes).
Status BroadcastString(Communicator& comm, std::string& bytes, int root);

// The part of a global batch of `global` examples that `rank` of `size` takes: the contiguous
// range [begin, begin + count) with begin = floor(global * rank / size). Sizes differ by at most
// one example; the ranks' ranges tile [0, global) in rank order.
struct Shard {
  int64_t begin = 0;
  int64_t count = 0;
};
Shard ShardOf(int64_t global, int rank, int size);

}  // namespace trainingd::engine
