// The text format of TensorFlow's `checkpoint` state file (and of the best_checkpoint file beside
// it): quoted strings and trimmed lines. Private to engine/src/io.
#pragma once

#include <string>

namespace trainingd::engine::internal {

// A string in the state file's text format: "...", with " and \ escaped.
inline std::string TextFormatQuote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

inline std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Parses a text-format string literal ("...", with \" \\ \' \n \t escapes).
inline bool ParseQuoted(const std::string& v, std::string* out) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return false;
  out->clear();
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    char ch = v[i];
    if (ch == '"') return false;
    if (ch == '\\') {
      if (i + 2 >= v.size()) return false;
      const char e = v[++i];
      if (e == 'n') {
        ch = '\n';
      } else if (e == 't') {
        ch = '\t';
      } else if (e == '"' || e == '\\' || e == '\'') {
        ch = e;
      } else {
        return false;
      }
    }
    out->push_back(ch);
  }
  return true;
}

}  // namespace trainingd::engine::internal
