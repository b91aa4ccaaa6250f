#include "store_writer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "store_query.h"
#include "store_scalars.h"

namespace trainingd::daemon {
namespace {

using engine::Status;

constexpr char kPutJob[] = R"sql(
INSERT INTO jobs (id, name, spec_json, state, created_at, started_at, finished_at, global_step,
                  max_steps, error, reason, checkpoint_dir)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
ON CONFLICT (id) DO UPDATE SET
  name = excluded.name, spec_json = excluded.spec_json, state = excluded.state,
  created_at = excluded.created_at, started_at = excluded.started_at,
  finished_at = excluded.finished_at, global_step = excluded.global_step,
  max_steps = excluded.max_steps, error = excluded.error, reason = excluded.reason,
  checkpoint_dir = excluded.checkpoint_dir)sql";
// (An upsert, not INSERT OR REPLACE: replacing deletes the old row first.)

constexpr char kUpdateJobState[] = R"sql(
UPDATE jobs SET state = ?2, started_at = ?3, finished_at = ?4, error = ?5, reason = ?6
WHERE id = ?1)sql";

constexpr char kUpdateJobStep[] = "UPDATE jobs SET global_step = ?2 WHERE id = ?1";

constexpr char kJobExists[] = "SELECT 1 FROM jobs WHERE id = ?1";

// Inserting and, only on a conflict, updating tells new points (whose rollups can be merged)
// from replaced ones (whose rollups must be recomputed).
constexpr char kInsertScalar[] = R"sql(
INSERT INTO scalars (job_id, tag, step, wall_time, value) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (job_id, tag, step) DO NOTHING)sql";

constexpr char kReplaceScalar[] = R"sql(
UPDATE scalars SET wall_time = ?4, value = ?5 WHERE job_id = ?1 AND tag = ?2 AND step = ?3)sql";

// Folds new points into a block. SQL's two-argument min() is NULL when either side is NULL
// (NaN), hence the coalesce. Every right-hand side reads the row's old values.
constexpr char kMergeRollup[] = R"sql(
INSERT INTO scalar_rollups (job_id, tag, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (job_id, tag, level, block) DO UPDATE SET
  min_value = coalesce(min(min_value, excluded.min_value), min_value, excluded.min_value),
  max_value = coalesce(max(max_value, excluded.max_value), max_value, excluded.max_value),
  last_wall_time = CASE WHEN excluded.last_step >= last_step
                        THEN excluded.last_wall_time ELSE last_wall_time END,
  last_value = CASE WHEN excluded.last_step >= last_step
                    THEN excluded.last_value ELSE last_value END,
  last_step = max(last_step, excluded.last_step))sql";

constexpr char kDeleteRollup[] = R"sql(
DELETE FROM scalar_rollups WHERE job_id = ?1 AND tag = ?2 AND level = ?3 AND block = ?4)sql";

// ?5..?6: the range of steps of a level-1 block.
constexpr char kRollupFromScalars[] = R"sql(
INSERT INTO scalar_rollups (job_id, tag, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
SELECT ?1, ?2, ?3, ?4,
  (SELECT min(value) FROM scalars WHERE job_id = ?1 AND tag = ?2 AND step BETWEEN ?5 AND ?6),
  (SELECT max(value) FROM scalars WHERE job_id = ?1 AND tag = ?2 AND step BETWEEN ?5 AND ?6),
  step, wall_time, value
FROM scalars WHERE job_id = ?1 AND tag = ?2 AND step BETWEEN ?5 AND ?6
ORDER BY step DESC LIMIT 1)sql";

// ?5..?6: the range of level ?3 - 1 blocks making up block ?4 of level ?3.
constexpr char kRollupFromRollups[] = R"sql(
INSERT INTO scalar_rollups (job_id, tag, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
SELECT ?1, ?2, ?3, ?4,
  (SELECT min(min_value) FROM scalar_rollups
   WHERE job_id = ?1 AND tag = ?2 AND level = ?3 - 1 AND block BETWEEN ?5 AND ?6),
  (SELECT max(max_value) FROM scalar_rollups
   WHERE job_id = ?1 AND tag = ?2 AND level = ?3 - 1 AND block BETWEEN ?5 AND ?6),
  last_step, last_wall_time, last_value
FROM scalar_rollups WHERE job_id = ?1 AND tag = ?2 AND level = ?3 - 1 AND block BETWEEN ?5 AND ?6
ORDER BY block DESC LIMIT 1)sql";

constexpr char kDeleteScalarsAfter[] =
    "DELETE FROM scalars WHERE job_id = ?1 AND tag = ?2 AND step > ?3";
