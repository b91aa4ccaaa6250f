#include "trainingd/api/router.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "experiment_routes.h"
#include "job_priority_route.h"
#include "model_routes.h"
#include "route_util.h"
#include "router_context.h"
#include "trainingd/api/dataset_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/strict_json.h"
#include "trainingd/api/url.h"
#include "user_routes.h"

namespace trainingd::api {
using engine::Result;
using engine::Status;
using engine::StatusCode;
using nlohmann::json;

namespace route_util {

bool IsBlank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

HttpResponse JsonResponse(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}};
  r.body = DumpJson(body);
  return r;
}

// An optional integer query parameter in [lo, hi]; InvalidArgument "<name>: ..." otherwise.
Result<std::optional<int64_t>> IntParam(const QueryParams& query, std::string_view name, int64_t lo,
                                        int64_t hi) {
  std::optional<std::string> text = QueryValue(query, name);
  if (!text) return std::optional<int64_t>();
  int64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  std::string range =
      "an integer from " + std::to_string(lo) +
      (hi == std::numeric_limits<int64_t>::max() ? " up" : " to " + std::to_string(hi));
  if (text->empty() || ec != std::errc() || ptr != end || value < lo || value > hi) {
    return Status::InvalidArgument(std::string(name) + ": must be " + range + ", got \"" +
                                   text->substr(0, 64) + "\"");
  }
  return std::optional<int64_t>(value);
}

// A request body that must be an empty JSON object: nothing, whitespace, or {}.
bool IsEmptyJsonObject(std::string_view body) {
  if (IsBlank(body)) return true;
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  return !doc.is_discarded() && doc.is_object() && doc.empty();
}

}  // namespace route_util

