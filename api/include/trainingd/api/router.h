// Router: the REST API v1 (docs/openapi.yaml, docs/http-api.md) as a plain function from request
// to response over a JobService, so it is tested without sockets; HttpServer calls it on its
// handler threads.
//
// Every non-2xx answer has the body {"error":{"code","message"[,"field"]}} and Content-Type
// application/json. JobService statuses map as job_service.h states: InvalidArgument 400,
// NotFound 404, FailedPrecondition 409, Unavailable 503 (with Retry-After), anything else 500
// with a generic message and an error id (the details go to options.log, never to the client).
// With an API token configured, /api/... and /metrics need "Authorization: Bearer <token>"
// (event streams may pass ?access_token= instead, since browsers' EventSource cannot set
// headers; on any other route a query token is refused); /healthz and the dashboard's static
// files are public, as they reveal nothing about jobs.
//
// Browser protections, before anything else (docs/operations.md#browser-protections): a Host
// that does not name this server is 421, a POST or DELETE whose Origin is not this server or an
// allowed origin is 403 (BrowserPolicy), and a POST without Content-Type application/json is 415,
// so no cross-site "simple" request (a form, text/plain) can change anything. Every answer
// carries X-Frame-Options, Content-Security-Policy and Referrer-Policy (AddSecurityHeaders).
// Thread-safe: Handle may run on many threads at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/audit_service.h"
#include "trainingd/api/browser_policy.h"
#include "trainingd/api/dataset_service.h"
#include "trainingd/api/experiment_service.h"
#include "trainingd/api/http_message.h"
#include "trainingd/api/http_metrics.h"
#include "trainingd/api/job_service.h"
#include "trainingd/api/model_service.h"
#include "trainingd/api/static_files.h"
#include "trainingd/api/url.h"
#include "trainingd/api/user_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api {

struct RouterOptions {
  std::string api_token;            // "" = no authentication
  std::string web_root;             // directory of the dashboard's files; "" = none (GET / is 404)
  size_t max_body_bytes = 1 << 20;  // larger bodies: 413 (the server also stops reading them)
  // Defaults of the query parameters; their upper bounds are the JobService's (job_service.h).
  int64_t default_list_limit = 50;    // GET /api/v1/jobs ?limit=, 1..kMaxListLimit
  int64_t default_log_limit = 1000;   // GET .../logs ?limit=, 1..kMaxLogLines
  int64_t default_max_points = 1000;  // GET .../scalars ?max_points=, 1..kMaxScalarPoints
  // Browser protections (browser_policy.h): the address and port the server listens on
  // (HttpServer::Start sets them with SetListenEndpoint before it accepts), and the extra Host
  // names ("name" or "name:port") and origins ("https://host[:port]") to allow.
  std::string listen_address = "127.0.0.1";
  uint16_t listen_port = 0;  // 0 = not known yet
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;
  // Where the details of an internal error go, one line per error with its id (the client sees
  // only the id). Called on handler threads, possibly at once. Empty = stderr.
  std::function<void(std::string_view)> log;
};

// Who may use a route (docs/operations.md#team-use): every route has exactly one rule, in the
// router's route table, and Router checks it before the route runs. The owner of a job,
// experiment or dataset is the user who created it; a trial's job is its experiment's owner's.
// The first value is the strictest, so that a rule left out fails closed.
enum class Access {
  kAdmin,          // admins only: users, tokens and the audit
  kPublic,         // anyone, without a token: health probes, the dashboard's files
  kRead,           // any authenticated principal, viewers too; the route changes nothing
  kCreate,         // users and admins; what the route creates belongs to the principal
  kOwnJob,         // the owner of job {id} (a user), or an admin
  kOwnExperiment,  // the owner of experiment {id}, or an admin
  kOwnDataset,     // the owner of dataset {name}, or an admin
};
const char* AccessName(Access access);

// One (method, path template) pair the router answers and its rule; "{id}" is one job-id
// segment, "{file}" a path under the web root.
struct RouteInfo {
  std::string_view method;
  std::string_view path;
  Access access = Access::kAdmin;
};

class Router {
 public:
  // `service`, `datasets`, `models` and `experiments` must outlive the router; without
  // `datasets` the dataset routes answer 404, without `models` the model and inference routes,
  // without `experiments` the experiment routes.
  Router(JobService& service, RouterOptions options, DatasetService* datasets = nullptr,
         ModelService* models = nullptr, ExperimentService* experiments = nullptr);

  // Team use (user_service.h): with `users`, a presented token is also looked up among the
  // users' tokens, and what each principal may do is decided by the route's Access; without it
  // every authenticated request is the admin's (as with one configured token). With `audit`,
  // every change and every refusal (401, 403) is recorded. Both must outlive the router; call
  // before Handle runs (serve_command.cpp does, before the server starts).
  void SetUsers(UserService* users, AuditService* audit);

  // OK unless options name a web root that is not an existing directory, or an allowed host or
  // origin that does not parse (fatal at start-up).
  engine::Status CheckOptions() const;

  // The address and port the server is bound to, for the Host and Origin checks. Not safe to
  // call while Handle runs: HttpServer::Start calls it once, before it accepts connections.
  void SetListenEndpoint(std::string_view address, uint16_t port);

  // Answers one request; never throws (an exception becomes a 500). For the event-stream routes
  // (GET /api/v1/events, /api/v1/jobs/{id}/events, /api/v1/jobs/{id}/logs?follow=true) it
  // subscribes `deliver` (may be empty: events are then dropped) and returns event_stream = true
  // with the Subscription; the caller writes the events it receives and keeps the
  // Subscription as long as the client is connected. For the inference routes it may return
  // answer_later instead of an answer (http_message.h). Records each answer in metrics().
  HttpResponse Handle(const HttpRequest& request, const EventDeliver& deliver = nullptr);

