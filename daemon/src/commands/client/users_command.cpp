// `trainingd users <verb>`, `trainingd tokens <verb>`, `trainingd whoami` and `trainingd audit`:
// a daemon shared by a team (docs/cli.md#users-and-tokens, docs/operations.md#team-use). Every
// verb but whoami needs an admin's token.
#include <cinttypes>
#include <cstdio>
#include <map>

#include "commands/client/client.h"
#include "trainingd/daemon/commands/client_commands.h"

namespace trainingd::daemon {
// Named, not anonymous: the unity build compiles these files together, and the verbs share names.
namespace user_verbs {
using namespace client;  // NOLINT: this file is the client's
using nlohmann::json;

constexpr const char* kUsersUsage =
    "usage: trainingd users <verb> [flags]    (trainingd users <verb> --help)\n"
    "verbs (an admin's token):\n"
    "  create NAME --role R   a user: admin, user or viewer\n"
    "  list                   every user\n"
    "  get NAME               one user\n"
    "  update NAME [--role R] [--disable | --enable]\n"
    "  delete NAME            a user and its tokens (409 while it owns queued or running jobs)\n";

constexpr const char* kTokensUsage =
    "usage: trainingd tokens <verb> [flags]    (trainingd tokens <verb> --help)\n"
    "verbs (an admin's token):\n"
    "  create USER [--expires-in DUR]   a token for USER; its secret is printed once, on stdout\n"
    "  list USER                        USER's tokens (no secrets)\n"
    "  revoke ID                        refused from now on\n";

std::string Text(const json& v, const char* key) {
  const auto it = v.find(key);
  if (it == v.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) return FormatTime(it->get<double>());
  return it->dump();
}

// Answers are checked to be objects with the keys the tables read.
bool Shaped(const json& v, std::initializer_list<const char*> keys) {
  if (!v.is_object()) return false;
  for (const char* k : keys) {
    if (!v.contains(k)) return false;
  }
  return true;
}

std::vector<std::string> UserHeader() { return {"NAME", "ROLE", "DISABLED", "CREATED"}; }
std::vector<std::string> UserRow(const json& u) {
  return {Text(u, "name"), Text(u, "role"), Text(u, "disabled"), Text(u, "created_at")};
}
std::vector<std::string> TokenHeader() { return {"ID", "USER", "CREATED", "EXPIRES", "REVOKED"}; }
std::vector<std::string> TokenRow(const json& t) {
  return {Text(t, "id"), Text(t, "user"), Text(t, "created_at"), Text(t, "expires_at"),
          Text(t, "revoked")};
}

int PrintUser(const Client& c, const json& doc) {
  if (!Shaped(doc, {"name", "role"})) {
    return c.Fail({kExitFailed, "the daemon's answer is not a user"});
  }
  return PrintObject(c, doc, doc["name"].get<std::string>(), {UserHeader(), {UserRow(doc)}, -1});
}

// A list answer: -o json/jsonl as it came, -q the first column, else a table.
int PrintList(const Client& c, const json& doc, const char* key, const char* id_key,
              std::vector<std::string> header, std::vector<std::string> (*row)(const json&)) {
  if (!doc.is_object() || !doc.contains(key) || !doc[key].is_array()) {
    return c.Fail({kExitFailed, std::string("the daemon's answer has no ") + key});
  }
  const json& items = doc[key];
  if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
    PrintJson(doc, items, c.mode());
    return 0;
  }
  Table t{std::move(header), {}, -1};
  for (const json& item : items) {
    if (c.mode() == OutputMode::kQuiet) {
      std::printf("%s\n", Text(item, id_key).c_str());
    } else {
      t.rows.push_back(row(item));
    }
  }
  if (c.mode() != OutputMode::kQuiet) PrintTable(c, t);
  return 0;
}

int NeedArg(const std::string& command, const char* what, const Flags& flags) {
  std::fprintf(stderr, "trainingd %s: one %s needed\n%s", command.c_str(), what,
               flags.Usage().c_str());
  return kExitUsage;
}

int UsersCreate(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  std::string role;
  Flags flags("users create", "NAME --role R",
              "Makes a user (admin, user or viewer); `trainingd tokens create NAME` gives it a "
              "token.\n");
  flags.Positionals("user name", 1, &names)
      .String("--role", "R", "admin, user or viewer (required)", &role);
  AddClientFlags(flags, &o);
  return WithClient("users create", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedArg("users create", "user name", flags);
    if (role.empty()) return c.Fail({kExitUsage, "--role: required (admin, user or viewer)"});
    Failure f;
    auto doc = c.Call("POST", "/api/v1/users", &f, json{{"name", names[0]}, {"role", role}}.dump(),
                      /*invalid_is_usage=*/true);
    if (!doc) return c.Fail(f);
    return PrintUser(c, *doc);
  });
}

