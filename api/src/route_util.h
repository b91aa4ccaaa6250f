// What the REST routes' handlers share (router.cpp, job_routes.cpp, dataset_routes.cpp,
// experiment_routes.cpp): JSON answers, query
// parameters and request bodies.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

#include "trainingd/api/http_message.h"
#include "trainingd/api/url.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api::route_util {

// The largest integer a query parameter may hold.
inline constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// A JSON answer with Cache-Control: no-store.
HttpResponse JsonResponse(int status, const nlohmann::json& body);
// An optional integer query parameter in [lo, hi]; InvalidArgument "<name>: ..." otherwise.
engine::Result<std::optional<int64_t>> IntParam(const QueryParams& query, std::string_view name,
                                                int64_t lo, int64_t hi);
// Whether `text` is empty or only whitespace.
bool IsBlank(std::string_view text);
// A request body that must be an empty JSON object: nothing, whitespace, or {}.
bool IsEmptyJsonObject(std::string_view body);

}  // namespace trainingd::api::route_util