namespace {

using route_util::IntParam;
using route_util::IsBlank;
using route_util::IsEmptyJsonObject;
using route_util::JsonResponse;

enum class RouteId {
  kSubmitJob,
  kListJobs,
  kGetJob,
  kDeleteJob,
  kPatchJob,
  kStopJob,
  kResumeJob,
  kScalars,
  kScalarTags,
  kCheckpoints,
  kEvaluation,
  kLogs,
  kJobEvents,
  kEvents,
  kUploadDataset,
  kListDatasets,
  kGetDataset,
  kDeleteDataset,
  kDatasetExamples,
  kExportModel,
  kSubmitExperiment,
  kPreviewExperiment,
  kListExperiments,
  kGetExperiment,
  kDeleteExperiment,
  kExperimentTrials,
  kStopExperiment,
  kResumeExperiment,
  kServerMetadata,
  kServerLive,
  kServerReady,
  kModelMetadata,
  kModelVersionMetadata,
  kModelReady,
  kModelVersionReady,
  kInfer,
  kVersionInfer,
  kPredict,
  kCreateUser,
  kListUsers,
  kGetUser,
  kUpdateUser,
  kDeleteUser,
  kCreateToken,
  kListTokens,
  kRevokeToken,
  kWhoami,
  kAudit,
  kHealthz,
  kMetrics,
  kIndex,
  kStaticFile,
};

struct RouteDef {
  RouteId id;
  std::string_view method;
  std::string_view path;
  Access access;
};

using enum Access;

// The one route table: matching, 405 Allow headers, who may use each route (router.h's Access,
// checked before any route runs) and Router::Routes() all come from it.
constexpr RouteDef kRoutes[] = {
    {RouteId::kSubmitJob, "POST", "/api/v1/jobs", kCreate},
    {RouteId::kListJobs, "GET", "/api/v1/jobs", kRead},
    {RouteId::kGetJob, "GET", "/api/v1/jobs/{id}", kRead},
    {RouteId::kDeleteJob, "DELETE", "/api/v1/jobs/{id}", kOwnJob},
    {RouteId::kPatchJob, "PATCH", "/api/v1/jobs/{id}", kOwnJob},
    {RouteId::kStopJob, "POST", "/api/v1/jobs/{id}/stop", kOwnJob},
    {RouteId::kResumeJob, "POST", "/api/v1/jobs/{id}/resume", kOwnJob},
    {RouteId::kScalars, "GET", "/api/v1/jobs/{id}/scalars", kRead},
    {RouteId::kScalarTags, "GET", "/api/v1/jobs/{id}/scalars/tags", kRead},
    {RouteId::kCheckpoints, "GET", "/api/v1/jobs/{id}/checkpoints", kRead},
    {RouteId::kEvaluation, "GET", "/api/v1/jobs/{id}/evaluation", kRead},
    {RouteId::kLogs, "GET", "/api/v1/jobs/{id}/logs", kRead},
    {RouteId::kJobEvents, "GET", "/api/v1/jobs/{id}/events", kRead},
    {RouteId::kEvents, "GET", "/api/v1/events", kRead},
    {RouteId::kUploadDataset, "POST", "/api/v1/datasets", kCreate},
    {RouteId::kListDatasets, "GET", "/api/v1/datasets", kRead},
    {RouteId::kGetDataset, "GET", "/api/v1/datasets/{name}", kRead},
    {RouteId::kDeleteDataset, "DELETE", "/api/v1/datasets/{name}", kOwnDataset},
    {RouteId::kDatasetExamples, "GET", "/api/v1/datasets/{name}/examples", kRead},
    {RouteId::kExportModel, "GET", "/api/v1/jobs/{id}/model", kRead},
    {RouteId::kSubmitExperiment, "POST", "/api/v1/experiments", kCreate},
    {RouteId::kListExperiments, "GET", "/api/v1/experiments", kRead},
    // Before {id}, so that its path's first match names no id.
    {RouteId::kPreviewExperiment, "POST", "/api/v1/experiments/preview", kRead},
    {RouteId::kGetExperiment, "GET", "/api/v1/experiments/{id}", kRead},
    {RouteId::kDeleteExperiment, "DELETE", "/api/v1/experiments/{id}", kOwnExperiment},
    {RouteId::kExperimentTrials, "GET", "/api/v1/experiments/{id}/trials", kRead},
    {RouteId::kStopExperiment, "POST", "/api/v1/experiments/{id}/stop", kOwnExperiment},
    {RouteId::kResumeExperiment, "POST", "/api/v1/experiments/{id}/resume", kOwnExperiment},
    {RouteId::kServerMetadata, "GET", "/v2", kPublic},
    {RouteId::kServerLive, "GET", "/v2/health/live", kPublic},
    {RouteId::kServerReady, "GET", "/v2/health/ready", kPublic},
    {RouteId::kModelMetadata, "GET", "/v2/models/{id}", kRead},
    {RouteId::kModelVersionMetadata, "GET", "/v2/models/{id}/versions/{version}", kRead},
    {RouteId::kModelReady, "GET", "/v2/models/{id}/ready", kRead},
    {RouteId::kModelVersionReady, "GET", "/v2/models/{id}/versions/{version}/ready", kRead},
    {RouteId::kInfer, "POST", "/v2/models/{id}/infer", kRead},
    {RouteId::kVersionInfer, "POST", "/v2/models/{id}/versions/{version}/infer", kRead},
    {RouteId::kPredict, "POST", "/v1/models/{id}:predict", kRead},
    {RouteId::kCreateUser, "POST", "/api/v1/users", kAdmin},
    {RouteId::kListUsers, "GET", "/api/v1/users", kAdmin},
    {RouteId::kGetUser, "GET", "/api/v1/users/{name}", kAdmin},
    {RouteId::kUpdateUser, "PATCH", "/api/v1/users/{name}", kAdmin},
    {RouteId::kDeleteUser, "DELETE", "/api/v1/users/{name}", kAdmin},
    {RouteId::kCreateToken, "POST", "/api/v1/users/{name}/tokens", kAdmin},
    {RouteId::kListTokens, "GET", "/api/v1/users/{name}/tokens", kAdmin},
    {RouteId::kRevokeToken, "DELETE", "/api/v1/tokens/{id}", kAdmin},
    {RouteId::kWhoami, "GET", "/api/v1/whoami", kRead},
    {RouteId::kAudit, "GET", "/api/v1/audit", kAdmin},
    {RouteId::kHealthz, "GET", "/healthz", kPublic},
    {RouteId::kMetrics, "GET", "/metrics", kRead},
    {RouteId::kIndex, "GET", "/", kPublic},
    {RouteId::kStaticFile, "GET", "/{file}", kPublic},
};

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kOctetStream = "application/octet-stream";

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 1;  // paths start with '/'
  while (true) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

// Whether `path` has the shape of template `tmpl`; the "{id}" or "{name}" segment goes to *id
// ("{id}:predict" matches a segment that ends so), the "{version}" segment to *version.
bool MatchTemplate(std::string_view tmpl, std::string_view path, std::string* id,
                   std::string* version) {
  auto t = Segments(tmpl);
  auto p = Segments(path);
  if (t.size() != p.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "{id}" || t[i] == "{name}" || t[i] == "{version}") {
      if (p[i].empty()) return false;
      *(t[i] == "{version}" ? version : id) = std::string(p[i]);
    } else if (t[i].starts_with("{id}:")) {
      const std::string_view suffix = t[i].substr(4);
      if (p[i].size() <= suffix.size() || !p[i].ends_with(suffix)) return false;
      *id = std::string(p[i].substr(0, p[i].size() - suffix.size()));
    } else if (t[i] != p[i]) {
      return false;
    }
  }
  return true;
}

