#include "store/store_writer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "store/store_scalars.h"
#include "store/store_schema.h"

namespace trainingd::daemon {
namespace {

using engine::Status;

constexpr char kPutJob[] = R"sql(
INSERT INTO jobs (id, name, spec_json, state, created_at, started_at, finished_at, global_step,
                  max_steps, error, reason, checkpoint_dir, crash_count, slurm_job_id,
                  experiment_id, trial_index, hyperparameters_json, owner, priority, preempted_by)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
        ?20)
ON CONFLICT (id) DO UPDATE SET
  name = excluded.name, spec_json = excluded.spec_json, state = excluded.state,
  created_at = excluded.created_at, started_at = excluded.started_at,
  finished_at = excluded.finished_at, global_step = excluded.global_step,
  max_steps = excluded.max_steps, error = excluded.error, reason = excluded.reason,
  checkpoint_dir = excluded.checkpoint_dir, crash_count = excluded.crash_count,
  slurm_job_id = excluded.slurm_job_id, experiment_id = excluded.experiment_id,
  trial_index = excluded.trial_index, hyperparameters_json = excluded.hyperparameters_json,
  owner = excluded.owner, priority = excluded.priority,
  preempted_by = excluded.preempted_by)sql";
// (An upsert, not INSERT OR REPLACE: replacing deletes the old row first.)

constexpr char kUpdateJobState[] = R"sql(
UPDATE jobs SET state = ?2, started_at = ?3, finished_at = ?4, error = ?5, reason = ?6
WHERE id = ?1)sql";

constexpr char kUpdateJobStep[] = "UPDATE jobs SET global_step = ?2 WHERE id = ?1";

constexpr char kUpdateJobCrashCount[] = "UPDATE jobs SET crash_count = ?2 WHERE id = ?1";
constexpr char kUpdateJobSlurmId[] = "UPDATE jobs SET slurm_job_id = ?2 WHERE id = ?1";

constexpr char kJobExists[] = "SELECT 1 FROM jobs WHERE id = ?1";

// Only for a job that is still there: a deleted job leaves no attempts behind.
constexpr char kPutAttempt[] = R"sql(
INSERT INTO attempts (job_id, attempt, workers, from_step, started_at, ended_at, end_reason)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)
ON CONFLICT (job_id, attempt) DO UPDATE SET
  workers = excluded.workers, from_step = excluded.from_step, started_at = excluded.started_at,
  ended_at = excluded.ended_at, end_reason = excluded.end_reason)sql";
constexpr char kDeleteJobAttempts[] = "DELETE FROM attempts WHERE job_id = ?1";
constexpr char kDeleteJobEvaluations[] = "DELETE FROM evaluations WHERE job_id = ?1";
constexpr char kDeleteEvaluationsAfter[] =
    "DELETE FROM evaluations WHERE job_id = ?1 AND step > ?2";

constexpr char kCreateSeries[] = "INSERT INTO series (job_id, tag) VALUES (?1, ?2)";
constexpr char kLastStepOfSeries[] = "SELECT max(step) FROM scalars WHERE series_id = ?1";
constexpr char kJobSeries[] = "SELECT id, tag FROM series WHERE job_id = ?1";

// The fast path (docs/storage.md): points known to be new need no conflict handling, and many
// rows per statement save most of the per-statement cost. OR FAIL rather than the default ABORT:
// ABORT makes SQLite keep a statement journal (a copy of every page a multi-row statement
// touches) to undo a failed statement alone, while any failure here loses the whole batch anyway.
constexpr int kRowsPerInsert = 64;
constexpr char kInsertNewScalar[] =
    "INSERT OR FAIL INTO scalars (series_id, step, wall_time, value) VALUES (?1, ?2, ?3, ?4)";

