#include "trainingd/engine/mpi/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace trainingd::engine {
namespace {

Status Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Status::Unavailable(std::string(what) + " failed: " + std::string(text, length));
}

// MPI counts are ints: larger buffers go in pieces of at most 2^30 elements.
constexpr size_t kMaxCount = size_t{1} << 30;

template <typename T>
Status Allreduce(std::span<T> data, MPI_Datatype type, MPI_Op op = MPI_SUM) {
  for (size_t done = 0; done < data.size();) {
    const size_t n = std::min(kMaxCount, data.size() - done);
    TRAININGD_RETURN_IF_ERROR(Check(MPI_Allreduce(MPI_IN_PLACE, data.data() + done,
                                                  static_cast<int>(n), type, op, MPI_COMM_WORLD),
                                    "MPI_Allreduce"));
    done += n;
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<MpiCommunicator>> MpiCommunicator::Init(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return Status::FailedPrecondition("MPI_Init_thread failed");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::shared_ptr<MpiCommunicator> comm(new MpiCommunicator());
  MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &comm->size_);
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, comm->rank_, MPI_INFO_NULL,
                          &local) == MPI_SUCCESS) {
    MPI_Comm_size(local, &comm->local_size_);
    MPI_Comm_free(&local);
  }
  return comm;
}

MpiCommunicator::~MpiCommunicator() { MPI_Finalize(); }

Status MpiCommunicator::AllreduceSum(std::span<float> data) { return Allreduce(data, MPI_FLOAT); }

Status MpiCommunicator::AllreduceSum(std::span<double> data) { return Allreduce(data, MPI_DOUBLE); }

Status MpiCommunicator::AllreduceSum(std::span<int64_t> data) {
  return Allreduce(data, MPI_INT64_T);
}

Status MpiCommunicator::AllreduceMax(std::span<float> data) {
  return Allreduce(data, MPI_FLOAT, MPI_MAX);
}

Status MpiCommunicator::ReduceScatterSum(std::span<int64_t> data, std::span<const int64_t> bounds) {
  // Too large for one call's int counts: the whole sum, in chunks, is every part's too.
  if (static_cast<int64_t>(data.size()) > INT_MAX) return AllreduceSum(data);
  std::vector<int> counts;
  for (int r = 0; r < size_; ++r) {
    counts.push_back(
        static_cast<int>(bounds[static_cast<size_t>(r) + 1] - bounds[static_cast<size_t>(r)]));
  }
  // In place, MPI puts this rank's part at the start of the buffer.
  TRAININGD_RETURN_IF_ERROR(Check(MPI_Reduce_scatter(MPI_IN_PLACE, data.data(), counts.data(),
                                                     MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
                                  "MPI_Reduce_scatter"));
  const size_t mine = static_cast<size_t>(bounds[static_cast<size_t>(rank_)]);
  std::memmove(data.data() + mine, data.data(),
               sizeof(int64_t) * static_cast<size_t>(counts[static_cast<size_t>(rank_)]));
  return Status::Ok();
}

Status MpiCommunicator::AllgatherParts(std::span<float> data, std::span<const int64_t> bounds) {
  std::vector<int> counts, displs;
  if (static_cast<int64_t>(data.size()) > INT_MAX) {
    // Too large for one call: each rank's part, broadcast by its owner.
    for (int r = 0; r < size_; ++r) {
      const size_t begin = static_cast<size_t>(bounds[static_cast<size_t>(r)]);
      const size_t end = static_cast<size_t>(bounds[static_cast<size_t>(r) + 1]);
      TRAININGD_RETURN_IF_ERROR(
          Broadcast(std::as_writable_bytes(data.subspan(begin, end - begin)), r));
    }
    return Status::Ok();
  }
  for (int r = 0; r < size_; ++r) {
    counts.push_back(
        static_cast<int>(bounds[static_cast<size_t>(r) + 1] - bounds[static_cast<size_t>(r)]));
    displs.push_back(static_cast<int>(bounds[static_cast<size_t>(r)]));
  }
  return Check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), counts.data(),
                              displs.data(), MPI_FLOAT, MPI_COMM_WORLD),
               "MPI_Allgatherv");
}

Status MpiCommunicator::Broadcast(std::span<std::byte> data, int root) {
  for (size_t done = 0; done < data.size();) {
    const size_t n = std::min(kMaxCount, data.size() - done);
    TRAININGD_RETURN_IF_ERROR(
        Check(MPI_Bcast(data.data() + done, static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD),
              "MPI_Bcast"));
    done += n;
  }
  return Status::Ok();
}

Status MpiCommunicator::Barrier() { return Check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void MpiCommunicator::Abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; in case it does
}

}  // namespace trainingd::engine
