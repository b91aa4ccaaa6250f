#include "store/store_query.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "store/store_scalars.h"

namespace trainingd::daemon {
namespace {

using engine::Status;

constexpr char kPointsInRange[] = R"sql(
SELECT step, wall_time, value FROM scalars
WHERE series_id = ?1 AND step BETWEEN ?2 AND ?3 ORDER BY step LIMIT ?4)sql";

constexpr char kLastPointInRange[] = R"sql(
SELECT step, wall_time, value FROM scalars
WHERE series_id = ?1 AND step BETWEEN ?2 AND ?3 ORDER BY step DESC LIMIT 1)sql";

constexpr char kBlocksInRange[] = R"sql(
SELECT min_value, max_value, last_step, last_wall_time, last_value FROM scalar_rollups
WHERE series_id = ?1 AND level = ?2 AND block BETWEEN ?3 AND ?4 ORDER BY block)sql";

// A series row outlives its points (DropScalarsAfter may take them all): only series with a point
// count. The (job_id, tag) index gives the tags in order.
constexpr char kScalarTags[] = R"sql(
SELECT tag FROM series AS s
WHERE job_id = ?1 AND EXISTS (SELECT 1 FROM scalars WHERE series_id = s.id)
ORDER BY tag)sql";

constexpr char kLatestScalars[] = R"sql(
SELECT tag, (SELECT value FROM scalars WHERE series_id = s.id ORDER BY step DESC LIMIT 1)
FROM series AS s
WHERE job_id = ?1 AND EXISTS (SELECT 1 FROM scalars WHERE series_id = s.id)
ORDER BY tag)sql";

constexpr int64_t kMinStep = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxStep = std::numeric_limits<int64_t>::max();

// a / b rounded towards minus infinity; b > 0.
int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

api::ScalarPoint RawPoint(const sqlite::Stmt& s) {
  const double value = s.Real(2);
  return {s.Int(0), s.Real(1), value, value, value};
}

// Ends the read transaction (a read-only one: rolling back just releases the snapshot).
class EndRead {
 public:
  explicit EndRead(sqlite::Db& db) : db_(db) {}
  EndRead(const EndRead&) = delete;
  EndRead& operator=(const EndRead&) = delete;
  ~EndRead() { db_.RollbackIfOpen(); }

 private:
  sqlite::Db& db_;
};

// Folds points and rollup blocks, fed in step order, into buckets, and appends one point per
// non-empty bucket: its last point with the bucket's min and max.
class Downsampler {
 public:
  Downsampler(sqlite::Db& db, int64_t series_id, const std::string& tag,
              std::vector<api::ScalarPoint>* out)
      : db_(db), series_id_(series_id), tag_(tag), out_(out) {}

  // Buckets of `blocks_per_bucket` blocks of `level`, aligned to multiples of their width.
  // Without a call everything falls in one bucket.
  void SetBuckets(int level, int64_t blocks_per_bucket) {
    level_ = level;
    blocks_per_bucket_ = blocks_per_bucket;
  }

  // Feeds the steps [lo, hi], reading whole blocks of `level` (which must not be above the
  // bucket level: a block then never straddles two buckets) and the partial blocks at its ends
  // from the levels below.
  Status Cover(int64_t lo, int64_t hi, int level) {
    if (lo > hi) return Status::Ok();
    if (level == 0) return ScanPoints(lo, hi);
    const int shift = RollupShift(level);
    const int64_t first_block = lo >> shift;
    const int64_t last_block = hi >> shift;
    // No overflow: shifting a block index back gives a step inside [lo, hi] or its own block.
    const int64_t first_full = lo == (first_block << shift) ? first_block : first_block + 1;
    const int64_t last_full =
        hi == ((last_block << shift) | ((int64_t{1} << shift) - 1)) ? last_block : last_block - 1;
    if (first_full > last_full) return Cover(lo, hi, level - 1);
    if (first_full != first_block) {
      TRAININGD_RETURN_IF_ERROR(Cover(lo, (first_full << shift) - 1, level - 1));
    }
    TRAININGD_RETURN_IF_ERROR(ScanBlocks(level, first_full, last_full));
    if (last_full != last_block) return Cover(last_block << shift, hi, level - 1);
    return Status::Ok();
  }

