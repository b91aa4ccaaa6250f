// The store's schema: the migrations that build it, and the code that applies them on open.
// Private to daemon/src; docs/storage.md describes the tables.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "store/store_sqlite.h"
#include "trainingd/api/job_service.h"
#include "trainingd/daemon/store/store_file.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// PRAGMA application_id of a trainingd database ("trnd").
inline constexpr int64_t kStoreApplicationId = 0x74726e64;

// The schema version this build writes (PRAGMA user_version after the last migration).
int StoreSchemaVersion();

// A job state as the jobs table stores it ("queued", "running", ...): the database's own names,
// fixed by the schema whatever the HTTP API calls the states.
const char* StoredStateName(api::JobState state);
std::optional<api::JobState> ParseStoredState(std::string_view name);

// Called before migrating a database that holds data (schema version `from` > 0) to `to`, outside
// any transaction; an error stops the migration before anything is changed. Store::Open backs the
// database up here.
using BeforeMigrating = std::function<engine::Status(int64_t from, int to)>;

// Brings the database behind `db` (the writer's connection, in WAL mode) to StoreSchemaVersion():
// `before` first, then every missing migration together with the user_version bump in one
// transaction, so a crash or an error leaves the file as it was. FailedPrecondition for a newer
// version or another application's file; the others as Db errors.
engine::Status MigrateStore(sqlite::Db& db, const BeforeMigrating& before = nullptr);

}  // namespace trainingd::daemon
