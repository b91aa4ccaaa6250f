// What the machine the daemon runs on has: the defaults of admission's budgets come from it.
#pragma once

#include <cstdint>
#include <string>

namespace trainingd::daemon {

// Physical memory (MemTotal in /proc/meminfo), in bytes; 0 if it cannot be read.
int64_t PhysicalMemoryBytes();

// Bytes an unprivileged writer can still use on the file system holding `path` (statvfs
// f_bavail); -1 if it cannot be read.
int64_t FreeDiskBytes(const std::string& path);

// The file system holding `path` (stat's st_dev); -1 if it cannot be read.
int64_t FileSystemOf(const std::string& path);

}  // namespace trainingd::daemon
