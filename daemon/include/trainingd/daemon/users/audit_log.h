// AuditLog: the record of every change and every refusal the HTTP API answered
// (docs/operations.md#audit), beside JobManager; the api::AuditService the router writes to.
// Rows go through the store's writer (Record only queues: no request waits for the disk) and are
// append-only: nothing updates one, and only retention deletes them, oldest first, so that the
// table keeps the newest `keep` rows. Thread-safe.
#pragma once

#include <cstdint>

#include "trainingd/api/audit_service.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {

// The rows kept by default: at ~150 bytes each, about 15 MB.
inline constexpr int64_t kDefaultAuditKeep = 100000;

class AuditLog : public api::AuditService {
 public:
  // `store` must outlive the log; keep <= 0 keeps every row.
  AuditLog(Store& store, int64_t keep = kDefaultAuditKeep) : store_(store), keep_(keep) {}

  void Record(api::AuditEntry entry) override;
  // Sees what the writer has committed: a row recorded a moment ago may not be there yet.
  engine::Result<api::AuditPage> List(int64_t before, int64_t limit) override;

 private:
  Store& store_;
  int64_t keep_;
};

}  // namespace trainingd::daemon
