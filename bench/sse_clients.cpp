// sse_clients: N event-stream clients in one thread (poll over non-blocking sockets), for
// bench/daemon_bench.py. A client in C++ costs a few microseconds per event, so the delay it
// measures is the daemon's fan-out rather than the client's own parsing.
//
// Usage: sse_clients PORT PATH CLIENTS SECONDS
// Connects CLIENTS times to 127.0.0.1:PORT, sends GET PATH, and for SECONDS records, for every
// "scalar" event, now - the event's "wall_time". Prints one JSON object:
//   {"clients":N,"connected":N,"events_received":N,"p50_ms":x,"p99_ms":x,"max_ms":x}
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Client {
  int fd = -1;
  std::string buffer;
  bool scalar = false;  // the event being read is a "scalar"
};

// Consumes the complete lines of `c.buffer`, appending the delay of each scalar event's data.
void ParseLines(Client& c, double now, std::vector<double>& delays) {
  size_t start = 0;
  for (size_t nl; (nl = c.buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string_view line(c.buffer.data() + start, nl - start);
    if (line.rfind("event: ", 0) == 0) {
      c.scalar = line.substr(7).rfind("scalar", 0) == 0;
    } else if (c.scalar && line.rfind("data: ", 0) == 0) {
      const size_t at = line.find("\"wall_time\":");
      if (at != std::string_view::npos) {
        const double wall = std::strtod(std::string(line.substr(at + 12)).c_str(), nullptr);
        delays.push_back(now - wall);
      }
    }
  }
  c.buffer.erase(0, start);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: sse_clients PORT PATH CLIENTS SECONDS\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const std::string path = argv[2];
  const int clients = std::atoi(argv[3]);
  const double seconds = std::atof(argv[4]);
  if (port <= 0 || port > 65535 || clients <= 0 || seconds <= 0) {
    std::fprintf(stderr, "sse_clients: bad PORT, CLIENTS or SECONDS\n");
    return 2;
  }
  const std::string request = "GET " + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nAccept: text/event-stream\r\n\r\n";
  std::vector<Client> all(static_cast<size_t>(clients));
  int connected = 0;
  for (Client& c : all) {
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        send(c.fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
      std::fprintf(stderr, "sse_clients: connect/send failed: %s\n", std::strerror(errno));
      return 1;
    }
    ++connected;
  }
  std::vector<pollfd> fds;
  for (const Client& c : all) fds.push_back({c.fd, POLLIN, 0});
  std::vector<double> delays;
  const double end = Now() + seconds;
  char chunk[65536];
  while (Now() < end) {
    const int ready = poll(fds.data(), fds.size(), 50);
    if (ready <= 0) continue;
    const double now = Now();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = recv(fds[i].fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        fds[i].fd = -1;  // closed: poll ignores negative descriptors
        continue;
      }
      all[i].buffer.append(chunk, static_cast<size_t>(n));
      ParseLines(all[i], now, delays);
    }
  }
  for (Client& c : all) close(c.fd);
  std::sort(delays.begin(), delays.end());
  auto q = [&](double f) {
    return delays.empty()
               ? 0.0
               : delays[std::min(delays.size() - 1,
                                 static_cast<size_t>(f * static_cast<double>(delays.size())))] *
                     1e3;
  };
  std::printf(
      "{\"clients\":%d,\"connected\":%d,\"events_received\":%zu,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
      "\"max_ms\":%.3f}\n",
      clients, connected, delays.size(), q(0.5), q(0.99),
      delays.empty() ? 0.0 : delays.back() * 1e3);
  return 0;
}
