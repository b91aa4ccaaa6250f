// The users', tokens', audit's and fair-share usage's rows
// (docs/storage.md#users-tokens-and-audit): StoreWriter's writes and the reads. Roles are stored by
// the API's names (api::RoleName), fixed by the schema from version 7 on.
#include "store/store_users.h"

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "store/store_writer.h"

namespace trainingd::daemon {
namespace {

using engine::Status;

constexpr char kPutUser[] = R"sql(
INSERT INTO users (name, role, disabled, created_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (name) DO UPDATE SET
  role = excluded.role, disabled = excluded.disabled, created_at = excluded.created_at)sql";
constexpr char kDeleteUserTokens[] = "DELETE FROM tokens WHERE user = ?1";
constexpr char kDeleteUser[] = "DELETE FROM users WHERE name = ?1";
constexpr char kPutToken[] = R"sql(
INSERT INTO tokens (id, user, sha256, created_at, expires_at, revoked)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (id) DO UPDATE SET
  user = excluded.user, sha256 = excluded.sha256, created_at = excluded.created_at,
  expires_at = excluded.expires_at, revoked = excluded.revoked)sql";
constexpr char kAddAudit[] = R"sql(
INSERT INTO audit (at, user, token_id, remote, method, route, resource, status)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql";
// Retention: the rows older than the newest ?1 (seq only grows, so this is a range at the
// table's start).
constexpr char kTrimAudit[] = "DELETE FROM audit WHERE seq <= (SELECT MAX(seq) FROM audit) - ?1";

constexpr char kPutFairShareUsage[] = R"sql(
INSERT INTO fair_share_usage (owner, usage, at) VALUES (?1, ?2, ?3)
ON CONFLICT (owner) DO UPDATE SET usage = excluded.usage, at = excluded.at)sql";

constexpr char kListUsers[] = "SELECT name, role, disabled, created_at FROM users ORDER BY name";
constexpr char kListTokens[] = R"sql(
SELECT id, user, sha256, created_at, expires_at, revoked FROM tokens ORDER BY id)sql";
constexpr char kListFairShareUsage[] =
    "SELECT owner, usage, at FROM fair_share_usage ORDER BY owner";
constexpr char kListAudit[] = R"sql(
SELECT seq, at, user, token_id, remote, method, route, resource, status FROM audit
WHERE ?1 = 0 OR seq < ?1 ORDER BY seq DESC LIMIT ?2)sql";

}  // namespace

Status StoreWriter::Do(PutUserOp& op) {
  const UserRecord& u = op.user;
  if (u.name.empty()) return Status::InvalidArgument("name of a user to store must be given");
  return RunOne(kPutUser, "storing user '" + u.name + "'", [&](sqlite::Stmt& s) {
    s.Bind(1, u.name);
    s.Bind(2, std::string_view(api::RoleName(u.role)));
    s.Bind(3, int64_t{u.disabled ? 1 : 0});
    s.Bind(4, u.created_at);
  });
}

Status StoreWriter::Do(DeleteUserOp& op) {
  const std::string what = "deleting user '" + op.name + "'";
  auto bind = [&](sqlite::Stmt& s) { s.Bind(1, op.name); };
  TRAININGD_RETURN_IF_ERROR(RunOne(kDeleteUserTokens, what, bind));
  return RunOne(kDeleteUser, what, bind);
}

Status StoreWriter::Do(PutTokenOp& op) {
  const TokenRecord& t = op.token;
  if (t.id <= 0) return Status::InvalidArgument("id of a token to store must be positive");
  return RunOne(kPutToken, "storing token " + std::to_string(t.id), [&](sqlite::Stmt& s) {
    s.Bind(1, t.id);
    s.Bind(2, t.user);
    s.Bind(3, t.sha256);
    s.Bind(4, t.created_at);
    s.Bind(5, t.expires_at);
    s.Bind(6, int64_t{t.revoked ? 1 : 0});
  });
}

