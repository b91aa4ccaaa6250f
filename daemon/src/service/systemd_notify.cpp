#include "trainingd/daemon/service/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace trainingd::daemon {

bool SdNotify(const std::string& message) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return false;
  const size_t len = std::strlen(path);
  sockaddr_un addr{};
  if (len >= sizeof(addr.sun_path) || (path[0] != '/' && path[0] != '@')) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path, len);
  if (path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const ssize_t sent = sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
                              reinterpret_cast<const sockaddr*>(&addr), addr_len);
  close(fd);
  return sent == static_cast<ssize_t>(message.size());
}

std::optional<double> WatchdogPingInterval() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (!usec || !*usec) return std::nullopt;
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid && *pid) {
    if (std::strtoll(pid, nullptr, 10) != static_cast<long long>(getpid())) return std::nullopt;
  }
  const long long us = std::strtoll(usec, nullptr, 10);
  if (us <= 0) return std::nullopt;
  return static_cast<double>(us) / 2e6;
}

}  // namespace trainingd::daemon
