#include "http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/version.hpp>
#include <cstdint>
#include <limits>

#include "beast_request.h"
#include "trainingd/api/router.h"
#include "trainingd/api/sse.h"

namespace trainingd::api {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using beast::error_code;

namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr int kSseRetryMs = 3000;
// How much of an upload is read before it is written out.
constexpr size_t kUploadBufferBytes = size_t{1} << 20;
constexpr size_t kUploadReadBytes = size_t{1} << 16;

bool IsHttpParseError(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket socket, ServerShared& shared)
    : shared_(shared), stream_(std::move(socket)), keepalive_timer_(stream_.get_executor()) {
  // For the audit (router.h): the peer's address, "" when the socket no longer knows it.
  boost::system::error_code ec;
  auto endpoint = stream_.socket().remote_endpoint(ec);
  if (!ec) remote_ = endpoint.address().to_string();
}

HttpSession::~HttpSession() {
  CloseEventQueue();
  if (streaming_ && !closed_) shared_.router.metrics().EventStreamClosed(false);
  subscription_.reset();
  std::lock_guard lock(shared_.mu);
  shared_.sessions.erase(this);
  shared_.sessions_changed.notify_all();
}

void HttpSession::Start() {
  {
    std::lock_guard lock(shared_.mu);
    shared_.sessions.emplace(this, weak_from_this());
    closing_ = shared_.stopping;
  }
  // The deliver callback holds only the queue; the queue wakes the session through a weak
  // pointer, so a subscription never keeps its session alive (no cycle).
  auto executor = stream_.get_executor();
  std::weak_ptr<HttpSession> weak = weak_from_this();
  queue_->wake = [executor, weak] {
    net::post(executor, [weak] {
      if (auto self = weak.lock()) self->FlushEvents();
    });
  };
  deliver_ = [queue = queue_, max_events = shared_.options.sse_queue_events,
              max_bytes = shared_.options.sse_queue_bytes](const ServiceEvent& event) {
    std::string frame = FormatSseEvent(event);
    std::lock_guard lock(queue->mu);
    if (queue->closed || queue->overflow) return;
    if (!queue->replaying &&
        (queue->frames.size() >= max_events || queue->bytes + frame.size() > max_bytes)) {
      queue->overflow = true;
      queue->frames.clear();
      queue->bytes = 0;
    } else {
      queue->bytes += frame.size();
      queue->frames.push_back(std::move(frame));
    }
    if (!queue->wake_pending) {
      queue->wake_pending = true;
      queue->wake();
    }
  };
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&HttpSession::DoReadHeader, shared_from_this()));
}

void HttpSession::Shutdown() {
  net::post(stream_.get_executor(),
            beast::bind_front_handler(&HttpSession::OnShutdown, shared_from_this()));
}

void HttpSession::SetReplaying(bool replaying) {
  std::lock_guard lock(queue_->mu);
  queue_->replaying = replaying;
}

void HttpSession::CloseEventQueue() {
  std::lock_guard lock(queue_->mu);
  queue_->closed = true;
  queue_->frames.clear();
  queue_->bytes = 0;
}

void HttpSession::OnShutdown() {
  closing_ = true;
  if (streaming_ || reading_) Close();
  // Otherwise a response is being written; OnWrite closes after it.
}

void HttpSession::DoReadHeader() {
  if (closing_ || closed_) return Close();
  parser_.emplace();
  LimitRequestParser(*parser_, shared_.options);
  // The body's limit depends on the route, known once the header is in (OnReadHeader).
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  // One deadline for the whole request, header and body: a client trickling bytes cannot keep
  // the connection (slowloris), nor can an idle keep-alive connection.
  stream_.expires_after(shared_.options.read_timeout);
  reading_ = true;
  http::async_read_header(
      stream_, buffer_, *parser_,
      beast::bind_front_handler(&HttpSession::OnReadHeader, shared_from_this()));
}