int UsersList(const std::vector<std::string>& args) {
  ClientOptions o;
  Flags flags("users list", "", "Every user, by name.\n");
  AddClientFlags(flags, &o);
  return WithClient("users list", flags, o, args, [&](Client& c) -> int {
    Failure f;
    auto doc = c.Call("GET", "/api/v1/users", &f);
    if (!doc) return c.Fail(f);
    return PrintList(c, *doc, "users", "name", UserHeader(), UserRow);
  });
}

int UsersGet(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  Flags flags("users get", "NAME", "One user.\n");
  flags.Positionals("user name", 1, &names);
  AddClientFlags(flags, &o);
  return WithClient("users get", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedArg("users get", "user name", flags);
    Failure f;
    auto doc = c.Call("GET", "/api/v1/users/" + Encode(names[0]), &f);
    if (!doc) return c.Fail(f);
    return PrintUser(c, *doc);
  });
}

int UsersUpdate(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  std::string role;
  bool disable = false, enable = false;
  Flags flags("users update", "NAME [--role R] [--disable | --enable]",
              "Changes a user's role, or disables it (its tokens are refused) or enables it.\n");
  flags.Positionals("user name", 1, &names)
      .String("--role", "R", "admin, user or viewer", &role)
      .Switch("--disable", "refuse the user's tokens", &disable)
      .Switch("--enable", "accept them again", &enable);
  AddClientFlags(flags, &o);
  return WithClient("users update", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedArg("users update", "user name", flags);
    if (disable && enable) return c.Fail({kExitUsage, "--disable and --enable: give one"});
    json body = json::object();
    if (!role.empty()) body["role"] = role;
    if (disable || enable) body["disabled"] = disable;
    if (body.empty())
      return c.Fail({kExitUsage, "nothing to change: --role, --disable or --enable"});
    Failure f;
    auto doc = c.Call("PATCH", "/api/v1/users/" + Encode(names[0]), &f, body.dump(),
                      /*invalid_is_usage=*/true);
    if (!doc) return c.Fail(f);
    return PrintUser(c, *doc);
  });
}

int UsersDelete(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  bool yes = false;
  Flags flags("users delete", "NAME",
              "Deletes a user and its tokens (409 while it owns queued or running jobs). Asks\n"
              "first on a terminal; elsewhere needs --yes.\n");
  flags.Positionals("user name", 1, &names).Switch("--yes", "do not ask", &yes);
  AddClientFlags(flags, &o);
  return WithClient("users delete", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedArg("users delete", "user name", flags);
    return DeleteResource(c, "/api/v1/users/" + Encode(names[0]), names[0], "user " + names[0],
                          yes);
  });
}

int TokensCreate(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  std::string expires_in;
  Flags flags("tokens create", "USER [--expires-in DUR]",
              "Makes a token for USER and prints its secret on stdout: the only time it is\n"
              "shown (the daemon keeps its SHA-256). Give it to the user as TRAININGD_TOKEN or\n"
              "a --token-file.\n");
  flags.Positionals("user name", 1, &names)
      .String("--expires-in", "DUR", "lifetime: 90s, 10m, 12h, or seconds (never)", &expires_in);
  AddClientFlags(flags, &o);
  return WithClient("tokens create", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedArg("tokens create", "user name", flags);
    json body = json::object();
    if (!expires_in.empty()) {
      auto d = ParseDuration(expires_in);
      if (!d || d->count() < 1000) {
        return c.Fail({kExitUsage, "--expires-in: must be a duration of at least 1s, got '" +
                                       expires_in + "'"});
      }
      body["expires_in_secs"] = d->count() / 1000;
    }
    Failure f;
    auto doc = c.Call("POST", "/api/v1/users/" + Encode(names[0]) + "/tokens", &f, body.dump(),
                      /*invalid_is_usage=*/true);
    if (!doc) return c.Fail(f);
    if (!Shaped(*doc, {"id", "token"}) || !(*doc)["token"].is_string()) {
      return c.Fail({kExitFailed, "the daemon's answer has no token"});
    }
    if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
      std::printf("%s\n", doc->dump().c_str());
      return 0;
    }
    std::printf("%s\n", (*doc)["token"].get<std::string>().c_str());
    if (c.stderr_tty()) {
      std::fprintf(stderr,
                   "token %s for %s: shown this once; revoke with `trainingd tokens "
                   "revoke %s`\n",
                   Text(*doc, "id").c_str(), names[0].c_str(), Text(*doc, "id").c_str());
    }
    return 0;
  });
}

int TokensList(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  Flags flags("tokens list", "USER", "USER's tokens, revoked ones too; never their secrets.\n");
  flags.Positionals("user name", 1, &names);
  AddClientFlags(flags, &o);
  return WithClient("tokens list", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedArg("tokens list", "user name", flags);
    Failure f;
    auto doc = c.Call("GET", "/api/v1/users/" + Encode(names[0]) + "/tokens", &f);
    if (!doc) return c.Fail(f);
    return PrintList(c, *doc, "tokens", "id", TokenHeader(), TokenRow);
  });
}

