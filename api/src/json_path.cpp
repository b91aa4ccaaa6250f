#include "json_path.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/strict_json.h"

namespace trainingd::api::json_path {

using engine::Result;
using engine::Status;
using strict_json::Quote;
using strict_json::TypeName;

namespace {

bool IsKeyStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsKeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

// The parts of `path`, or InvalidArgument with what is wrong (no field: the caller names it).
Result<std::vector<PathPart>> SplitPath(std::string_view path) {
  const auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("not a path of the form key(.key|[index])* (" + what + ")");
  };
  if (path.empty()) return bad("empty");
  if (path.size() > kMaxPathLength) {
    return bad("longer than " + std::to_string(kMaxPathLength) + " characters");
  }
  std::vector<PathPart> parts;
  size_t i = 0;
  bool need_key = true;
  while (i < path.size()) {
    if (need_key) {
      if (!IsKeyStart(path[i]))
        return bad("a key starts with a letter or _ at byte " + std::to_string(i + 1));
      size_t end = i;
      while (end < path.size() && IsKeyChar(path[end])) ++end;
      parts.push_back({std::string(path.substr(i, end - i)), 0});
      i = end;
      need_key = false;
    } else if (path[i] == '.') {
      ++i;
      need_key = true;
    } else if (path[i] == '[') {
      size_t end = i + 1;
      while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
      if (end == i + 1 || end - i - 1 > 9 || end >= path.size() || path[end] != ']') {
        return bad("an index is [digits] at byte " + std::to_string(i + 1));
      }
      parts.push_back({"", std::stoul(std::string(path.substr(i + 1, end - i - 1)))});
      i = end + 1;
    } else {
      return bad("unexpected " + Quote(path.substr(i, 1)) + " at byte " + std::to_string(i + 1));
    }
  }
  if (need_key) return bad("ends with '.'");
  return parts;
}

std::string JoinPath(const std::vector<PathPart>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    // Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on "[" + s + "]".
    if (parts[i].key.empty()) {
      out += '[';
      out += std::to_string(parts[i].index);
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out += parts[i].key;
    }
  }
  return out;
}

// The value at `parts` in `doc`, or InvalidArgument saying which component is missing.
Result<nlohmann::json*> Locate(nlohmann::json* doc, const std::vector<PathPart>& parts) {
  nlohmann::json* node = doc;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string where = "the spec";
    if (i > 0) {
      where = '\'';
      where += JoinPath(parts, i);
      where += '\'';
    }
    const PathPart& p = parts[i];
    if (!p.key.empty()) {
      if (!node->is_object()) {
        return Status::InvalidArgument(where + " is " + TypeName(*node) +
                                       ", not an object with field '" + p.key + "'");
      }
      const auto it = node->find(p.key);
      if (it == node->end()) {
        return Status::InvalidArgument(where + " has no field '" + p.key + "'");
      }
      node = &*it;
    } else {
      if (!node->is_array()) {
        return Status::InvalidArgument(where + " is " + TypeName(*node) + ", not an array");
      }
      if (p.index >= node->size()) {
        return Status::InvalidArgument(where + " has " + std::to_string(node->size()) +
                                       " elements, no [" + std::to_string(p.index) + "]");
      }
      node = &(*node)[p.index];
    }
  }
  return node;
}

bool IsPrefix(const std::vector<PathPart>& a, const std::vector<PathPart>& b) {
  if (a.size() > b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || a[i].index != b[i].index) return false;
  }
  return true;
}

}  // namespace trainingd::api::json_path