  void Finish() {
    if (open_) out_->push_back(acc_);
    open_ = false;
  }

 private:
  int64_t BucketOf(int64_t step) const {
    if (blocks_per_bucket_ == 0) return 0;
    return FloorDiv(RollupBlock(step, level_), blocks_per_bucket_);
  }

  void Add(int64_t step, double wall_time, double value, double min, double max) {
    const int64_t bucket = BucketOf(step);
    if (open_ && bucket != bucket_) Finish();
    if (!open_) {
      open_ = true;
      bucket_ = bucket;
      acc_.min = min;
      acc_.max = max;
    } else {
      acc_.min = std::fmin(acc_.min, min);  // fmin/fmax skip NaN
      acc_.max = std::fmax(acc_.max, max);
    }
    acc_.step = step;  // fed in step order: the latest is the bucket's last
    acc_.wall_time = wall_time;
    acc_.value = value;
  }

  Status ScanPoints(int64_t lo, int64_t hi) {
    auto stmt = db_.Prepare(kPointsInRange);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, series_id_);
    s.Bind(2, lo);
    s.Bind(3, hi);
    s.Bind(4, int64_t{-1});
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      const double value = s.Real(2);
      Add(s.Int(0), s.Real(1), value, value, value);
    }
    if (rc != SQLITE_DONE) return db_.Error(rc, "reading scalars of '" + tag_ + "'");
    return Status::Ok();
  }

  Status ScanBlocks(int level, int64_t first, int64_t last) {
    auto stmt = db_.Prepare(kBlocksInRange);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, series_id_);
    s.Bind(2, int64_t{level});
    s.Bind(3, first);
    s.Bind(4, last);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      Add(s.Int(2), s.Real(3), s.Real(4), s.Real(0), s.Real(1));
    }
    if (rc != SQLITE_DONE) return db_.Error(rc, "reading scalar rollups of '" + tag_ + "'");
    return Status::Ok();
  }

  sqlite::Db& db_;
  int64_t series_id_;
  const std::string& tag_;
  std::vector<api::ScalarPoint>* out_;
  int level_ = 0;
  int64_t blocks_per_bucket_ = 0;  // 0: one bucket
  bool open_ = false;
  int64_t bucket_ = 0;
  api::ScalarPoint acc_;
};

}  // namespace

