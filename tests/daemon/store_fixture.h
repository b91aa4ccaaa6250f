// The Store tests' fixture and helpers: a fresh directory per test, job rows, plain SQLite
// access for preparing files, and the check of Store::QueryScalars' downsampling contract.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store_test_util.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {

inline JobRecord MakeJob(const std::string& id, double created_at,
                         api::JobState state = api::JobState::kQueued) {
  JobRecord j;
  j.id = id;
  j.name = "name-" + id;
  j.spec_json = R"({"name":")" + id + R"("})";
  j.state = state;
  j.created_at = created_at;
  j.max_steps = 1000;
  j.checkpoint_dir = "/var/jobs/" + id;
  j.crash_count = 1;
  return j;
}

// A statement on a plain SQLite connection, for preparing files the store must cope with.
inline void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << msg;
}

inline std::string RawText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out = "<error>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(st, 0);
    out = t != nullptr ? reinterpret_cast<const char*>(t) : "<null>";
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// The reference a query result is checked against: step -> (wall_time, value).
struct RefPoint {
  double wall_time;
  double value;
};
using Series = std::map<int64_t, RefPoint>;

inline std::string Show(const api::ScalarPoint& p) {
  return "{step " + std::to_string(p.step) + ", value " + std::to_string(p.value) + ", min " +
         std::to_string(p.min) + ", max " + std::to_string(p.max) + "}";
}

// Checks `got` against the contract of Store::QueryScalars over the true series `ref`, without
// assuming the bucket width: at most max_points points; raw when few enough; otherwise the first
// point as it is, then points that are real points of the series whose min/max are exactly those
// of the points since the previous output point -- i.e. consecutive buckets that cover the range,
// ending with the range's last point.
inline ::testing::AssertionResult FollowsRule(const Series& ref, const api::ScalarQuery& q,
                                              const std::vector<api::ScalarPoint>& got) {
  const int64_t lo = q.from_step.value_or(std::numeric_limits<int64_t>::min());
  const int64_t hi = q.to_step.value_or(std::numeric_limits<int64_t>::max());
  std::vector<std::pair<int64_t, RefPoint>> pts;
  for (auto it = ref.lower_bound(lo); it != ref.end() && it->first <= hi; ++it) {
    pts.push_back(*it);
  }
  auto fail = [&](const std::string& why) {
    return ::testing::AssertionFailure()
           << why << " (max_points " << q.max_points << ", " << pts.size() << " points in range, "
           << got.size() << " returned)";
  };
  if (static_cast<int64_t>(pts.size()) <= q.max_points) {
    if (got.size() != pts.size()) return fail("expected every raw point");
    for (size_t i = 0; i < pts.size(); ++i) {
      const api::ScalarPoint& g = got[i];
      if (g.step != pts[i].first || !testing::Same(g.value, pts[i].second.value) ||
          !testing::Same(g.wall_time, pts[i].second.wall_time) || !testing::Same(g.min, g.value) ||
          !testing::Same(g.max, g.value)) {
        return fail("raw point " + std::to_string(i) + " differs: " + Show(g));
      }
    }
    return ::testing::AssertionSuccess();
  }
  if (got.empty()) return fail("no points");
  if (static_cast<int64_t>(got.size()) > q.max_points) return fail("too many points");
  for (size_t i = 0; i < got.size(); ++i) {
    if (i > 0 && got[i].step <= got[i - 1].step) return fail("steps not increasing");
    auto it = ref.find(got[i].step);
    if (it == ref.end() || !testing::Same(it->second.value, got[i].value) ||
        !testing::Same(it->second.wall_time, got[i].wall_time)) {
      return fail("point " + std::to_string(i) + " is not a point of the series: " + Show(got[i]));
    }
  }
  size_t next = 0;  // the first point of `pts` not yet accounted for
  size_t i = 0;
  if (q.max_points >= 2) {
    if (got[0].step != pts[0].first || !testing::Same(got[0].min, got[0].value) ||
        !testing::Same(got[0].max, got[0].value)) {
      return fail("the first point is not kept as it is: " + Show(got[0]));
    }
    next = 1;
    i = 1;
  }
  for (; i < got.size(); ++i) {
    double mn = testing::kNaN;
    double mx = testing::kNaN;
    const size_t begin = next;
    while (next < pts.size() && pts[next].first <= got[i].step) {
      mn = std::fmin(mn, pts[next].second.value);
      mx = std::fmax(mx, pts[next].second.value);
      ++next;
    }
    if (next == begin) return fail("empty bucket at " + Show(got[i]));
    if (!testing::Same(mn, got[i].min) || !testing::Same(mx, got[i].max)) {
      return fail("bucket " + std::to_string(i) + " " + Show(got[i]) + " should have min " +
                  std::to_string(mn) + ", max " + std::to_string(mx));
    }
  }
  if (next != pts.size()) return fail("the last point of the range is missing");
  return ::testing::AssertionSuccess();
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("store_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "trainingd.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Store> OpenStore(const StoreOptions& options = {}) {
    auto store = Store::Open(path_, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // Adds `ref`'s points to the store as (job, tag) in batches of `batch`, and flushes.
  static void AddSeries(Store& store, const std::string& job, const std::string& tag,
                        const Series& ref, size_t batch = 1000) {
    std::vector<ScalarRecord> recs;
    for (const auto& [step, p] : ref) {
      recs.push_back({job, tag, step, p.wall_time, p.value});
      if (recs.size() == batch) store.AddScalars(std::exchange(recs, {}));
    }
    store.AddScalars(std::move(recs));
    ASSERT_TRUE(store.Flush().ok());
  }

  static std::vector<api::ScalarPoint> Query(Store& store, const std::string& job,
                                             const api::ScalarQuery& q) {
    auto r = store.QueryScalars(job, q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : std::vector<api::ScalarPoint>{};
  }

  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace trainingd::daemon
