// The answers of the experiment routes (/api/v1/experiments..., docs/http-api.md#experiments),
// for Router::Dispatch, which has already checked the browser headers, the token, the method,
// the Content-Type of POSTs and the id's characters. Errors are the REST API's
// {"error":{"code","message"[,"field"]}} as StatusResponse maps them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trainingd/api/experiment_service.h"
#include "trainingd/api/http_message.h"
#include "trainingd/api/url.h"

namespace trainingd::api::experiment_routes {

// POST /api/v1/experiments: 201 with the experiment (detail) and its Location; `owner` submits.
HttpResponse Submit(ExperimentService& service, const HttpRequest& request, size_t max_body_bytes,
                    const std::string& owner);
// POST /api/v1/experiments/preview: 200 with the plan.
HttpResponse Preview(ExperimentService& service, const HttpRequest& request, size_t max_body_bytes);
// GET /api/v1/experiments?state=&limit=&cursor=.
HttpResponse List(ExperimentService& service, const QueryParams& query, int64_t default_limit);
// GET /api/v1/experiments/{id}: the experiment with its spec.
HttpResponse Get(ExperimentService& service, const std::string& id);
// GET /api/v1/experiments/{id}/trials?sort=&order=&state=&offset=&limit=.
HttpResponse Trials(ExperimentService& service, const std::string& id, const QueryParams& query);
// POST /api/v1/experiments/{id}/stop and .../resume (body empty or {}): 202.
HttpResponse Stop(ExperimentService& service, const HttpRequest& request, const std::string& id,
                  size_t max_body_bytes);
HttpResponse Resume(ExperimentService& service, const HttpRequest& request, const std::string& id,
                    size_t max_body_bytes);
// DELETE /api/v1/experiments/{id}: 204.
HttpResponse Delete(ExperimentService& service, const std::string& id);

}  // namespace trainingd::api::experiment_routes