engine::Result<std::vector<api::ScalarPoint>> QueryScalarSeries(sqlite::Db& db,
                                                                const std::string& job_id,
                                                                const api::ScalarQuery& query) {
  const int64_t lo = query.from_step.value_or(kMinStep);
  const int64_t hi = query.to_step.value_or(kMaxStep);
  const int64_t max_points = query.max_points;
  const std::string what = "reading scalars of '" + query.tag + "'";
  TRAININGD_RETURN_IF_ERROR(db.Exec("BEGIN", "starting a read"));
  EndRead end_read(db);

  int64_t series_id;
  {
    auto stmt = db.Prepare(kFindSeries);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, job_id);
    s.Bind(2, query.tag);
    const int rc = s.Step();
    if (rc == SQLITE_DONE) return std::vector<api::ScalarPoint>();  // no such series: no points
    if (rc != SQLITE_ROW) return db.Error(rc, what);
    series_id = s.Int(0);
  }

  // Up to max_points + 1 points from the start: all of them when they are few enough.
  std::vector<api::ScalarPoint> points;
  {
    auto stmt = db.Prepare(kPointsInRange);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, series_id);
    s.Bind(2, lo);
    s.Bind(3, hi);
    s.Bind(4, max_points == kMaxStep ? int64_t{-1} : max_points + 1);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) points.push_back(RawPoint(s));
    if (rc != SQLITE_DONE) return db.Error(rc, what);
  }
  if (static_cast<int64_t>(points.size()) <= max_points) return points;

  const api::ScalarPoint first = points.front();
  points.clear();
  api::ScalarPoint last;
  {
    auto stmt = db.Prepare(kLastPointInRange);
    if (!stmt.ok()) return stmt.status();
    sqlite::Stmt& s = **stmt;
    sqlite::ResetOnExit reset(s);
    s.Bind(1, series_id);
    s.Bind(2, lo);
    s.Bind(3, hi);
    const int rc = s.Step();
    if (rc != SQLITE_ROW) return db.Error(rc == SQLITE_DONE ? SQLITE_INTERNAL : rc, what);
    last = RawPoint(s);
  }

  // The first point as it is, then buckets over the rest: at most max_points - 1 of them.
  Downsampler buckets(db, series_id, query.tag, &points);
  int64_t from = first.step;
  if (max_points >= 2) {
    points.push_back(first);
    from = first.step + 1;  // < last.step: the range holds more than max_points points
  }
  int top_level = kRollupLevels;
  if (max_points >= 3) {
    // k buckets of width W, aligned to multiples of W, cover any span < (k - 1) W + 1 steps.
    const uint64_t span = static_cast<uint64_t>(last.step) - static_cast<uint64_t>(from);
    const uint64_t k_minus_1 = static_cast<uint64_t>(max_points - 2);
    uint64_t min_width = span / k_minus_1 + (span % k_minus_1 != 0 ? 1 : 0);
    if (min_width == 0) min_width = 1;
    // The widest rollup level whose blocks fit in a bucket; a bucket is a whole number of them.
    int level = 0;
    while (level < kRollupLevels && (uint64_t{1} << RollupShift(level + 1)) <= min_width) ++level;
    const uint64_t block_width = uint64_t{1} << RollupShift(level);
    const uint64_t blocks = min_width / block_width + (min_width % block_width != 0 ? 1 : 0);
    buckets.SetBuckets(level, static_cast<int64_t>(blocks));
    top_level = level;
  }
  TRAININGD_RETURN_IF_ERROR(buckets.Cover(from, last.step, top_level));
  buckets.Finish();
  return points;
}

engine::Result<std::vector<std::string>> QueryScalarTags(sqlite::Db& db,
                                                         const std::string& job_id) {
  auto stmt = db.Prepare(kScalarTags);
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  sqlite::ResetOnExit reset(s);
  s.Bind(1, job_id);
  std::vector<std::string> tags;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) tags.push_back(s.Text(0));
  if (rc != SQLITE_DONE) return db.Error(rc, "listing the tags of job '" + job_id + "'");
  return tags;
}

engine::Result<std::map<std::string, double>> QueryLatestScalars(sqlite::Db& db,
                                                                 const std::string& job_id) {
  auto stmt = db.Prepare(kLatestScalars);
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  sqlite::ResetOnExit reset(s);
  s.Bind(1, job_id);
  std::map<std::string, double> latest;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) latest.emplace(s.Text(0), s.Real(1));
  if (rc != SQLITE_DONE) {
    return db.Error(rc, "reading the latest scalars of job '" + job_id + "'");
  }
  return latest;
}

engine::Result<std::map<std::string, std::vector<api::AttemptInfo>>> QueryAttempts(sqlite::Db& db) {
  auto stmt = db.Prepare(
      "SELECT job_id, attempt, workers, from_step, started_at, ended_at, end_reason "
      "FROM attempts ORDER BY job_id, attempt");
  if (!stmt.ok()) return stmt.status();
  sqlite::Stmt& s = **stmt;
  sqlite::ResetOnExit reset(s);
  std::map<std::string, std::vector<api::AttemptInfo>> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    api::AttemptInfo a;
    a.attempt = static_cast<int>(s.Int(1));
    a.workers = static_cast<int>(s.Int(2));
    a.from_step = s.Int(3);
    a.started_at = s.Real(4);
    a.ended_at = s.Real(5);
    a.end = s.Text(6);
    out[s.Text(0)].push_back(std::move(a));
  }
  if (rc != SQLITE_DONE) return db.Error(rc, "reading the attempts of the jobs");
  return out;
}

}  // namespace trainingd::daemon
