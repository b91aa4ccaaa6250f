// UserDirectory and AuditLog (docs/operations.md#team-use) over a real store: tokens kept only as
// hashes, expiry, revocation, disabled users, the admin that cannot be removed, the refusal to
// delete a user with running jobs, the audit's paging and retention, and migration 7 of a
// database written at schema version 6.
#include "trainingd/daemon/users/user_directory.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "trainingd/daemon/store/store.h"
#include "trainingd/daemon/users/audit_log.h"
#include "trainingd/engine/base/env.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
using api::Role;
using engine::StatusCode;

class UsersClock final : public engine::Env {
 public:
  double NowSeconds() override { return now; }
  double NowMonotonic() override { return now; }
  void SleepForSeconds(double s) override { now += s; }
  double now = 1.7e9;
};

std::string UsersDbText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != nullptr) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

void UsersDbExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "") << "\n"
      << sql;
  sqlite3_free(error);
  sqlite3_close(db);
}

class UserDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("user_directory_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "trainingd.db").string();
    Reopen();
  }
  void TearDown() override {
    users_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }
  void Reopen() {
    users_.reset();
    if (store_) {
      ASSERT_TRUE(store_->Flush().ok());
    }
    store_.reset();
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    UserDirectoryOptions o;
    o.env = &clock_;
    o.active_jobs_of = [this](const std::string& user) {
      return user == busy_user_ ? std::vector<std::string>{"j1", "j2"} : std::vector<std::string>{};
    };
    auto users = UserDirectory::Open(*store_, o);
    ASSERT_TRUE(users.ok()) << users.status().ToString();
    users_ = std::move(users).value();
  }

  fs::path dir_;
  std::string path_;
  UsersClock clock_;
  std::string busy_user_ = "busy";
  std::unique_ptr<Store> store_;
  std::unique_ptr<UserDirectory> users_;
};

