#include "trainingd/api/browser_policy.h"

#include <arpa/inet.h>

#include <charconv>

namespace trainingd::api {
using engine::Result;
using engine::Status;

namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// "[" + the canonical text of an IPv6 literal + "]", or nullopt.
std::optional<std::string> CanonicalIpv6(std::string_view literal) {
  in6_addr address{};
  if (literal.empty() || literal.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  std::string text(literal);
  if (inet_pton(AF_INET6, text.c_str(), &address) != 1) return std::nullopt;
  char out[INET6_ADDRSTRLEN];
  if (inet_ntop(AF_INET6, &address, out, sizeof out) == nullptr) return std::nullopt;
  std::string bracketed = "[";  // appended piecewise: GCC 12 -O3 warns falsely on operator+
  bracketed += out;
  bracketed += ']';
  return bracketed;
}

bool IsWildcard(std::string_view address) {
  std::string text(address);
  if (!text.empty() && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return v4.s_addr == 0;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    for (unsigned char byte : v6.s6_addr) {
      if (byte != 0) return false;
    }
    return true;
  }
  return false;
}

}  // namespace

std::optional<HostAndPort> ParseHostAndPort(std::string_view text) {
  HostAndPort out;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    auto literal = CanonicalIpv6(text.substr(1, close - 1));
    if (!literal) return std::nullopt;
    out.name = *literal;
    rest = text.substr(close + 1);
  } else {
    size_t colon = text.find(':');
    std::string_view name = text.substr(0, colon);
    if (name.empty() || name.size() > 253) return std::nullopt;
    for (char c : name) {
      if (!IsNameChar(c)) return std::nullopt;
    }
    out.name = Lower(name);
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  if (rest.empty()) return out;
  if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6) return std::nullopt;
  unsigned port = 0;
  const char* end = rest.data() + rest.size();
  auto [ptr, ec] = std::from_chars(rest.data() + 1, end, port);
  if (ec != std::errc() || ptr != end || port == 0 || port > 65535) return std::nullopt;
  out.port = static_cast<uint16_t>(port);
  return out;
}

std::optional<std::string> NormalizeOrigin(std::string_view text) {
  size_t sep = text.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  std::string scheme = Lower(text.substr(0, sep));
  uint16_t default_port;
  if (scheme == "http") {
    default_port = 80;
  } else if (scheme == "https") {
    default_port = 443;
  } else {
    return std::nullopt;
  }
  auto authority = ParseHostAndPort(text.substr(sep + 3));
  if (!authority) return std::nullopt;
  std::string out = scheme;
  out += "://";
  out += authority->name;
  if (authority->port && *authority->port != default_port) {
    out += ':';
    out += std::to_string(*authority->port);
  }
  return out;
}

Result<BrowserPolicy> BrowserPolicy::Create(std::string_view listen_address, uint16_t port,
                                            const std::vector<std::string>& allowed_hosts,
                                            const std::vector<std::string>& allowed_origins) {
  BrowserPolicy policy;
  policy.port_ = port;
  policy.wildcard_ = IsWildcard(listen_address);
  for (std::string_view name : {"localhost", "127.0.0.1", "[::1]"}) {
    policy.hosts_.push_back({std::string(name), std::nullopt});
  }
  if (!policy.wildcard_ && !listen_address.empty()) {
    // A bare IPv6 address as it appears in the listen setting gets its brackets.
    std::string host(listen_address);
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    auto parsed = ParseHostAndPort(host);
    if (!parsed || parsed->port) {
      return Status::InvalidArgument("listen address: not a host name or IP address: " +
                                     std::string(listen_address));
    }
    policy.hosts_.push_back(*parsed);
  }
  for (size_t i = 0; i < allowed_hosts.size(); ++i) {
    auto parsed = ParseHostAndPort(allowed_hosts[i]);
    if (!parsed) {
      return Status::InvalidArgument("allowed_hosts[" + std::to_string(i) +
                                     "]: expected a host name or IP address with an optional "
                                     ":port, got \"" +
                                     allowed_hosts[i].substr(0, 128) + "\"");
    }
    policy.hosts_.push_back(*parsed);
  }
  for (size_t i = 0; i < allowed_origins.size(); ++i) {
    auto origin = NormalizeOrigin(allowed_origins[i]);
    if (!origin) {
      return Status::InvalidArgument("allowed_origins[" + std::to_string(i) +
                                     "]: expected http://host[:port] or https://host[:port] "
                                     "(no path), got \"" +
                                     allowed_origins[i].substr(0, 128) + "\"");
    }
    policy.origins_.push_back(*origin);
  }
  return policy;
}

bool BrowserPolicy::AllowsHost(std::string_view host) const {
  auto parsed = ParseHostAndPort(host);
  if (!parsed) return false;
  const uint16_t port = parsed->port.value_or(80);
  for (const HostAndPort& allowed : hosts_) {
    // An entry without a port stands for the bound port; 0 (not known yet) matches nothing.
    if (allowed.name == parsed->name && port == allowed.port.value_or(port_)) return true;
  }
  return false;
}

bool BrowserPolicy::AllowsOrigin(std::string_view origin) const {
  auto normalized = NormalizeOrigin(origin);
  if (!normalized) return false;  // "null", garbage
  // Same origin: this server over plain HTTP under a name it answers to.
  std::string_view text = origin;
  if (Lower(text.substr(0, 7)) == "http://" && AllowsHost(text.substr(7))) return true;
  for (const std::string& allowed : origins_) {
    if (*normalized == allowed) return true;
  }
  return false;
}

}  // namespace trainingd::api
