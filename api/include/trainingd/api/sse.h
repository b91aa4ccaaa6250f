// Server-sent events framing (the WHATWG "text/event-stream" format). Beast has none; this is it.
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/job_service.h"

namespace trainingd::api {

// The event as one frame: its kind's name ("state", "job", "scalar", "log") and its data as
// compact JSON (job_json.h: EventToJson).
std::string FormatSseEvent(const ServiceEvent& event);

// "id: <id>\nevent: <event>\ndata: <line>\n...\n\n": one data line per line of `data` (split at
// "\r\n", "\r" or "\n"; the client joins them back with "\n"). CR and LF are removed from the
// event name so it cannot break the framing; an empty name is left out (the client then calls
// the event "message").
std::string FormatSseFrame(int64_t id, std::string_view event, std::string_view data);

// ": <text>\n\n", a comment line clients ignore; used as the keep-alive. Line breaks in `text`
// become spaces.
std::string FormatSseComment(std::string_view text);

// "retry: <ms>\n\n": how long a client waits before reconnecting.
std::string FormatSseRetry(int milliseconds);

// One event as a client reads it back: the fields FormatSseFrame writes.
struct SseFrame {
  std::optional<int64_t> id;  // absent when the frame had no (numeric) "id:" line
  std::string event;          // "message" when the frame named none
  std::string data;           // the data lines joined with "\n"
};

// The client side of the same format: bytes in as they arrive (any split, "\n", "\r\n" or "\r"
// line ends), whole frames out. Comments (keep-alives) and "retry:" lines are consumed; a frame
// without data lines is dropped, as the WHATWG parser does. Not thread-safe.
class SseParser {
 public:
  // Appends `bytes` and returns the frames they complete, in order.
  std::vector<SseFrame> Feed(std::string_view bytes);
  // The last "retry:" value seen, in milliseconds; nullopt before any.
  std::optional<int> retry_ms() const { return retry_ms_; }

 private:
  void Line(std::string_view line, std::vector<SseFrame>* out);
  std::string pending_;   // an incomplete line
  bool skip_lf_ = false;  // the previous chunk ended in "\r": a leading "\n" belongs to it
  SseFrame frame_;
  bool has_data_ = false;
  std::optional<int> retry_ms_;
};

}  // namespace trainingd::api
