// Store: a database written by schema version 1 (points and rollups keyed by job id and tag) is
// migrated to version 2 (keyed by series id) on open, and afterwards holds and answers exactly
// what a store that was given the same points directly does.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "store_test_util.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
using api::ScalarPoint;
using api::ScalarQuery;

using testing::kNaN;
using testing::Same;

// Migration 1 as it shipped (daemon/src/store/store_schema.cpp; a shipped migration never changes).
constexpr char kSchemaVersion1[] = R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  spec_json TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  created_at REAL NOT NULL DEFAULT 0,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  global_step INTEGER NOT NULL DEFAULT 0,
  max_steps INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  checkpoint_dir TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_created_at ON jobs (created_at, id);
CREATE INDEX jobs_by_state ON jobs (state, created_at, id);

CREATE TABLE scalars (
  job_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  step INTEGER NOT NULL,
  wall_time REAL NOT NULL,
  value REAL,
  PRIMARY KEY (job_id, tag, step)
) WITHOUT ROWID;

CREATE TABLE scalar_rollups (
  job_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  level INTEGER NOT NULL,
  block INTEGER NOT NULL,
  min_value REAL,
  max_value REAL,
  last_step INTEGER NOT NULL,
  last_wall_time REAL NOT NULL,
  last_value REAL,
  PRIMARY KEY (job_id, tag, level, block)
) WITHOUT ROWID;

PRAGMA application_id = 1953656420;
PRAGMA user_version = 1;
)sql";

// The rollups of level ?1 as version 1's writer kept them: per block of 16^level steps, the min
// and max value (NULL when all are NULL) and the last point.
constexpr char kRollupsVersion1[] = R"sql(
INSERT INTO scalar_rollups (job_id, tag, level, block, min_value, max_value, last_step,
                            last_wall_time, last_value)
SELECT g.job_id, g.tag, ?1, g.block, g.lo, g.hi, g.last,
  (SELECT wall_time FROM scalars AS p
   WHERE p.job_id = g.job_id AND p.tag = g.tag AND p.step = g.last),
  (SELECT value FROM scalars AS p
   WHERE p.job_id = g.job_id AND p.tag = g.tag AND p.step = g.last)
FROM (SELECT job_id, tag, step >> (4 * ?1) AS block, min(value) AS lo, max(value) AS hi,
             max(step) AS last
      FROM scalars GROUP BY job_id, tag, block) AS g)sql";

struct Point {
  std::string job_id;
  std::string tag;
  int64_t step;
  double wall_time;
  double value;
};

class Sqlite {
 public:
  explicit Sqlite(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
  }
  ~Sqlite() { sqlite3_close(db_); }
  Sqlite(const Sqlite&) = delete;
  Sqlite& operator=(const Sqlite&) = delete;

  void Exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err != nullptr ? err : "");
    sqlite3_free(err);
  }
  sqlite3_stmt* Prepare(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db_);
    return st;
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* st = Prepare(sql);
    std::string out = "<none>";
    if (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(st, 0);
      out = t != nullptr ? reinterpret_cast<const char*>(t) : "<null>";
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

double ColumnReal(sqlite3_stmt* st, int col) {
  return sqlite3_column_type(st, col) == SQLITE_NULL ? kNaN : sqlite3_column_double(st, col);
}

// Every rollup row of the file, named by job and tag, in key order.
using RollupRow =
    std::tuple<std::string, std::string, int64_t, int64_t, double, double, int64_t, double, double>;
std::vector<RollupRow> Rollups(const std::string& path) {
  Sqlite db(path);
  sqlite3_stmt* st = db.Prepare(R"sql(
SELECT s.job_id, s.tag, r.level, r.block, r.min_value, r.max_value, r.last_step,
       r.last_wall_time, r.last_value
FROM scalar_rollups AS r JOIN series AS s ON s.id = r.series_id
ORDER BY s.job_id, s.tag, r.level, r.block)sql");
  std::vector<RollupRow> rows;
  while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
    rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                      reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
                      sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), ColumnReal(st, 4),
                      ColumnReal(st, 5), sqlite3_column_int64(st, 6), ColumnReal(st, 7),
                      ColumnReal(st, 8));
  }
  sqlite3_finalize(st);
  return rows;
}

bool SameRow(const RollupRow& a, const RollupRow& b) {
  return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) &&
         std::get<2>(a) == std::get<2>(b) && std::get<3>(a) == std::get<3>(b) &&
         Same(std::get<4>(a), std::get<4>(b)) && Same(std::get<5>(a), std::get<5>(b)) &&
         std::get<6>(a) == std::get<6>(b) && Same(std::get<7>(a), std::get<7>(b)) &&
         Same(std::get<8>(a), std::get<8>(b));
}

