#include "small_filesystem.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace trainingd::test_support {

std::unique_ptr<SmallFileSystem> SmallFileSystem::Mount(const std::string& dir, int64_t bytes,
                                                        std::string* why_not) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *why_not = "cannot create " + dir + ": " + ec.message();
    return nullptr;
  }
  const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
  if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    *why_not = "cannot mount a tmpfs on " + dir + " (needs root): " + std::strerror(errno);
    std::filesystem::remove(dir, ec);
    return nullptr;
  }
  return std::unique_ptr<SmallFileSystem>(new SmallFileSystem(dir));
}

SmallFileSystem::~SmallFileSystem() {
  ::umount2(dir_.c_str(), MNT_DETACH);
  std::error_code ec;
  std::filesystem::remove(dir_, ec);
}

int64_t SmallFileSystem::FreeBytes() const {
  struct statvfs s {};
  if (::statvfs(dir_.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

bool SmallFileSystem::Fill(int64_t leave) {
  Unfill();
  const int fd = ::open(filler().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  // Others may write meanwhile (a job running). A tmpfs undoes a failed fallocate, so a large
  // one that fails makes the disk full for a moment and then frees it again; hence all but the
  // last MiB in large pieces, which do not run out, then page by page, which do not undo.
  constexpr int64_t kPage = 4096, kMargin = int64_t{1} << 20;
  int64_t size = 0;
  for (int64_t margin : {kMargin, int64_t{0}}) {
    for (int tries = 0; tries < 100000; ++tries) {
      const int64_t want = FreeBytes() - std::max<int64_t>(leave, 0) - margin;
      if (want <= 0) break;
      const int64_t take = margin > 0 ? want : kPage;
      const int err = ::posix_fallocate(fd, size, take);
      if (err == 0) {
        size += take;
      } else if (err != ENOSPC) {
        ::close(fd);
        return false;
      } else if (margin == 0) {
        break;  // not one page left
      }
    }
  }
  ::close(fd);
  return FreeBytes() <= std::max<int64_t>(leave, 0);
}

void SmallFileSystem::Unfill() { ::unlink(filler().c_str()); }

}  // namespace trainingd::test_support
