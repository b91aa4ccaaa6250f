// The lock that keeps one process at a time on a data directory: an exclusive flock on
// <data_dir>/trainingd.lock, with the holder's pid inside (docs/operations.md#running-it). Two
// daemons on one directory would run the same queued jobs into the same checkpoint directories.
// `trainingd serve` holds it for its life; `trainingd db restore` and `db migrate` take it too,
// so they never run under a daemon. The lock is the kernel's: it goes away with the process, even
// on kill -9.
#pragma once

#include <string>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// Takes the lock of `dir` (which must exist) and returns its open descriptor: the lock is held
// until the descriptor is closed or the process exits. Unavailable when another process holds
// it ("another trainingd (pid N) is using the data directory DIR"); IoError when the lock file
// cannot be opened.
engine::Result<int> LockDataDir(const std::string& dir);

}  // namespace trainingd::daemon