constexpr char kDeleteRollupsAfter[] = R"sql(
DELETE FROM scalar_rollups WHERE job_id = ?1 AND tag = ?2 AND level = ?3 AND block > ?4)sql";

constexpr char kDeleteJobScalars[] = "DELETE FROM scalars WHERE job_id = ?1";
constexpr char kDeleteJobRollups[] = "DELETE FROM scalar_rollups WHERE job_id = ?1";
constexpr char kDeleteJob[] = "DELETE FROM jobs WHERE id = ?1";

// Runs a statement that returns no rows; SQLITE_DONE or the error code.
int Run(sqlite::Stmt& stmt) {
  const int rc = stmt.Step();
  stmt.Reset();
  return rc;
}

}  // namespace

int64_t ScalarCount(const WriteOp& op) {
  const auto* add = std::get_if<AddScalarsOp>(&op);
  return add != nullptr ? static_cast<int64_t>(add->scalars.size()) : 0;
}

StoreWriter::Outcome StoreWriter::Apply(std::span<WriteOp> ops) {
  fatal_ = false;
  known_jobs_.clear();
  pending_.clear();
  pending_index_.clear();
  Status st = db_->Exec("BEGIN IMMEDIATE", "starting a write transaction");
  if (!st.ok()) return {st};
  Outcome out;
  for (WriteOp& op : ops) {
    st = std::visit([this](auto& o) { return Do(o); }, op);
    if (fatal_) break;
    if (!st.ok()) {
      if (out.status.ok()) out.status = st;
    } else {
      out.scalars += ScalarCount(op);
    }
  }
  if (!fatal_) {
    st = FlushRollups();
    if (st.ok()) st = db_->Exec("COMMIT", "committing");
    if (st.ok()) {
      out.committed = true;
      return out;
    }
  }
  db_->RollbackIfOpen();
  pending_.clear();
  pending_index_.clear();
  return {st};
}

Status StoreWriter::Lost(Status status) {
  fatal_ = true;
  return status;
}

Status StoreWriter::Fail(int rc, std::string_view what, bool op_level) {
  if (!op_level || (rc & 0xff) != SQLITE_CONSTRAINT) fatal_ = true;
  return db_->Error(rc, what);
}

Status StoreWriter::Do(PutJobOp& op) {
  const JobRecord& j = op.job;
  if (j.id.empty()) return Status::InvalidArgument("id of a job to store must not be empty");
  auto stmt = db_->Prepare(kPutJob);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, j.id);
  s.Bind(2, j.name);
  s.Bind(3, j.spec_json);
  s.Bind(4, std::string_view(api::JobStateName(j.state)));
  s.Bind(5, j.created_at);
  s.Bind(6, j.started_at);
  s.Bind(7, j.finished_at);
  s.Bind(8, j.global_step);
  s.Bind(9, j.max_steps);
  s.Bind(10, j.error);
  s.Bind(11, j.reason);
  s.Bind(12, j.checkpoint_dir);
  const int rc = Run(s);
  if (rc != SQLITE_DONE) return Fail(rc, "storing job '" + j.id + "'", true);
  known_jobs_.insert(j.id);
  return Status::Ok();
}

Status StoreWriter::Do(UpdateJobStateOp& op) {
  auto stmt = db_->Prepare(kUpdateJobState);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, op.id);
  s.Bind(2, std::string_view(api::JobStateName(op.state)));
  s.Bind(3, op.started_at);
  s.Bind(4, op.finished_at);
  s.Bind(5, op.error);
  s.Bind(6, op.reason);
  const int rc = Run(s);
  if (rc != SQLITE_DONE) return Fail(rc, "updating the state of job '" + op.id + "'", true);
  return Status::Ok();
}

Status StoreWriter::Do(UpdateJobStepOp& op) {
  auto stmt = db_->Prepare(kUpdateJobStep);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, op.id);
  s.Bind(2, op.global_step);
  const int rc = Run(s);
  if (rc != SQLITE_DONE) return Fail(rc, "updating the step of job '" + op.id + "'", true);
  return Status::Ok();
}

engine::Result<bool> StoreWriter::JobExists(const std::string& id) {
  if (known_jobs_.count(id) != 0) return true;
  auto stmt = db_->Prepare(kJobExists);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, id);
  const int rc = s.Step();
  s.Reset();
  if (rc == SQLITE_DONE) return false;
  if (rc != SQLITE_ROW) return Fail(rc, "looking up job '" + id + "'");
  known_jobs_.insert(id);
  return true;
}

