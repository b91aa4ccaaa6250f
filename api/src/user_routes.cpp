#include "user_routes.h"

#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "route_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api::user_routes {
namespace {

using nlohmann::json;
using route_util::IntParam;
using route_util::IsBlank;
using route_util::JsonResponse;

json TimeOrNull(double t) { return t > 0 ? json(t) : json(nullptr); }

json UserToJson(const UserInfo& u) {
  return {{"name", u.name},
          {"role", RoleName(u.role)},
          {"disabled", u.disabled},
          {"created_at", TimeOrNull(u.created_at)}};
}

json TokenToJson(const TokenInfo& t) {
  return {{"id", t.id},
          {"user", t.user},
          {"created_at", TimeOrNull(t.created_at)},
          {"expires_at", TimeOrNull(t.expires_at)},
          {"revoked", t.revoked}};
}

json AuditToJson(const AuditEntry& e) {
  return {{"seq", e.seq},
          {"at", e.at},
          {"user", e.user.empty() ? json(nullptr) : json(e.user)},
          {"token_id", e.token_id},
          {"remote", e.remote},
          {"method", e.method},
          {"route", e.route},
          {"resource", e.resource.empty() ? json(nullptr) : json(e.resource)},
          {"status", e.status}};
}

HttpResponse NoUsers() { return ErrorResponse(404, "not_found", "this server keeps no users"); }

// The body as a JSON object whose keys are all in `allowed`; the refusal otherwise. An empty
// body is the empty object.
std::optional<HttpResponse> ReadObject(const HttpRequest& request, size_t max_body_bytes,
                                       std::initializer_list<std::string_view> allowed, json* out) {
  if (request.body.size() > max_body_bytes) {
    return ErrorResponse(413, "payload_too_large",
                         "request body is over " + std::to_string(max_body_bytes) + " bytes");
  }
  if (IsBlank(request.body)) {
    *out = json::object();
    return std::nullopt;
  }
  json doc = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return ErrorResponse(400, "invalid_argument", "request body must be a JSON object");
  }
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) {
      return ErrorResponse(400, "invalid_argument", key.substr(0, 64) + ": unknown field",
                           key.substr(0, 64));
    }
  }
  *out = std::move(doc);
  return std::nullopt;
}

// doc[key] as a role; the refusal naming `key` when it is not one.
std::optional<HttpResponse> ReadRole(const json& doc, const char* key, std::optional<Role>* out) {
  auto it = doc.find(key);
  if (it == doc.end()) return std::nullopt;
  std::optional<Role> role;
  if (it->is_string()) role = ParseRole(it->get<std::string>());
  if (!role) {
    return ErrorResponse(400, "invalid_argument",
                         std::string(key) + ": must be \"admin\", \"user\" or \"viewer\"", key);
  }
  *out = role;
  return std::nullopt;
}

HttpResponse CreateUser(UserService& users, const HttpRequest& request, size_t max_body_bytes) {
  json doc;
  if (auto refused = ReadObject(request, max_body_bytes, {"name", "role"}, &doc)) {
    return std::move(*refused);
  }
  auto name = doc.find("name");
  if (name == doc.end() || !name->is_string() || !IsValidUserName(name->get<std::string>())) {
    return ErrorResponse(400, "invalid_argument",
                         "name: must be 1 to 64 of the characters a-z 0-9 _ . -, starting with a "
                         "letter or digit",
                         "name");
  }
  std::optional<Role> role;
  if (doc.find("role") == doc.end()) {
    return ErrorResponse(400, "invalid_argument",
                         "role: must be given: \"admin\", \"user\" or \"viewer\"", "role");
  }
  if (auto refused = ReadRole(doc, "role", &role)) return std::move(*refused);
  auto user = users.CreateUser(name->get<std::string>(), *role);
  if (!user.ok()) return StatusResponse(user.status());
  HttpResponse r = JsonResponse(201, UserToJson(*user));
  r.SetHeader("Location", "/api/v1/users/" + user->name);
  return r;
}

HttpResponse UpdateUser(UserService& users, const HttpRequest& request, const std::string& name,
                        size_t max_body_bytes) {
  json doc;
  if (auto refused = ReadObject(request, max_body_bytes, {"role", "disabled"}, &doc)) {
    return std::move(*refused);
  }
  std::optional<Role> role;
  if (auto refused = ReadRole(doc, "role", &role)) return std::move(*refused);
  std::optional<bool> disabled;
  if (auto it = doc.find("disabled"); it != doc.end()) {
    if (!it->is_boolean()) {
      return ErrorResponse(400, "invalid_argument", "disabled: must be true or false", "disabled");
    }
    disabled = it->get<bool>();
  }
  if (!role && !disabled) {
    return ErrorResponse(400, "invalid_argument",
                         "role: the body must set \"role\" or \"disabled\" (or both)", "role");
  }
  auto user = users.UpdateUser(name, role, disabled);
  if (!user.ok()) return StatusResponse(user.status());
  return JsonResponse(200, UserToJson(*user));
}