// The inference protocols' paths: KServe v2's /v2/..., TF Serving's /v1/models/...
bool IsModelProtocolPath(std::string_view path) {
  return path == "/v2" || path.starts_with("/v2/") || path.starts_with("/v1/models/");
}

bool IsApiPath(std::string_view path) {
  return path == "/api" || path.starts_with("/api/") || path == "/healthz" || path == "/metrics" ||
         IsModelProtocolPath(path);
}

// Methods as metric labels: a fixed set, so clients cannot create unbounded series.
std::string_view MethodLabel(std::string_view method) {
  for (std::string_view known : {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}) {
    if (method == known) return known;
  }
  return "other";
}

bool IsMediaType(std::string_view content_type, std::string_view want) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  return EqualsIgnoreCase(media, want);
}

// Ids for internal errors, unique within a run and unlikely to repeat across runs: a random
// prefix per process and a counter.
std::string NewErrorId() {
  static const uint32_t prefix = std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  char id[40];
  std::snprintf(id, sizeof id, "E%08" PRIx32 "-%" PRIu64, prefix, ++counter);
  return id;
}

size_t CountHeaders(const HttpRequest& request, std::string_view name) {
  size_t n = 0;
  for (const auto& [key, value] : request.headers) {
    if (EqualsIgnoreCase(key, name)) ++n;
  }
  return n;
}

// Whether the request opens an event stream: the routes browsers' EventSource connects to,
// the only ones where the token may come in the query string.
bool IsEventStream(RouteId route, const std::optional<QueryParams>& query) {
  if (route == RouteId::kJobEvents || route == RouteId::kEvents) return true;
  if (route != RouteId::kLogs || !query) return false;
  std::string follow = QueryValue(*query, "follow").value_or("false");
  return follow == "true" || follow == "1";
}

}  // namespace

HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message,
                           std::string_view field) {
  return JsonResponse(status, ErrorToJson(code, message, field));
}

HttpResponse StatusResponse(const Status& status) {
  const std::string& message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument: {
      // "<field>: <what>", where the field is a JSON path or a parameter name (no spaces).
      std::string_view field;
      size_t colon = message.find(": ");
      if (colon != std::string::npos && colon > 0 && colon <= 128 &&
          message.find_first_of(" \t") > colon) {
        field = std::string_view(message).substr(0, colon);
      }
      return ErrorResponse(400, "invalid_argument", message, field);
    }
    case StatusCode::kNotFound:
      return ErrorResponse(404, "not_found", message);
    case StatusCode::kFailedPrecondition:
      return ErrorResponse(409, "failed_precondition", message);
    case StatusCode::kUnavailable: {
      HttpResponse r = ErrorResponse(503, "unavailable", message);
      r.SetHeader("Retry-After", "1");
      return r;
    }
    case StatusCode::kResourceExhausted: {
      // A user's quota ("quotas.<key>: <what>", scheduler.h): 429 for a limit that frees up
      // (queued jobs), 403 for one that does not (the highest priority): retrying cannot help.
      if (message.starts_with("quotas.")) {
        const std::string key = message.substr(7, message.find(": ") - 7);
        const bool forbidden = key == "max_priority";
        json body = ErrorToJson("quota_exceeded", message, "quotas." + key);
        body["error"]["quota"] = key;
        HttpResponse r = JsonResponse(forbidden ? 403 : 429, body);
        if (!forbidden) r.SetHeader("Retry-After", "10");
        return r;
      }
      return ErrorResponse(507, "resource_exhausted", message);
    }
    default:
      return InternalErrorResponse(status.ToString());
  }
}