// Refuses the whole op, before anything is written, when one of its scalars cannot be stored.
Status StoreWriter::CheckScalars(const std::vector<ScalarRecord>& scalars) {
  const std::string* last_job = nullptr;
  for (const ScalarRecord& r : scalars) {
    if (r.tag.empty()) {
      return Status::InvalidArgument("tag of a scalar of job '" + r.job_id + "' must not be empty");
    }
    if (std::isnan(r.wall_time)) {
      return Status::InvalidArgument("wall_time of scalar '" + r.tag + "' at step " +
                                     std::to_string(r.step) + " is NaN");
    }
    if (last_job != nullptr && *last_job == r.job_id) continue;
    auto exists = JobExists(r.job_id);
    if (!exists.ok()) return exists.status();
    if (!*exists) {
      return Status::NotFound(db_->path() + ": scalars for job '" + r.job_id +
                              "', which is not in the database");
    }
    last_job = &r.job_id;
  }
  return Status::Ok();
}

StoreWriter::PendingSeries& StoreWriter::Pending(const std::string& job_id,
                                                 const std::string& tag) {
  if (!pending_.empty()) {
    PendingSeries& last = pending_[last_pending_];
    if (last.tag == tag && last.job_id == job_id) return last;
  }
  std::string key;
  key.reserve(job_id.size() + 1 + tag.size());
  key.append(job_id).push_back('\0');
  key.append(tag);
  auto [it, inserted] = pending_index_.try_emplace(std::move(key), pending_.size());
  if (inserted) pending_.push_back(PendingSeries{job_id, tag, {}});
  last_pending_ = it->second;
  return pending_[last_pending_];
}

Status StoreWriter::Do(AddScalarsOp& op) {
  TRAININGD_RETURN_IF_ERROR(CheckScalars(op.scalars));
  auto insert = db_->Prepare(kInsertScalar);
  if (!insert.ok()) return Lost(insert.status());
  sqlite::Stmt& ins = **insert;
  for (const ScalarRecord& r : op.scalars) {
    ins.Bind(1, r.job_id);
    ins.Bind(2, r.tag);
    ins.Bind(3, r.step);
    ins.Bind(4, r.wall_time);
    ins.Bind(5, r.value);
    int rc = Run(ins);
    if (rc != SQLITE_DONE) return Fail(rc, "storing scalar '" + r.tag + "'");
    bool replaced = false;
    if (db_->changes() == 0) {  // (job, tag, step) exists: overwrite it
      auto update = db_->Prepare(kReplaceScalar);
      if (!update.ok()) return Lost(update.status());
      sqlite::Stmt& up = **update;
      up.Bind(1, r.job_id);
      up.Bind(2, r.tag);
      up.Bind(3, r.step);
      up.Bind(4, r.wall_time);
      up.Bind(5, r.value);
      rc = Run(up);
      if (rc != SQLITE_DONE) return Fail(rc, "replacing scalar '" + r.tag + "'");
      replaced = true;
    }
    Pending(r.job_id, r.tag).points.push_back({r.step, r.wall_time, r.value, replaced});
  }
  return Status::Ok();
}

Status StoreWriter::FlushRollups() {
  for (PendingSeries& series : pending_) {
    auto& pts = series.points;
    std::stable_sort(pts.begin(), pts.end(),
                     [](const PendingPoint& a, const PendingPoint& b) { return a.step < b.step; });
    // Level by level, so that a block recomputed from the level below sees that level final.
    for (int level = 1; level <= kRollupLevels; ++level) {
      for (size_t i = 0; i < pts.size();) {
        const int64_t block = RollupBlock(pts[i].step, level);
        size_t j = i;
        bool replaced = false;
        for (; j < pts.size() && RollupBlock(pts[j].step, level) == block; ++j) {
          replaced = replaced || pts[j].replaced;
        }
        // A replaced point may have been the block's min or max: only a recount is right then.
        const Status st = replaced ? RecomputeBlock(series.job_id, series.tag, level, block)
                                   : MergeBlock(series, level, block, &pts[i], &pts[j - 1] + 1);
        if (!st.ok()) {
          fatal_ = true;
          return st;
        }
        i = j;
      }
    }
  }
  pending_.clear();
  pending_index_.clear();
  return Status::Ok();
}