// "INSERT ... VALUES (?, ?, ?, ?), ..." with kRowsPerInsert rows. The statement cache is keyed by
// the SQL's address, hence one string that lives for the whole program.
const char* InsertNewScalarsSql() {
  static const std::string sql = [] {
    std::string s = "INSERT OR FAIL INTO scalars (series_id, step, wall_time, value) VALUES ";
    for (int i = 0; i < kRowsPerInsert; ++i) s += i == 0 ? "(?, ?, ?, ?)" : ", (?, ?, ?, ?)";
    return s;
  }();
  return sql.c_str();
}

// Inserting and, only on a conflict, updating tells new points (whose rollups can be merged)
// from replaced ones (whose rollups must be recomputed).
constexpr char kInsertScalar[] = R"sql(
INSERT INTO scalars (series_id, step, wall_time, value) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (series_id, step) DO NOTHING)sql";

constexpr char kReplaceScalar[] = R"sql(
UPDATE scalars SET wall_time = ?3, value = ?4 WHERE series_id = ?1 AND step = ?2)sql";

// Folds new points into a block. SQL's two-argument min() is NULL when either side is NULL
// (NaN), hence the coalesce. Every right-hand side reads the row's old values.
constexpr char kMergeRollup[] = R"sql(
INSERT INTO scalar_rollups (series_id, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (series_id, level, block) DO UPDATE SET
  min_value = coalesce(min(min_value, excluded.min_value), min_value, excluded.min_value),
  max_value = coalesce(max(max_value, excluded.max_value), max_value, excluded.max_value),
  last_wall_time = CASE WHEN excluded.last_step >= last_step
                        THEN excluded.last_wall_time ELSE last_wall_time END,
  last_value = CASE WHEN excluded.last_step >= last_step
                    THEN excluded.last_value ELSE last_value END,
  last_step = max(last_step, excluded.last_step))sql";

// Rows for blocks that have none (no point of theirs was stored before this batch). REPLACE,
// not a plain insert: were a stale row there, the summary of the batch's points is the block's
// exact row anyway, and the store heals instead of failing every later batch.
constexpr int kBlocksPerInsert = 32;
constexpr char kInsertNewBlock[] = R"sql(
INSERT OR REPLACE INTO scalar_rollups (series_id, level, block, min_value, max_value, last_step,
                                       last_wall_time, last_value)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8))sql";

const char* InsertNewBlocksSql() {
  static const std::string sql = [] {
    std::string s =
        "INSERT OR REPLACE INTO scalar_rollups (series_id, level, block, min_value, max_value, "
        "last_step, last_wall_time, last_value) VALUES ";
    for (int i = 0; i < kBlocksPerInsert; ++i) {
      s += i == 0 ? "(?, ?, ?, ?, ?, ?, ?, ?)" : ", (?, ?, ?, ?, ?, ?, ?, ?)";
    }
    return s;
  }();
  return sql.c_str();
}

constexpr char kDeleteRollup[] = R"sql(
DELETE FROM scalar_rollups WHERE series_id = ?1 AND level = ?2 AND block = ?3)sql";

// ?4..?5: the range of steps of a level-1 block.
constexpr char kRollupFromScalars[] = R"sql(
INSERT INTO scalar_rollups (series_id, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
SELECT ?1, ?2, ?3,
  (SELECT min(value) FROM scalars WHERE series_id = ?1 AND step BETWEEN ?4 AND ?5),
  (SELECT max(value) FROM scalars WHERE series_id = ?1 AND step BETWEEN ?4 AND ?5),
  step, wall_time, value
FROM scalars WHERE series_id = ?1 AND step BETWEEN ?4 AND ?5
ORDER BY step DESC LIMIT 1)sql";

// ?4..?5: the range of level ?2 - 1 blocks making up block ?3 of level ?2.
constexpr char kRollupFromRollups[] = R"sql(
INSERT INTO scalar_rollups (series_id, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
SELECT ?1, ?2, ?3,
  (SELECT min(min_value) FROM scalar_rollups
   WHERE series_id = ?1 AND level = ?2 - 1 AND block BETWEEN ?4 AND ?5),
  (SELECT max(max_value) FROM scalar_rollups
   WHERE series_id = ?1 AND level = ?2 - 1 AND block BETWEEN ?4 AND ?5),
  last_step, last_wall_time, last_value
FROM scalar_rollups WHERE series_id = ?1 AND level = ?2 - 1 AND block BETWEEN ?4 AND ?5
ORDER BY block DESC LIMIT 1)sql";

