// HttpClient: the client side of the daemon's HTTP API, on Boost.Beast, for `trainingd jobs ...`
// and `trainingd datasets ...`. Synchronous to its caller: each call runs its own I/O to the end,
// a deadline or a cancel, and returns. One connection per call (`Connection: close`), so a call
// never finds a connection the daemon has closed since.
//
// Errors: a call returns the daemon's answer as an HttpReply whatever its status (the caller maps
// 401 or 404 to its own errors); a Status only when there was no answer: Unavailable (could not
// connect, or the connection failed before a whole answer), DeadlineExceeded (the deadline
// passed), Cancelled (the `cancelled` callback said so), IoError (a local file), InvalidArgument
// (a malformed URL). Not thread-safe; use one client per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::api {

// "http://host[:port][/base]": the daemon's address. Only http (the daemon serves no TLS; put a
// proxy in front for that, and point the client at it).
struct ServerUrl {
  std::string host;         // "127.0.0.1", "localhost", "::1" (without brackets)
  std::string port;         // "8080"; "80" when the URL has none
  std::string base_path;    // "" or "/prefix" (no trailing slash), before "/api/v1/..."
  std::string host_header;  // "127.0.0.1:8080", what the Host header says
};
// InvalidArgument "<url>: ..." for anything else (https, user info, a query, no host).
engine::Result<ServerUrl> ParseServerUrl(std::string_view url);

struct HttpReply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string content_disposition;
};

// A piece of a request body: literal bytes, or a file streamed from disk a buffer at a time.
struct BodyPart {
  std::string bytes;
  std::string file;  // when not empty, the part is this file's contents (bytes is ignored)
};

using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

class HttpClient {
 public:
  struct Options {
    ServerUrl server;
    std::string token;  // sent as "Authorization: Bearer <token>" when not empty
    // Checked about every 100 ms while a call waits; true ends the call with Cancelled.
    std::function<bool()> cancelled;
    int64_t max_body_bytes = int64_t{4} << 30;  // answers above this fail the call
  };
  explicit HttpClient(Options options);

  // `target` starts with "/" and is sent after the base path. A body is sent when
  // `content_type` is not empty.
  engine::Result<HttpReply> Request(std::string_view method, std::string_view target,
                                    std::string_view body = {}, std::string_view content_type = {},
                                    Deadline deadline = kNoDeadline);

  // A POST whose body is `parts` in order, with Content-Length their total size: files are
  // read and sent 1 MiB at a time, never whole. `progress(sent, total)` after every buffer.
  engine::Result<HttpReply> Upload(std::string_view target, std::string_view content_type,
                                   const std::vector<BodyPart>& parts,
                                   const std::function<void(int64_t, int64_t)>& progress,
                                   Deadline deadline = kNoDeadline);

  // A GET of a server-sent event stream with `Last-Event-ID: last_event_id` (none when < 0).
  // A 2xx answer's body goes to `on_bytes` as it arrives, until the daemon closes the stream
  // (OK), `on_bytes` returns false (OK), the connection fails (Unavailable), no byte arrives for
  // `idle` (Unavailable: the daemon sends a keep-alive every 15 s), the deadline or a cancel.
  // Any other answer is returned whole in *reply, with OK.
  engine::Status Stream(std::string_view target, int64_t last_event_id,
                        const std::function<bool(std::string_view)>& on_bytes, HttpReply* reply,
                        Deadline deadline = kNoDeadline,
                        std::chrono::milliseconds idle = std::chrono::seconds(45));

  const ServerUrl& server() const { return options_.server; }

 private:
  Options options_;
};

}  // namespace trainingd::api
