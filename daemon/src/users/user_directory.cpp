#include "trainingd/daemon/users/user_directory.h"

#include <cmath>
#include <utility>

#include "trainingd/daemon/jobs/job_id.h"
#include "trainingd/engine/base/sha256.h"

namespace trainingd::daemon {
namespace {

namespace eng = trainingd::engine;
using eng::Status;

constexpr size_t kSecretBytes = 32;
constexpr std::string_view kSecretPrefix = "tdk_";

// base64url without padding: 43 characters for 32 bytes.
std::string Base64Url(const unsigned char* bytes, size_t n) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    buffer = (buffer << 8) | bytes[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 63];
  return out;
}

api::UserInfo ToInfo(const UserRecord& u) { return {u.name, u.role, u.disabled, u.created_at}; }

// Times are kept to the millisecond, as the store's other times.
double Millis(double seconds) { return std::floor(seconds * 1000) / 1000; }

}  // namespace

UserDirectory::UserDirectory(Store& store, UserDirectoryOptions options)
    : store_(store),
      options_(std::move(options)),
      env_(options_.env != nullptr ? options_.env : eng::Env::Default()) {}

eng::Result<std::unique_ptr<UserDirectory>> UserDirectory::Open(Store& store,
                                                                UserDirectoryOptions options) {
  std::unique_ptr<UserDirectory> d(new UserDirectory(store, std::move(options)));
  auto users = store.ListUsers();
  if (!users.ok()) return users.status();
  auto tokens = store.ListTokens();
  if (!tokens.ok()) return tokens.status();
  for (UserRecord& u : *users) d->users_.emplace(u.name, std::move(u));
  for (TokenRecord& t : *tokens) {
    d->next_token_id_ = std::max(d->next_token_id_, t.id + 1);
    d->hash_.emplace(t.sha256, t.id);
    d->tokens_.emplace(t.id, std::move(t));
  }
  // The configured token's user; the migration makes it, and nothing deletes or demotes it.
  UserRecord& admin = d->users_[std::string(api::kAdminUser)];
  if (admin.name.empty() || admin.role != api::Role::kAdmin || admin.disabled) {
    admin.name = std::string(api::kAdminUser);
    admin.role = api::Role::kAdmin;
    admin.disabled = false;
    store.PutUser(admin);
  }
  return d;
}

std::string UserDirectory::HashToken(std::string_view secret) {
  eng::Sha256 sha;
  sha.Update(secret);
  return sha.HexDigest();
}

api::TokenInfo UserDirectory::Info(const TokenRecord& t) {
  return {t.id, t.user, t.created_at, t.expires_at, t.revoked};
}

eng::Result<api::Principal> UserDirectory::Authenticate(std::string_view token) {
  const std::string hash = HashToken(token);
  std::lock_guard<std::mutex> lock(mu_);
  auto id = hash_.find(hash);
  if (id == hash_.end()) return Status::NotFound("unknown token");
  const TokenRecord& t = tokens_.at(id->second);
  if (t.revoked) return Status::FailedPrecondition("token " + std::to_string(t.id) + " is revoked");
  if (t.expires_at > 0 && env_->NowSeconds() >= t.expires_at) {
    return Status::FailedPrecondition("token " + std::to_string(t.id) + " has expired");
  }
  auto user = users_.find(t.user);
  if (user == users_.end()) return Status::NotFound("unknown token");
  if (user->second.disabled) {
    return Status::FailedPrecondition("user \"" + t.user + "\" is disabled");
  }
  return api::Principal{t.user, user->second.role, t.id};
}

eng::Result<api::UserInfo> UserDirectory::FindLocked(const std::string& name) const {
  auto it = users_.find(name);
  if (it == users_.end()) return Status::NotFound("no user \"" + name.substr(0, 64) + "\"");
  return ToInfo(it->second);
}

eng::Result<api::UserInfo> UserDirectory::CreateUser(const std::string& name, api::Role role) {
  if (!api::IsValidUserName(name)) {
    return Status::InvalidArgument(
        "name: must be 1 to 64 of the characters a-z 0-9 _ . -, starting with a letter or digit");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (users_.count(name)) {
    return Status::FailedPrecondition("user \"" + name + "\" exists already");
  }
  UserRecord u{name, role, false, Millis(env_->NowSeconds())};
  store_.PutUser(u);
  users_.emplace(name, u);
  return ToInfo(u);
}

std::vector<api::UserInfo> UserDirectory::ListUsers() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<api::UserInfo> out;
  for (const auto& [name, u] : users_) out.push_back(ToInfo(u));
  return out;
}

