// FakeUserService and FakeAuditService: in-memory UserService and AuditService for the router
// tests. Tokens are their own secrets ("tok-<name>"); a token can be marked revoked, expired or
// its user disabled, which Authenticate then refuses as the daemon's UserDirectory does. Not
// thread-safe, except Record.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/api/audit_service.h"
#include "trainingd/api/user_service.h"

namespace trainingd::api {

class FakeUserService : public UserService {
 public:
  struct Token {
    std::string user;
    int64_t id = 0;
    bool revoked = false;
    bool expired = false;
  };

  // Adds user `name` with `role` and the token "tok-<name>"; returns the token.
  std::string Add(const std::string& name, Role role) {
    users_[name] = UserInfo{name, role, false, 1700000000};
    const std::string secret = "tok-" + name;
    tokens_[secret] = Token{name, next_id_++};
    return secret;
  }
  Token& token(const std::string& secret) { return tokens_.at(secret); }
  void Disable(const std::string& name) { users_.at(name).disabled = true; }

  engine::Result<Principal> Authenticate(std::string_view secret) override {
    auto it = tokens_.find(std::string(secret));
    if (it == tokens_.end()) return engine::Status::NotFound("unknown token");
    const Token& t = it->second;
    if (t.revoked) return engine::Status::FailedPrecondition("token is revoked");
    if (t.expired) return engine::Status::FailedPrecondition("token has expired");
    const UserInfo& u = users_.at(t.user);
    if (u.disabled) return engine::Status::FailedPrecondition("user is disabled");
    return Principal{u.name, u.role, t.id};
  }
  engine::Result<UserInfo> CreateUser(const std::string& name, Role role) override {
    if (users_.count(name)) return engine::Status::FailedPrecondition("exists already");
    users_[name] = UserInfo{name, role, false, 1700000000};
    return users_[name];
  }
  std::vector<UserInfo> ListUsers() override {
    std::vector<UserInfo> out;
    for (const auto& [name, u] : users_) out.push_back(u);
    return out;
  }
  engine::Result<UserInfo> GetUser(const std::string& name) override {
    auto it = users_.find(name);
    if (it == users_.end()) return engine::Status::NotFound("no user " + name);
    return it->second;
  }
  engine::Result<UserInfo> UpdateUser(const std::string& name, std::optional<Role> role,
                                      std::optional<bool> disabled) override {
    auto it = users_.find(name);
    if (it == users_.end()) return engine::Status::NotFound("no user " + name);
    if (role) it->second.role = *role;
    if (disabled) it->second.disabled = *disabled;
    return it->second;
  }
  engine::Status DeleteUser(const std::string& name) override {
    return users_.erase(name) ? engine::Status::Ok() : engine::Status::NotFound("no user");
  }
  engine::Result<NewToken> CreateToken(const std::string& user,
                                       std::optional<int64_t> lifetime_secs) override {
    if (!users_.count(user)) return engine::Status::NotFound("no user " + user);
    const std::string secret = "tok-" + user + "-" + std::to_string(next_id_);
    tokens_[secret] = Token{user, next_id_++};
    NewToken t;
    t.info =
        TokenInfo{tokens_[secret].id, user, 1700000000,
                  lifetime_secs ? 1700000000.0 + static_cast<double>(*lifetime_secs) : 0, false};
    t.secret = secret;
    return t;
  }
  engine::Result<std::vector<TokenInfo>> ListTokens(const std::string& user) override {
    if (!users_.count(user)) return engine::Status::NotFound("no user " + user);
    std::vector<TokenInfo> out;
    for (const auto& [secret, t] : tokens_) {
      if (t.user == user) out.push_back(TokenInfo{t.id, user, 1700000000, 0, t.revoked});
    }
    return out;
  }
  engine::Result<TokenInfo> RevokeToken(int64_t id) override {
    for (auto& [secret, t] : tokens_) {
      if (t.id == id) {
        t.revoked = true;
        return TokenInfo{t.id, t.user, 1700000000, 0, true};
      }
    }
    return engine::Status::NotFound("no token");
  }

 private:
  std::map<std::string, UserInfo> users_;
  std::map<std::string, Token> tokens_;
  int64_t next_id_ = 1;
};

class FakeAuditService : public AuditService {
 public:
  void Record(AuditEntry entry) override {
    std::lock_guard<std::mutex> lock(mu_);
    entry.seq = static_cast<int64_t>(entries_.size()) + 1;
    entries_.push_back(std::move(entry));
  }
  engine::Result<AuditPage> List(int64_t before, int64_t limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    AuditPage page;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (before > 0 && it->seq >= before) continue;
      if (static_cast<int64_t>(page.entries.size()) == limit) {
        page.next_before = page.entries.back().seq;
        break;
      }
      page.entries.push_back(*it);
    }
    return page;
  }
  std::vector<AuditEntry> entries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<AuditEntry> entries_;
};

}  // namespace trainingd::api
