// The bad-request table shared by the router test and the server test. Each case is run against
// a Router with token kBadRequestToken, max_body_bytes 4096, a web root holding index.html (and
// secret.txt beside it), and a FakeJobService holding job-1 (running), job-2 (queued) and job-3
// (stopped).
#pragma once

#include <string>
#include <vector>

#include "trainingd/api/http_message.h"

namespace trainingd::api {

inline constexpr const char* kBadRequestToken = "t0ken";

struct BadRequest {
  std::string name;
  std::string method;
  std::string target;
  std::string body;
  HttpHeaders headers;  // Authorization is added unless `no_auth`
  int status;
  std::string code;
  std::string field;  // "" = the body must not have one
  bool no_auth = false;

  static HttpRequest Authorized(std::string method, std::string target) {
    HttpRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.headers = {{"Authorization", std::string("Bearer ") + kBadRequestToken}};
    return r;
  }

  HttpRequest ToRequest() const {
    HttpRequest r = Authorized(method, target);
    if (no_auth) r.headers.clear();
    for (const auto& h : headers) r.headers.push_back(h);
    r.body = body;
    return r;
  }
};

inline std::vector<BadRequest> BadRequests() {
  const HttpHeaders json = {{"Content-Type", "application/json"}};
  const std::string spec_head = R"({"name": "t", "max_steps": 10, )";
  auto spec = [&](const std::string& rest) { return spec_head + rest + "}"; };
  const std::string inv = "invalid_argument";
  return {
      // Job specs: malformed JSON, wrong types, bad values; the field named.
      {"malformed json", "POST", "/api/v1/jobs", "{\"name\": ", json, 400, inv, ""},
      {"json array", "POST", "/api/v1/jobs", "[1, 2]", json, 400, inv, ""},
      {"empty body", "POST", "/api/v1/jobs", "", json, 400, inv, ""},
      {"trailing garbage", "POST", "/api/v1/jobs", spec(R"("model": "mlp")") + "x", json, 400, inv,
       ""},
      {"unknown preset", "POST", "/api/v1/jobs", spec(R"("model": "resnet")"), json, 400, inv,
       "model"},
      {"missing model", "POST", "/api/v1/jobs", R"({"name": "t", "max_steps": 10})", json, 400, inv,
       "model"},
      {"name wrong type", "POST", "/api/v1/jobs", R"({"name": 5, "model": "mlp",
       "max_steps": 1})",
       json, 400, inv, "name"},
      {"name traversal", "POST", "/api/v1/jobs", R"({"name": "../x", "model": "mlp",
       "max_steps": 1})",
       json, 400, inv, "name"},
      {"batch size string", "POST", "/api/v1/jobs", spec(R"("model": "mlp", "batch_size": "50")"),
       json, 400, inv, "batch_size"},
      {"negative batch size", "POST", "/api/v1/jobs", spec(R"("model": "mlp", "batch_size": -5)"),
       json, 400, inv, "batch_size"},
      {"absurd batch size", "POST", "/api/v1/jobs", spec(R"("model": "mlp", "batch_size": 1e30)"),
       json, 400, inv, "batch_size"},
      {"negative max_steps", "POST", "/api/v1/jobs",
       R"({"name": "t", "model": "mlp", "max_steps": -1})", json, 400, inv, "max_steps"},
      {"unknown top-level key", "POST", "/api/v1/jobs", spec(R"("model": "mlp", "gpu": true)"),
       json, 400, inv, "gpu"},
      {"zero dense units", "POST", "/api/v1/jobs",
       spec(R"("model": {"layers": [{"type": "flatten"}, {"type": "dense", "units": 0}]})"), json,
       400, inv, "model.layers[1].units"},
      {"dataset path", "POST", "/api/v1/jobs",
       spec(R"("model": "mlp", "dataset": {"name": "/etc"})"), json, 400, inv, "dataset.name"},
      {"negative learning rate", "POST", "/api/v1/jobs",
       spec(R"("model": "mlp", "optimizer": {"type": "sgd", "learning_rate": -1})"), json, 400, inv,
       "optimizer.learning_rate"},
      {"no content type",
       "POST",
       "/api/v1/jobs",
       spec(R"("model": "mlp")"),
       {},
       415,
       "unsupported_media_type",
       "Content-Type"},
      {"text content type",
       "POST",
       "/api/v1/jobs",
       spec(R"("model": "mlp")"),
       {{"Content-Type", "text/plain"}},
       415,
       "unsupported_media_type",
       "Content-Type"},
      {"oversized body", "POST", "/api/v1/jobs", std::string(5000, ' '), json, 413,
       "payload_too_large", ""},
      // Resume bodies.
      {"resume max_steps string", "POST", "/api/v1/jobs/job-3/resume", R"({"max_steps": "9"})",
       json, 400, inv, "max_steps"},
      {"resume max_steps zero", "POST", "/api/v1/jobs/job-3/resume", R"({"max_steps": 0})", json,
       400, inv, "max_steps"},
      {"resume max_steps huge", "POST", "/api/v1/jobs/job-3/resume",
       R"({"max_steps": 99999999999999999999})", json, 400, inv, "max_steps"},
      {"resume unknown key", "POST", "/api/v1/jobs/job-3/resume", R"({"steps": 9})", json, 400, inv,
       "steps"},
      {"resume not json", "POST", "/api/v1/jobs/job-3/resume", "max_steps=9", json, 400, inv, ""},
      {"resume no content type",
       "POST",
       "/api/v1/jobs/job-3/resume",
       R"({"max_steps": 9})",
       {},
       415,
       "unsupported_media_type",
       "Content-Type"},
      // Stop and resume take JSON only, so no cross-site form or text/plain post can reach them.
      {"stop without content type", "POST", "/api/v1/jobs/job-1/stop", "", {}, 415,
       "unsupported_media_type", "Content-Type"},
      {"stop as an empty form", "POST", "/api/v1/jobs/job-1/stop", "",
       {{"Content-Type", "application/x-www-form-urlencoded"}}, 415, "unsupported_media_type",
       "Content-Type"},
      {"stop as text/plain", "POST", "/api/v1/jobs/job-1/stop", "{}",
       {{"Content-Type", "text/plain"}}, 415, "unsupported_media_type", "Content-Type"},
      {"stop as multipart", "POST", "/api/v1/jobs/job-1/stop", "",
       {{"Content-Type", "multipart/form-data; boundary=x"}}, 415, "unsupported_media_type",
       "Content-Type"},
      {"stop json after text", "POST", "/api/v1/jobs/job-1/stop", "{}",
       {{"Content-Type", "text/plain; application/json"}}, 415, "unsupported_media_type",
       "Content-Type"},
      {"resume as an empty form", "POST", "/api/v1/jobs/job-3/resume", "",
       {{"Content-Type", "application/x-www-form-urlencoded"}}, 415, "unsupported_media_type",
       "Content-Type"},
      {"resume without content type", "POST", "/api/v1/jobs/job-3/resume", "", {}, 415,
       "unsupported_media_type", "Content-Type"},
      {"stop with a field", "POST", "/api/v1/jobs/job-1/stop", R"({"now": true})", json, 400, inv,
       ""},
      {"stop not json", "POST", "/api/v1/jobs/job-1/stop", "now", json, 400, inv, ""},
      // Browser protections: Host must name this server (DNS rebinding), a POST or DELETE must
      // come from this server's own pages or an allowed origin (cross-site requests).
      {"foreign host", "GET", "/api/v1/jobs", "", {{"Host", "evil.example"}}, 421,
       "misdirected_request", "Host"},
      {"foreign host with a port", "GET", "/healthz", "", {{"Host", "evil.example:8080"}}, 421,
       "misdirected_request", "Host"},
      {"foreign host for a static file", "GET", "/", "", {{"Host", "rebind.evil.example"}}, 421,
       "misdirected_request", "Host"},
      {"localhost without the port", "GET", "/api/v1/jobs", "", {{"Host", "localhost"}}, 421,
       "misdirected_request", "Host"},
      {"localhost on another port", "GET", "/api/v1/jobs", "", {{"Host", "127.0.0.1:1"}}, 421,
       "misdirected_request", "Host"},
      {"host with a path", "GET", "/api/v1/jobs", "", {{"Host", "localhost/x"}}, 421,
       "misdirected_request", "Host"},
      {"two hosts", "GET", "/api/v1/jobs", "", {{"Host", "evil.example"}, {"Host", "localhost"}},
       400, "bad_request", "Host"},
      {"foreign origin stops", "POST", "/api/v1/jobs/job-1/stop", "{}",
       {{"Content-Type", "application/json"}, {"Origin", "http://evil.example"}}, 403,
       "forbidden", "Origin"},
      {"foreign origin form post", "POST", "/api/v1/jobs/job-1/stop", "",
       {{"Content-Type", "application/x-www-form-urlencoded"}, {"Origin", "http://evil.example"}},
       403, "forbidden", "Origin"},
      {"null origin", "POST", "/api/v1/jobs", spec(R"("model": "mlp")"),
       {{"Content-Type", "application/json"}, {"Origin", "null"}}, 403, "forbidden", "Origin"},
      {"foreign origin deletes", "DELETE", "/api/v1/jobs/job-3", "",
       {{"Origin", "https://evil.example"}}, 403, "forbidden", "Origin"},
      {"localhost origin on another port", "DELETE", "/api/v1/jobs/job-3", "",
       {{"Origin", "http://localhost:1"}}, 403, "forbidden", "Origin"},
      // Illegal state changes.
      {"resume running",
       "POST",
       "/api/v1/jobs/job-1/resume",
       "",
       json,
       409,
       "failed_precondition",
       ""},
      {"delete running", "DELETE", "/api/v1/jobs/job-1", "", {}, 409, "failed_precondition", ""},
      {"stop stopped", "POST", "/api/v1/jobs/job-3/stop", "{}", json, 409, "failed_precondition",
       ""},
      // Ids.
      {"unknown id", "GET", "/api/v1/jobs/job-999", "", {}, 404, "not_found", ""},
      {"id with dot", "GET", "/api/v1/jobs/job.1", "", {}, 400, inv, "id"},
      {"id too long", "GET", "/api/v1/jobs/" + std::string(65, 'a'), "", {}, 400, inv, "id"},
      {"id encoded", "GET", "/api/v1/jobs/job%2D1", "", {}, 400, inv, "id"},
      {"id traversal", "POST", "/api/v1/jobs/..%2F..%2Fetc/stop", "", json, 400, inv, "id"},
      // Query parameters.
      {"unknown state", "GET", "/api/v1/jobs?state=sleeping", "", {}, 400, inv, "state"},
      {"empty state", "GET", "/api/v1/jobs?state=", "", {}, 400, inv, "state"},
      {"limit text", "GET", "/api/v1/jobs?limit=ten", "", {}, 400, inv, "limit"},
      {"limit zero", "GET", "/api/v1/jobs?limit=0", "", {}, 400, inv, "limit"},
      {"limit huge", "GET", "/api/v1/jobs?limit=99999999999999999999", "", {}, 400, inv, "limit"},
      {"limit float", "GET", "/api/v1/jobs?limit=1.5", "", {}, 400, inv, "limit"},
      {"limit plus sign", "GET", "/api/v1/jobs?limit=+5", "", {}, 400, inv, "limit"},
      {"bad cursor", "GET", "/api/v1/jobs?cursor=nope", "", {}, 400, inv, "cursor"},
      {"bad escape in query", "GET", "/api/v1/jobs?state=%zz", "", {}, 400, inv, "query"},
      {"scalars without tag", "GET", "/api/v1/jobs/job-1/scalars", "", {}, 400, inv, "tag"},
      {"scalars empty tag", "GET", "/api/v1/jobs/job-1/scalars?tag=", "", {}, 400, inv, "tag"},
      {"max_points zero",
       "GET",
       "/api/v1/jobs/job-1/scalars?tag=loss&max_points=0",
       "",
       {},
       400,
       inv,
       "max_points"},
      {"max_points over",
       "GET",
       "/api/v1/jobs/job-1/scalars?tag=loss&max_points=100001",
       "",
       {},
       400,
       inv,
       "max_points"},
      {"from_step negative",
       "GET",
       "/api/v1/jobs/job-1/scalars?tag=loss&from_step=-1",
       "",
       {},
       400,
       inv,
       "from_step"},
      {"to before from",
       "GET",
       "/api/v1/jobs/job-1/scalars?tag=loss&from_step=9&to_step=1",
       "",
       {},
       400,
       inv,
       "to_step"},
      {"logs from zero", "GET", "/api/v1/jobs/job-1/logs?from=0", "", {}, 400, inv, "from"},
      {"logs limit huge", "GET", "/api/v1/jobs/job-1/logs?limit=10001", "", {}, 400, inv, "limit"},
      {"follow garbage", "GET", "/api/v1/jobs/job-1/logs?follow=yes", "", {}, 400, inv, "follow"},
      {"last event id text",
       "GET",
       "/api/v1/jobs/job-1/events",
       "",
       {{"Last-Event-ID", "x"}},
       400,
       inv,
       "Last-Event-ID"},
      // Paths and methods.
      {"unknown api path", "GET", "/api/v1/models", "", {}, 404, "not_found", ""},
      {"put on jobs", "PUT", "/api/v1/jobs", "", {}, 405, "method_not_allowed", ""},
      {"patch a job", "PATCH", "/api/v1/jobs/job-1", "", {}, 405, "method_not_allowed", ""},
      {"get stop", "GET", "/api/v1/jobs/job-1/stop", "", {}, 405, "method_not_allowed", ""},
      {"delete metrics", "DELETE", "/metrics", "", {}, 405, "method_not_allowed", ""},
      {"absolute-form target", "GET", "http://example.com/api/v1/jobs", "", {}, 400, inv, "target"},
      {"traversal", "GET", "/../../etc/passwd", "", {}, 400, inv, "path"},
      {"encoded traversal", "GET", "/%2e%2e/%2e%2e/etc/passwd", "", {}, 400, inv, "path"},
      {"mixed traversal", "GET", "/.%2e/secret.txt", "", {}, 400, inv, "path"},
      {"double slash", "GET", "//etc/passwd", "", {}, 400, inv, "path"},
      {"missing file", "GET", "/secret.txt", "", {}, 404, "not_found", ""},
      // Authentication.
      {"no token", "GET", "/api/v1/jobs", "", {}, 401, "unauthenticated", "", true},
      {"wrong token",
       "GET",
       "/api/v1/jobs",
       "",
       {{"Authorization", "Bearer t0keN"}},
       401,
       "unauthenticated",
       "",
       true},
      {"token prefix",
       "GET",
       "/api/v1/jobs",
       "",
       {{"Authorization", "Bearer t0k"}},
       401,
       "unauthenticated",
       "",
       true},
      {"basic auth",
       "GET",
       "/api/v1/jobs",
       "",
       {{"Authorization", "Basic dDBrZW4="}},
       401,
       "unauthenticated",
       "",
       true},
      {"no token on submit", "POST", "/api/v1/jobs", spec(R"("model": "mlp")"), json, 401,
       "unauthenticated", "", true},
      {"no token on metrics", "GET", "/metrics", "", {}, 401, "unauthenticated", "", true},
      // A token in the query string only where EventSource needs it: the event streams.
      {"query token on the job list", "GET", "/api/v1/jobs?access_token=t0ken", "", {}, 401,
       "unauthenticated", "", true},
      {"query token on logs without follow", "GET", "/api/v1/jobs/job-1/logs?access_token=t0ken",
       "", {}, 401, "unauthenticated", "", true},
      {"query token on metrics", "GET", "/metrics?access_token=t0ken", "", {}, 401,
       "unauthenticated", "", true},
      {"query token beside the header", "GET", "/api/v1/jobs/job-1?access_token=t0ken", "", {},
       401, "unauthenticated", ""},
  };
}

}  // namespace trainingd::api