void HttpSession::OnReadHeader(error_code ec, size_t) {
  if (ec) return OnReadError(ec);
  const auto& message = parser_->get();
  const auto method = message.method_string();
  const auto target = message.target();
  if (Router::StreamsBody({method.data(), method.size()}, {target.data(), target.size()})) {
    return StartUpload();
  }
  const auto length = parser_->content_length();
  if (length && *length > shared_.options.body_limit) return OnReadError(http::error::body_limit);
  parser_->body_limit(shared_.options.body_limit);
  if (!parser_->is_done() && beast::iequals(message[http::field::expect], "100-continue")) {
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = shared_from_this()](error_code write_ec, size_t) {
                       if (write_ec) return self->Close();
                       self->DoReadBody();
                     });
    return;
  }
  DoReadBody();
}

void HttpSession::DoReadBody() {
  if (parser_->is_done()) return OnRead({}, 0);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&HttpSession::OnRead, shared_from_this()));
}

void HttpSession::StartUpload() {
  upload_header_ = HeaderToHttpRequest(parser_->get());
  upload_header_.remote = remote_;
  // The router checks the header (browser rules, token, name, size) on the handler pool; the
  // body stays unread until it agrees.
  net::post(*shared_.handlers, [self = shared_from_this()]() mutable {
    HttpResponse response = self->shared_.router.Handle(self->upload_header_);
    auto executor = self->stream_.get_executor();
    net::post(executor, [self = std::move(self), response = std::move(response)]() mutable {
      self->OnUploadStarted(std::move(response));
    });
  });
}

void HttpSession::OnUploadStarted(HttpResponse response) {
  if (closed_) return;
  if (!response.upload) {
    // Refused before a byte of the body: answer and close, since the body is still coming.
    reading_ = false;
    parser_.reset();
    return WriteResponse(std::move(response), false);
  }
  upload_ = std::move(response.upload);
  upload_parser_.emplace(std::move(*parser_));
  parser_.reset();
  upload_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // the upload counts
  upload_buffer_.resize(kUploadBufferBytes);
  // Beast reads into buffer_ as much as it has room for (at most 64 KiB): room for that much,
  // not the few KiB a header left, or the body comes in thousands of small reads.
  buffer_.reserve(kUploadReadBytes);
  const auto& message = upload_parser_->get();
  if (!upload_parser_->is_done() && beast::iequals(message[http::field::expect], "100-continue")) {
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = shared_from_this()](error_code write_ec, size_t) {
                       if (write_ec) return self->Close();
                       self->ReadUploadChunk();
                     });
    return;
  }
  ReadUploadChunk();
}

void HttpSession::ReadUploadChunk() {
  if (closing_ || closed_) return Close();
  auto& body = upload_parser_->get().body();
  body.data = upload_buffer_.data();
  body.size = upload_buffer_.size();
  // A deadline per buffer, not per request: a large upload may take minutes, but a client that
  // stops sending is dropped.
  stream_.expires_after(shared_.options.read_timeout);
  http::async_read(stream_, buffer_, *upload_parser_,
                   beast::bind_front_handler(&HttpSession::OnUploadChunk, shared_from_this()));
}

void HttpSession::OnUploadChunk(error_code ec, size_t) {
  if (ec == http::error::need_buffer) ec = {};
  if (ec) {
    // The client went away or sent a malformed body: the upload is dropped, leaving nothing.
    reading_ = false;
    if (IsHttpParseError(ec) && ec != http::error::end_of_stream &&
        ec != http::error::partial_message) {
      return FinishUpload(engine::Status::InvalidArgument("body: malformed: " + ec.message()));
    }
    upload_.reset();
    return Close();
  }
  const size_t filled = upload_buffer_.size() - upload_parser_->get().body().size;
  const bool done = upload_parser_->is_done();
  // The file is written on the handler pool; the next read waits for it (back-pressure).
  net::post(*shared_.handlers, [self = shared_from_this(), filled, done]() mutable {
    engine::Status status =
        self->upload_->Write(std::string_view(self->upload_buffer_.data(), filled));
    auto executor = self->stream_.get_executor();
    net::post(executor, [self = std::move(self), status = std::move(status), done]() mutable {
      if (self->closed_) return;
      if (!status.ok() || done) return self->FinishUpload(std::move(status));
      self->ReadUploadChunk();
    });
  });
}