Status StoreWriter::MergeBlock(const PendingSeries& series, int level, int64_t block,
                               const PendingPoint* begin, const PendingPoint* end) {
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = lo;
  for (const PendingPoint* p = begin; p != end; ++p) {
    lo = std::fmin(lo, p->value);  // fmin/fmax skip NaN
    hi = std::fmax(hi, p->value);
  }
  const PendingPoint& last = *(end - 1);  // sorted by step; no duplicates (they are replacements)
  auto stmt = db_->Prepare(kMergeRollup);
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  s.Bind(1, series.job_id);
  s.Bind(2, series.tag);
  s.Bind(3, int64_t{level});
  s.Bind(4, block);
  s.Bind(5, lo);
  s.Bind(6, hi);
  s.Bind(7, last.step);
  s.Bind(8, last.wall_time);
  s.Bind(9, last.value);
  const int rc = Run(s);
  if (rc != SQLITE_DONE) return db_->Error(rc, "updating the rollups of '" + series.tag + "'");
  return Status::Ok();
}

Status StoreWriter::RecomputeBlock(const std::string& job_id, const std::string& tag, int level,
                                   int64_t block) {
  const std::string what = "recomputing the rollups of '" + tag + "'";
  auto del = db_->Prepare(kDeleteRollup);
  if (!del.ok()) return del.status();
  sqlite::Stmt& d = **del;
  d.Bind(1, job_id);
  d.Bind(2, tag);
  d.Bind(3, int64_t{level});
  d.Bind(4, block);
  int rc = Run(d);
  if (rc != SQLITE_DONE) return db_->Error(rc, what);

  auto ins = db_->Prepare(level == 1 ? kRollupFromScalars : kRollupFromRollups);
  if (!ins.ok()) return ins.status();
  sqlite::Stmt& s = **ins;
  const int64_t first_child = block << 4;  // the 16 blocks (steps, for level 1) below this one
  s.Bind(1, job_id);
  s.Bind(2, tag);
  s.Bind(3, int64_t{level});
  s.Bind(4, block);
  s.Bind(5, first_child);
  s.Bind(6, first_child | 15);
  rc = Run(s);
  if (rc != SQLITE_DONE) return db_->Error(rc, what);
  return Status::Ok();
}

engine::Result<std::vector<std::string>> StoreWriter::Tags(const std::string& job_id) {
  return QueryScalarTags(*db_, job_id);
}

Status StoreWriter::Do(DropScalarsAfterOp& op) {
  // Everything below must see the points queued before this op with their rollups.
  Status st = FlushRollups();
  if (!st.ok()) return st;
  fatal_ = true;  // any failure from here on leaves the rollups inconsistent: lose the batch
  auto tags = Tags(op.job_id);
  if (!tags.ok()) return tags.status();
  const std::string what =
      "dropping the scalars of job '" + op.job_id + "' after step " + std::to_string(op.step);
  for (const std::string& tag : *tags) {
    auto del = db_->Prepare(kDeleteScalarsAfter);
    if (!del.ok()) return del.status();
    sqlite::Stmt& d = **del;
    d.Bind(1, op.job_id);
    d.Bind(2, tag);
    d.Bind(3, op.step);
    int rc = Run(d);
    if (rc != SQLITE_DONE) return db_->Error(rc, what);
    if (db_->changes() == 0) continue;
    for (int level = 1; level <= kRollupLevels; ++level) {
      const int64_t block = RollupBlock(op.step, level);
      auto drop = db_->Prepare(kDeleteRollupsAfter);
      if (!drop.ok()) return drop.status();
      sqlite::Stmt& r = **drop;
      r.Bind(1, op.job_id);
      r.Bind(2, tag);
      r.Bind(3, int64_t{level});
      r.Bind(4, block);
      rc = Run(r);
      if (rc != SQLITE_DONE) return db_->Error(rc, what);
      // The block holding `step` lost its points after it.
      TRAININGD_RETURN_IF_ERROR(RecomputeBlock(op.job_id, tag, level, block));
    }
  }
  fatal_ = false;
  return Status::Ok();
}

Status StoreWriter::Do(DeleteJobOp& op) {
  Status st = FlushRollups();
  if (!st.ok()) return st;
  for (const char* sql : {kDeleteJobScalars, kDeleteJobRollups, kDeleteJob}) {
    auto stmt = db_->Prepare(sql);
    if (!stmt.ok()) return Lost(stmt.status());
    sqlite::Stmt& s = **stmt;
    s.Bind(1, op.id);
    const int rc = Run(s);
    if (rc != SQLITE_DONE) return Fail(rc, "deleting job '" + op.id + "'");
  }
  known_jobs_.erase(op.id);
  return Status::Ok();
}

}  // namespace trainingd::daemon
