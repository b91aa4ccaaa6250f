// Upgrades of the store (docs/storage.md#migrations): the backup taken before a migration, the
// migration's atomicity under a kill and an I/O error at every point of its writes, the refusal
// of newer files, and the data directory's format marker.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fault_vfs.h"
#include "trainingd/daemon/service/data_dir_format.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/daemon/store/store_file.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;

constexpr int kPoints = 600;

// Runs `sql` on the file with a plain connection; returns the first column of the first row.
int64_t Query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    v = sqlite3_column_int64(s, 0);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string v;
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

void Exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

class StoreUpgradeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("store_upgrade_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "trainingd.db").string();
  }
  void TearDown() override {
    FaultVfs::Get().Clear();
    fs::remove_all(dir_);
  }

  // A version-5 store (as the releases before experiments wrote it) with one job and its loss.
  void MakeVersion5(const std::string& path) {
    ASSERT_TRUE(CreateStoreAtVersion(path, 5).ok());
    Exec(path,
         "INSERT INTO jobs (id, name, state, global_step, max_steps) "
         "VALUES ('j1', 'one', 'stopped', 200, 300);"
         "INSERT INTO series (job_id, tag) VALUES ('j1', 'loss');"
         "INSERT INTO scalars (series_id, step, wall_time, value) VALUES (1, 100, 1.5, 0.25);");
  }

  // A version-1 store with kPoints points: migration 2 copies every one of them.
  void MakeVersion1(const std::string& path) {
    ASSERT_TRUE(CreateStoreAtVersion(path, 1).ok());
    std::string sql =
        "BEGIN; INSERT INTO jobs (id, name, state, global_step, max_steps) "
        "VALUES ('j1', 'one', 'completed', 3000, 3000);";
    for (int i = 1; i <= kPoints; ++i) {
      sql += "INSERT INTO scalars (job_id, tag, step, wall_time, value) VALUES ('j1', 'loss', " +
             std::to_string(i) + ", " + std::to_string(i) + ".5, " + std::to_string(1.0 / i) + ");";
    }
    sql += "COMMIT;";
    Exec(path, sql);
  }

  fs::path dir_;
  std::string db_;
};

TEST_F(StoreUpgradeTest, BacksUpBeforeMigratingAndKeepsTheData) {
  MakeVersion5(db_);
  {
    auto store = Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto job = (*store)->GetJob("j1");
    ASSERT_TRUE(job.ok() && job->has_value()) << job.status().message();
    EXPECT_EQ((*job)->global_step, 200);
    EXPECT_EQ((*job)->experiment_id, "");  // a column of version 6, with its default
  }
  EXPECT_EQ(Query(db_, "PRAGMA user_version"), StoreSchemaVersionOfThisBuild());
  const std::vector<std::string> backups = ListMigrationBackups(db_);
  ASSERT_EQ(backups.size(), 1u);
  const std::string prefix =
      db_ + ".before-v" + std::to_string(StoreSchemaVersionOfThisBuild()) + "-";
  EXPECT_EQ(backups[0].rfind(prefix, 0), 0u) << backups[0];
  EXPECT_EQ(Query(backups[0], "PRAGMA user_version"), 5);
  EXPECT_EQ(Query(backups[0], "SELECT global_step FROM jobs WHERE id = 'j1'"), 200);
  EXPECT_EQ(Query(backups[0], "SELECT count(*) FROM scalars"), 1);
  auto checked = CheckStoreFile(backups[0]);
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  EXPECT_EQ(*checked, 5);
  // Opening a current store migrates nothing and backs up nothing.
  ASSERT_TRUE(Store::Open(db_).ok());
  EXPECT_EQ(ListMigrationBackups(db_).size(), 1u);
}

TEST_F(StoreUpgradeTest, NoBackupOfANewStore) {
  ASSERT_TRUE(Store::Open(db_).ok());
  ASSERT_TRUE(Store::Open(db_).ok());
  EXPECT_TRUE(ListMigrationBackups(db_).empty());
  StoreOptions off;
  off.backup_before_migration = false;
  const std::string other = (dir_ / "other.db").string();
  MakeVersion5(other);
  ASSERT_TRUE(Store::Open(other, off).ok());
  EXPECT_TRUE(ListMigrationBackups(other).empty());
  EXPECT_EQ(Query(other, "PRAGMA user_version"), StoreSchemaVersionOfThisBuild());
}

TEST_F(StoreUpgradeTest, KeepsTheNewestBackups) {
  std::vector<std::string> newest;
  for (int i = 0; i < kKeptMigrationBackups + 2; ++i) {
    fs::remove(db_);
    MakeVersion5(db_);
    ASSERT_TRUE(Store::Open(db_).ok());
    const std::vector<std::string> backups = ListMigrationBackups(db_);
    ASSERT_FALSE(backups.empty());
    newest.push_back(backups.back());
  }
  const std::vector<std::string> kept = ListMigrationBackups(db_);
  ASSERT_EQ(kept.size(), static_cast<size_t>(kKeptMigrationBackups));
  EXPECT_EQ(kept, std::vector<std::string>(newest.end() - kKeptMigrationBackups, newest.end()));
  for (const std::string& b : kept) EXPECT_EQ(Query(b, "PRAGMA user_version"), 5) << b;
}