void HttpSession::FinishUpload(engine::Status body_status) {
  reading_ = false;
  stream_.expires_never();
  // A refused body is not read to its end: the connection closes after the answer.
  const bool keep_alive = body_status.ok() && upload_parser_->get().keep_alive();
  net::post(*shared_.handlers,
            [self = shared_from_this(), body_status = std::move(body_status), keep_alive]() {
              HttpResponse response = self->shared_.router.FinishUpload(
                  self->upload_header_, *self->upload_, body_status);
              auto executor = self->stream_.get_executor();
              net::post(executor, [self, response = std::move(response), keep_alive]() mutable {
                self->upload_.reset();
                self->upload_parser_.reset();
                self->upload_buffer_ = {};
                self->OnHandled(std::move(response), keep_alive);
              });
            });
}

void HttpSession::OnRead(error_code ec, size_t) {
  if (ec) return OnReadError(ec);
  reading_ = false;
  stream_.expires_never();
  bool keep_alive = parser_->get().keep_alive();
  HttpRequest request = ToHttpRequest(parser_->release());
  request.remote = remote_;
  parser_.reset();
  // The handler may wait for SQLite or the disk: it runs on the handler pool, and the response
  // comes back to this connection's strand. Nothing else touches the session meanwhile (it is
  // neither reading nor writing; a Shutdown only marks it closing).
  net::post(*shared_.handlers,
            [self = shared_from_this(), request = std::move(request), keep_alive]() mutable {
              self->SetReplaying(true);
              HttpResponse response = self->shared_.router.Handle(request, self->deliver_);
              self->SetReplaying(false);
              auto executor = self->stream_.get_executor();
              net::post(executor, [self = std::move(self), response = std::move(response),
                                   keep_alive]() mutable {
                self->OnHandled(std::move(response), keep_alive);
              });
            });
}

void HttpSession::OnHandled(HttpResponse response, bool keep_alive) {
  if (closed_) return;
  if (response.answer_later) {
    // The answer comes on another thread (an inference's batch ran): back to this strand.
    auto later = std::move(response.answer_later);
    later([self = shared_from_this(), keep_alive](HttpResponse answer) {
      auto executor = self->stream_.get_executor();
      net::post(executor, [self, answer = std::move(answer), keep_alive]() mutable {
        self->OnHandled(std::move(answer), keep_alive);
      });
    });
    return;
  }
  if (response.event_stream) {
    if (closing_) return Close();
    return StartEventStream(std::move(response));
  }
  WriteResponse(std::move(response), keep_alive && !closing_);
}

void HttpSession::OnReadError(error_code ec) {
  reading_ = false;
  if (closed_) return;
  auto& metrics = shared_.router.metrics();
  if (ec == http::error::body_limit) {
    metrics.RecordRequest("unparsed", "-", 413, 0);
    return WriteErrorAndClose(
        413, "payload_too_large",
        "request body is over " + std::to_string(shared_.options.body_limit) + " bytes");
  }
  if (ec == http::error::header_limit) {
    metrics.RecordRequest("unparsed", "-", 431, 0);
    return WriteErrorAndClose(431, "request_header_fields_too_large",
                              "request line and headers are over " +
                                  std::to_string(shared_.options.header_limit) + " bytes");
  }
  // A malformed request (not an end of stream, timeout or socket error) gets a 400.
  if (IsHttpParseError(ec) && ec != http::error::end_of_stream &&
      ec != http::error::partial_message) {
    metrics.RecordRequest("unparsed", "-", 400, 0);
    return WriteErrorAndClose(400, "bad_request", "malformed HTTP request: " + ec.message());
  }
  Close();  // timeout, client closed, reset
}

void HttpSession::WriteErrorAndClose(int status, std::string_view code, std::string_view message) {
  HttpResponse response = ErrorResponse(status, code, message);
  AddSecurityHeaders(response);
  WriteResponse(std::move(response), false);
}