std::string ShowRollup(const RollupRow& r) {
  return std::get<0>(r) + "/" + std::get<1>(r) + " level " + std::to_string(std::get<2>(r)) +
         " block " + std::to_string(std::get<3>(r)) + " last " + std::to_string(std::get<6>(r));
}

bool SamePoints(const std::vector<ScalarPoint>& a, const std::vector<ScalarPoint>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].step != b[i].step || !Same(a[i].wall_time, b[i].wall_time) ||
        !Same(a[i].value, b[i].value) || !Same(a[i].min, b[i].min) || !Same(a[i].max, b[i].max)) {
      return false;
    }
  }
  return true;
}

JobRecord CompletedJob(const std::string& id, double created_at) {
  JobRecord j;
  j.id = id;
  j.name = "name-" + id;
  j.state = api::JobState::kCompleted;
  j.created_at = created_at;
  j.global_step = 777;
  return j;
}

class StoreMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("store_migration_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    old_path_ = (dir_ / "v1.db").string();
    fresh_path_ = (dir_ / "fresh.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `points` (and the jobs a, b, c) into a new version-1 file, with its rollups.
  void WriteVersion1(const std::vector<Point>& points) {
    Sqlite db(old_path_);
    db.Exec(kSchemaVersion1);
    db.Exec("BEGIN");
    db.Exec(
        "INSERT INTO jobs (id, name, state, created_at, global_step) VALUES "
        "('a', 'name-a', 'completed', 1, 777), ('b', 'name-b', 'completed', 2, 777), "
        "('c', 'name-c', 'completed', 3, 777)");
    sqlite3_stmt* st = db.Prepare("INSERT INTO scalars VALUES (?1, ?2, ?3, ?4, ?5)");
    for (const Point& p : points) {
      sqlite3_bind_text(st, 1, p.job_id.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(st, 2, p.tag.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 3, p.step);
      sqlite3_bind_double(st, 4, p.wall_time);
      if (std::isnan(p.value)) {
        sqlite3_bind_null(st, 5);
      } else {
        sqlite3_bind_double(st, 5, p.value);
      }
      ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_stmt* roll = db.Prepare(kRollupsVersion1);
    for (int level = 1; level <= 7; ++level) {
      sqlite3_bind_int(roll, 1, level);
      ASSERT_EQ(sqlite3_step(roll), SQLITE_DONE);
      sqlite3_reset(roll);
    }
    sqlite3_finalize(roll);
    db.Exec("COMMIT");
  }

  std::unique_ptr<Store> Open(const std::string& path) {
    auto store = Store::Open(path);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // The same points given to a new store through AddScalars.
  std::unique_ptr<Store> FreshStore(const std::vector<Point>& points) {
    auto store = Open(fresh_path_);
    for (const char* id : {"a", "b", "c"}) store->PutJob(CompletedJob(id, id[0] - 'a' + 1.0));
    std::vector<ScalarRecord> batch;
    for (const Point& p : points) {
      batch.push_back({p.job_id, p.tag, p.step, p.wall_time, p.value});
      if (batch.size() == 700) store->AddScalars(std::exchange(batch, {}));
    }
    store->AddScalars(std::move(batch));
    EXPECT_TRUE(store->Flush().ok());
    return store;
  }

  // Both stores answer every query alike, and hold the same rollup rows.
  void ExpectSameAnswers(Store& migrated, Store& fresh,
                         const std::map<std::pair<std::string, std::string>, size_t>& series) {
    for (const char* job : {"a", "b", "c", "none"}) {
      EXPECT_EQ(*migrated.ScalarTags(job), *fresh.ScalarTags(job)) << job;
      const auto ml = *migrated.LatestScalars(job);
      const auto fl = *fresh.LatestScalars(job);
      ASSERT_EQ(ml.size(), fl.size()) << job;
      for (const auto& [tag, value] : ml) {
        ASSERT_EQ(fl.count(tag), 1u) << job << " " << tag;
        EXPECT_TRUE(Same(value, fl.at(tag))) << job << " " << tag;
      }
    }
    std::mt19937_64 rng(5);
    for (const auto& [key, count] : series) {
      const auto& [job, tag] = key;
      const auto all = *fresh.QueryScalars(job, {.tag = tag, .max_points = 1 << 30});
      ASSERT_EQ(all.size(), count) << job << " " << tag;
      EXPECT_TRUE(SamePoints(*migrated.QueryScalars(job, {.tag = tag, .max_points = 1 << 30}), all))
          << job << " " << tag << ": the raw points differ";
      const int64_t first = all.front().step;
      const int64_t last = all.back().step;
      for (int64_t mp : {1, 2, 3, 10, 100, 1000}) {
        std::vector<ScalarQuery> queries = {{.tag = tag, .max_points = mp}};
        for (int r = 0; r < 3; ++r) {
          const long double span = static_cast<long double>(last) - first;
          const long double f = first + span * static_cast<long double>(rng() % 100) / 100;
          const long double t = f + (last - f) * static_cast<long double>(rng() % 100) / 100;
          queries.push_back({.tag = tag,
                             .from_step = static_cast<int64_t>(f),
                             .to_step = static_cast<int64_t>(t),
                             .max_points = mp});
        }
        for (const ScalarQuery& q : queries) {
          EXPECT_TRUE(SamePoints(*migrated.QueryScalars(job, q), *fresh.QueryScalars(job, q)))
              << job << " " << tag << " max_points " << mp << " from " << q.from_step.value_or(-1)
              << " to " << q.to_step.value_or(-1);
        }
      }
    }
    const auto mr = Rollups(old_path_);
    const auto fr = Rollups(fresh_path_);
    ASSERT_EQ(mr.size(), fr.size());
    for (size_t i = 0; i < mr.size(); ++i) {
      ASSERT_TRUE(SameRow(mr[i], fr[i])) << ShowRollup(mr[i]) << " vs " << ShowRollup(fr[i]);
    }
  }

  fs::path dir_;
  std::string old_path_;
  std::string fresh_path_;
};

TEST_F(StoreMigrationTest, Version1PointsAndRollupsAnswerAlikeAfterMigrating) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise;
  std::vector<Point> points;
  std::map<std::pair<std::string, std::string>, size_t> series;
  auto add = [&](const std::string& job, const std::string& tag, int64_t step, double value) {
    points.push_back({job, tag, step, 1.7e9 + static_cast<double>(points.size()), value});
    ++series[{job, tag}];
  };
  for (int s = 0; s < 20000; ++s) add("a", "loss", s, (s % 97 == 0) ? kNaN : noise(rng));
  for (int s = -3000; s < 3000; ++s) add("a", "accuracy", s * 37, noise(rng));
  for (int64_t s : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, int64_t{1} << 40,
                    std::numeric_limits<int64_t>::max()}) {
    add("a", "extreme", s, noise(rng));
  }
  for (int s = 0; s < 100; ++s) add("a", "all-nan", s, kNaN);
  for (int s = 0; s < 5000; ++s) add("b", "loss", s * 3, noise(rng));
  WriteVersion1(points);
  ASSERT_EQ(Sqlite(old_path_).Text("PRAGMA user_version"), "1");

  auto migrated = Open(old_path_);
  ASSERT_NE(migrated, nullptr);
  auto fresh = FreshStore(points);
  {
    Sqlite db(old_path_);
    EXPECT_EQ(db.Text("PRAGMA user_version"), "11");
    EXPECT_EQ(db.Text("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master "
                      "WHERE type = 'table' ORDER BY name)"),
              "attempts,audit,evaluations,experiment_decisions,experiments,fair_share_usage,jobs,"
              "rung_results,"
              "scalar_rollups,scalars,series,tokens,trials,users");
    EXPECT_EQ(db.Text("SELECT count(*) FROM scalars"), std::to_string(points.size()));
    EXPECT_EQ(db.Text("SELECT count(*) FROM series"), std::to_string(series.size()));
  }
  auto job = migrated->GetJob("a");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->global_step, 777);
  ExpectSameAnswers(*migrated, *fresh, series);

  // Writing on after the migration: appending (the largest step read from the migrated table),
  // replacing, a new tag, dropping, deleting -- the same on both stores.
  for (Store* store : {migrated.get(), fresh.get()}) {
    std::vector<ScalarRecord> more;
    for (int s = 19990; s < 21000; ++s) more.push_back({"a", "loss", s, 5.0, -1.0 * s});
    more.push_back({"a", "accuracy", 37, 6.0, 1e9});
    more.push_back({"a", "new", 4, 7.0, 0.5});
    store->AddScalars(std::move(more));
    store->DropScalarsAfter("b", 6000);
    store->DeleteJob("c");
    ASSERT_TRUE(store->Flush().ok());
  }
  series[{"a", "loss"}] = 21000;
  series[{"a", "new"}] = 1;
  series[{"b", "loss"}] = 2001;
  ExpectSameAnswers(*migrated, *fresh, series);
}

TEST_F(StoreMigrationTest, EmptyVersion1DatabaseMigrates) {
  WriteVersion1({});
  {
    auto store = Open(old_path_);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->ScalarTags("a")->empty());
    store->AddScalars({{"a", "loss", 3, 1.0, 2.0}});
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(*store->LatestScalars("a"), (std::map<std::string, double>{{"loss", 2.0}}));
  }
  EXPECT_EQ(Sqlite(old_path_).Text("PRAGMA user_version"), "11");
}

}  // namespace
}  // namespace trainingd::daemon