TEST_F(UserDirectoryTest, AFreshDatabaseHasTheAdmin) {
  auto admin = users_->GetUser("admin");
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(admin->role, Role::kAdmin);
  EXPECT_FALSE(admin->disabled);
  EXPECT_EQ(users_->UpdateUser("admin", Role::kViewer, std::nullopt).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(users_->UpdateUser("admin", std::nullopt, true).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(users_->DeleteUser("admin").code(), StatusCode::kFailedPrecondition);
}

TEST_F(UserDirectoryTest, TokensAreShownOnceAndKeptOnlyAsHashes) {
  ASSERT_TRUE(users_->CreateUser("alice", Role::kUser).ok());
  auto token = users_->CreateToken("alice", std::nullopt);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->secret.rfind("tdk_", 0), 0u);
  EXPECT_EQ(token->secret.size(), 4u + 43u);
  auto second = users_->CreateToken("alice", std::nullopt);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->secret, token->secret);
  EXPECT_NE(second->info.id, token->info.id);

  auto who = users_->Authenticate(token->secret);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->name, "alice");
  EXPECT_EQ(who->role, Role::kUser);
  EXPECT_EQ(who->token_id, token->info.id);
  EXPECT_EQ(users_->Authenticate("tdk_nope").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(
      UsersDbText(path_, "SELECT sha256 FROM tokens WHERE id = " + std::to_string(token->info.id)),
      UserDirectory::HashToken(token->secret));
  // The secret itself is nowhere in the database's file.
  Reopen();
  std::ifstream file(path_, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  EXPECT_EQ(bytes.find(token->secret.substr(4)), std::string::npos);
  // And it still works after a restart.
  EXPECT_TRUE(users_->Authenticate(token->secret).ok());
}

TEST_F(UserDirectoryTest, ExpiredRevokedAndDisabledAreRefused) {
  ASSERT_TRUE(users_->CreateUser("bob", Role::kViewer).ok());
  auto expiring = users_->CreateToken("bob", 60);
  ASSERT_TRUE(expiring.ok());
  EXPECT_TRUE(users_->Authenticate(expiring->secret).ok());
  clock_.now += 59;
  EXPECT_TRUE(users_->Authenticate(expiring->secret).ok());
  clock_.now += 1;
  auto refused = users_->Authenticate(expiring->secret);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("expired"), std::string::npos);

  auto token = users_->CreateToken("bob", std::nullopt);
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(users_->UpdateUser("bob", std::nullopt, true).ok());
  refused = users_->Authenticate(token->secret);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("disabled"), std::string::npos);
  ASSERT_TRUE(users_->UpdateUser("bob", std::nullopt, false).ok());
  EXPECT_TRUE(users_->Authenticate(token->secret).ok());

  ASSERT_TRUE(users_->RevokeToken(token->info.id).ok());
  refused = users_->Authenticate(token->secret);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("revoked"), std::string::npos);
  Reopen();  // revocation is kept
  EXPECT_FALSE(users_->Authenticate(token->secret).ok());
  auto listed = users_->ListTokens("bob");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_TRUE((*listed)[1].revoked);
  EXPECT_EQ(users_->RevokeToken(999).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(users_->CreateToken("bob", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(users_->CreateToken("nobody", std::nullopt).status().code(), StatusCode::kNotFound);
}

TEST_F(UserDirectoryTest, UsersAreCheckedAndDeletedWithTheirTokens) {
  EXPECT_EQ(users_->CreateUser("Alice", Role::kUser).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(users_->CreateUser("", Role::kUser).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(users_->CreateUser("carol", Role::kAdmin).ok());
  EXPECT_EQ(users_->CreateUser("carol", Role::kUser).status().code(),
            StatusCode::kFailedPrecondition);
  auto token = users_->CreateToken("carol", std::nullopt);
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(users_->DeleteUser("carol").ok());
  EXPECT_FALSE(users_->Authenticate(token->secret).ok());
  EXPECT_EQ(users_->GetUser("carol").status().code(), StatusCode::kNotFound);
  Reopen();
  EXPECT_EQ(users_->GetUser("carol").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(UsersDbText(path_, "SELECT count(*) FROM tokens"), "0");
}

TEST_F(UserDirectoryTest, AUserWithRunningJobsIsNotDeleted) {
  ASSERT_TRUE(users_->CreateUser("busy", Role::kUser).ok());
  engine::Status st = users_->DeleteUser("busy");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("j1"), std::string::npos) << st.message();
  EXPECT_TRUE(users_->GetUser("busy").ok());
}

TEST_F(UserDirectoryTest, AuditPagesNewestFirstAndKeepsTheNewest) {
  AuditLog audit(*store_, 1000);
  for (int i = 0; i < 1005; ++i) {
    api::AuditEntry e;
    e.at = 1.7e9 + i;
    e.user = "alice";
    e.method = "POST";
    e.route = "/api/v1/jobs";
    e.resource = "r" + std::to_string(i);
    e.status = 201;
    audit.Record(e);
  }
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(UsersDbText(path_, "SELECT count(*) FROM audit"), "1000");
  auto page = audit.List(0, 3);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->entries.size(), 3u);
  EXPECT_EQ(page->entries[0].resource, "r1004");
  EXPECT_EQ(page->entries[2].resource, "r1002");
  auto next = audit.List(page->next_before, 2);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->entries[0].resource, "r1001");
  // The oldest kept is r5.
  auto last = audit.List(page->entries[0].seq - 998, 10);
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->entries.size(), 1u);
  EXPECT_EQ(last->entries[0].resource, "r5");
  EXPECT_EQ(last->next_before, 0);
  EXPECT_EQ(audit.List(0, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST(UserMigrationTest, Version6RowsBecomeTheAdmins) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("user_migration_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "trainingd.db").string();
  { ASSERT_TRUE(Store::Open(path).ok()); }
  // Take the file back to schema version 6 (what the previous release wrote), with a job and an
  // experiment in it.
  UsersDbExec(path,
              "DROP TABLE fair_share_usage;"                // migration 11's
              "DROP TABLE evaluations;"                     // migration 10's
              "ALTER TABLE jobs DROP COLUMN preempted_by;"  // migration 9's
              "ALTER TABLE jobs DROP COLUMN priority;"      // migration 8's
              "DROP TABLE users; DROP TABLE tokens; DROP TABLE audit;"
              "ALTER TABLE jobs DROP COLUMN owner; ALTER TABLE experiments DROP COLUMN owner;"
              "INSERT INTO jobs (id, name, state) VALUES ('jold', 'old', 'running');"
              "INSERT INTO experiments (id, name, state) VALUES ('xold', 'old', 'running');"
              "PRAGMA user_version = 6;");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto job = (*store)->GetJob("jold");
    ASSERT_TRUE(job.ok() && job->has_value());
    EXPECT_EQ((*job)->owner, "admin");
    auto experiments = (*store)->ListExperiments();
    ASSERT_TRUE(experiments.ok());
    ASSERT_EQ(experiments->size(), 1u);
    EXPECT_EQ((*experiments)[0].owner, "admin");
    auto users = UserDirectory::Open(**store);
    ASSERT_TRUE(users.ok());
    auto admin = (*users)->GetUser("admin");
    ASSERT_TRUE(admin.ok());
    EXPECT_EQ(admin->role, Role::kAdmin);
    EXPECT_EQ((*users)->ListUsers().size(), 1u);
  }
  EXPECT_EQ(UsersDbText(path, "PRAGMA user_version"), "11");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainingd::daemon
