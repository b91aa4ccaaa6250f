// Server-sent events framing (the WHATWG "text/event-stream" format). Beast has none; this is it.
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

}  // namespace trainingd::api
