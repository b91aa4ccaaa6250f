// UserDirectory: the users, roles and API tokens of a daemon shared by a team
// (docs/operations.md#team-use), beside JobManager; the api::UserService the router asks who
// sent each request.
//
// Everything is held in memory (a team has tens of users, not millions) and loaded from the
// store at Open; each change is queued on the store's writer, so no call waits for the disk and
// Authenticate is a hash and a map lookup. A token's secret is 32 bytes from getrandom(2),
// written "tdk_" + 43 base64url characters; only its SHA-256 is kept, in memory and on disk.
// The configured token (token_file) is not one of these: the router compares it itself and it
// stands for the "admin" user, which always exists, is an admin and cannot be disabled or
// deleted. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainingd/api/user_service.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

struct UserDirectoryOptions {
  engine::Env* env = nullptr;  // the clock of expiries; null = Env::Default()
  // The ids of the queued, running and stopping jobs `user` owns: DeleteUser refuses while there
  // are any. Empty = none ever.
  std::function<std::vector<std::string>(const std::string& user)> active_jobs_of;
};

class UserDirectory : public api::UserService {
 public:
  // Loads the users and tokens from `store`, which must outlive the directory. Creates the
  // admin user if the table lacks it. Errors are the store's reads'.
  static engine::Result<std::unique_ptr<UserDirectory>> Open(Store& store,
                                                             UserDirectoryOptions options = {});

  engine::Result<api::Principal> Authenticate(std::string_view token) override;
  engine::Result<api::UserInfo> CreateUser(const std::string& name, api::Role role) override;
  std::vector<api::UserInfo> ListUsers() override;
  engine::Result<api::UserInfo> GetUser(const std::string& name) override;
  engine::Result<api::UserInfo> UpdateUser(const std::string& name, std::optional<api::Role> role,
                                           std::optional<bool> disabled) override;
  engine::Status DeleteUser(const std::string& name) override;
  engine::Result<api::NewToken> CreateToken(const std::string& user,
                                            std::optional<int64_t> lifetime_secs) override;
  engine::Result<std::vector<api::TokenInfo>> ListTokens(const std::string& user) override;
  engine::Result<api::TokenInfo> RevokeToken(int64_t id) override;

  // The SHA-256 (hex) under which a token's secret is kept.
  static std::string HashToken(std::string_view secret);

 private:
  UserDirectory(Store& store, UserDirectoryOptions options);
  static api::TokenInfo Info(const TokenRecord& t);
  engine::Result<api::UserInfo> FindLocked(const std::string& name) const;

  Store& store_;
  UserDirectoryOptions options_;
  engine::Env* env_;
  mutable std::mutex mu_;
  std::map<std::string, UserRecord> users_;        // by name
  std::map<int64_t, TokenRecord> tokens_;          // by id
  std::unordered_map<std::string, int64_t> hash_;  // sha256 -> token id
  int64_t next_token_id_ = 1;
};

}  // namespace trainingd::daemon