TEST_F(StoreUpgradeTest, ABackupThatCannotBeWrittenMigratesNothing) {
  MakeVersion5(db_);
  StoreOptions o;
  o.vfs = FaultVfs::Get().name();
  FaultVfs::Get().Inject(FaultVfs::Fault::kFull);  // the backup's first write fails
  auto store = Store::Open(db_, o);
  FaultVfs::Get().Clear();
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("backing up before the migration"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(Query(db_, "PRAGMA user_version"), 5);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".before-v"), std::string::npos) << e.path();
  }
  ASSERT_TRUE(Store::Open(db_).ok());
  EXPECT_EQ(Query(db_, "PRAGMA user_version"), StoreSchemaVersionOfThisBuild());
}

// An I/O error at the k-th write of the backup and the migration: the open fails, the file is as
// it was, and the next open migrates it.
TEST_F(StoreUpgradeTest, AFailedMigrationLeavesTheStoreAsItWas) {
  const std::string pristine = (dir_ / "pristine.db").string();
  MakeVersion1(pristine);
  int failed = 0;
  for (int64_t k = 0;; k += 1 + k / 16) {
    const fs::path work = dir_ / ("io" + std::to_string(k));
    fs::create_directories(work);
    const std::string db = (work / "trainingd.db").string();
    fs::copy_file(pristine, db);
    StoreOptions o;
    o.vfs = FaultVfs::Get().name();
    FaultVfs::Get().Inject(FaultVfs::Fault::kIoError, k);
    auto store = Store::Open(db, o);
    FaultVfs::Get().Clear();
    if (store.ok()) break;  // k is past the last write
    ++failed;
    EXPECT_EQ(Query(db, "PRAGMA user_version"), 1) << "k=" << k;
    EXPECT_EQ(Query(db, "SELECT count(*) FROM scalars"), kPoints) << "k=" << k;
    {
      auto again = Store::Open(db);
      ASSERT_TRUE(again.ok()) << "k=" << k << ": " << again.status().message();
    }
    EXPECT_EQ(Query(db, "PRAGMA user_version"), StoreSchemaVersionOfThisBuild());
    EXPECT_EQ(Query(db, "SELECT count(*) FROM scalars"), kPoints);
    fs::remove_all(work);
    ASSERT_LT(k, 100000) << "never got past the writes";
  }
  EXPECT_GT(failed, 5);
}

// kill -9 at the k-th write (or sync) of the backup and the migration, in a child process: the
// next open succeeds and holds every point, whether the kill came before the commit (the file
// is still version 1) or after it.
TEST_F(StoreUpgradeTest, AMigrationKilledHalfwayLeavesTheStoreAsItWas) {
  const std::string pristine = (dir_ / "pristine.db").string();
  MakeVersion1(pristine);
  FaultVfs::Get();              // registered before the fork
  int killed_in_migration = 0;  // the backup was complete, the migration not committed
  int killed = 0;
  for (int64_t k = 0;; k += 1 + k / 16) {
    const fs::path work = dir_ / ("kill" + std::to_string(k));
    fs::create_directories(work);
    const std::string db = (work / "trainingd.db").string();
    fs::copy_file(pristine, db);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      StoreOptions o;
      o.vfs = FaultVfs::Get().name();
      FaultVfs::Get().Inject(FaultVfs::Fault::kKill, k);
      auto store = Store::Open(db, o);
      _exit(store.ok() ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status)) {
      ASSERT_EQ(WEXITSTATUS(status), 0) << "k=" << k;
      break;  // k is past the last write
    }
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "k=" << k;
    ++killed;
    const int64_t version = Query(db, "PRAGMA user_version");
    EXPECT_TRUE(version == 1 || version == StoreSchemaVersionOfThisBuild()) << "k=" << k;
    if (version == 1 && !ListMigrationBackups(db).empty()) ++killed_in_migration;
    {
      auto store = Store::Open(db);
      ASSERT_TRUE(store.ok()) << "k=" << k << ": " << store.status().message();
      auto job = (*store)->GetJob("j1");
      ASSERT_TRUE(job.ok() && job->has_value()) << "k=" << k;
    }
    EXPECT_EQ(Query(db, "PRAGMA user_version"), StoreSchemaVersionOfThisBuild()) << "k=" << k;
    EXPECT_EQ(Query(db, "SELECT count(*) FROM scalars"), kPoints) << "k=" << k;
    EXPECT_EQ(IntegrityCheck(db), "ok") << "k=" << k;
    fs::remove_all(work);
    ASSERT_LT(k, 100000) << "never got past the writes";
  }
  EXPECT_GT(killed, 5);
  EXPECT_GT(killed_in_migration, 0) << "no kill landed between the backup and the commit";
}

