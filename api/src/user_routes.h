// The answers of the team routes (docs/http-api.md#users-and-tokens): /api/v1/users...,
// /api/v1/tokens/{id}, /api/v1/whoami and /api/v1/audit, for Router::Dispatch, which has
// already authenticated the request, checked the route's Access, the Content-Type and the
// name's characters. Errors are the REST API's {"error":{"code","message"[,"field"]}}.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "trainingd/api/audit_service.h"
#include "trainingd/api/http_message.h"
#include "trainingd/api/url.h"
#include "trainingd/api/user_service.h"

namespace trainingd::api::user_routes {

// `route_path` and `method` name the route (its template in the route table); `name` is the
// path's {name} or {id}. Without `users` (or `audit` for the audit) the routes answer 404,
// except whoami, which answers from the principal alone.
HttpResponse Answer(UserService* users, AuditService* audit, std::string_view route_path,
                    std::string_view method, const HttpRequest& request, const QueryParams& query,
                    const std::string& name, const Principal& principal, size_t max_body_bytes);

}  // namespace trainingd::api::user_routes
