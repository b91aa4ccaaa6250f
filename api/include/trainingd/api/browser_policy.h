// BrowserPolicy: which Host and Origin headers a request may carry, so that a web page the user
// happens to have open cannot drive the API (docs/operations.md#browser-protections).
//
// - DNS rebinding: a page from evil.example re-points that name at 127.0.0.1 and then talks to
//   the daemon as "its own" origin; its requests carry "Host: evil.example:PORT". Only Host
//   values naming this server are allowed: localhost, 127.0.0.1 and [::1], the listen address
//   (unless it is a wildcard such as 0.0.0.0 or ::), and the configured allowed_hosts -- each
//   with the bound port. A Host without a port means port 80.
// - Cross-site requests: a browser sends Origin with every POST and DELETE; the origin must be
//   this server itself ("http://" + an allowed Host) or one of the configured allowed_origins.
//   "null" (sandboxed frames, file: pages, some redirects) is never allowed.
//
// Names compare case-insensitively; IPv6 literals compare by address ("[0::1]" is "[::1]").
// Immutable after Create; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::api {

// A Host value (or an allowed_hosts entry) taken apart: name lower-cased ("[v6]" canonical),
// port when one is given. nullopt when it is not "name[:port]" with a name of letters, digits,
// '.', '-', '_', an IPv6 literal in brackets, and a port of 1..65535.
struct HostAndPort {
  std::string name;
  std::optional<uint16_t> port;
};
std::optional<HostAndPort> ParseHostAndPort(std::string_view text);

// "scheme://host[:port]" with scheme http or https, lower-cased, the scheme's default port
// dropped (as browsers send it); nullopt for anything else (a path, a trailing '/', "null").
std::optional<std::string> NormalizeOrigin(std::string_view text);

class BrowserPolicy {
 public:
  // Allows no Host value at all (used until the server knows its address).
  BrowserPolicy() = default;

  // `listen_address`: the address the server bound (an IP literal, or "localhost"); `port`: the
  // port it bound (the OS's choice for port 0; 0 = not known yet, so only allowed_hosts entries
  // with an explicit port match). allowed_hosts entries are "name" (with the bound port) or
  // "name:port"; allowed_origins entries are origins as NormalizeOrigin takes them.
  // InvalidArgument naming the first bad entry ("allowed_hosts[2]: ...").
  static engine::Result<BrowserPolicy> Create(std::string_view listen_address, uint16_t port,
                                              const std::vector<std::string>& allowed_hosts,
                                              const std::vector<std::string>& allowed_origins);

  // Whether a request's Host header value names this server.
  bool AllowsHost(std::string_view host) const;

  // Whether a state-changing request with this Origin header value may proceed.
  bool AllowsOrigin(std::string_view origin) const;

  // True when the listen address is a wildcard (0.0.0.0, ::): then only localhost names and the
  // configured allowed_hosts are accepted, which start-up should say.
  bool listens_on_wildcard() const { return wildcard_; }

 private:
  std::vector<HostAndPort> hosts_;    // no port = the bound port
  std::vector<std::string> origins_;  // normalised
  uint16_t port_ = 0;
  bool wildcard_ = false;
};

}  // namespace trainingd::api
