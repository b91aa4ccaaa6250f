// The store's experiment reads (private to daemon/src), each run on a read connection. The
// writes are StoreWriter's (store_experiments.cpp).
#pragma once

#include <string>
#include <vector>

#include "store/store_sqlite.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

engine::Result<std::vector<ExperimentRecord>> QueryExperiments(sqlite::Db& db);
engine::Result<std::vector<TrialRecord>> QueryTrials(sqlite::Db& db,
                                                     const std::string& experiment_id);
engine::Result<std::vector<RungResultRecord>> QueryRungResults(sqlite::Db& db,
                                                               const std::string& experiment_id);
engine::Result<std::vector<DecisionRecord>> QueryDecisions(sqlite::Db& db,
                                                           const std::string& experiment_id,
                                                           int64_t limit);

}  // namespace trainingd::daemon
