// HttpServer: HTTP/1.1 over Boost.Beast/Asio in front of a Router. Beast stays in the .cpp files
// (this header is cheap to include).
//
// Each connection is a session on its own strand that lives as long as its pending I/O. A
// request's header must arrive within header_limit bytes (else 431) and its body within
// body_limit (else 413, also when Content-Length announces more); the whole request must arrive
// within read_timeout of the session starting to wait for it (so an idle keep-alive connection or
// a slowloris client sending one byte at a time is closed). Responses are written within
// write_timeout. An event-stream answer turns the connection into a server-sent-events stream:
// events go through a per-connection queue bounded by sse_queue_events and sse_queue_bytes; a
// client that falls behind so far that the queue would overflow is disconnected (never buffered
// without bound). Streams get a comment every sse_keepalive so proxies and clients see life.
//
// At most max_connections are open at once; more are accepted and closed at once. When accept
// fails because the process (EMFILE) or the system (ENFILE) is out of file descriptors, the
// server does not retry at once (the pending connection would wake it again and again, a busy
// loop): it waits accept_backoff_min, doubling up to accept_backoff_max, until an accept works
// again; it logs once when that starts and once when it ends, and counts the failures
// (HttpMetrics: trainingd_http_accept_errors_total, trainingd_http_accept_paused).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"

namespace trainingd::api {

class Router;

struct HttpServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal
  uint16_t port = 8080;               // 0 = the OS chooses; see HttpServer::port()
  int io_threads = 2;                 // >= 1; they only parse, write and stream
  // >= 1: the threads that run the Router's handlers, which may wait for SQLite or the disk,
  // so an I/O thread never does.
  int handler_threads = 2;
  size_t header_limit = 8 * 1024;  // bytes of request line + headers
  size_t body_limit = 1 << 20;     // bytes of request body
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  std::chrono::milliseconds sse_keepalive{15000};
  size_t sse_queue_events = 1024;                    // events waiting for one slow client, at most
  size_t sse_queue_bytes = 4u << 20;                 // bytes of those events, at most
  size_t max_connections = 1024;                     // more are accepted and closed at once
  std::chrono::milliseconds stop_grace{2000};        // Stop() waits this long for sessions to end
  std::chrono::milliseconds accept_backoff_min{50};  // first wait after EMFILE/ENFILE
  std::chrono::milliseconds accept_backoff_max{1000};  // the wait doubles up to this
  // The server's own log lines (accept trouble, uncaught exceptions); called on I/O threads.
  // Empty = stderr.
  std::function<void(std::string_view)> log;
};

class HttpServer {
 public:
  // `router` must outlive the server.
  HttpServer(Router& router, HttpServerOptions options);
  // Stops the server if it is running.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens, tells the router the address and port it bound
  // (Router::SetListenEndpoint, for the Host and Origin checks) and starts the I/O threads.
  // InvalidArgument for a bad address or option, Unavailable when the address cannot be bound
  // (in use, no permission). Call once.
  engine::Status Start();

  // The bound port (the OS's choice when options.port was 0); 0 before Start.
  uint16_t port() const;

  // Stops accepting, closes every connection (event streams at once; plain requests after the
  // response being written), waits up to stop_grace for the sessions to end, then stops and
  // joins the I/O threads. Idempotent; safe from any thread except an I/O thread.
  void Stop();

  // Connections open now; for tests and metrics.
  size_t connection_count() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace trainingd::api
