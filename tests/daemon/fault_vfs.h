// FaultVfs: an SQLite VFS for tests that wraps the default one (unix) and, on command, makes the
// database's writes fail the way a full or failing disk, or another process holding the lock,
// makes them fail -- then recovers. Pass name() as StoreOptions::vfs.
//
// While a fault is on:
//   kFull     xWrite, xTruncate and xSync answer SQLITE_FULL
//   kIoError  xWrite answers SQLITE_IOERR_WRITE, xTruncate SQLITE_IOERR_TRUNCATE,
//             xSync SQLITE_IOERR_FSYNC
//   kBusy     a lock above SHARED on the database file (xLock) and an exclusive lock on the
//             WAL index (xShmLock: the WAL write lock, checkpoints) answer SQLITE_BUSY, as if
//             another process held them; SQLite's busy handler then waits busy_timeout_ms
//   kKill     xWrite, xTruncate or xSync kills the process with SIGKILL before it writes (run
//             it in a child process: a crash at that point of a transaction)
// Everything else, and everything while no fault is on, goes to the default VFS unchanged.
// The state is process-wide (one VFS registered once); tests that inject faults must not run
// in parallel threads of one process. Thread-safe.
#pragma once

#include <cstdint>

namespace trainingd::daemon {

class FaultVfs {
 public:
  enum class Fault { kNone, kFull, kIoError, kBusy, kKill };

  // The VFS, registered (not as the default) on first use.
  static FaultVfs& Get();

  // The name to pass to sqlite3_open_v2 / StoreOptions::vfs.
  const char* name() const;
  // Turns `fault` on after `after_calls` more calls it would hit have succeeded (0 = at once),
  // so a fault can start in the middle of a transaction's writes.
  void Inject(Fault fault, int64_t after_calls = 0);
  // Turns any fault off: every call goes through again.
  void Clear() { Inject(Fault::kNone); }
  // Calls failed on purpose since the process started.
  int64_t failures() const;

 private:
  FaultVfs();
};

}  // namespace trainingd::daemon
