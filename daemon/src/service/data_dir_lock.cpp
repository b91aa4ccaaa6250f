#include "trainingd/daemon/service/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace trainingd::daemon {

engine::Result<int> LockDataDir(const std::string& dir) {
  const std::string path = dir + "/trainingd.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return engine::Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    const ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    close(fd);
    return engine::Status::Unavailable("another trainingd (pid " +
                                       std::string(pid, n > 0 ? static_cast<size_t>(n) : 0) +
                                       ") is using the data directory " + dir);
  }
  const std::string mine = std::to_string(getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, mine.data(), mine.size(), 0) < 0) {
    std::fprintf(stderr, "trainingd: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
  }
  return fd;
}

}  // namespace trainingd::daemon
