#include "trainingd/api/url.h"

namespace trainingd::api {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

SplitTarget SplitRequestTarget(std::string_view target) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      int hi = HexValue(text[i + 1]);
      int lo = HexValue(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') return std::nullopt;
    out.push_back(c);
  }
  return out;
}

std::optional<QueryParams> ParseQuery(std::string_view query) {
  QueryParams params;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    std::string_view raw_name = part.substr(0, eq);
    std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    auto name = PercentDecode(raw_name, true);
    auto value = PercentDecode(raw_value, true);
    if (!name || !value) return std::nullopt;
    params.emplace_back(std::move(*name), std::move(*value));
  }
  return params;
}

std::optional<std::string> QueryValue(const QueryParams& params, std::string_view name) {
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return std::nullopt;
}

}  // namespace trainingd::api
