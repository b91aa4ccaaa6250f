#include "trainingd/daemon/service/descriptor_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace trainingd::daemon {

size_t DescriptorReserve(int max_concurrent_jobs, int http_handler_threads) {
  return 64 + 4 * static_cast<size_t>(http_handler_threads) +
         16 * static_cast<size_t>(max_concurrent_jobs);
}

engine::Result<uint64_t> RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return engine::Status::IoError(std::string("getrlimit(RLIMIT_NOFILE): ") +
                                   std::strerror(errno));
  }
  if (limit.rlim_cur != limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(limit.rlim_cur);
}

size_t FitConnectionCap(size_t wanted, uint64_t limit, size_t reserve) {
  const uint64_t room = limit > reserve ? limit - reserve : 0;
  if (room >= wanted) return wanted;
  return room < kMinConnections ? 0 : static_cast<size_t>(room);
}

}  // namespace trainingd::daemon
