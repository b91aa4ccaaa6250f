// Internal to HttpServer: one connection (HttpSession) and the state the server shares with its
// sessions. Beast-heavy; include only from the server's .cpp files.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "trainingd/api/http_message.h"
#include "trainingd/api/http_server.h"

namespace trainingd::api {

class Router;
class HttpSession;

// What the server and its sessions share. Outlives every session (the server destroys its
// io_context, and with it the last sessions, before this).
struct ServerShared {
  ServerShared(Router& r, HttpServerOptions o) : router(r), options(std::move(o)) {}

  Router& router;
  const HttpServerOptions options;
  // Runs Router::Handle off the I/O threads. Set by the server before the first session starts;
  // joined after the I/O threads, before the io_context goes.
  boost::asio::thread_pool* handlers = nullptr;

  std::mutex mu;
  std::condition_variable sessions_changed;
  std::unordered_map<const HttpSession*, std::weak_ptr<HttpSession>> sessions;  // guarded by mu
  bool stopping = false;                                                        // guarded by mu
};

// The bounded queue between a JobService thread (the producer, via the EventDeliver the session
// hands to the router) and the session's strand (the consumer). Thread-safe.
struct EventQueue {
  std::mutex mu;
  std::deque<std::string> frames;  // formatted SSE events
  size_t bytes = 0;
  bool overflow = false;      // the client fell behind: drop it
  bool closed = false;        // the session is gone or going: accept nothing, wake no one
  bool wake_pending = false;  // a wake is posted and not yet handled
  // While the router handles the request: what arrives then is the subscription's replay of the
  // history after Last-Event-ID, bounded by that history, so the slow-client limits do not apply
  // (a client reconnecting from id 0 to a job with a long history must not be dropped before
  // its first byte).
  bool replaying = false;
  std::function<void()> wake;  // posts the session's FlushEvents; set once before any delivery
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, ServerShared& shared);
  ~HttpSession();

  // Registers with the server and starts reading; call once, right after make_shared.
  void Start();
  // From any thread: finish the response being written, if any, then close.
  void Shutdown();
  // From any thread: stop taking events (the server is going away).
  void CloseEventQueue();

 private:
  void DoReadHeader();
  void OnReadHeader(boost::beast::error_code ec, size_t bytes);
  void DoReadBody();
  // An upload's body (Router::StreamsBody): asked of the router with the header first, then
  // read a buffer at a time, each appended on the handler pool before the next read.
  void StartUpload();
  void OnUploadStarted(HttpResponse response);
  void ReadUploadChunk();
  void OnUploadChunk(boost::beast::error_code ec, size_t bytes);
  void FinishUpload(engine::Status body_status);
  void OnRead(boost::beast::error_code ec, size_t bytes);
  void OnReadError(boost::beast::error_code ec);
  void OnHandled(HttpResponse response, bool keep_alive);
  void SetReplaying(bool replaying);
  void WriteResponse(HttpResponse response, bool keep_alive);
  void OnWrite(bool keep_alive, boost::beast::error_code ec, size_t bytes);
  void WriteErrorAndClose(int status, std::string_view code, std::string_view message);
  void LingerClose();
  void DoDrain();

  void StartEventStream(HttpResponse response);
  void FlushEvents();
  void OnEventWrite(boost::beast::error_code ec, size_t bytes);
  void WatchClient();
  void ArmKeepalive();

  void OnShutdown();
  // Closes the connection now; `dropped` = because the client fell behind. Idempotent.
  void Close(bool dropped = false);

  ServerShared& shared_;
  boost::beast::tcp_stream stream_;
  std::string remote_;  // the peer's address
  boost::asio::steady_timer keepalive_timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<boost::beast::http::response<boost::beast::http::string_body>> response_;
  // While an upload streams: its parser (taken over from parser_ after the header), the
  // request's header as the router saw it, what the router feeds, and the read buffer.
  std::optional<boost::beast::http::request_parser<boost::beast::http::buffer_body>> upload_parser_;
  HttpRequest upload_header_;
  std::unique_ptr<UploadBody> upload_;
  std::vector<char> upload_buffer_;
  std::array<char, 4096> discard_{};

  std::shared_ptr<EventQueue> queue_ = std::make_shared<EventQueue>();
  EventDeliver deliver_;
  std::unique_ptr<Subscription> subscription_;
  std::string pending_;       // stream bytes to send ahead of queued frames (header, keep-alive)
  std::string write_buffer_;  // stream bytes being written

  bool reading_ = false;    // waiting for (part of) a request
  bool writing_ = false;    // an event-stream write is in flight
  bool streaming_ = false;  // the connection is an event stream
  bool closing_ = false;    // Shutdown() was called
  bool closed_ = false;
};

}  // namespace trainingd::api