constexpr char kDeleteScalarsAfter[] = "DELETE FROM scalars WHERE series_id = ?1 AND step > ?2";
constexpr char kDeleteRollupsAfter[] = R"sql(
DELETE FROM scalar_rollups WHERE series_id = ?1 AND level = ?2 AND block > ?3)sql";

constexpr char kDeleteJobScalars[] =
    "DELETE FROM scalars WHERE series_id IN (SELECT id FROM series WHERE job_id = ?1)";
constexpr char kDeleteJobRollups[] =
    "DELETE FROM scalar_rollups WHERE series_id IN (SELECT id FROM series WHERE job_id = ?1)";
constexpr char kDeleteJobSeries[] = "DELETE FROM series WHERE job_id = ?1";
constexpr char kDeleteJob[] = "DELETE FROM jobs WHERE id = ?1";

// Runs a statement that returns no rows; SQLITE_DONE or the error code.
int RunStatement(sqlite::Stmt& stmt) {
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
  // What series_ holds is only true while this connection is the only writer.
  auto version = db_->QueryInt("PRAGMA data_version", "reading the data version");
  if (!version.ok()) {
    db_->RollbackIfOpen();
    return {version.status()};
  }
  if (*version != data_version_) {
    series_.clear();
    data_version_ = *version;
  }
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
    st = WritePending();
    if (st.ok()) st = db_->Exec("COMMIT", "committing");
    if (st.ok()) {
      out.committed = true;
      return out;
    }
  }
  db_->RollbackIfOpen();
  pending_.clear();
  pending_index_.clear();
  series_.clear();  // it may name series and steps the rollback took away
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

Status StoreWriter::RunOne(const char* sql, std::string_view what,
                           const std::function<void(sqlite::Stmt&)>& bind) {
  auto stmt = db_->Prepare(sql);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  bind(s);
  const int rc = s.Step();
  s.Reset();
  if (rc != SQLITE_DONE) return Fail(rc, what, true);
  return Status::Ok();
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
  s.Bind(4, std::string_view(StoredStateName(j.state)));
  s.Bind(5, j.created_at);
  s.Bind(6, j.started_at);
  s.Bind(7, j.finished_at);
  s.Bind(8, j.global_step);
  s.Bind(9, j.max_steps);
  s.Bind(10, j.error);
  s.Bind(11, j.reason);
  s.Bind(12, j.checkpoint_dir);
  s.Bind(13, j.crash_count);
  s.Bind(14, j.slurm_job_id);
  s.Bind(15, j.experiment_id);
  s.Bind(16, j.trial_index);
  s.Bind(17, j.hyperparameters_json);
  s.Bind(18, j.owner);
  s.Bind(19, j.priority);
  s.Bind(20, j.preempted_by);
  const int rc = RunStatement(s);
  if (rc != SQLITE_DONE) return Fail(rc, "storing job '" + j.id + "'", true);
  known_jobs_.insert(j.id);
  return Status::Ok();
}

Status StoreWriter::Do(UpdateJobStateOp& op) {
  auto stmt = db_->Prepare(kUpdateJobState);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, op.id);
  s.Bind(2, std::string_view(StoredStateName(op.state)));
  s.Bind(3, op.started_at);
  s.Bind(4, op.finished_at);
  s.Bind(5, op.error);
  s.Bind(6, op.reason);
  const int rc = RunStatement(s);
  if (rc != SQLITE_DONE) return Fail(rc, "updating the state of job '" + op.id + "'", true);
  return Status::Ok();
}

