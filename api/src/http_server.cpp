#include "trainingd/api/http_server.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "http_session.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace net = boost::asio;
using engine::Status;
using net::ip::tcp;

namespace {

// accept() failures that persist while the pending connection waits: out of descriptors (the
// process's EMFILE, the system's ENFILE) or of kernel memory.
bool IsOutOfResources(const boost::system::error_code& ec) {
  return ec == net::error::no_descriptors || ec == net::error::no_buffer_space ||
         ec == net::error::no_memory ||
         ec == boost::system::error_code(ENFILE, boost::system::system_category());
}

}  // namespace

// Member order matters: `shared` outlives the io_context (sessions destroyed with it still
// deregister), and the acceptor dies before the io_context.
struct HttpServer::Impl {
  Impl(Router& router, HttpServerOptions options)
      : shared(router, std::move(options)),
        acceptor(net::make_strand(ioc)),
        accept_timer(acceptor.get_executor()) {}

  void DoAccept();
  void OnAccept(boost::system::error_code ec, tcp::socket socket);
  void BackOff(const boost::system::error_code& ec);
  void Log(const std::string& line) const;
  void Run();

  ServerShared shared;
  net::io_context ioc;
  tcp::acceptor acceptor;
  // On the acceptor's strand, like everything below up to `threads`.
  net::steady_timer accept_timer;
  std::chrono::milliseconds accept_backoff{0};  // 0 = accepting normally
  uint64_t accept_failures = 0;                 // in the current episode
  std::vector<std::thread> threads;
  // After ioc: destroyed (joined) first, since its handlers hold sessions bound to ioc.
  std::optional<net::thread_pool> handlers;
  std::mutex lifecycle_mu;  // Start/Stop
  bool started = false;
  bool stopped = false;
  uint16_t port = 0;
};

void HttpServer::Impl::DoAccept() {
  acceptor.async_accept(net::make_strand(ioc),
                        [this](boost::system::error_code ec, tcp::socket socket) {
                          OnAccept(ec, std::move(socket));
                        });
}

void HttpServer::Impl::OnAccept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
  if (IsOutOfResources(ec)) return BackOff(ec);
  if (!ec) {
    if (accept_backoff.count() > 0) {
      Log("trainingd http: accepting connections again after " + std::to_string(accept_failures) +
          " failed accept(s)");
      accept_backoff = std::chrono::milliseconds(0);
      accept_failures = 0;
      shared.router.metrics().SetAcceptPaused(false);
    }
    size_t open;
    bool stopping;
    {
      std::lock_guard lock(shared.mu);
      open = shared.sessions.size();
      stopping = shared.stopping;
    }
    if (stopping || open >= shared.options.max_connections) {
      if (!stopping) shared.router.metrics().ConnectionRefused();
      boost::system::error_code ignored;
      socket.close(ignored);
    } else {
      std::make_shared<HttpSession>(std::move(socket), shared)->Start();
    }
  }
  // Other errors (a connection reset before it was accepted) concern one connection.
  DoAccept();
}

// Out of descriptors: the connection stays in the listen queue, so accepting at once would fail
// at once, forever. Wait, longer each time, until closing connections or files frees some.
void HttpServer::Impl::BackOff(const boost::system::error_code& ec) {
  const HttpServerOptions& options = shared.options;
  shared.router.metrics().AcceptFailed();
  ++accept_failures;
  if (accept_backoff.count() == 0) {
    accept_backoff = options.accept_backoff_min;
    shared.router.metrics().SetAcceptPaused(true);
    size_t open;
    {
      std::lock_guard lock(shared.mu);
      open = shared.sessions.size();
    }
    Log("trainingd http: cannot accept connections: " + ec.message() + " (" + std::to_string(open) +
        " connections open); retrying with backoff until descriptors free up (raise the "
        "descriptor limit or lower max_connections)");
  } else {
    accept_backoff = std::min(accept_backoff * 2, options.accept_backoff_max);
  }
  accept_timer.expires_after(accept_backoff);
  accept_timer.async_wait([this](boost::system::error_code wait_ec) {
    if (wait_ec || !acceptor.is_open()) return;
    DoAccept();
  });
}

