// The store's schema: the migrations that build it, and the code that applies them on open.
// Private to daemon/src; docs/storage.md describes the tables.
#pragma once

#include <optional>
#include <string_view>

#include "store/store_sqlite.h"
#include "trainingd/api/job_service.h"
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

// Brings the database behind `db` (the writer's connection, in WAL mode) to StoreSchemaVersion():
// each missing migration runs in its own transaction, together with the user_version bump, so a
// crash leaves the file at one version or the next. FailedPrecondition for a newer version or
// another application's file; the others as Db errors.
engine::Status MigrateStore(sqlite::Db& db);

}  // namespace trainingd::daemon
