#include "trainingd/engine/dist/communicator.h"

#include <cstdint>
#include <cstring>

namespace trainingd::engine {

Status BroadcastString(Communicator& comm, std::string& bytes, int root) {
  uint64_t size = bytes.size();
  TRAININGD_RETURN_IF_ERROR(
      comm.Broadcast(std::as_writable_bytes(std::span<uint64_t>(&size, 1)), root));
  bytes.resize(size);
  return comm.Broadcast(std::as_writable_bytes(std::span<char>(bytes.data(), bytes.size())), root);
}

Shard ShardOf(int64_t global, int rank, int size) {
  const int64_t begin = global * rank / size;
  const int64_t end = global * (rank + 1) / size;
  return {begin, end - begin};
}

}  // namespace trainingd::engine
