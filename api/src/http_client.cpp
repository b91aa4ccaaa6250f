#include "trainingd/api/http_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

namespace trainingd::api {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using engine::Status;
using Clock = std::chrono::steady_clock;

engine::Result<ServerUrl> ParseServerUrl(std::string_view url) {
  const std::string quoted = "'" + std::string(url) + "'";
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return Status::InvalidArgument(quoted + ": must start with http:// (the daemon serves no TLS)");
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos) {
    return Status::InvalidArgument(quoted + ": no query or fragment allowed");
  }
  if (authority.find('@') != std::string_view::npos) {
    return Status::InvalidArgument(quoted +
                                   ": no user info allowed (the token goes in "
                                   "TRAININGD_TOKEN or a token file)");
  }
  ServerUrl out;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument(quoted + ": unclosed '['");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument(quoted + ": bad port");
      port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Status::InvalidArgument(quoted + ": no host");
  if (port.empty()) port = "80";
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::InvalidArgument(quoted + ": bad port");
  }
  out.port = std::string(port);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.base_path = std::string(path);
  out.host_header = std::string(authority);
  return out;
}

namespace {

// One connection's I/O, run on its own io_context in slices of 100 ms so that a deadline or a
// cancel is noticed while an operation waits.
class Connection {
 public:
  Connection(const HttpClient::Options& options, Deadline deadline)
      : options_(options), deadline_(deadline), stream_(ioc_) {}

  Status Connect() {
    asio::ip::tcp::resolver resolver(ioc_);
    beast::error_code ec;
    const auto endpoints = resolver.resolve(options_.server.host, options_.server.port, ec);
    if (ec)
      return Status::Unavailable("cannot resolve " + options_.server.host + ": " + ec.message());
    std::optional<beast::error_code> result;
    stream_.async_connect(endpoints, [&](beast::error_code e, const auto&) { result = e; });
    TRAININGD_RETURN_IF_ERROR(Run(result));
    if (*result) {
      return Status::Unavailable("cannot connect to " + options_.server.host_header + ": " +
                                 result->message());
    }
    return Status::Ok();
  }

  Status Write(asio::const_buffer bytes) {
    std::optional<beast::error_code> result;
    asio::async_write(stream_, bytes, [&](beast::error_code e, size_t) { result = e; });
    TRAININGD_RETURN_IF_ERROR(Run(result));
    if (*result) return Status::Unavailable("the connection failed: " + result->message());
    return Status::Ok();
  }

  template <typename Message>
  Status WriteMessage(Message& message) {
    std::optional<beast::error_code> result;
    http::async_write(stream_, message, [&](beast::error_code e, size_t) { result = e; });
    TRAININGD_RETURN_IF_ERROR(Run(result));
    if (*result) return Status::Unavailable("the connection failed: " + result->message());
    return Status::Ok();
  }

  // Reads the whole answer.
  engine::Result<HttpReply> ReadReply() {
    http::response_parser<http::string_body> parser;
    parser.body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    std::optional<beast::error_code> result;
    http::async_read(stream_, buffer_, parser, [&](beast::error_code e, size_t) { result = e; });
    TRAININGD_RETURN_IF_ERROR(Run(result));
    if (*result) return Status::Unavailable("no whole answer: " + result->message());
    return ToReply(parser.get());
  }

  // Reads the answer's header; then, for a 2xx, the body in pieces to on_bytes.
  Status ReadStream(const std::function<bool(std::string_view)>& on_bytes, HttpReply* reply,
                    std::chrono::milliseconds idle) {
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    std::optional<beast::error_code> result;
    http::async_read_header(stream_, buffer_, parser,
                            [&](beast::error_code e, size_t) { result = e; });
    TRAININGD_RETURN_IF_ERROR(Run(result, idle));
    if (*result) return Status::Unavailable("no answer: " + result->message());
    const auto& header = parser.get();
    reply->status = static_cast<int>(header.result_int());
    reply->content_type = std::string(header[http::field::content_type]);
    const bool ok = reply->status / 100 == 2;
    char chunk[16384];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      result.reset();
      http::async_read_some(stream_, buffer_, parser,
                            [&](beast::error_code e, size_t) { result = e; });
      TRAININGD_RETURN_IF_ERROR(Run(result, idle));
      if (*result && *result != http::error::need_buffer) {
        return Status::Unavailable("the stream ended: " + result->message());
      }
      const size_t n = sizeof chunk - parser.get().body().size;
      if (n == 0) continue;
      if (!ok) {
        if (reply->body.size() < (size_t{1} << 20)) reply->body.append(chunk, n);
        continue;
      }
      if (!on_bytes(std::string_view(chunk, n))) return Status::Ok();
    }
    return Status::Ok();
  }

 private:
  template <typename Body>
  static HttpReply ToReply(http::response<Body>& response) {
    HttpReply reply;
    reply.status = static_cast<int>(response.result_int());
    reply.body = std::move(response.body());
    reply.content_type = std::string(response[http::field::content_type]);
    reply.content_disposition = std::string(response[http::field::content_disposition]);
    return reply;
  }