void HttpSession::WriteResponse(HttpResponse response, bool keep_alive) {
  auto message = std::make_shared<http::response<http::string_body>>();
  message->version(11);
  message->result(static_cast<unsigned>(response.status));
  message->set(http::field::server, "trainingd");
  for (auto& [name, value] : response.headers) message->set(name, value);
  message->body() = std::move(response.body);
  message->keep_alive(keep_alive);
  message->prepare_payload();
  // A 204 or 304 has no body, and a length of 0 would misstate the 304's representation.
  if (response.status == 204 || response.status == 304) message->erase(http::field::content_length);
  response_ = message;
  stream_.expires_after(shared_.options.write_timeout);
  http::async_write(
      stream_, *response_,
      beast::bind_front_handler(&HttpSession::OnWrite, shared_from_this(), keep_alive));
}

void HttpSession::OnWrite(bool keep_alive, error_code ec, size_t) {
  response_.reset();
  if (ec) return Close();
  if (!keep_alive || closing_) return LingerClose();
  DoReadHeader();
}

// Half-close, then read and discard what the client still sends (a body we refused) for a
// moment, so closing does not reset the connection before the client has read our answer.
void HttpSession::LingerClose() {
  error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
  if (ec) return Close();
  stream_.expires_after(kLingerTime);
  DoDrain();
}

void HttpSession::DoDrain() {
  stream_.async_read_some(net::buffer(discard_),
                          [self = shared_from_this()](error_code ec, size_t) {
                            if (ec) return self->Close();
                            self->DoDrain();
                          });
}

void HttpSession::StartEventStream(HttpResponse response) {
  streaming_ = true;
  subscription_ = std::move(response.subscription);
  shared_.router.metrics().EventStreamOpened();
  // Delimited by the connection's end (no Content-Length, no chunking), which every SSE client
  // accepts.
  pending_ = "HTTP/1.1 200 OK\r\nServer: trainingd\r\n";
  for (const auto& [name, value] : response.headers) pending_ += name + ": " + value + "\r\n";
  pending_ += "Connection: close\r\n\r\n";
  pending_ += FormatSseRetry(kSseRetryMs);
  WatchClient();
  ArmKeepalive();
  FlushEvents();
}

void HttpSession::FlushEvents() {
  if (closed_ || !streaming_) return;
  std::string out;
  bool drop = false;
  {
    std::lock_guard lock(queue_->mu);
    queue_->wake_pending = false;
    if (queue_->overflow) {
      drop = true;
    } else if (!writing_) {
      out = std::move(pending_);
      pending_.clear();
      for (std::string& frame : queue_->frames) out += frame;
      queue_->frames.clear();
      queue_->bytes = 0;
    }
  }
  if (drop) return Close(/*dropped=*/true);
  if (writing_ || out.empty()) return;
  write_buffer_ = std::move(out);
  writing_ = true;
  stream_.expires_after(shared_.options.write_timeout);
  net::async_write(stream_, net::buffer(write_buffer_),
                   beast::bind_front_handler(&HttpSession::OnEventWrite, shared_from_this()));
}

void HttpSession::OnEventWrite(error_code ec, size_t) {
  writing_ = false;
  if (ec) return Close();
  stream_.expires_never();
  FlushEvents();
}

// An event-stream client sends nothing; a read completes only when it goes away (or misbehaves).
// It reads the socket directly, outside the stream's write deadline.
void HttpSession::WatchClient() {
  stream_.socket().async_read_some(net::buffer(discard_),
                                   [self = shared_from_this()](error_code ec, size_t) {
                                     if (ec) return self->Close();
                                     self->WatchClient();
                                   });
}

void HttpSession::ArmKeepalive() {
  keepalive_timer_.expires_after(shared_.options.sse_keepalive);
  keepalive_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->closed_) return;
    bool idle;
    {
      std::lock_guard lock(self->queue_->mu);
      idle = self->queue_->frames.empty();
    }
    if (idle && !self->writing_ && self->pending_.empty()) {
      self->pending_ = FormatSseComment("keep-alive");
      self->FlushEvents();
    }
    self->ArmKeepalive();
  });
}

void HttpSession::Close(bool dropped) {
  if (closed_) return;
  closed_ = true;
  CloseEventQueue();
  if (streaming_) shared_.router.metrics().EventStreamClosed(dropped);
  subscription_.reset();  // unsubscribes
  keepalive_timer_.cancel();
  error_code ec;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace trainingd::api