HttpResponse DatasetStatusResponse(const Status& status) {
  if (status.code() == StatusCode::kResourceExhausted) {
    return ErrorResponse(413, "payload_too_large", status.message());
  }
  return StatusResponse(status);
}

HttpResponse InternalErrorResponse(std::string_view detail) {
  const std::string id = NewErrorId();
  json body = ErrorToJson("internal",
                          "internal error (id " + id + "); the daemon's log has the details", "");
  body["error"]["id"] = id;
  HttpResponse r = JsonResponse(500, body);
  r.log_detail = "error " + id + ": " + std::string(detail);
  return r;
}

void AddSecurityHeaders(HttpResponse& response) {
  const bool html = response.Header("Content-Type").starts_with("text/html");
  response.SetHeader("X-Content-Type-Options", "nosniff");
  response.SetHeader("X-Frame-Options", "DENY");
  response.SetHeader("Referrer-Policy", "no-referrer");
  response.SetHeader("Content-Security-Policy",
                     html ? std::string(kDashboardCsp)
                          : std::string("default-src 'none'; frame-ancestors 'none'"));
}

bool IsValidJobId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool ConstantTimeEquals(std::string_view given, std::string_view secret) {
  // Every byte of `secret` is looked at whatever `given` holds; no early exit.
  volatile unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < secret.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = diff | (g ^ static_cast<unsigned char>(secret[i]));
  }
  return diff == 0;
}

Router::Router(JobService& service, RouterOptions options, DatasetService* datasets,
               ModelService* models, ExperimentService* experiments)
    : service_(service),
      datasets_(datasets),
      models_(models),
      experiments_(experiments),
      options_(std::move(options)),
      static_files_(options_.web_root) {
  SetListenEndpoint(options_.listen_address, options_.listen_port);
}

engine::Status Router::CheckOptions() const {
  TRAININGD_RETURN_IF_ERROR(policy_status_);
  return static_files_.CheckRoot();
}

void Router::SetListenEndpoint(std::string_view address, uint16_t port) {
  options_.listen_address = std::string(address);
  options_.listen_port = port;
  auto policy =
      BrowserPolicy::Create(address, port, options_.allowed_hosts, options_.allowed_origins);
  policy_status_ = policy.status();
  policy_ = policy.ok() ? std::move(*policy) : BrowserPolicy();
}

const std::vector<RouteInfo>& Router::Routes() {
  static const std::vector<RouteInfo> routes = [] {
    std::vector<RouteInfo> out;
    for (const RouteDef& def : kRoutes) out.push_back({def.method, def.path, def.access});
    return out;
  }();
  return routes;
}

HttpResponse Router::Handle(const HttpRequest& request, const EventDeliver& deliver) {
  auto start = std::chrono::steady_clock::now();
  std::string route_label = "unmatched";
  RequestAccess access;
  HttpResponse response;
  try {
    response = Dispatch(request, deliver, &route_label, &access);
  } catch (const std::exception& e) {
    response = InternalErrorResponse(std::string("exception: ") + e.what());
  } catch (...) {
    response = InternalErrorResponse("exception of unknown type");
  }
  // An upload to feed is not an answer yet: FinishUpload records it.
  if (response.upload) return response;
  // Nor is an answer to come: recorded when it comes.
  if (response.answer_later) {
    response.answer_later = [this, inner = std::move(response.answer_later),
                             method = request.method, route_label,
                             start](std::function<void(HttpResponse)> send) {
      inner([this, send = std::move(send), method, route_label, start](HttpResponse answer) {
        HttpRequest header;
        header.method = method;
        Finish(header, route_label, start, answer);
        send(std::move(answer));
      });
    };
    return response;
  }
  AuditAnswer(request, route_label, access, response.status);
  Finish(request, route_label, start, response);
  return response;
}

bool Router::StreamsBody(std::string_view method, std::string_view target) {
  return method == "POST" && SplitRequestTarget(target).path == "/api/v1/datasets";
}