  // Whether the server should stream this request's body rather than read it whole (POST
  // /api/v1/datasets): it then calls Handle with the header only (body_follows), and either
  // writes the refusal Handle returns or feeds the body to its `upload` and calls FinishUpload.
  static bool StreamsBody(std::string_view method, std::string_view target);
  // The answer to an upload whose body has been fed (body_status OK: it commits the dataset,
  // 201) or failed (body_status: the error, e.g. ResourceExhausted = over the size limit, 413).
  // Records the answer in metrics() as Handle does.
  HttpResponse FinishUpload(const HttpRequest& header, UploadBody& upload,
                            const engine::Status& body_status);

  // Every route, in a fixed order; docs/openapi.yaml describes exactly these.
  static const std::vector<RouteInfo>& Routes();

  HttpMetrics& metrics() { return metrics_; }
  const RouterOptions& options() const { return options_; }

 private:
  struct Context;  // one request being answered (router.cpp)
  // Who sent a request and what it touched, for the audit (router_access.cpp).
  struct RequestAccess {
    Principal principal;
    bool authenticated = false;
    Access access = Access::kPublic;
    std::string resource;
  };

  HttpResponse Dispatch(const HttpRequest& request, const EventDeliver& deliver,
                        std::string* route_label, RequestAccess* access);
  // router_access.cpp: the principal of a request to a non-public route into *principal, or
  // the 401 answer. `stream`: the route is an event stream (a query token is allowed).
  std::optional<HttpResponse> Authenticate(const HttpRequest& request, bool stream,
                                           const std::optional<QueryParams>& query,
                                           Principal* principal) const;
  // The 403 (or the 404 of a job, experiment or dataset that does not exist) when `principal`
  // may not use a route with rule `access` on resource `id`; nullopt when it may.
  std::optional<HttpResponse> Authorize(Access access, const Principal& principal,
                                        const std::string& id);
  // Records the answer in the audit when it is a change or a refusal.
  void AuditAnswer(const HttpRequest& request, const std::string& route_label,
                   const RequestAccess& access, int status);
  // The /api/v1/users, /tokens, /whoami and /audit routes (user_routes.cpp via router_access.cpp).
  HttpResponse UserRoute(std::string_view route_path, std::string_view method, const Context& c,
                         const Principal& principal);
  // The 400/421/403 answer when the Host or Origin header is not allowed; nullopt when fine.
  std::optional<HttpResponse> CheckBrowserHeaders(const HttpRequest& request) const;
  HttpResponse StopJob(const Context& c);
  HttpResponse SubmitJob(const Context& c);
  HttpResponse ListJobs(const Context& c);
  HttpResponse ResumeJob(const Context& c);
  HttpResponse Scalars(const Context& c);
  HttpResponse Evaluation(const Context& c);
  HttpResponse Logs(const Context& c);
  HttpResponse Events(const Context& c, const std::string& job_id,
                      std::optional<EventKind> only_kind);
  HttpResponse Metrics();
  HttpResponse StaticFile(const Context& c);
  HttpResponse UploadDataset(const Context& c);
  // GET /api/v1/datasets/{name}/examples: the test split's examples in raw units.
  HttpResponse ListExamples(const Context& c);
  // Handle's bookkeeping around an answer: logs a 500's details, adds the security headers,
  // records the metrics.
  void Finish(const HttpRequest& request, const std::string& route_label,
              std::chrono::steady_clock::time_point start, HttpResponse& response);

  JobService& service_;
  DatasetService* datasets_;
  ModelService* models_;
  ExperimentService* experiments_;
  UserService* users_ = nullptr;
  AuditService* audit_ = nullptr;
  RouterOptions options_;
  BrowserPolicy policy_;
  engine::Status policy_status_;  // why options_ give no policy; OK = they do
  StaticFiles static_files_;
  HttpMetrics metrics_;
};

// A JSON error answer: {"error":{"code","message"[,"field"]}}.
HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message,
                           std::string_view field = {});

// The answer for a failed JobService call (the mapping above). An InvalidArgument message
// "<field>: <what>" names <field> in the body; other codes than the four above give
// InternalErrorResponse(status.ToString()).
HttpResponse StatusResponse(const engine::Status& status);

// A 500 {"error":{"code":"internal","message":"internal error (id E...)...","id":"E..."}} that
// says nothing about the failure; `detail` and the id go in the response's log_detail, which
// Router::Handle writes to options.log.
HttpResponse InternalErrorResponse(std::string_view detail);

// Sets the headers every answer carries: X-Content-Type-Options: nosniff, X-Frame-Options: DENY,
// Referrer-Policy: no-referrer, and a Content-Security-Policy: for HTML (the dashboard) its own
// files only -- no inline script or style, no other origin, no framing; for anything else
// "default-src 'none'; frame-ancestors 'none'".
void AddSecurityHeaders(HttpResponse& response);

// The Content-Security-Policy of the dashboard's HTML.
inline constexpr std::string_view kDashboardCsp =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

// Job and experiment ids in paths: 1 to 64 of [A-Za-z0-9_-].
bool IsValidJobId(std::string_view id);

// The answer for a failed DatasetService call: StatusResponse's, except ResourceExhausted (an
// upload over the size limit), which is 413.
HttpResponse DatasetStatusResponse(const engine::Status& status);

// Whether `given` equals `secret`, in time that depends on the length of `secret` only.
bool ConstantTimeEquals(std::string_view given, std::string_view secret);

}  // namespace trainingd::api
