#include "trainingd/api/sse.h"

#include <charconv>
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

std::vector<SseFrame> SseParser::Feed(std::string_view bytes) {
  std::vector<SseFrame> out;
  for (char c : bytes) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      skip_lf_ = c == '\r';
      Line(pending_, &out);
      pending_.clear();
      continue;
    }
    pending_.push_back(c);
  }
  return out;
}

void SseParser::Line(std::string_view line, std::vector<SseFrame>* out) {
  if (line.empty()) {  // the end of a frame
    if (has_data_) {
      if (frame_.event.empty()) frame_.event = "message";
      out->push_back(std::move(frame_));
    }
    frame_ = SseFrame{};
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) frame_.data += '\n';
    frame_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    frame_.event = std::string(value);
  } else if (field == "id" || field == "retry") {
    int64_t n = 0;
    const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || p != value.data() + value.size() || value.empty()) return;
    if (field == "id") {
      frame_.id = n;
    } else if (n >= 0 && n <= 3600000) {
      retry_ms_ = static_cast<int>(n);
    }
  }
}

}  // namespace trainingd::api