Status StoreWriter::Do(AddAuditOp& op) {
  const api::AuditEntry& e = op.entry;
  TRAININGD_RETURN_IF_ERROR(RunOne(kAddAudit, "adding an audit row", [&](sqlite::Stmt& s) {
    s.Bind(1, e.at);
    s.Bind(2, e.user);
    s.Bind(3, e.token_id);
    s.Bind(4, e.remote);
    s.Bind(5, e.method);
    s.Bind(6, e.route);
    s.Bind(7, e.resource);
    s.Bind(8, static_cast<int64_t>(e.status));
  }));
  if (op.keep <= 0) return Status::Ok();
  return RunOne(kTrimAudit, "trimming the audit", [&](sqlite::Stmt& s) { s.Bind(1, op.keep); });
}

Status StoreWriter::Do(PutFairShareUsageOp& op) {
  const FairShareUsageRecord& u = op.usage;
  if (!std::isfinite(u.usage) || u.usage < 0 || !std::isfinite(u.at)) {
    return Status::InvalidArgument("fair-share usage of '" + u.owner +
                                   "' to store must be finite and >= 0");
  }
  return RunOne(kPutFairShareUsage, "storing the fair-share usage of '" + u.owner + "'",
                [&](sqlite::Stmt& s) {
                  s.Bind(1, u.owner);
                  s.Bind(2, u.usage);
                  s.Bind(3, u.at);
                });
}

engine::Result<std::vector<UserRecord>> QueryUsers(sqlite::Db& db) {
  auto stmt = db.Prepare(kListUsers);
  if (!stmt.ok()) return stmt.status();
  sqlite::ResetOnExit reset(**stmt);
  return sqlite::ReadRows<UserRecord>(
      db, **stmt, "listing users", [&](sqlite::Stmt& s) -> engine::Result<UserRecord> {
        UserRecord u;
        u.name = s.Text(0);
        const std::string role = s.Text(1);
        auto parsed = api::ParseRole(role);
        if (!parsed) {
          return Status::DataLoss(db.path() + ": user '" + u.name + "' has an unknown role '" +
                                  role + "'");
        }
        u.role = *parsed;
        u.disabled = s.Int(2) != 0;
        u.created_at = s.Real(3);
        return u;
      });
}

engine::Result<std::vector<TokenRecord>> QueryTokens(sqlite::Db& db) {
  auto stmt = db.Prepare(kListTokens);
  if (!stmt.ok()) return stmt.status();
  sqlite::ResetOnExit reset(**stmt);
  return sqlite::ReadRows<TokenRecord>(db, **stmt, "listing tokens",
                                       [](sqlite::Stmt& s) -> engine::Result<TokenRecord> {
                                         TokenRecord t;
                                         t.id = s.Int(0);
                                         t.user = s.Text(1);
                                         t.sha256 = s.Text(2);
                                         t.created_at = s.Real(3);
                                         t.expires_at = s.Real(4);
                                         t.revoked = s.Int(5) != 0;
                                         return t;
                                       });
}

engine::Result<std::vector<api::AuditEntry>> QueryAudit(sqlite::Db& db, int64_t before,
                                                        int64_t limit) {
  auto stmt = db.Prepare(kListAudit);
  if (!stmt.ok()) return stmt.status();
  sqlite::ResetOnExit reset(**stmt);
  (*stmt)->Bind(1, before);
  (*stmt)->Bind(2, limit);
  return sqlite::ReadRows<api::AuditEntry>(db, **stmt, "listing the audit",
                                           [](sqlite::Stmt& s) -> engine::Result<api::AuditEntry> {
                                             api::AuditEntry e;
                                             e.seq = s.Int(0);
                                             e.at = s.Real(1);
                                             e.user = s.Text(2);
                                             e.token_id = s.Int(3);
                                             e.remote = s.Text(4);
                                             e.method = s.Text(5);
                                             e.route = s.Text(6);
                                             e.resource = s.Text(7);
                                             e.status = static_cast<int>(s.Int(8));
                                             return e;
                                           });
}

engine::Result<std::vector<FairShareUsageRecord>> QueryFairShareUsage(sqlite::Db& db) {
  auto stmt = db.Prepare(kListFairShareUsage);
  if (!stmt.ok()) return stmt.status();
  sqlite::ResetOnExit reset(**stmt);
  return sqlite::ReadRows<FairShareUsageRecord>(
      db, **stmt, "listing the fair-share usage",
      [](sqlite::Stmt& s) -> engine::Result<FairShareUsageRecord> {
        return FairShareUsageRecord{s.Text(0), s.Real(1), s.Real(2)};
      });
}

}  // namespace trainingd::daemon
