// The consistent copy of an open database that BackupStoreFile (store_file.h) and Store::Open's
// pre-migration backup share. Private to daemon/src.
#pragma once

#include <string>

#include "store/store_sqlite.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// VACUUM INTO `<to>.tmp` on `db` (outside any transaction; through db's VFS), fsynced, renamed to
// `to`, the directory fsynced: `to` is either absent or complete. FailedPrecondition when `to`
// exists; SQLite's and the file system's errors otherwise, with no file left behind.
engine::Status BackupDatabase(sqlite::Db& db, const std::string& to);

}  // namespace trainingd::daemon
