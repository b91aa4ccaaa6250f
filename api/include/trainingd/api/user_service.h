// UserService: the users of a daemon shared by a team, their roles and API tokens
// (docs/operations.md#team-use). api/ states it; daemon/ implements it (UserDirectory) and the
// router asks it who sent each request before any route runs.
//
// Roles, from least to most: a viewer reads everything; a user also creates jobs, experiments
// and datasets and changes its own; an admin changes anything and manages users, tokens and the
// audit. Tokens are kept only as SHA-256 hashes: the secret is shown once, by CreateToken.
//
// Errors as job_service.h maps them: InvalidArgument "<field>: ..." -> 400, NotFound -> 404,
// FailedPrecondition -> 409 (a name taken, a user that owns running jobs). Any failure of
// Authenticate is a 401 with its message. Thread-safe; every call returns
// quickly (users and tokens are held in memory, writes are queued on the store).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::api {

enum class Role { kViewer, kUser, kAdmin };
const char* RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);

// The owner of everything made before there were users, and the user whose token is the one
// configured with token_file / TRAININGD_TOKEN.
inline constexpr std::string_view kAdminUser = "admin";

// Who sent a request. token_id 0: the configured token, or no token on a daemon without one.
struct Principal {
  std::string name{kAdminUser};
  Role role = Role::kAdmin;
  int64_t token_id = 0;
};

struct UserInfo {
  std::string name;
  Role role = Role::kUser;
  bool disabled = false;
  double created_at = 0;  // Unix seconds
};

struct TokenInfo {
  int64_t id = 0;
  std::string user;
  double created_at = 0;
  double expires_at = 0;  // 0 = never
  bool revoked = false;
};

// A token just made: its record and its secret, which nothing shows again.
struct NewToken {
  TokenInfo info;
  std::string secret;
};

// User names: 1 to 64 of [a-z0-9_.-], starting with a letter or digit.
bool IsValidUserName(std::string_view name);

// The longest lifetime a token may be given: ten years.
inline constexpr int64_t kMaxTokenLifetimeSecs = int64_t{10} * 366 * 24 * 3600;

class UserService {
 public:
  virtual ~UserService() = default;

  // The principal a presented token stands for. NotFound for an unknown token,
  // FailedPrecondition (saying which) for a revoked or expired one and for a disabled user's.
  virtual engine::Result<Principal> Authenticate(std::string_view token) = 0;

  // InvalidArgument naming `name` or `role`; FailedPrecondition when the name is taken.
  virtual engine::Result<UserInfo> CreateUser(const std::string& name, Role role) = 0;
  virtual std::vector<UserInfo> ListUsers() = 0;
  virtual engine::Result<UserInfo> GetUser(const std::string& name) = 0;
  // Changes the role and/or the disabled flag. FailedPrecondition for the admin user (it stays
  // an enabled admin, so the configured token always works).
  virtual engine::Result<UserInfo> UpdateUser(const std::string& name, std::optional<Role> role,
                                              std::optional<bool> disabled) = 0;
  // Deletes the user and its tokens. FailedPrecondition for the admin user and for a user that
  // owns queued or running jobs (the message names them).
  virtual engine::Status DeleteUser(const std::string& name) = 0;

  // A new token for `user`, expiring `lifetime_secs` from now (nullopt = never; 1 to
  // kMaxTokenLifetimeSecs, else InvalidArgument "expires_in_secs: ...").
  virtual engine::Result<NewToken> CreateToken(const std::string& user,
                                               std::optional<int64_t> lifetime_secs) = 0;
  // The user's tokens (revoked ones too), oldest first. NotFound for an unknown user.
  virtual engine::Result<std::vector<TokenInfo>> ListTokens(const std::string& user) = 0;
  // Revokes it: Authenticate refuses it from now on. NotFound for an unknown id.
  virtual engine::Result<TokenInfo> RevokeToken(int64_t id) = 0;
};

}  // namespace trainingd::api
