// AuditService: the append-only record of every change and every refusal the HTTP API answered
// (docs/operations.md#audit). The router records; daemon/ keeps the rows (AuditLog, through the
// store's writer, so recording never waits for the disk). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::api {

struct AuditEntry {
  int64_t seq = 0;   // assigned when stored, increasing
  double at = 0;     // Unix seconds
  std::string user;  // "" = not authenticated
  int64_t token_id = 0;
  std::string remote;  // the client's address
  std::string method;
  std::string route;     // the route's template, "/api/v1/jobs/{id}/stop"
  std::string resource;  // the id or name in the path; "" = none
  int status = 0;        // the HTTP status answered
};

struct AuditPage {
  std::vector<AuditEntry> entries;  // newest first
  int64_t next_before = 0;          // pass as `before` for the next page; 0 = no more
};

inline constexpr int64_t kMaxAuditPage = 1000;

class AuditService {
 public:
  virtual ~AuditService() = default;
  // Queues the entry; never blocks on I/O.
  virtual void Record(AuditEntry entry) = 0;
  // Entries with seq < before (0 = from the newest), at most `limit` (1..kMaxAuditPage).
  virtual engine::Result<AuditPage> List(int64_t before, int64_t limit) = 0;
};

}  // namespace trainingd::api