int TokensRevoke(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  Flags flags("tokens revoke", "ID", "Revokes a token: the daemon refuses it from now on.\n");
  flags.Positionals("token id", 1, &ids);
  AddClientFlags(flags, &o);
  return WithClient("tokens revoke", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedArg("tokens revoke", "token id", flags);
    Failure f;
    auto doc = c.Call("DELETE", "/api/v1/tokens/" + Encode(ids[0]), &f, {},
                      /*invalid_is_usage=*/true);
    if (!doc) return c.Fail(f);
    if (c.mode() == OutputMode::kQuiet) std::printf("%s\n", ids[0].c_str());
    if (c.stderr_tty()) std::fprintf(stderr, "revoked token %s\n", ids[0].c_str());
    return 0;
  });
}

}  // namespace user_verbs

int UsersCommand(const std::vector<std::string>& args) {
  static const std::map<std::string, client::Verb> kVerbs = {{"create", user_verbs::UsersCreate},
                                                             {"list", user_verbs::UsersList},
                                                             {"get", user_verbs::UsersGet},
                                                             {"update", user_verbs::UsersUpdate},
                                                             {"delete", user_verbs::UsersDelete}};
  return client::RunVerb("users", kVerbs, user_verbs::kUsersUsage, args);
}

int TokensCommand(const std::vector<std::string>& args) {
  static const std::map<std::string, client::Verb> kVerbs = {{"create", user_verbs::TokensCreate},
                                                             {"list", user_verbs::TokensList},
                                                             {"revoke", user_verbs::TokensRevoke}};
  return client::RunVerb("tokens", kVerbs, user_verbs::kTokensUsage, args);
}

int WhoamiCommand(const std::vector<std::string>& args) {
  using namespace client;  // NOLINT
  ClientOptions o;
  Flags flags("whoami", "", "The user and role of the token this client sends.\n");
  AddClientFlags(flags, &o);
  return WithClient("whoami", flags, o, args, [&](Client& c) -> int {
    Failure f;
    auto doc = c.Call("GET", "/api/v1/whoami", &f);
    if (!doc) return c.Fail(f);
    if (!user_verbs::Shaped(*doc, {"name", "role"})) {
      return c.Fail({kExitFailed, "the daemon's answer is not a principal"});
    }
    return PrintObject(c, *doc, (*doc)["name"].get<std::string>(),
                       {{"NAME", "ROLE", "TOKEN"},
                        {{user_verbs::Text(*doc, "name"), user_verbs::Text(*doc, "role"),
                          user_verbs::Text(*doc, "token_id")}},
                        -1});
  });
}

int AuditCommand(const std::vector<std::string>& args) {
  using namespace client;  // NOLINT
  ClientOptions o;
  int64_t limit = 50;
  std::optional<int64_t> before;
  Flags flags("audit", "[--limit N] [--before SEQ]",
              "The audit of changes and refusals, newest first (an admin's token). The last line\n"
              "on a terminal says how to see older rows.\n");
  flags.Int("--limit", "rows (50; at most 1000)", 1, 1000, &limit)
      .Int("--before", "rows older than SEQ (the next page)", 1, INT64_MAX, &before);
  AddClientFlags(flags, &o);
  return WithClient("audit", flags, o, args, [&](Client& c) -> int {
    std::string target = "/api/v1/audit?limit=" + std::to_string(limit);
    if (before) target += "&before=" + std::to_string(*before);
    Failure f;
    auto doc = c.Call("GET", target, &f);
    if (!doc) return c.Fail(f);
    const int code = user_verbs::PrintList(
        c, *doc, "entries", "seq",
        {"SEQ", "AT", "USER", "TOKEN", "REMOTE", "METHOD", "ROUTE", "RESOURCE", "STATUS"},
        [](const nlohmann::json& e) -> std::vector<std::string> {
          return {user_verbs::Text(e, "seq"),    user_verbs::Text(e, "at"),
                  user_verbs::Text(e, "user"),   user_verbs::Text(e, "token_id"),
                  user_verbs::Text(e, "remote"), user_verbs::Text(e, "method"),
                  user_verbs::Text(e, "route"),  user_verbs::Text(e, "resource"),
                  user_verbs::Text(e, "status")};
        });
    if (code == 0 && c.stderr_tty() && c.mode() == OutputMode::kTable &&
        doc->contains("next_before") && (*doc)["next_before"].is_number_integer()) {
      std::fprintf(stderr, "older: trainingd audit --before %" PRId64 "\n",
                   (*doc)["next_before"].get<int64_t>());
    }
    return code;
  });
}

}  // namespace trainingd::daemon
