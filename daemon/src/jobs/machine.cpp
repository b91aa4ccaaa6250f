#include "jobs/machine.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <cstring>

namespace trainingd::daemon {

int64_t PhysicalMemoryBytes() {
  FILE* f = std::fopen("/proc/meminfo", "re");
  if (!f) return 0;
  char line[256];
  long long kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemTotal: %lld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return static_cast<int64_t>(kib) * 1024;
}

int64_t FreeDiskBytes(const std::string& path) {
  struct statvfs st;
  if (statvfs(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

int64_t FileSystemOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_dev);
}

}  // namespace trainingd::daemon
