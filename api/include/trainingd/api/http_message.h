// HttpRequest / HttpResponse: the plain request and response values the Router works on, so that
// routing is a function from request to response that tests call without sockets, and so that no
// header many files include pulls in Boost.Beast (the server converts at the socket boundary).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/api/upload_body.h"

namespace trainingd::api {

// Header names compare case-insensitively (RFC 9110); values are kept as received.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// ASCII case-insensitive equality, for header names and media types.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent (methods are case-sensitive)
  std::string target;  // origin-form: "/api/v1/jobs?state=running"
  HttpHeaders headers;
  std::string body;
  // The server streams this request's body instead of reading it into `body` (an upload,
  // Router::StreamsBody): the route answers with an `upload` to feed, or a refusal.
  bool body_follows = false;
  // The client's address as the server saw it ("" in tests); for the audit only.
  std::string remote;

  // The first value of header `name`, or "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;  // Content-Type among them; Content-Length is the server's job
  std::string body;

  // Set by the event-stream routes (GET .../events, .../logs?follow=true) instead of a body: the
  // server sends `headers` with status 200 and then each event handed to the request's
  // EventDeliver, for as long as it keeps `subscription` alive.
  bool event_stream = false;
  std::unique_ptr<Subscription> subscription;

  // Set by an upload route for a request whose body_follows: instead of answering now, the
  // server feeds it the body and then asks Router::FinishUpload for the answer.
  std::unique_ptr<UploadBody> upload;

  // Set by a route that answers later (an inference waiting for its batch) instead of now: the
  // server calls it once with `send`, which takes the answer; `send` may be called from any
  // thread, exactly once, and the connection waits for it.
  std::function<void(std::function<void(HttpResponse)> send)> answer_later;

  // Never sent: what went wrong behind a 500, for the daemon's log (InternalErrorResponse).
  std::string log_detail;

  std::string_view Header(std::string_view name) const;
  // Replaces header `name` (or adds it).
  void SetHeader(std::string_view name, std::string value);
};

// How a connection takes the events of a stream it opened. Called on a JobService thread, in id
// order; it must not block (queue and return) and must not call back into the JobService.
using EventDeliver = std::function<void(const ServiceEvent&)>;

}  // namespace trainingd::api
