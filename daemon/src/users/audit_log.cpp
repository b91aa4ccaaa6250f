#include "trainingd/daemon/users/audit_log.h"

#include <utility>

namespace trainingd::daemon {

void AuditLog::Record(api::AuditEntry entry) { store_.AddAudit(entry, keep_); }

engine::Result<api::AuditPage> AuditLog::List(int64_t before, int64_t limit) {
  if (limit < 1 || limit > api::kMaxAuditPage) {
    return engine::Status::InvalidArgument("limit: must be from 1 to " +
                                           std::to_string(api::kMaxAuditPage));
  }
  // One more than asked: whether there is a next page.
  auto rows = store_.ListAudit(before, limit + 1);
  if (!rows.ok()) return rows.status();
  api::AuditPage page;
  page.entries = std::move(rows).value();
  if (static_cast<int64_t>(page.entries.size()) > limit) {
    page.entries.resize(static_cast<size_t>(limit));
    page.next_before = page.entries.back().seq;
  }
  return page;
}

}  // namespace trainingd::daemon
