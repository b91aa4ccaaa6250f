// store_bench: the daemon's SQLite store under load. Prints one JSON object per line:
//   store_ingest      batched AddScalars, timed from the first call until Flush returns
//   store_query       QueryScalars(max_points) over one long series: the full range and a
//                     sub-range, median and p99 over --queries runs (after one warm-up query)
//   scan_baseline     for comparison: one pass over the same series' rows with the SQLite C API,
//                     which is what a query without the rollups would at least cost
// Usage: store_bench [--dir DIR] [--scalars N] [--batch N] [--tags N] [--points N]
//                    [--queries N] [--max-points N]
// The database goes to DIR/store_bench.db (default: a new directory under /tmp), removed after.
// After each write phase the bench reads the points back on a connection of its own and exits
// with an error unless every one it wrote is there (count, last step and sum of values per tag).
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/daemon/store/store.h"

namespace {

namespace fs = std::filesystem;
using trainingd::daemon::JobRecord;
using trainingd::daemon::ScalarRecord;
using trainingd::daemon::Store;

struct Args {
  std::string dir;
  int64_t scalars = 2000000;
  int64_t batch = 1000;
  int64_t tags = 10;
  int64_t points = 1000000;
  int64_t queries = 50;
  int64_t max_points = 1000;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "store_bench: %s\n", message.c_str());
  std::exit(1);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      std::printf(
          "usage: store_bench [--dir DIR] [--scalars N] [--batch N] [--tags N] [--points N] "
          "[--queries N] [--max-points N]\n");
      std::exit(0);
    }
    if (i + 1 >= argc) Die("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--dir") {
      a.dir = value;
      continue;
    }
    char* end = nullptr;
    const long long n = std::strtoll(value.c_str(), &end, 10);
    if (end == value.c_str() || *end != '\0' || n <= 0) {
      Die("bad value '" + value + "' for " + flag);
    }
    if (flag == "--scalars") {
      a.scalars = n;
    } else if (flag == "--batch") {
      a.batch = n;
    } else if (flag == "--tags") {
      a.tags = n;
    } else if (flag == "--points") {
      a.points = n;
    } else if (flag == "--queries") {
      a.queries = n;
    } else if (flag == "--max-points") {
      a.max_points = n;
    } else {
      Die("unknown flag " + flag);
    }
  }
  return a;
}

void Check(const trainingd::engine::Status& st, const char* what) {
  if (!st.ok()) Die(std::string(what) + ": " + st.ToString());
}

// A noisy, slowly drifting curve with rare spikes, like a training loss.
double Value(int64_t step) {
  const double noise = std::sin(static_cast<double>(step) * 12.9898) * 0.05;
  const double spike = step % 99991 == 0 ? 5.0 : 0.0;
  return 2.0 * std::exp(-static_cast<double>(step) * 1e-6) + noise + spike;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// Checks, with a connection of its own, that the database holds exactly the points the bench
// wrote for `job_id` -- `count` of them, and per tag the largest step and the sum of the values
// -- so that a writer that loses or mangles points cannot post a good number.
struct Expected {
  int64_t max_step = -1;
  int64_t count = 0;
  double sum = 0;
};
void Verify(const std::string& path, const std::string& job_id,
            const std::map<std::string, Expected>& expected) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    Die("verify: cannot open " + path);
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT s.tag, count(*), max(p.step), total(p.value) FROM series AS s "
                         "JOIN scalars AS p ON p.series_id = s.id WHERE s.job_id = ?1 "
                         "GROUP BY s.tag",
                         -1, &st, nullptr) != SQLITE_OK) {
    Die(std::string("verify: ") + sqlite3_errmsg(db));
  }
  sqlite3_bind_text(st, 1, job_id.c_str(), -1, SQLITE_STATIC);
  size_t tags = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const std::string tag = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    const auto it = expected.find(tag);
    if (it == expected.end()) Die("verify: unexpected tag " + tag);
    const Expected& e = it->second;
    const int64_t count = sqlite3_column_int64(st, 1);
    const int64_t max_step = sqlite3_column_int64(st, 2);
    const double sum = sqlite3_column_double(st, 3);
    if (count != e.count || max_step != e.max_step ||
        std::fabs(sum - e.sum) > 1e-9 * std::max(1.0, std::fabs(e.sum))) {
      Die("verify: " + tag + " of " + job_id + " has " + std::to_string(count) +
          " points up to step " + std::to_string(max_step) + " (sum " + std::to_string(sum) +
          "), expected " + std::to_string(e.count) + " up to " + std::to_string(e.max_step) +
          " (sum " + std::to_string(e.sum) + ")");
    }
    ++tags;
  }
  if (rc != SQLITE_DONE) Die(std::string("verify: ") + sqlite3_errmsg(db));
  if (tags != expected.size()) {
    Die("verify: " + std::to_string(tags) + " tags of " + job_id + " in the database, expected " +
        std::to_string(expected.size()));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

void Ingest(Store& store, const Args& a, const std::string& path) {
  JobRecord job;
  job.id = "job-20250101-ingest";
  job.name = "ingest";
  store.PutJob(job);
  Check(store.Flush(), "PutJob");
  std::vector<std::string> tags;
  for (int64_t t = 0; t < a.tags; ++t) tags.push_back("train/scalar_" + std::to_string(t));
  const int64_t batches_before = store.stats().committed_batches;
  // What the loop below writes: scalar i is tag i % tags at step i / tags.
  std::map<std::string, Expected> expected;
  for (int64_t i = 0; i < a.scalars; ++i) {
    Expected& e = expected[tags[static_cast<size_t>(i % a.tags)]];
    e.max_step = i / a.tags;
    ++e.count;
    e.sum += Value(i / a.tags);
  }

  const double start = Seconds();
  int64_t written = 0;
  int64_t step = 0;
  while (written < a.scalars) {
    std::vector<ScalarRecord> batch;
    const int64_t n = std::min(a.batch, a.scalars - written);
    batch.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const std::string& tag = tags[static_cast<size_t>((written + i) % a.tags)];
      if ((written + i) % a.tags == 0 && written + i > 0) ++step;
      batch.push_back({job.id, tag, step, 1.7e9 + static_cast<double>(step), Value(step)});
    }
    store.AddScalars(std::move(batch));
    written += n;
  }
  const double enqueued = Seconds();
  Check(store.Flush(), "ingest");
  const double done = Seconds();
  std::printf(
      "{\"bench\":\"store_ingest\",\"scalars\":%lld,\"batch\":%lld,\"tags\":%lld,"
      "\"seconds\":%.3f,\"enqueue_seconds\":%.3f,\"transactions\":%lld,"
      "\"scalars_per_sec\":%.0f}\n",
      static_cast<long long>(a.scalars), static_cast<long long>(a.batch),
      static_cast<long long>(a.tags), done - start, enqueued - start,
      static_cast<long long>(store.stats().committed_batches - batches_before),
      static_cast<double>(a.scalars) / (done - start));
  std::fflush(stdout);
  Verify(path, job.id, expected);
}