HttpResponse Router::FinishUpload(const HttpRequest& header, UploadBody& upload,
                                  const Status& body_status) {
  auto start = std::chrono::steady_clock::now();
  HttpResponse response;
  try {
    if (!body_status.ok()) {
      response = DatasetStatusResponse(body_status);
    } else if (auto record = upload.Finish(); !record.ok()) {
      response = DatasetStatusResponse(record.status());
    } else {
      response = JsonResponse(201, DatasetToJson(*record));
      response.SetHeader("Location", "/api/v1/datasets/" + record->name);
    }
  } catch (const std::exception& e) {
    response = InternalErrorResponse(std::string("exception: ") + e.what());
  }
  RequestAccess access;
  access.access = Access::kCreate;
  access.authenticated =
      !Authenticate(header, false, ParseQuery(SplitRequestTarget(header.target).query),
                    &access.principal)
           .has_value();
  AuditAnswer(header, "/api/v1/datasets", access, response.status);
  Finish(header, "/api/v1/datasets", start, response);
  return response;
}

void Router::Finish(const HttpRequest& request, const std::string& route_label,
                    std::chrono::steady_clock::time_point start, HttpResponse& response) {
  if (!response.log_detail.empty()) {
    std::string line = "trainingd http: " + request.method.substr(0, 16) + " " + route_label +
                       ": " + response.log_detail;
    if (options_.log) {
      options_.log(line);
    } else {
      line += "\n";
      std::fwrite(line.data(), 1, line.size(), stderr);
    }
  }
  AddSecurityHeaders(response);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics_.RecordRequest(route_label, MethodLabel(request.method), response.status, seconds);
}