eng::Result<api::UserInfo> UserDirectory::GetUser(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return FindLocked(name);
}

eng::Result<api::UserInfo> UserDirectory::UpdateUser(const std::string& name,
                                                     std::optional<api::Role> role,
                                                     std::optional<bool> disabled) {
  std::lock_guard<std::mutex> lock(mu_);
  TRAININGD_RETURN_IF_ERROR(FindLocked(name).status());
  UserRecord& u = users_.at(name);
  if (name == api::kAdminUser &&
      ((role && *role != api::Role::kAdmin) || disabled.value_or(false))) {
    return Status::FailedPrecondition(
        "user \"admin\" stays an enabled admin: the configured token is its");
  }
  if (role) u.role = *role;
  if (disabled) u.disabled = *disabled;
  store_.PutUser(u);
  return ToInfo(u);
}

eng::Status UserDirectory::DeleteUser(const std::string& name) {
  if (name == api::kAdminUser) {
    return Status::FailedPrecondition(
        "user \"admin\" cannot be deleted: the configured token is its");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    TRAININGD_RETURN_IF_ERROR(FindLocked(name).status());
  }
  // Outside mu_: the job manager has its own lock. A job submitted between this check and the
  // delete keeps its owner's name; an admin can still change it.
  if (options_.active_jobs_of) {
    const std::vector<std::string> jobs = options_.active_jobs_of(name);
    if (!jobs.empty()) {
      std::string list;
      for (size_t i = 0; i < jobs.size() && i < 5; ++i) list += (i ? ", " : "") + jobs[i];
      if (jobs.size() > 5) list += ", ...";
      return Status::FailedPrecondition(
          "user \"" + name + "\" owns " + std::to_string(jobs.size()) +
          " queued or running job(s) (" + list + "); stop or delete them first");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!users_.erase(name)) return Status::NotFound("no user \"" + name + "\"");
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    if (it->second.user == name) {
      hash_.erase(it->second.sha256);
      it = tokens_.erase(it);
    } else {
      ++it;
    }
  }
  store_.DeleteUser(name);
  return Status::Ok();
}

eng::Result<api::NewToken> UserDirectory::CreateToken(const std::string& user,
                                                      std::optional<int64_t> lifetime_secs) {
  if (lifetime_secs && (*lifetime_secs < 1 || *lifetime_secs > api::kMaxTokenLifetimeSecs)) {
    return Status::InvalidArgument("expires_in_secs: must be from 1 to " +
                                   std::to_string(api::kMaxTokenLifetimeSecs));
  }
  unsigned char bytes[kSecretBytes];
  FillRandomBytes(bytes, sizeof bytes);
  std::string secret = std::string(kSecretPrefix) + Base64Url(bytes, sizeof bytes);
  std::lock_guard<std::mutex> lock(mu_);
  TRAININGD_RETURN_IF_ERROR(FindLocked(user).status());
  TokenRecord t;
  t.id = next_token_id_++;
  t.user = user;
  t.sha256 = HashToken(secret);
  t.created_at = Millis(env_->NowSeconds());
  if (lifetime_secs) t.expires_at = t.created_at + static_cast<double>(*lifetime_secs);
  store_.PutToken(t);
  hash_.emplace(t.sha256, t.id);
  tokens_.emplace(t.id, t);
  return api::NewToken{Info(t), std::move(secret)};
}

eng::Result<std::vector<api::TokenInfo>> UserDirectory::ListTokens(const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  TRAININGD_RETURN_IF_ERROR(FindLocked(user).status());
  std::vector<api::TokenInfo> out;
  for (const auto& [id, t] : tokens_) {
    if (t.user == user) out.push_back(Info(t));
  }
  return out;
}

eng::Result<api::TokenInfo> UserDirectory::RevokeToken(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return Status::NotFound("no token " + std::to_string(id));
  if (!it->second.revoked) {
    it->second.revoked = true;
    store_.PutToken(it->second);
  }
  return Info(it->second);
}

}  // namespace trainingd::daemon
