// A tiny blocking HTTP/1.1 client over a raw POSIX socket, for the server tests: it sends bytes
// exactly as given (bad requests included) and reads responses with a deadline.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/http_message.h"

namespace trainingd::api {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// "METHOD target HTTP/1.1" with "Host: 127.0.0.1:<port>" (unless `r` has a Host header of its
// own) and, when there is a body, Content-Length.
inline std::string FormatRequest(uint16_t port, const HttpRequest& r, bool close = false) {
  std::string out = r.method + " " + r.target + " HTTP/1.1\r\n";
  if (r.Header("Host").empty()) out += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  if (!r.body.empty() || r.method == "POST") {
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  if (close) out += "Connection: close\r\n";
  return out + "\r\n" + r.body;
}

class TestClient {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDefaultWait{5000};

  // Connects to 127.0.0.1:port; `receive_buffer` > 0 shrinks SO_RCVBUF first (a slow client).
  explicit TestClient(uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~TestClient() { Close(); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return connected_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends everything; false when the peer is gone.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads more bytes into the buffer; false on EOF, error or deadline.
  bool ReadMore(Clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  // Reads until `needle` is in the buffer; returns and consumes everything up to and including it.
  std::optional<std::string> ReadUntil(std::string_view needle,
                                       std::chrono::milliseconds wait = kDefaultWait) {
    auto deadline = Clock::now() + wait;
    while (true) {
      size_t at = buffer_.find(needle);
      if (at != std::string::npos) {
        std::string out = buffer_.substr(0, at + needle.size());
        buffer_.erase(0, at + needle.size());
        return out;
      }
      if (!ReadMore(deadline)) return std::nullopt;
    }
  }

  // One response with a Content-Length body (or no body); nullopt on EOF or deadline.
  std::optional<RawResponse> ReadResponse(std::chrono::milliseconds wait = kDefaultWait) {
    auto deadline = Clock::now() + wait;
    auto head = ReadUntil("\r\n\r\n", wait);
    if (!head) return std::nullopt;
    RawResponse r;
    ParseHead(*head, &r);
    if (r.status == 100) return ReadResponse(wait);
    size_t length = 0;
    if (auto it = r.headers.find("content-length"); it != r.headers.end()) {
      length = std::stoul(it->second);
    }
    while (buffer_.size() < length) {
      if (!ReadMore(deadline)) return std::nullopt;
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return r;
  }

  // Whether the peer closes the connection within `wait` (bytes received meanwhile are kept).
  bool WaitClosed(std::chrono::milliseconds wait = kDefaultWait) {
    auto deadline = Clock::now() + wait;
    while (!eof_) {
      if (!ReadMore(deadline) && !eof_) return false;
    }
    return true;
  }

  std::string& buffer() { return buffer_; }
  int fd() const { return fd_; }

  static void ParseHead(const std::string& head, RawResponse* r) {
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    size_t space = status_line.find(' ');
    r->status = std::stoi(status_line.substr(space + 1, 3));
    size_t pos = line_end + 2;
    while (pos < head.size()) {
      size_t end = head.find("\r\n", pos);
      std::string line = head.substr(pos, end - pos);
      pos = end + 2;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t v = line.find_first_not_of(' ', colon + 1);
      r->headers[name] = v == std::string::npos ? "" : line.substr(v);
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buffer_;
};

// The ids of the complete SSE events in `stream` ("id: N" lines of blocks ending in "\n\n").
inline std::vector<int64_t> SseIds(std::string_view stream) {
  std::vector<int64_t> ids;
  size_t pos = 0;
  while (true) {
    size_t end = stream.find("\n\n", pos);
    if (end == std::string_view::npos) break;
    std::string_view block = stream.substr(pos, end - pos);
    if (block.starts_with("id: ")) {
      ids.push_back(std::stoll(std::string(block.substr(4, block.find('\n') - 4))));
    }
    pos = end + 2;
  }
  return ids;
}

}  // namespace trainingd::api