HttpResponse CreateToken(UserService& users, const HttpRequest& request, const std::string& name,
                         size_t max_body_bytes) {
  json doc;
  if (auto refused = ReadObject(request, max_body_bytes, {"expires_in_secs"}, &doc)) {
    return std::move(*refused);
  }
  std::optional<int64_t> lifetime;
  if (auto it = doc.find("expires_in_secs"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 ||
        it->get<int64_t>() > kMaxTokenLifetimeSecs) {
      return ErrorResponse(400, "invalid_argument",
                           "expires_in_secs: must be an integer from 1 to " +
                               std::to_string(kMaxTokenLifetimeSecs) + ", or null for never",
                           "expires_in_secs");
    }
    lifetime = it->get<int64_t>();
  }
  auto token = users.CreateToken(name, lifetime);
  if (!token.ok()) return StatusResponse(token.status());
  json body = TokenToJson(token->info);
  body["token"] = token->secret;
  return JsonResponse(201, body);
}

HttpResponse Audit(AuditService& audit, const QueryParams& query) {
  auto before = IntParam(query, "before", 1, std::numeric_limits<int64_t>::max());
  if (!before.ok()) return StatusResponse(before.status());
  auto limit = IntParam(query, "limit", 1, kMaxAuditPage);
  if (!limit.ok()) return StatusResponse(limit.status());
  auto page = audit.List(before->value_or(0), limit->value_or(100));
  if (!page.ok()) return StatusResponse(page.status());
  json entries = json::array();
  for (const AuditEntry& e : page->entries) entries.push_back(AuditToJson(e));
  return JsonResponse(
      200, {{"entries", std::move(entries)},
            {"next_before", page->next_before > 0 ? json(page->next_before) : json(nullptr)}});
}

HttpResponse NoContent() {
  HttpResponse r;
  r.status = 204;
  return r;
}

}  // namespace

HttpResponse Answer(UserService* users, AuditService* audit, std::string_view route_path,
                    std::string_view method, const HttpRequest& request, const QueryParams& query,
                    const std::string& name, const Principal& principal, size_t max_body_bytes) {
  if (route_path == "/api/v1/whoami") {
    return JsonResponse(200, {{"name", principal.name},
                              {"role", RoleName(principal.role)},
                              {"token_id", principal.token_id}});
  }
  if (route_path == "/api/v1/audit") {
    if (audit == nullptr) return ErrorResponse(404, "not_found", "this server keeps no audit");
    return Audit(*audit, query);
  }
  if (users == nullptr) return NoUsers();
  if (route_path == "/api/v1/tokens/{id}") {
    int64_t id = 0;
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
    if (ec != std::errc() || ptr != name.data() + name.size() || id < 1) {
      return ErrorResponse(400, "invalid_argument", "id: a token id is a positive integer", "id");
    }
    auto revoked = users->RevokeToken(id);
    if (!revoked.ok()) return StatusResponse(revoked.status());
    return NoContent();
  }
  if (route_path == "/api/v1/users") {
    if (method == "POST") return CreateUser(*users, request, max_body_bytes);
    json list = json::array();
    for (const UserInfo& u : users->ListUsers()) list.push_back(UserToJson(u));
    return JsonResponse(200, {{"users", std::move(list)}});
  }
  if (route_path == "/api/v1/users/{name}/tokens") {
    if (method == "POST") return CreateToken(*users, request, name, max_body_bytes);
    auto tokens = users->ListTokens(name);
    if (!tokens.ok()) return StatusResponse(tokens.status());
    json list = json::array();
    for (const TokenInfo& t : *tokens) list.push_back(TokenToJson(t));
    return JsonResponse(200, {{"tokens", std::move(list)}});
  }
  // /api/v1/users/{name}
  if (method == "PATCH") return UpdateUser(*users, request, name, max_body_bytes);
  if (method == "DELETE") {
    engine::Status st = users->DeleteUser(name);
    if (!st.ok()) return StatusResponse(st);
    return NoContent();
  }
  auto user = users->GetUser(name);
  if (!user.ok()) return StatusResponse(user.status());
  return JsonResponse(200, UserToJson(*user));
}

}  // namespace trainingd::api::user_routes
