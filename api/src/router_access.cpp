// Who sent a request and whether it may use its route (docs/operations.md#team-use): Router's
// Authenticate, Authorize and AuditAnswer. Dispatch calls them in this order, before any route
// runs; the rule of each route is its Access in router.cpp's route table.
#include <chrono>
#include <string>
#include <utility>

#include "trainingd/api/router.h"
#include "trainingd/api/url.h"

namespace trainingd::api {
namespace {

using engine::StatusCode;

HttpResponse Unauthenticated(std::string message) {
  HttpResponse r = ErrorResponse(401, "unauthenticated", message);
  r.SetHeader("WWW-Authenticate", "Bearer realm=\"trainingd\"");
  return r;
}

HttpResponse Forbidden(const Principal& principal, std::string_view what) {
  return ErrorResponse(403, "forbidden",
                       "user \"" + principal.name + "\" (role " + RoleName(principal.role) +
                           ") may not " + std::string(what));
}

// The answer for a resource that is not there (its service's NotFound), or a failure reading it.
HttpResponse LookupFailed(const engine::Status& status) { return StatusResponse(status); }

}  // namespace

const char* AccessName(Access access) {
  switch (access) {
    case Access::kPublic:
      return "public";
    case Access::kRead:
      return "read";
    case Access::kCreate:
      return "create";
    case Access::kOwnJob:
      return "own_job";
    case Access::kOwnExperiment:
      return "own_experiment";
    case Access::kOwnDataset:
      return "own_dataset";
    case Access::kAdmin:
      return "admin";
  }
  return "admin";
}

void Router::SetUsers(UserService* users, AuditService* audit) {
  users_ = users;
  audit_ = audit;
}

std::optional<HttpResponse> Router::Authenticate(const HttpRequest& request, bool stream,
                                                 const std::optional<QueryParams>& query,
                                                 Principal* principal) const {
  *principal = Principal{};  // the admin, as on a daemon without a token
  const bool required = !options_.api_token.empty();
  std::optional<std::string> query_token;
  if (query) query_token = QueryValue(*query, "access_token");
  std::string_view auth = request.Header("Authorization");
  std::string_view presented;
  if (query_token && !stream) {
    // A token in a URL ends up in logs and histories: only EventSource, which cannot send
    // headers, may put it there.
    if (!required) return std::nullopt;
    return Unauthenticated(
        "access_token in the query string is accepted on event streams only; send the token in "
        "an \"Authorization: Bearer <token>\" header");
  }
  if (auth.size() > 7 && EqualsIgnoreCase(auth.substr(0, 7), "Bearer ")) {
    presented = auth.substr(7);
  } else if (auth.empty() && query_token) {
    presented = *query_token;
  }
  if (presented.empty()) {
    if (!required) return std::nullopt;
    return Unauthenticated("missing or wrong \"Authorization: Bearer <token>\" header");
  }
  // The configured token is the admin's (token id 0); compared in constant time.
  if (required && ConstantTimeEquals(presented, options_.api_token)) return std::nullopt;
  if (users_ != nullptr) {
    auto who = users_->Authenticate(presented);
    if (who.ok()) {
      *principal = std::move(who).value();
      return std::nullopt;
    }
    // Without a configured token the daemon authenticates nobody (loopback only): a token that
    // is no user's changes nothing, as before there were users.
    if (!required) return std::nullopt;
    return Unauthenticated(who.status().code() == StatusCode::kNotFound
                               ? "missing or wrong \"Authorization: Bearer <token>\" header"
                               : who.status().message());
  }
  if (!required) return std::nullopt;
  return Unauthenticated("missing or wrong \"Authorization: Bearer <token>\" header");
}

std::optional<HttpResponse> Router::Authorize(Access access, const Principal& principal,
                                              const std::string& id) {
  const bool admin = principal.role == Role::kAdmin;
  switch (access) {
    case Access::kPublic:
    case Access::kRead:
      return std::nullopt;
    case Access::kAdmin:
      if (admin) return std::nullopt;
      return Forbidden(principal, "manage users, tokens or the audit; that takes an admin");
    case Access::kCreate:
      if (principal.role == Role::kViewer) return Forbidden(principal, "create anything");
      return std::nullopt;
    case Access::kOwnJob:
    case Access::kOwnExperiment:
    case Access::kOwnDataset:
      break;
  }
  if (principal.role == Role::kViewer) return Forbidden(principal, "change anything");
  // Existence first (404), then ownership (403): readers may list everything anyway, so the
  // 404 tells nobody more than GET does.
  std::string owner;
  std::string what;
  if (access == Access::kOwnJob) {
    auto job = service_.Get(id);
    if (!job.ok()) return LookupFailed(job.status());
    owner = job->owner;
    what = "change job " + id + ", which is " + owner + "'s";
    if (!job->trial.experiment_id.empty()) {
      what += " (a trial of experiment " + job->trial.experiment_id + ")";
    }
  } else if (access == Access::kOwnExperiment) {
    auto experiment = experiments_->Get(id);
    if (!experiment.ok()) return LookupFailed(experiment.status());
    owner = experiment->owner;
    what = "change experiment " + id + ", which is " + owner + "'s";
  } else {
    auto dataset = datasets_->GetDataset(id);
    if (!dataset.ok()) return LookupFailed(dataset.status());
    owner = dataset->owner;
    what = "change dataset " + id +
           (owner.empty() ? ", which is the operator's (a data root "
                            "directory)"
                          : ", which is " + owner + "'s");
  }
  if (admin || (!owner.empty() && owner == principal.name)) return std::nullopt;
  return Forbidden(principal, what);
}

void Router::AuditAnswer(const HttpRequest& request, const std::string& route_label,
                         const RequestAccess& access, int status) {
  if (audit_ == nullptr) return;
  const bool refusal = status == 401 || status == 403;
  const bool change = access.access != Access::kPublic && access.access != Access::kRead;
  if (!refusal && !change) return;
  AuditEntry e;
  e.at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (access.authenticated) {
    e.user = access.principal.name;
    e.token_id = access.principal.token_id;
  }
  e.remote = request.remote;
  e.method = request.method.substr(0, 16);
  e.route = route_label;
  e.resource = access.resource.substr(0, 128);
  e.status = status;
  audit_->Record(std::move(e));
}

}  // namespace trainingd::api
