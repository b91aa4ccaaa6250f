// URL pieces the router needs: splitting a request target, percent-decoding, query strings.
// Pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainingd::api {

// A request target split at the first '?': path and raw (still encoded) query.
struct SplitTarget {
  std::string_view path;
  std::string_view query;
};
SplitTarget SplitRequestTarget(std::string_view target);

// Decodes %XX escapes (and '+' as a space when `plus_is_space`, the query-string rule). nullopt
// for a malformed escape ("%", "%4", "%zz") or a decoded NUL byte.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// A query string's parameters, decoded, in order ("a=1&b&c=" gives a=1, b="", c="").
// nullopt when any name or value is malformed (see PercentDecode).
using QueryParams = std::vector<std::pair<std::string, std::string>>;
std::optional<QueryParams> ParseQuery(std::string_view query);

// The value of the last parameter called `name`, or nullopt.
std::optional<std::string> QueryValue(const QueryParams& params, std::string_view name);

}  // namespace trainingd::api
