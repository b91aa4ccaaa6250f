// The store's reads of users, tokens, the audit and fair-share usage (private to daemon/src), each
// run on a read connection. The writes are StoreWriter's (store_users.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "store/store_sqlite.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

engine::Result<std::vector<UserRecord>> QueryUsers(sqlite::Db& db);
engine::Result<std::vector<TokenRecord>> QueryTokens(sqlite::Db& db);
// Rows with seq < before (0 = any), newest first, at most `limit`.
engine::Result<std::vector<api::AuditEntry>> QueryAudit(sqlite::Db& db, int64_t before,
                                                        int64_t limit);
engine::Result<std::vector<FairShareUsageRecord>> QueryFairShareUsage(sqlite::Db& db);

}  // namespace trainingd::daemon
