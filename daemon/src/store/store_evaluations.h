// The store's evaluation read (private to daemon/src), run on a read connection. The write is
// StoreWriter's (store_evaluations.cpp).
#pragma once

#include <optional>
#include <string>

#include "store/store_sqlite.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// The job's evaluation of `split`, or ("") its latest of any split; nullopt when none.
engine::Result<std::optional<EvaluationRecord>> QueryEvaluation(sqlite::Db& db,
                                                                const std::string& job_id,
                                                                const std::string& split);

}  // namespace trainingd::daemon
