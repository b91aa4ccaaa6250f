#include "trainingd/api/sse.h"

#include <nlohmann/json.hpp>

#include "trainingd/api/job_json.h"

namespace trainingd::api {
namespace {

std::string WithoutLineBreaks(std::string_view text, bool keep_as_space) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\r' || c == '\n') {
      if (keep_as_space) out.push_back(' ');
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string FormatSseEvent(const ServiceEvent& event) {
  return FormatSseFrame(event.id, EventKindName(event.kind), DumpJson(EventToJson(event)));
}

std::string FormatSseFrame(int64_t id, std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(data.size() + event.size() + 48);
  out += "id: ";
  out += std::to_string(id);
  out += '\n';
  std::string name = WithoutLineBreaks(event, false);
  if (!name.empty()) {
    out += "event: ";
    out += name;
    out += '\n';
  }
  size_t start = 0;
  while (true) {
    size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (data[end] == '\r' && start < data.size() && data[start] == '\n') ++start;
  }
  out += '\n';
  return out;
}

std::string FormatSseComment(std::string_view text) {
  return ": " + WithoutLineBreaks(text, true) + "\n\n";
}

std::string FormatSseRetry(int milliseconds) {
  return "retry: " + std::to_string(milliseconds) + "\n\n";
}

}  // namespace trainingd::api
