// The job routes' handlers (docs/http-api.md): submit, list, stop, resume, a job's scalars, its
// latest evaluation, its log and the event streams. Router::Dispatch (router.cpp) matches the route
// and checks its access before any of these runs.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "route_util.h"
#include "router_context.h"
#include "trainingd/api/evaluation_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/router.h"
#include "trainingd/api/strict_json.h"

namespace trainingd::api {

using engine::Status;
using nlohmann::json;
using route_util::IntParam;
using route_util::IsBlank;
using route_util::IsEmptyJsonObject;
using route_util::JsonResponse;
using route_util::kMaxInt;

HttpResponse Router::SubmitJob(const Context& c) {
  if (c.request.body.size() > options_.max_body_bytes) {
    return ErrorResponse(
        413, "payload_too_large",
        "request body is over " + std::to_string(options_.max_body_bytes) + " bytes");
  }
  if (IsBlank(c.request.body)) {
    return ErrorResponse(400, "invalid_argument", "request body must be a JSON job spec");
  }
  FieldError field_error;
  auto spec = ParseJobSpec(c.request.body, &field_error);
  if (!spec.ok()) {
    return ErrorResponse(400, "invalid_argument", field_error.message, field_error.field);
  }
  std::string spec_json = JobSpecToJson(*spec);  // the canonical text the service keeps
  auto job = service_.Submit(std::move(*spec), std::move(spec_json), c.principal.name);
  if (!job.ok()) return StatusResponse(job.status());
  HttpResponse r = JsonResponse(201, JobToJson(*job, true));
  r.SetHeader("Location", "/api/v1/jobs/" + job->id);
  return r;
}

HttpResponse Router::ListJobs(const Context& c) {
  std::optional<JobState> state;
  if (auto text = QueryValue(c.query, "state")) {
    state = ParseJobState(*text);
    if (!state) {
      return ErrorResponse(400, "invalid_argument",
                           "state: must be one of queued, running, stopping, completed, failed, "
                           "stopped, preempted",
                           "state");
    }
  }
  auto limit = IntParam(c.query, "limit", 1, kMaxListLimit);
  if (!limit.ok()) return StatusResponse(limit.status());
  std::string cursor = QueryValue(c.query, "cursor").value_or("");
  if (cursor.size() > 512) {
    return ErrorResponse(400, "invalid_argument", "cursor: longer than 512 bytes", "cursor");
  }
  auto page = service_.List(state, limit->value_or(options_.default_list_limit), cursor);
  if (!page.ok()) return StatusResponse(page.status());
  return JsonResponse(200, JobPageToJson(*page));
}

HttpResponse Router::StopJob(const Context& c) {
  if (c.request.body.size() > options_.max_body_bytes) {
    return ErrorResponse(413, "payload_too_large", "request body is too large");
  }
  if (!IsEmptyJsonObject(c.request.body)) {
    return ErrorResponse(400, "invalid_argument",
                         "request body must be empty or the empty JSON object {}");
  }
  auto job = service_.Stop(c.job_id);
  if (!job.ok()) return StatusResponse(job.status());
  return JsonResponse(202, JobToJson(*job, true));
}

HttpResponse Router::ResumeJob(const Context& c) {
  std::optional<int64_t> max_steps;
  const std::string& body = c.request.body;
  if (body.size() > options_.max_body_bytes) {
    return ErrorResponse(413, "payload_too_large", "request body is too large");
  }
  if (!IsBlank(body)) {
    // {} or {"max_steps": N}; a null max_steps is the same as none.
    auto doc = strict_json::Parse(body);
    Status st = doc.ok() ? Status::Ok() : doc.status();
    if (st.ok() && !doc->is_object()) {
      st = Status::InvalidArgument("request body must be a JSON object like {\"max_steps\": 1000}");
    }
    if (st.ok()) st = strict_json::CheckObject(*doc, "", {"max_steps"});
    if (st.ok()) {
      const auto it = doc->find("max_steps");
      if (it != doc->end() && !it->is_null()) {
        int64_t steps = 0;
        st = strict_json::ReadInt(*it, "max_steps", 1, kMaxInt, &steps);
        max_steps = steps;
      }
    }
    if (!st.ok()) return StatusResponse(st);
  }
  auto job = service_.Resume(c.job_id, max_steps);
  if (!job.ok()) return StatusResponse(job.status());
  return JsonResponse(202, JobToJson(*job, true));
}

HttpResponse Router::Scalars(const Context& c) {
  std::optional<std::string> tag = QueryValue(c.query, "tag");
  if (!tag || tag->empty()) {
    return ErrorResponse(400, "invalid_argument", "tag: required (GET .../scalars/tags lists them)",
                         "tag");
  }
  if (tag->size() > 256) {
    return ErrorResponse(400, "invalid_argument", "tag: longer than 256 bytes", "tag");
  }
  auto from = IntParam(c.query, "from_step", 0, kMaxInt);
  if (!from.ok()) return StatusResponse(from.status());
  auto to = IntParam(c.query, "to_step", 0, kMaxInt);
  if (!to.ok()) return StatusResponse(to.status());
  if (*from && *to && **from > **to) {
    return ErrorResponse(400, "invalid_argument", "to_step: must be >= from_step", "to_step");
  }
  auto max_points = IntParam(c.query, "max_points", 1, kMaxScalarPoints);
  if (!max_points.ok()) return StatusResponse(max_points.status());
  ScalarQuery query;
  query.tag = *tag;
  query.from_step = *from;
  query.to_step = *to;
  query.max_points = max_points->value_or(options_.default_max_points);
  auto points = service_.Scalars(c.job_id, query);
  if (!points.ok()) return StatusResponse(points.status());
  return JsonResponse(200, ScalarsToJson(c.job_id, *tag, *points));
}

HttpResponse Router::Evaluation(const Context& c) {
  const std::string split = QueryValue(c.query, "split").value_or("");
  if (!split.empty() && split != "train" && split != "validation" && split != "test") {
    return ErrorResponse(400, "invalid_argument",
                         "split: must be train, validation or test, got '" + split + "'", "split");
  }
  auto info = service_.Evaluation(c.job_id, split);
  if (!info.ok()) return StatusResponse(info.status());
  json body = EvaluationToJson(info->evaluation, info->wall_time);
  body["job_id"] = c.job_id;
  return JsonResponse(200, body);
}

HttpResponse Router::Logs(const Context& c) {
  std::string follow = QueryValue(c.query, "follow").value_or("false");
  if (follow != "true" && follow != "false" && follow != "1" && follow != "0") {
    return ErrorResponse(400, "invalid_argument", "follow: must be true or false", "follow");
  }
  if (follow == "true" || follow == "1") return Events(c, c.job_id, EventKind::kLog);
  auto from = IntParam(c.query, "from", 1, kMaxInt);
  if (!from.ok()) return StatusResponse(from.status());
  auto limit = IntParam(c.query, "limit", 1, kMaxLogLines);
  if (!limit.ok()) return StatusResponse(limit.status());
  int64_t from_line = from->value_or(1);
  auto lines = service_.Logs(c.job_id, from_line, limit->value_or(options_.default_log_limit));
  if (!lines.ok()) return StatusResponse(lines.status());
  json body = LogLinesToJson(*lines, from_line);
  body["job_id"] = c.job_id;
  return JsonResponse(200, body);
}

HttpResponse Router::Events(const Context& c, const std::string& job_id,
                            std::optional<EventKind> only_kind) {
  // A reconnecting EventSource sends Last-Event-ID; the query parameter is for first connects.
  int64_t after_id = 0;
  std::string_view header = c.request.Header("Last-Event-ID");
  if (!header.empty()) {
    QueryParams as_param = {{"Last-Event-ID", std::string(header)}};
    auto id = IntParam(as_param, "Last-Event-ID", 0, kMaxInt);
    if (!id.ok()) return StatusResponse(id.status());
    after_id = **id;
  } else {
    auto id = IntParam(c.query, "last_event_id", 0, kMaxInt);
    if (!id.ok()) return StatusResponse(id.status());
    after_id = id->value_or(0);
  }
  EventDeliver deliver = c.deliver ? c.deliver : [](const ServiceEvent&) {};
  if (only_kind) {
    deliver = [inner = std::move(deliver), kind = *only_kind](const ServiceEvent& event) {
      if (event.kind == kind) inner(event);
    };
  }
  auto subscription = service_.Subscribe(job_id, after_id, std::move(deliver));
  if (!subscription.ok()) return StatusResponse(subscription.status());
  HttpResponse r;
  r.status = 200;
  r.headers = {{"Content-Type", "text/event-stream"},
               {"Cache-Control", "no-cache"},
               {"X-Accel-Buffering", "no"}};
  r.event_stream = true;
  r.subscription = std::move(*subscription);
  return r;
}

}  // namespace trainingd::api