Status StoreWriter::Do(UpdateJobStepOp& op) {
  auto stmt = db_->Prepare(kUpdateJobStep);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, op.id);
  s.Bind(2, op.global_step);
  const int rc = RunStatement(s);
  if (rc != SQLITE_DONE) return Fail(rc, "updating the step of job '" + op.id + "'", true);
  return Status::Ok();
}

Status StoreWriter::Do(UpdateJobCounterOp& op) {
  const bool crashes = op.column == UpdateJobCounterOp::Column::kCrashCount;
  auto stmt = db_->Prepare(crashes ? kUpdateJobCrashCount : kUpdateJobSlurmId);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  s.Bind(1, op.id);
  s.Bind(2, op.value);
  const int rc = RunStatement(s);
  if (rc != SQLITE_DONE) {
    return Fail(rc,
                std::string("updating the ") + (crashes ? "crash count" : "Slurm job id") +
                    " of job '" + op.id + "'",
                true);
  }
  return Status::Ok();
}

Status StoreWriter::Do(PutAttemptOp& op) {
  auto stmt = db_->Prepare(kPutAttempt);
  if (!stmt.ok()) return Lost(stmt.status());
  sqlite::Stmt& s = **stmt;
  const api::AttemptInfo& a = op.attempt;
  s.Bind(1, op.job_id);
  s.Bind(2, static_cast<int64_t>(a.attempt));
  s.Bind(3, static_cast<int64_t>(a.workers));
  s.Bind(4, a.from_step);
  s.Bind(5, a.started_at);
  s.Bind(6, a.ended_at);
  s.Bind(7, a.end);
  const int rc = RunStatement(s);
  if (rc != SQLITE_DONE) return Fail(rc, "storing an attempt of job '" + op.job_id + "'", true);
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

size_t StoreWriter::PendingIndex(const std::string& job_id, const std::string& tag) {
  std::string key;
  key.reserve(job_id.size() + 1 + tag.size());
  key.append(job_id).push_back('\0');
  key.append(tag);
  auto [it, inserted] = pending_index_.try_emplace(std::move(key), pending_.size());
  if (inserted) pending_.push_back(PendingSeries{job_id, tag, {}});
  return it->second;
}

// Only groups the points per series; WritePending writes them at the end of the batch (or before
// an op that must see them). Records usually cycle through a few tags: the op's series are found
// by comparing names, starting with the one after the last match, instead of hashing every
// record's names.
Status StoreWriter::Do(AddScalarsOp& op) {
  TRAININGD_RETURN_IF_ERROR(CheckScalars(op.scalars));
  constexpr size_t kScanned = 16;  // beyond this many series in one op, hash
  op_series_.clear();
  size_t next = 0;
  for (const ScalarRecord& r : op.scalars) {
    size_t found = op_series_.size();
    for (size_t k = 0; k < op_series_.size(); ++k) {
      const size_t c = (next + k) % op_series_.size();
      const PendingSeries& p = pending_[op_series_[c]];
      if (p.tag == r.tag && p.job_id == r.job_id) {
        found = c;
        break;
      }
    }
    size_t index;
    if (found < op_series_.size()) {
      index = op_series_[found];
      next = found + 1;
    } else {
      index = PendingIndex(r.job_id, r.tag);
      if (op_series_.size() < kScanned) {
        op_series_.push_back(index);
        next = op_series_.size();
      }
    }
    pending_[index].points.push_back({r.step, r.wall_time, r.value, false});
  }
  return Status::Ok();
}

Status StoreWriter::WritePending() {
  for (PendingSeries& series : pending_) {
    const Status st = WriteSeries(series);
    if (!st.ok()) {
      // Points may be half written: only the rollback makes the batch consistent again.
      fatal_ = true;
      return st;
    }
  }
  pending_.clear();
  pending_index_.clear();
  return Status::Ok();
}

Status StoreWriter::WriteSeries(PendingSeries& series) {
  std::vector<PendingPoint>& pts = series.points;
  if (pts.empty()) return Status::Ok();
  // Step order, and of points queued for the same step only the last: it replaces the others.
  const auto unordered = std::adjacent_find(
      pts.begin(), pts.end(),
      [](const PendingPoint& a, const PendingPoint& b) { return a.step >= b.step; });
  if (unordered != pts.end()) {
    std::stable_sort(pts.begin(), pts.end(),
                     [](const PendingPoint& a, const PendingPoint& b) { return a.step < b.step; });
    size_t kept = 0;
    for (size_t i = 0; i < pts.size(); ++i) {
      if (kept > 0 && pts[kept - 1].step == pts[i].step) {
        pts[kept - 1] = pts[i];
      } else {
        pts[kept++] = pts[i];
      }
    }
    pts.resize(kept);
  }

  auto state = Series(series.job_id, series.tag);
  if (!state.ok()) return state.status();
  SeriesState& s = **state;
  const SeriesState old = s;
  // Points above the series' largest step are certainly new: the fast path. The others may
  // replace stored points.
  auto first_new = pts.begin();
  if (!s.empty) {
    first_new = std::upper_bound(pts.begin(), pts.end(), s.max_step,
                                 [](int64_t step, const PendingPoint& p) { return step < p.step; });
  }
  const size_t old_count = static_cast<size_t>(first_new - pts.begin());
  TRAININGD_RETURN_IF_ERROR(
      InsertOrReplace(s.id, series.tag, std::span<PendingPoint>(pts.data(), old_count)));
  TRAININGD_RETURN_IF_ERROR(
      InsertNew(s.id, series.tag,
                std::span<const PendingPoint>(pts.data() + old_count, pts.size() - old_count)));
  if (old_count < pts.size()) {
    s.empty = false;
    s.max_step = pts.back().step;
  }
  return UpdateRollups(s.id, series.tag, pts, old);
}

engine::Result<StoreWriter::SeriesState*> StoreWriter::Series(const std::string& job_id,
                                                              const std::string& tag) {
  SeriesState& s = series_[job_id][tag];
  const std::string what = "looking up series '" + tag + "' of job '" + job_id + "'";
  if (!s.known) {
    auto find = db_->Prepare(kFindSeries);
    if (!find.ok()) return find.status();
    sqlite::Stmt& f = **find;
    f.Bind(1, job_id);
    f.Bind(2, tag);
    const int rc = f.Step();
    if (rc == SQLITE_ROW) {
      s.id = f.Int(0);
      s.max_known = false;
    }
    f.Reset();
    if (rc == SQLITE_DONE) {
      auto create = db_->Prepare(kCreateSeries);
      if (!create.ok()) return create.status();
      sqlite::Stmt& c = **create;
      c.Bind(1, job_id);
      c.Bind(2, tag);
      const int crc = RunStatement(c);
      if (crc != SQLITE_DONE) return db_->Error(crc, "creating series '" + tag + "'");
      s.id = db_->last_insert_rowid();
      s.max_known = true;
      s.empty = true;
    } else if (rc != SQLITE_ROW) {
      return db_->Error(rc, what);
    }
    s.known = true;
  }
  if (!s.max_known) {
    auto max = db_->Prepare(kLastStepOfSeries);
    if (!max.ok()) return max.status();
    sqlite::Stmt& m = **max;
    m.Bind(1, s.id);
    const int rc = m.Step();
    if (rc == SQLITE_ROW) {
      s.empty = m.IsNull(0);
      s.max_step = m.Int(0);
    }
    m.Reset();
    if (rc != SQLITE_ROW) return db_->Error(rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, what);
    s.max_known = true;
  }
  return &s;
}

Status StoreWriter::InsertNew(int64_t series_id, const std::string& tag,
                              std::span<const PendingPoint> points) {
  if (points.empty()) return Status::Ok();
  const PendingPoint* p = points.data();
  size_t left = points.size();
  if (left >= kRowsPerInsert) {
    auto many = db_->Prepare(InsertNewScalarsSql());
    if (!many.ok()) return many.status();
    sqlite::Stmt& m = **many;
    for (; left >= kRowsPerInsert; left -= kRowsPerInsert) {
      int column = 1;
      for (int i = 0; i < kRowsPerInsert; ++i, ++p) {
        m.Bind(column++, series_id);
        m.Bind(column++, p->step);
        m.Bind(column++, p->wall_time);
        m.Bind(column++, p->value);
      }
      const int rc = RunStatement(m);
      if (rc != SQLITE_DONE) return db_->Error(rc, "storing scalars of '" + tag + "'");
    }
  }
  if (left == 0) return Status::Ok();
  auto one = db_->Prepare(kInsertNewScalar);
  if (!one.ok()) return one.status();
  sqlite::Stmt& o = **one;
  for (; left > 0; --left, ++p) {
    o.Bind(1, series_id);
    o.Bind(2, p->step);
    o.Bind(3, p->wall_time);
    o.Bind(4, p->value);
    const int rc = RunStatement(o);
    if (rc != SQLITE_DONE) return db_->Error(rc, "storing scalar '" + tag + "'");
  }
  return Status::Ok();
}

Status StoreWriter::InsertOrReplace(int64_t series_id, const std::string& tag,
                                    std::span<PendingPoint> points) {
  if (points.empty()) return Status::Ok();
  auto insert = db_->Prepare(kInsertScalar);
  if (!insert.ok()) return insert.status();
  sqlite::Stmt& ins = **insert;
  for (PendingPoint& p : points) {
    ins.Bind(1, series_id);
    ins.Bind(2, p.step);
    ins.Bind(3, p.wall_time);
    ins.Bind(4, p.value);
    int rc = RunStatement(ins);
    if (rc != SQLITE_DONE) return db_->Error(rc, "storing scalar '" + tag + "'");
    if (db_->changes() != 0) continue;
    // (series, step) exists: overwrite it.
    auto update = db_->Prepare(kReplaceScalar);
    if (!update.ok()) return update.status();
    sqlite::Stmt& up = **update;
    up.Bind(1, series_id);
    up.Bind(2, p.step);
    up.Bind(3, p.wall_time);
    up.Bind(4, p.value);
    rc = RunStatement(up);
    if (rc != SQLITE_DONE) return db_->Error(rc, "replacing scalar '" + tag + "'");
    p.replaced = true;
  }
  return Status::Ok();
}

Status StoreWriter::UpdateRollups(int64_t series_id, const std::string& tag,
                                  std::span<const PendingPoint> pts, const SeriesState& old) {
  // The level-1 summaries from the points, then each level's from the one below: a level-l block
  // is 16 level-(l-1) blocks.
  std::vector<BlockSummary>& blocks = blocks_;
  blocks.clear();
  for (const PendingPoint& p : pts) {
    const int64_t block = RollupBlock(p.step, 1);
    if (blocks.empty() || blocks.back().block != block) {
      blocks.push_back({block, p.value, p.value, p.step, p.wall_time, p.value, p.replaced});
      continue;
    }
    BlockSummary& b = blocks.back();
    b.min_value = std::fmin(b.min_value, p.value);  // fmin/fmax skip NaN
    b.max_value = std::fmax(b.max_value, p.value);
    b.last_step = p.step;  // sorted by step
    b.last_wall_time = p.wall_time;
    b.last_value = p.value;
    b.replaced = b.replaced || p.replaced;
  }
  // Level by level, so that a block recomputed from the level below sees that level final.
  for (int level = 1;; ++level) {
    new_blocks_.clear();
    for (const BlockSummary& b : blocks) {
      if (old.empty || b.block > RollupBlock(old.max_step, level)) {
        new_blocks_.push_back(b);  // every point of the block is new: it has no row yet
      } else if (b.replaced) {
        // A replaced point may have been the block's min or max: only a recount is right then.
        TRAININGD_RETURN_IF_ERROR(RecomputeBlock(series_id, tag, level, b.block));
      } else {
        TRAININGD_RETURN_IF_ERROR(MergeBlock(series_id, tag, level, b));
      }
    }
    TRAININGD_RETURN_IF_ERROR(InsertBlocks(series_id, tag, level, new_blocks_));
    if (level == kRollupLevels) break;
    size_t kept = 0;
    for (const BlockSummary& child : blocks) {
      const int64_t parent = child.block >> 4;
      if (kept > 0 && blocks[kept - 1].block == parent) {
        BlockSummary& b = blocks[kept - 1];
        b.min_value = std::fmin(b.min_value, child.min_value);
        b.max_value = std::fmax(b.max_value, child.max_value);
        b.last_step = child.last_step;
        b.last_wall_time = child.last_wall_time;
        b.last_value = child.last_value;
        b.replaced = b.replaced || child.replaced;
      } else {
        BlockSummary b = child;
        b.block = parent;
        blocks[kept++] = b;
      }
    }
    blocks.resize(kept);
  }
  return Status::Ok();
}

Status StoreWriter::MergeBlock(int64_t series_id, const std::string& tag, int level,
                               const BlockSummary& b) {
  auto stmt = db_->Prepare(kMergeRollup);
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  s.Bind(1, series_id);
  s.Bind(2, int64_t{level});
  s.Bind(3, b.block);
  s.Bind(4, b.min_value);
  s.Bind(5, b.max_value);
  s.Bind(6, b.last_step);
  s.Bind(7, b.last_wall_time);
  s.Bind(8, b.last_value);
  const int rc = RunStatement(s);
  if (rc != SQLITE_DONE) return db_->Error(rc, "updating the rollups of '" + tag + "'");
  return Status::Ok();
}

Status StoreWriter::InsertBlocks(int64_t series_id, const std::string& tag, int level,
                                 std::span<const BlockSummary> blocks) {
  auto bind = [&](sqlite::Stmt& s, int first, const BlockSummary& b) {
    s.Bind(first, series_id);
    s.Bind(first + 1, int64_t{level});
    s.Bind(first + 2, b.block);
    s.Bind(first + 3, b.min_value);
    s.Bind(first + 4, b.max_value);
    s.Bind(first + 5, b.last_step);
    s.Bind(first + 6, b.last_wall_time);
    s.Bind(first + 7, b.last_value);
  };
  const std::string what = "storing the rollups of '" + tag + "'";
  size_t i = 0;
  if (blocks.size() >= kBlocksPerInsert) {
    auto many = db_->Prepare(InsertNewBlocksSql());
    if (!many.ok()) return many.status();
    for (; blocks.size() - i >= kBlocksPerInsert; i += kBlocksPerInsert) {
      for (int k = 0; k < kBlocksPerInsert; ++k) bind(**many, 8 * k + 1, blocks[i + k]);
      const int rc = RunStatement(**many);
      if (rc != SQLITE_DONE) return db_->Error(rc, what);
    }
  }
  if (i == blocks.size()) return Status::Ok();
  auto one = db_->Prepare(kInsertNewBlock);
  if (!one.ok()) return one.status();
  for (; i < blocks.size(); ++i) {
    bind(**one, 1, blocks[i]);
    const int rc = RunStatement(**one);
    if (rc != SQLITE_DONE) return db_->Error(rc, what);
  }
  return Status::Ok();
}

Status StoreWriter::RecomputeBlock(int64_t series_id, const std::string& tag, int level,
                                   int64_t block) {
  const std::string what = "recomputing the rollups of '" + tag + "'";
  auto del = db_->Prepare(kDeleteRollup);
  if (!del.ok()) return del.status();
  sqlite::Stmt& d = **del;
  d.Bind(1, series_id);
  d.Bind(2, int64_t{level});
  d.Bind(3, block);
  int rc = RunStatement(d);
  if (rc != SQLITE_DONE) return db_->Error(rc, what);

  auto ins = db_->Prepare(level == 1 ? kRollupFromScalars : kRollupFromRollups);
  if (!ins.ok()) return ins.status();
  sqlite::Stmt& s = **ins;
  const int64_t first_child = block << 4;  // the 16 blocks (steps, for level 1) below this one
  s.Bind(1, series_id);
  s.Bind(2, int64_t{level});
  s.Bind(3, block);
  s.Bind(4, first_child);
  s.Bind(5, first_child | 15);
  rc = RunStatement(s);
  if (rc != SQLITE_DONE) return db_->Error(rc, what);
  return Status::Ok();
}

Status StoreWriter::Do(DropScalarsAfterOp& op) {
  // Everything below must see the points queued before this op, with their rollups.
  TRAININGD_RETURN_IF_ERROR(WritePending());
  fatal_ = true;  // any failure from here on leaves the rollups inconsistent: lose the batch
  const std::string what =
      "dropping the scalars of job '" + op.job_id + "' after step " + std::to_string(op.step);
  std::vector<std::pair<int64_t, std::string>> series;  // id, tag
  {
    auto stmt = db_->Prepare(kJobSeries);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, op.job_id);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) series.emplace_back(s.Int(0), s.Text(1));
    if (rc != SQLITE_DONE) return db_->Error(rc, what);
  }
  for (const auto& [id, tag] : series) {
    auto del = db_->Prepare(kDeleteScalarsAfter);
    if (!del.ok()) return del.status();
    sqlite::Stmt& d = **del;
    d.Bind(1, id);
    d.Bind(2, op.step);
    int rc = RunStatement(d);
    if (rc != SQLITE_DONE) return db_->Error(rc, what);
    if (db_->changes() == 0) continue;
    for (int level = 1; level <= kRollupLevels; ++level) {
      const int64_t block = RollupBlock(op.step, level);
      auto drop = db_->Prepare(kDeleteRollupsAfter);
      if (!drop.ok()) return drop.status();
      sqlite::Stmt& r = **drop;
      r.Bind(1, id);
      r.Bind(2, int64_t{level});
      r.Bind(3, block);
      rc = RunStatement(r);
      if (rc != SQLITE_DONE) return db_->Error(rc, what);
      // The block holding `step` lost its points after it.
      TRAININGD_RETURN_IF_ERROR(RecomputeBlock(id, tag, level, block));
    }
  }
  {
    auto del = db_->Prepare(kDeleteEvaluationsAfter);
    if (!del.ok()) return del.status();
    sqlite::Stmt& d = **del;
    d.Bind(1, op.job_id);
    d.Bind(2, op.step);
    const int rc = RunStatement(d);
    if (rc != SQLITE_DONE) return db_->Error(rc, what);
  }
  // The job's series have lost their largest steps: read them again when next written.
  if (auto job = series_.find(op.job_id); job != series_.end()) {
    for (auto& [tag, state] : job->second) state.max_known = false;
  }
  fatal_ = false;
  return Status::Ok();
}

Status StoreWriter::Do(DeleteJobOp& op) {
  TRAININGD_RETURN_IF_ERROR(WritePending());
  for (const char* sql : {kDeleteJobScalars, kDeleteJobRollups, kDeleteJobSeries,
                          kDeleteJobAttempts, kDeleteJobEvaluations, kDeleteJob}) {
    auto stmt = db_->Prepare(sql);
    if (!stmt.ok()) return Lost(stmt.status());
    sqlite::Stmt& s = **stmt;
    s.Bind(1, op.id);
    const int rc = RunStatement(s);
    if (rc != SQLITE_DONE) return Fail(rc, "deleting job '" + op.id + "'");
  }
  known_jobs_.erase(op.id);
  series_.erase(op.id);  // its series are gone; the same names get new ones
  return Status::Ok();
}

}  // namespace trainingd::daemon
