// The store's scalar reads (private to daemon/src): the downsampled series query and the
// per-tag lookups, each run on a read connection.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/store_sqlite.h"
#include "trainingd/api/job_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// Store::QueryScalars on `db`, in one read transaction (one consistent snapshot). `query` is
// already validated.
engine::Result<std::vector<api::ScalarPoint>> QueryScalarSeries(sqlite::Db& db,
                                                                const std::string& job_id,
                                                                const api::ScalarQuery& query);
// Store::ScalarTags and Store::LatestScalars on `db`.
engine::Result<std::vector<std::string>> QueryScalarTags(sqlite::Db& db, const std::string& job_id);
engine::Result<std::map<std::string, double>> QueryLatestScalars(sqlite::Db& db,
                                                                 const std::string& job_id);

// Every job's attempts, by job id, in attempt order.
engine::Result<std::map<std::string, std::vector<api::AttemptInfo>>> QueryAttempts(sqlite::Db& db);

}  // namespace trainingd::daemon
