#include "experiment_routes.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

#include "route_util.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/router.h"

namespace trainingd::api::experiment_routes {
namespace {

using engine::Result;
using engine::Status;
using nlohmann::json;
using route_util::IntParam;
using route_util::IsBlank;
using route_util::IsEmptyJsonObject;
using route_util::JsonResponse;

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

HttpResponse TooLarge(size_t max_body_bytes) {
  return ErrorResponse(413, "payload_too_large",
                       "request body is over " + std::to_string(max_body_bytes) + " bytes");
}

// Reads the body's experiment spec into *out; the answer refusing it when it is not one.
std::optional<HttpResponse> ReadSpec(const HttpRequest& request, size_t max_body_bytes,
                                     ExperimentSpec* out) {
  if (request.body.size() > max_body_bytes) return TooLarge(max_body_bytes);
  if (IsBlank(request.body)) {
    return ErrorResponse(400, "invalid_argument", "request body must be a JSON experiment spec");
  }
  FieldError error;
  auto spec = ParseExperimentSpec(request.body, &error);
  if (!spec.ok()) {
    if (spec.status().code() != engine::StatusCode::kInvalidArgument) {
      return StatusResponse(spec.status());
    }
    return ErrorResponse(400, "invalid_argument", error.message, error.field);
  }
  *out = std::move(*spec);
  return std::nullopt;
}

// The refusal of a stop or resume body other than nothing or {}.
std::optional<HttpResponse> CheckEmptyBody(const HttpRequest& request, size_t max_body_bytes) {
  if (request.body.size() > max_body_bytes) return TooLarge(max_body_bytes);
  if (!IsEmptyJsonObject(request.body)) {
    return ErrorResponse(400, "invalid_argument",
                         "request body must be empty or the empty JSON object {}");
  }
  return std::nullopt;
}

}  // namespace

HttpResponse Submit(ExperimentService& service, const HttpRequest& request, size_t max_body_bytes,
                    const std::string& owner) {
  ExperimentSpec spec;
  if (auto refusal = ReadSpec(request, max_body_bytes, &spec)) return std::move(*refusal);
  std::string spec_json = DumpJson(ExperimentSpecToJson(spec));  // the canonical text
  auto experiment = service.Submit(std::move(spec), std::move(spec_json), owner);
  if (!experiment.ok()) return StatusResponse(experiment.status());
  HttpResponse r = JsonResponse(201, ExperimentToJson(*experiment, true));
  r.SetHeader("Location", "/api/v1/experiments/" + experiment->id);
  return r;
}

HttpResponse Preview(ExperimentService& service, const HttpRequest& request,
                     size_t max_body_bytes) {
  ExperimentSpec spec;
  if (auto refusal = ReadSpec(request, max_body_bytes, &spec)) return std::move(*refusal);
  auto plan = service.Preview(spec);
  if (!plan.ok()) return StatusResponse(plan.status());
  return JsonResponse(200, PlanToJson(*plan));
}

HttpResponse List(ExperimentService& service, const QueryParams& query, int64_t default_limit) {
  std::optional<ExperimentState> state;
  if (auto text = QueryValue(query, "state")) {
    state = ParseExperimentState(*text);
    if (!state) {
      return ErrorResponse(400, "invalid_argument",
                           "state: must be one of running, stopping, completed, failed, stopped",
                           "state");
    }
  }
  auto limit = IntParam(query, "limit", 1, kMaxListLimit);
  if (!limit.ok()) return StatusResponse(limit.status());
  std::string cursor = QueryValue(query, "cursor").value_or("");
  if (cursor.size() > 512) {
    return ErrorResponse(400, "invalid_argument", "cursor: longer than 512 bytes", "cursor");
  }
  auto page = service.List(state, limit->value_or(std::min(default_limit, kMaxListLimit)), cursor);
  if (!page.ok()) return StatusResponse(page.status());
  return JsonResponse(200, ExperimentPageToJson(*page));
}

HttpResponse Get(ExperimentService& service, const std::string& id) {
  auto experiment = service.Get(id);
  if (!experiment.ok()) return StatusResponse(experiment.status());
  return JsonResponse(200, ExperimentToJson(*experiment, true));
}

HttpResponse Trials(ExperimentService& service, const std::string& id, const QueryParams& query) {
  TrialQuery q;
  q.sort = QueryValue(query, "sort").value_or("index");
  if (q.sort.empty() || q.sort.size() > 256) {
    return ErrorResponse(400, "invalid_argument", "sort: must be 1 to 256 characters", "sort");
  }
  // Whether it names a column or a path of the space is the service's to say (it has the space).
  const std::string order = QueryValue(query, "order").value_or("asc");
  if (order != "asc" && order != "desc") {
    return ErrorResponse(400, "invalid_argument", "order: must be asc or desc", "order");
  }
  q.descending = order == "desc";
  if (auto text = QueryValue(query, "state")) {
    q.state = ParseTrialState(*text);
    if (!q.state) {
      return ErrorResponse(400, "invalid_argument",
                           "state: must be one of running, waiting, pruned, completed, failed, "
                           "stopped",
                           "state");
    }
  }
  auto offset = IntParam(query, "offset", 0, kMaxInt);
  if (!offset.ok()) return StatusResponse(offset.status());
  auto limit = IntParam(query, "limit", 1, kMaxTrialPage);
  if (!limit.ok()) return StatusResponse(limit.status());
  q.offset = offset->value_or(0);
  q.limit = limit->value_or(q.limit);
  auto page = service.Trials(id, q);
  if (!page.ok()) return StatusResponse(page.status());
  json body = TrialPageToJson(*page, q.offset, q.limit);
  body["experiment_id"] = id;
  return JsonResponse(200, body);
}

HttpResponse Stop(ExperimentService& service, const HttpRequest& request, const std::string& id,
                  size_t max_body_bytes) {
  if (auto refusal = CheckEmptyBody(request, max_body_bytes)) return std::move(*refusal);
  auto experiment = service.Stop(id);
  if (!experiment.ok()) return StatusResponse(experiment.status());
  return JsonResponse(202, ExperimentToJson(*experiment, true));
}

HttpResponse Resume(ExperimentService& service, const HttpRequest& request, const std::string& id,
                    size_t max_body_bytes) {
  if (auto refusal = CheckEmptyBody(request, max_body_bytes)) return std::move(*refusal);
  auto experiment = service.Resume(id);
  if (!experiment.ok()) return StatusResponse(experiment.status());
  return JsonResponse(202, ExperimentToJson(*experiment, true));
}

HttpResponse Delete(ExperimentService& service, const std::string& id) {
  Status status = service.Delete(id);
  if (!status.ok()) return StatusResponse(status);
  HttpResponse r;
  r.status = 204;
  return r;
}

}  // namespace trainingd::api::experiment_routes