  // Runs the io_context until `result` is set, the deadline passes or the caller cancels; then
  // closes the socket and lets the aborted handler run. With `idle` > 0, also when nothing
  // happens for that long: Unavailable, so that the caller reconnects.
  Status Run(std::optional<beast::error_code>& result,
             std::chrono::milliseconds idle = std::chrono::milliseconds(0)) {
    const Deadline limit = idle.count() > 0 ? std::min(deadline_, Clock::now() + idle) : deadline_;
    ioc_.restart();
    Status why;
    while (!result) {
      if (options_.cancelled && options_.cancelled()) {
        why = Status::Cancelled("cancelled");
      } else if (Clock::now() >= limit) {
        why = limit == deadline_ ? Status::DeadlineExceeded("timed out")
                                 : Status::Unavailable("no data from the daemon for " +
                                                       std::to_string(idle.count() / 1000) + " s");
      }
      if (!why.ok()) {
        beast::error_code ignored;
        stream_.socket().close(ignored);
        ioc_.restart();
        ioc_.run();
        return why;
      }
      ioc_.run_one_for(std::chrono::milliseconds(100));
      if (ioc_.stopped()) ioc_.restart();
    }
    return Status::Ok();
  }

  const HttpClient::Options& options_;
  const Deadline deadline_;
  asio::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

template <typename Body>
void SetCommonFields(http::request<Body>& req, const HttpClient::Options& options) {
  req.set(http::field::host, options.server.host_header);
  req.set(http::field::user_agent, "trainingd-cli");
  req.set(http::field::connection, "close");
  if (!options.token.empty()) req.set(http::field::authorization, "Bearer " + options.token);
}

http::verb Verb(std::string_view method) {
  const http::verb v = http::string_to_verb(beast::string_view(method.data(), method.size()));
  return v == http::verb::unknown ? http::verb::get : v;
}

}  // namespace

HttpClient::HttpClient(Options options) : options_(std::move(options)) {}

engine::Result<HttpReply> HttpClient::Request(std::string_view method, std::string_view target,
                                              std::string_view body, std::string_view content_type,
                                              Deadline deadline) {
  Connection conn(options_, deadline);
  TRAININGD_RETURN_IF_ERROR(conn.Connect());
  http::request<http::string_body> req(Verb(method),
                                       options_.server.base_path + std::string(target), 11);
  SetCommonFields(req, options_);
  if (!content_type.empty()) {
    req.set(http::field::content_type, std::string(content_type));
    req.body() = std::string(body);
  }
  req.prepare_payload();
  TRAININGD_RETURN_IF_ERROR(conn.WriteMessage(req));
  return conn.ReadReply();
}

engine::Result<HttpReply> HttpClient::Upload(std::string_view target, std::string_view content_type,
                                             const std::vector<BodyPart>& parts,
                                             const std::function<void(int64_t, int64_t)>& progress,
                                             Deadline deadline) {
  std::vector<std::ifstream> files(parts.size());
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].file.empty()) {
      total += static_cast<int64_t>(parts[i].bytes.size());
      continue;
    }
    files[i].open(parts[i].file, std::ios::binary | std::ios::ate);
    if (!files[i]) return Status::IoError(parts[i].file + ": cannot open");
    total += static_cast<int64_t>(files[i].tellg());
    files[i].seekg(0);
  }
  Connection conn(options_, deadline);
  TRAININGD_RETURN_IF_ERROR(conn.Connect());
  http::request<http::empty_body> req(http::verb::post,
                                      options_.server.base_path + std::string(target), 11);
  SetCommonFields(req, options_);
  req.set(http::field::content_type, std::string(content_type));
  req.set(http::field::content_length, std::to_string(total));
  std::ostringstream head;
  head << req.base();
  const std::string header = head.str();
  TRAININGD_RETURN_IF_ERROR(conn.Write(asio::buffer(header)));
  int64_t sent = 0;
  std::vector<char> chunk(size_t{1} << 20);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].file.empty()) {
      TRAININGD_RETURN_IF_ERROR(conn.Write(asio::buffer(parts[i].bytes)));
      sent += static_cast<int64_t>(parts[i].bytes.size());
      if (progress) progress(sent, total);
      continue;
    }
    while (files[i]) {
      files[i].read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      const std::streamsize n = files[i].gcount();
      if (n <= 0) break;
      Status st = conn.Write(asio::buffer(chunk.data(), static_cast<size_t>(n)));
      // The daemon may answer (413, 400) and close before the body is whole: read its answer.
      if (!st.ok()) {
        if (st.code() != engine::StatusCode::kUnavailable) return st;
        auto early = conn.ReadReply();
        if (early.ok()) return early;
        return st;
      }
      sent += n;
      if (progress) progress(sent, total);
    }
    if (files[i].bad()) return Status::IoError(parts[i].file + ": read failed");
  }
  return conn.ReadReply();
}

Status HttpClient::Stream(std::string_view target, int64_t last_event_id,
                          const std::function<bool(std::string_view)>& on_bytes, HttpReply* reply,
                          Deadline deadline, std::chrono::milliseconds idle) {
  Connection conn(options_, deadline);
  TRAININGD_RETURN_IF_ERROR(conn.Connect());
  http::request<http::empty_body> req(http::verb::get,
                                      options_.server.base_path + std::string(target), 11);
  SetCommonFields(req, options_);
  req.set(http::field::accept, "text/event-stream");
  if (last_event_id >= 0) req.set("Last-Event-ID", std::to_string(last_event_id));
  TRAININGD_RETURN_IF_ERROR(conn.WriteMessage(req));
  return conn.ReadStream(on_bytes, reply, idle);
}

}  // namespace trainingd::api