TEST_F(StoreUpgradeTest, RefusesNewerAndForeignFiles) {
  MakeVersion5(db_);
  Exec(db_, "PRAGMA user_version = 99");
  auto v = ReadStoreSchemaVersion(db_);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 99);
  auto checked = CheckStoreFile(db_);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.status().message().find("newer than this trainingd"), std::string::npos);
  auto store = Store::Open(db_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("newer than this trainingd"), std::string::npos);
  EXPECT_TRUE(ListMigrationBackups(db_).empty());
  EXPECT_EQ(Query(db_, "PRAGMA user_version"), 99);

  const std::string foreign = (dir_ / "foreign.db").string();
  Exec(foreign, "PRAGMA application_id = 42; CREATE TABLE t (x); PRAGMA user_version = 3;");
  checked = CheckStoreFile(foreign);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.status().message().find("not a trainingd database"), std::string::npos);
  EXPECT_FALSE(BackupStoreFile(foreign, (dir_ / "copy.db").string()).ok());

  const std::string text = (dir_ / "text.db").string();
  std::ofstream(text) << "not a database at all, but long enough to have a header............\n";
  EXPECT_FALSE(CheckStoreFile(text).ok());
  EXPECT_FALSE(CheckStoreFile((dir_ / "missing.db").string()).ok());
  const std::string empty = (dir_ / "empty.db").string();
  Exec(empty, "CREATE TABLE t (x)");
  EXPECT_FALSE(CheckStoreFile(empty).ok());
}

TEST_F(StoreUpgradeTest, BackupStoreFileCopiesAndRefusesToOverwrite) {
  MakeVersion5(db_);
  const std::string copy = (dir_ / "copy.db").string();
  ASSERT_TRUE(BackupStoreFile(db_, copy).ok());
  EXPECT_EQ(Query(copy, "SELECT global_step FROM jobs WHERE id = 'j1'"), 200);
  EXPECT_EQ(*CheckStoreFile(copy), 5);
  const engine::Status again = BackupStoreFile(db_, copy);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("already exists"), std::string::npos);
  EXPECT_FALSE(fs::exists(copy + ".tmp"));
}

TEST(PendingMigrationsTest, ListsWhatRuns) {
  const int n = StoreSchemaVersionOfThisBuild();
  EXPECT_EQ(PendingMigrations(0).size(), static_cast<size_t>(n));
  EXPECT_TRUE(PendingMigrations(n).empty());
  EXPECT_TRUE(PendingMigrations(n + 5).empty());
  const std::vector<MigrationStep> from4 = PendingMigrations(4);
  ASSERT_EQ(from4.size(), static_cast<size_t>(n - 4));
  EXPECT_EQ(from4.front().to, 5);
  EXPECT_FALSE(from4.front().what.empty());
}

TEST(DataDirFormatTest, WrittenReadAndNewerRefused) {
  const fs::path dir = fs::path(::testing::TempDir()) / "data_dir_format";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto format = ReadDataDirFormat(dir.string());
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, 1);  // no marker: written before markers existed
  ASSERT_TRUE(WriteDataDirFormat(dir.string(), 6).ok());
  format = ReadDataDirFormat(dir.string());
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, kDataDirFormat);
  EXPECT_FALSE(fs::exists(dir / "format.json.tmp"));
  // The same marker again is not written (a start on a full disk must not need to).
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dir / kDataDirFormatFile, old_time);
  ASSERT_TRUE(WriteDataDirFormat(dir.string(), 6).ok());
  EXPECT_EQ(fs::last_write_time(dir / kDataDirFormatFile), old_time);
  ASSERT_TRUE(WriteDataDirFormat(dir.string(), 7).ok());  // another schema: written
  EXPECT_NE(fs::last_write_time(dir / kDataDirFormatFile), old_time);

  std::ofstream(dir / kDataDirFormatFile)
      << R"({"format": )" << kDataDirFormat + 1 << R"(, "written_by": "trainingd 9.0"})";
  format = ReadDataDirFormat(dir.string());
  ASSERT_FALSE(format.ok());
  EXPECT_NE(format.status().message().find("newer than this trainingd"), std::string::npos);
  EXPECT_NE(format.status().message().find("trainingd 9.0"), std::string::npos);

  for (const char* bad : {"", "[1]", R"({"format": "1"})", R"({"format": 0})", "{"}) {
    std::ofstream(dir / kDataDirFormatFile, std::ios::trunc) << bad;
    format = ReadDataDirFormat(dir.string());
    ASSERT_FALSE(format.ok()) << bad;
    EXPECT_NE(format.status().message().find("format.json"), std::string::npos) << bad;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainingd::daemon