HttpResponse Router::Dispatch(const HttpRequest& request, const EventDeliver& deliver,
                              std::string* route_label, RequestAccess* access) {
  SplitTarget target = SplitRequestTarget(request.target);
  if (target.path.empty() || target.path.front() != '/') {
    return ErrorResponse(400, "invalid_argument", "request target must be an absolute path",
                         "target");
  }
  // Which routes have this path's shape; then which of them takes this method.
  std::vector<const RouteDef*> matches;
  std::string job_id;
  std::string version;
  bool api = IsApiPath(target.path);
  for (const RouteDef& def : kRoutes) {
    bool match = false;
    if (def.id == RouteId::kIndex) {
      match = target.path == "/";
    } else if (def.id == RouteId::kStaticFile) {
      match = !api && target.path != "/";
    } else if (api) {
      match = MatchTemplate(def.path, target.path, &job_id, &version);
    }
    if (match) matches.push_back(&def);
  }
  const RouteDef* route = nullptr;
  for (const RouteDef* def : matches) {
    if (def->method == request.method) route = def;
  }
  if (!matches.empty()) *route_label = std::string(matches.front()->path);

  // A page in the user's browser learns nothing and changes nothing: checked before the token.
  if (auto refused = CheckBrowserHeaders(request)) return std::move(*refused);

  std::optional<QueryParams> query = ParseQuery(target.query);
  // Health probes and the dashboard's files reveal nothing about jobs: public (their Access).
  const bool public_route = !matches.empty() && matches.front()->access == Access::kPublic;
  if (!public_route) {
    const bool stream = route != nullptr && IsEventStream(route->id, query);
    if (auto refused = Authenticate(request, stream, query, &access->principal)) {
      return std::move(*refused);
    }
    access->authenticated = true;
  }
  if (matches.empty()) {
    return ErrorResponse(404, "not_found",
                         "no route for " + std::string(target.path.substr(0, 256)));
  }
  if (route == nullptr) {
    std::string allow;
    for (const RouteDef* def : matches) {
      if (!allow.empty()) allow += ", ";
      allow += def->method;
    }
    HttpResponse r = ErrorResponse(
        405, "method_not_allowed",
        "method " + request.method.substr(0, 16) + " not allowed here; allowed: " + allow);
    r.SetHeader("Allow", allow);
    return r;
  }
  // Only application/json, which a cross-site page cannot send without a CORS preflight (and
  // preflights get no CORS allowance): no form or text/plain post can change state.
  // An upload's body is application/octet-stream, which needs a preflight just the same, or
  // multipart/form-data (a CSV and its test file), which a cross-site form can send: that one
  // rests on the Origin check above (browsers send Origin with every POST) and on the token.
  const std::string_view content_type = request.Header("Content-Type");
  if (route->id == RouteId::kUploadDataset) {
    if (!IsMediaType(content_type, kOctetStream) &&
        !IsMediaType(content_type, "multipart/form-data")) {
      return ErrorResponse(415, "unsupported_media_type",
                           "Content-Type must be application/octet-stream (the file as the body) "
                           "or multipart/form-data (parts train and test)",
                           "Content-Type");
    }
  } else if ((route->method == "POST" || route->method == "PATCH") &&
             !IsMediaType(content_type, kJson)) {
    return ErrorResponse(415, "unsupported_media_type",
                         "Content-Type must be " + std::string(kJson), "Content-Type");
  }
  if (!query) {
    return ErrorResponse(400, "invalid_argument", "query string has a malformed %-escape", "query");
  }
  if (matches.front()->path.find("{id}") != std::string_view::npos && !IsValidJobId(job_id)) {
    if (target.path.starts_with("/api/v1/tokens/")) {
      return ErrorResponse(400, "invalid_argument", "id: a token id is a positive integer", "id");
    }
    const bool experiment = target.path.starts_with("/api/v1/experiments/");
    return ErrorResponse(400, "invalid_argument",
                         std::string("id: ") + (experiment ? "an experiment" : "a job") +
                             " id is 1 to 64 of the characters A-Z a-z 0-9 _ -",
                         "id");
  }
  const bool user_path = target.path.starts_with("/api/v1/users/");
  if (user_path && !IsValidUserName(job_id)) {
    return ErrorResponse(400, "invalid_argument",
                         "name: a user name is 1 to 64 of the characters a-z 0-9 _ . -, starting "
                         "with a letter or digit",
                         "name");
  }
  if (!user_path && matches.front()->path.find("{name}") != std::string_view::npos &&
      !engine::IsSafeName(job_id)) {
    return ErrorResponse(400, "invalid_argument",
                         "name: a dataset name is 1 to 100 of the characters A-Z a-z 0-9 . _ -, "
                         "and not . or ..",
                         "name");
  }
  const bool dataset_route =
      route->id == RouteId::kUploadDataset || route->id == RouteId::kListDatasets ||
      route->id == RouteId::kGetDataset || route->id == RouteId::kDeleteDataset ||
      route->id == RouteId::kDatasetExamples;
  if (dataset_route && datasets_ == nullptr) {
    return ErrorResponse(404, "not_found", "this server keeps no datasets");
  }
  const bool model_route = route->id == RouteId::kExportModel || IsModelProtocolPath(target.path);
  if (model_route && route->id != RouteId::kServerMetadata && route->id != RouteId::kServerLive &&
      models_ == nullptr) {
    return ErrorResponse(404, "not_found", "this server serves no models");
  }

  const bool experiment_route =
      route->id == RouteId::kSubmitExperiment || route->id == RouteId::kPreviewExperiment ||
      route->id == RouteId::kListExperiments || route->id == RouteId::kGetExperiment ||
      route->id == RouteId::kDeleteExperiment || route->id == RouteId::kExperimentTrials ||
      route->id == RouteId::kStopExperiment || route->id == RouteId::kResumeExperiment;
  if (experiment_route && experiments_ == nullptr) {
    return ErrorResponse(404, "not_found", "this server runs no experiments");
  }

  // Who may: after the route is known to exist here, before it runs (so a refusal changes
  // nothing).
  access->access = route->access;
  access->resource = job_id;
  if (auto refused = Authorize(route->access, access->principal, job_id)) {
    return std::move(*refused);
  }

  Context c{request, target.path, std::move(*query), job_id, deliver, access->principal};
  switch (route->id) {
    case RouteId::kSubmitJob:
      return SubmitJob(c);
    case RouteId::kListJobs:
      return ListJobs(c);
    case RouteId::kGetJob: {
      auto job = service_.Get(job_id);
      if (!job.ok()) return StatusResponse(job.status());
      return JsonResponse(200, JobToJson(*job, true));
    }
    case RouteId::kDeleteJob: {
      Status status = service_.Delete(job_id);
      if (!status.ok()) return StatusResponse(status);
      HttpResponse r;
      r.status = 204;
      return r;
    }
    case RouteId::kPatchJob:
      return PatchJob(service_, c.request, job_id, options_.max_body_bytes);
    case RouteId::kStopJob:
      return StopJob(c);
    case RouteId::kResumeJob:
      return ResumeJob(c);
    case RouteId::kScalars:
      return Scalars(c);
    case RouteId::kScalarTags: {
      auto tags = service_.ScalarTags(job_id);
      if (!tags.ok()) return StatusResponse(tags.status());
      return JsonResponse(200, {{"job_id", job_id}, {"tags", *tags}});
    }
    case RouteId::kCheckpoints: {
      auto checkpoints = service_.Checkpoints(job_id);
      if (!checkpoints.ok()) return StatusResponse(checkpoints.status());
      json body = CheckpointsToJson(*checkpoints);
      body["job_id"] = job_id;
      return JsonResponse(200, body);
    }
    case RouteId::kEvaluation:
      return Evaluation(c);
    case RouteId::kLogs:
      return Logs(c);
    case RouteId::kJobEvents:
      return Events(c, job_id, std::nullopt);
    case RouteId::kEvents:
      return Events(c, "", std::nullopt);
    case RouteId::kUploadDataset:
      return UploadDataset(c);
    case RouteId::kListDatasets: {
      auto list = datasets_->ListDatasets();
      if (!list.ok()) return DatasetStatusResponse(list.status());
      return JsonResponse(200, DatasetListToJson(*list));
    }
    case RouteId::kGetDataset: {
      auto dataset = datasets_->GetDataset(job_id);
      if (!dataset.ok()) return DatasetStatusResponse(dataset.status());
      return JsonResponse(200, DatasetToJson(*dataset));
    }
    case RouteId::kDatasetExamples:
      return ListExamples(c);
    case RouteId::kExportModel:
      return model_routes::ExportModel(
          *models_, job_id, QueryValue(c.query, "format").value_or("onnx"),
          QueryValue(c.query, "step"), QueryValue(c.query, "checkpoint"));
    case RouteId::kSubmitExperiment:
      return experiment_routes::Submit(*experiments_, request, options_.max_body_bytes,
                                       access->principal.name);
    case RouteId::kPreviewExperiment:
      return experiment_routes::Preview(*experiments_, request, options_.max_body_bytes);
    case RouteId::kListExperiments:
      return experiment_routes::List(*experiments_, c.query, options_.default_list_limit);
    case RouteId::kGetExperiment:
      return experiment_routes::Get(*experiments_, job_id);
    case RouteId::kDeleteExperiment:
      return experiment_routes::Delete(*experiments_, job_id);
    case RouteId::kExperimentTrials:
      return experiment_routes::Trials(*experiments_, job_id, c.query);
    case RouteId::kStopExperiment:
      return experiment_routes::Stop(*experiments_, request, job_id, options_.max_body_bytes);
    case RouteId::kResumeExperiment:
      return experiment_routes::Resume(*experiments_, request, job_id, options_.max_body_bytes);
    case RouteId::kServerMetadata:
      return model_routes::ServerMetadata();
    case RouteId::kServerLive:
      return model_routes::Health(nullptr);
    case RouteId::kServerReady:
      return model_routes::Health(models_);
    case RouteId::kModelMetadata:
    case RouteId::kModelVersionMetadata:
      return model_routes::ModelMetadata(*models_, job_id, version);
    case RouteId::kModelReady:
    case RouteId::kModelVersionReady:
      return model_routes::ModelReady(*models_, job_id, version);
    case RouteId::kInfer:
    case RouteId::kVersionInfer:
    case RouteId::kPredict:
      return model_routes::Infer(*models_, request, job_id, version,
                                 route->id == RouteId::kPredict);
    case RouteId::kDeleteDataset: {
      Status status = datasets_->DeleteDataset(job_id);
      if (!status.ok()) return DatasetStatusResponse(status);
      HttpResponse r;
      r.status = 204;
      return r;
    }
    case RouteId::kCreateUser:
    case RouteId::kListUsers:
    case RouteId::kGetUser:
    case RouteId::kUpdateUser:
    case RouteId::kDeleteUser:
    case RouteId::kCreateToken:
    case RouteId::kListTokens:
    case RouteId::kRevokeToken:
    case RouteId::kWhoami:
    case RouteId::kAudit:
      return UserRoute(route->path, route->method, c, access->principal);
    case RouteId::kHealthz: {
      // 200 either way: the daemon serves; "degraded" says what it cannot do now.
      const ServiceHealth health = service_.Health();
      json body = {{"status", health.degraded ? "degraded" : "ok"}};
      if (health.degraded) body["problems"] = health.problems;
      return JsonResponse(200, body);
    }
    case RouteId::kMetrics:
      return Metrics();
    case RouteId::kIndex:
    case RouteId::kStaticFile:
      return StaticFile(c);
  }
  return InternalErrorResponse("unhandled route " + std::string(route->path));
}