void QueryLatency(Store& store, const Args& a, const std::string& path) {
  JobRecord job;
  job.id = "job-20250101-query";
  job.name = "query";
  store.PutJob(job);
  const double start = Seconds();
  for (int64_t s = 0; s < a.points; s += 10000) {
    std::vector<ScalarRecord> batch;
    for (int64_t i = s; i < std::min(a.points, s + 10000); ++i) {
      batch.push_back({job.id, "loss", i, 1.7e9 + static_cast<double>(i), Value(i)});
    }
    store.AddScalars(std::move(batch));
  }
  Check(store.Flush(), "writing the query series");
  std::printf("{\"bench\":\"store_series_write\",\"points\":%lld,\"seconds\":%.3f}\n",
              static_cast<long long>(a.points), Seconds() - start);
  Expected loss;
  for (int64_t i = 0; i < a.points; ++i) loss.sum += Value(i);
  loss.count = a.points;
  loss.max_step = a.points - 1;
  Verify(path, job.id, {{"loss", loss}});

  struct Range {
    const char* name;
    std::optional<int64_t> from, to;
  };
  const Range ranges[] = {{"full", std::nullopt, std::nullopt},
                          {"sub", a.points / 4 + 3, a.points * 3 / 4 - 5}};
  for (const Range& r : ranges) {
    trainingd::api::ScalarQuery q;
    q.tag = "loss";
    q.from_step = r.from;
    q.to_step = r.to;
    q.max_points = a.max_points;
    std::vector<double> ms;
    size_t returned = 0;
    for (int64_t i = 0; i <= a.queries; ++i) {
      const double t0 = Seconds();
      auto pts = store.QueryScalars(job.id, q);
      const double t1 = Seconds();
      if (!pts.ok()) Die("query: " + pts.status().ToString());
      returned = pts->size();
      if (i > 0) ms.push_back((t1 - t0) * 1e3);  // the first one warms the caches
    }
    std::printf(
        "{\"bench\":\"store_query\",\"range\":\"%s\",\"series_points\":%lld,\"max_points\":%lld,"
        "\"returned\":%zu,\"queries\":%zu,\"median_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f}\n",
        r.name, static_cast<long long>(a.points), static_cast<long long>(a.max_points), returned,
        ms.size(), Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(ms, 1.0));
    std::fflush(stdout);
  }
}

// One pass over the series' rows through the C API: the floor for any query that reads them all.
void ScanBaseline(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    Die("baseline: cannot open " + path);
  }
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT step, wall_time, value FROM scalars WHERE series_id = "
                     "(SELECT id FROM series WHERE job_id = ?1 AND tag = ?2) ORDER BY step",
                     -1, &st, nullptr);
  std::vector<double> ms;
  int64_t rows = 0;
  for (int i = 0; i < 6; ++i) {
    const double t0 = Seconds();
    sqlite3_bind_text(st, 1, "job-20250101-query", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, "loss", -1, SQLITE_STATIC);
    rows = 0;
    double sum = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      sum += static_cast<double>(sqlite3_column_int64(st, 0)) + sqlite3_column_double(st, 1) +
             sqlite3_column_double(st, 2);
      ++rows;
    }
    sqlite3_reset(st);
    if (i > 0) ms.push_back((Seconds() - t0) * 1e3);
    if (sum == 42) std::fprintf(stderr, " ");  // keeps the loop from being optimized away
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::printf("{\"bench\":\"scan_baseline\",\"rows\":%lld,\"median_ms\":%.1f}\n",
              static_cast<long long>(rows), Percentile(ms, 0.5));
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  fs::path dir = args.dir;
  const bool own_dir = dir.empty();
  if (own_dir) dir = fs::temp_directory_path() / ("store_bench_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "store_bench.db").string();
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  {
    auto store = Store::Open(path);
    if (!store.ok()) Die(store.status().ToString());
    Ingest(**store, args, path);
    QueryLatency(**store, args, path);
    ScanBaseline(path);
  }
  std::error_code ec;
  std::printf("{\"bench\":\"store_file\",\"bytes\":%lld}\n",
              static_cast<long long>(fs::file_size(path, ec)));
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix);
  if (own_dir) fs::remove_all(dir);
  return 0;
}