void HttpServer::Impl::Log(const std::string& line) const {
  if (shared.options.log) return shared.options.log(line);
  std::string out = line + "\n";
  std::fwrite(out.data(), 1, out.size(), stderr);
}

// A handler that throws must not take the thread down with the server: report and go on.
void HttpServer::Impl::Run() {
  while (true) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      Log(std::string("trainingd http: uncaught exception in I/O thread: ") + e.what());
    }
  }
}

HttpServer::HttpServer(Router& router, HttpServerOptions options)
    : impl_(std::make_shared<Impl>(router, std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  std::lock_guard lifecycle(impl_->lifecycle_mu);
  if (impl_->started) return Status::FailedPrecondition("HTTP server already started");
  const HttpServerOptions& options = impl_->shared.options;
  if (options.io_threads < 1) return Status::InvalidArgument("io_threads: must be >= 1");
  if (options.handler_threads < 1) {
    return Status::InvalidArgument("handler_threads: must be >= 1");
  }
  boost::system::error_code ec;
  net::ip::address address = net::ip::make_address(options.address, ec);
  if (ec) return Status::InvalidArgument("address: not an IP address: " + options.address);
  tcp::endpoint endpoint(address, options.port);
  tcp::acceptor& acceptor = impl_->acceptor;
  std::string where = options.address + ":" + std::to_string(options.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return Status::Unavailable("cannot listen on " + where + ": " + ec.message());
  }
  impl_->port = acceptor.local_endpoint(ec).port();
  // Before the first connection: the Host and Origin checks compare against the bound port.
  impl_->shared.router.SetListenEndpoint(options.address, impl_->port);
  impl_->started = true;
  impl_->handlers.emplace(static_cast<size_t>(options.handler_threads));
  impl_->shared.handlers = &*impl_->handlers;
  impl_->DoAccept();
  for (int i = 0; i < options.io_threads; ++i) {
    impl_->threads.emplace_back([impl = impl_.get()] { impl->Run(); });
  }
  return Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

size_t HttpServer::connection_count() const {
  std::lock_guard lock(impl_->shared.mu);
  return impl_->shared.sessions.size();
}

void HttpServer::Stop() {
  Impl& impl = *impl_;
  std::lock_guard lifecycle(impl.lifecycle_mu);
  if (!impl.started || impl.stopped) return;
  impl.stopped = true;
  net::post(impl.acceptor.get_executor(), [&impl] {
    boost::system::error_code ignored;
    impl.acceptor.close(ignored);
    impl.accept_timer.cancel();
  });
  std::vector<std::shared_ptr<HttpSession>> sessions;
  {
    std::lock_guard lock(impl.shared.mu);
    impl.shared.stopping = true;
    for (auto& [key, weak] : impl.shared.sessions) {
      if (auto session = weak.lock()) sessions.push_back(std::move(session));
    }
  }
  for (auto& session : sessions) session->Shutdown();
  sessions.clear();  // the sessions' own handlers keep them alive as long as they need
  {
    std::unique_lock lock(impl.shared.mu);
    impl.shared.sessions_changed.wait_for(lock, impl.shared.options.stop_grace,
                                          [&] { return impl.shared.sessions.empty(); });
    // Whatever is left is destroyed with the io_context; from now on no JobService thread may
    // post to it.
    for (auto& [key, weak] : impl.shared.sessions) {
      if (auto session = weak.lock()) sessions.push_back(std::move(session));
    }
  }
  for (auto& session : sessions) session->CloseEventQueue();
  sessions.clear();
  impl.ioc.stop();
  for (std::thread& thread : impl.threads) thread.join();
  impl.threads.clear();
  // Handlers still running finish; the responses they post to the stopped io_context are
  // destroyed with it.
  impl.handlers->join();
}

}  // namespace trainingd::api