HttpResponse Router::UserRoute(std::string_view route_path, std::string_view method,
                               const Context& c, const Principal& principal) {
  return user_routes::Answer(users_, audit_, route_path, method, c.request, c.query, c.job_id,
                             principal, options_.max_body_bytes);
}

std::optional<HttpResponse> Router::CheckBrowserHeaders(const HttpRequest& request) const {
  // No Host at all is an HTTP/1.0 client, never a browser; two are ambiguous (RFC 9112: 400).
  if (CountHeaders(request, "Host") > 1) {
    return ErrorResponse(400, "bad_request", "more than one Host header", "Host");
  }
  std::string_view host = request.Header("Host");
  if (!host.empty() && !policy_.AllowsHost(host)) {
    return ErrorResponse(421, "misdirected_request",
                         "Host \"" + std::string(host.substr(0, 128)) +
                             "\" is not a name of this server; add it to allowed_hosts in the "
                             "config if it is",
                         "Host");
  }
  // Only methods that may change state (POST, DELETE, and unknown ones, which get 405 anyway).
  if (request.method == "GET" || request.method == "HEAD" || request.method == "OPTIONS") {
    return std::nullopt;
  }
  // Browsers send Origin with every POST and DELETE; other clients need not.
  size_t origins = CountHeaders(request, "Origin");
  if (origins == 0) return std::nullopt;
  std::string_view origin = request.Header("Origin");
  if (origins > 1 || !policy_.AllowsOrigin(origin)) {
    return ErrorResponse(403, "forbidden",
                         "Origin \"" + std::string(origin.substr(0, 128)) +
                             "\" may not change anything here; add it to allowed_origins in "
                             "the config if it should",
                         "Origin");
  }
  return std::nullopt;
}

HttpResponse Router::Metrics() {
  HttpResponse r;
  r.status = 200;
  r.headers = {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"},
               {"Cache-Control", "no-store"}};
  std::vector<Metric> all = service_.Metrics();
  if (models_ != nullptr) {
    for (Metric& m : models_->Metrics()) all.push_back(std::move(m));
  }
  if (experiments_ != nullptr) {
    for (Metric& m : experiments_->Metrics()) all.push_back(std::move(m));
  }
  for (Metric& m : metrics_.Collect()) all.push_back(std::move(m));
  r.body = WritePrometheus(all);
  return r;
}

// Revalidated on every load (no-cache) but cheaply: a matching If-None-Match gets a 304 without
// the body. Browsers that accept gzip get the build's precompressed copy.
HttpResponse Router::StaticFile(const Context& c) {
  auto file = static_files_.Lookup(c.path, AcceptsGzip(c.request.Header("Accept-Encoding")));
  if (!file.ok()) {
    const Status& s = file.status();
    if (s.code() == StatusCode::kInvalidArgument) {
      return ErrorResponse(400, "invalid_argument", "path: " + s.message(), "path");
    }
    return StatusResponse(s);
  }
  HttpResponse r;
  r.headers = {{"Content-Type", file->content_type},
               {"Cache-Control", "no-cache"},
               {"Vary", "Accept-Encoding"}};
  if (!file->etag.empty()) {
    r.headers.emplace_back("ETag", file->etag);
    const std::string_view match = c.request.Header("If-None-Match");
    if (match.find(file->etag) != std::string_view::npos) {
      r.status = 304;
      return r;
    }
  }
  if (file->gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  r.status = 200;
  r.body = std::move(file->content);
  return r;
}

}  // namespace trainingd::api
