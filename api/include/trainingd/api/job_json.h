// The REST API's JSON for the JobService's values (docs/openapi.yaml has the schemas). Strings
// that are not valid UTF-8 are fine here; dump the result with DumpJson, which replaces bad bytes.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/job_service.h"

namespace trainingd::api {

// {"id","name","state","global_step","max_steps","created_at","started_at","finished_at",
//  "error","reason","examples_per_sec","latest_scalars"} and, when `detail`, "spec" (the canonical
// spec as an object). Times are seconds since the epoch, null when not yet; error and reason
// are null when empty.
nlohmann::json JobToJson(const JobInfo& job, bool detail);

// {"jobs": [summary...], "next_cursor": "..." or null}.
nlohmann::json JobPageToJson(const JobPage& page);

// {"job_id","tag","points":[{"step","wall_time","value","min","max"}...]}.
nlohmann::json ScalarsToJson(std::string_view job_id, std::string_view tag,
                             const std::vector<ScalarPoint>& points);

// {"checkpoints":[{"global_step","name","bytes","mtime"}...]}.
nlohmann::json CheckpointsToJson(const std::vector<CheckpointInfo>& checkpoints);

// {"lines":[{"line","text"}...],"next_from": the line to ask for next}.
nlohmann::json LogLinesToJson(const std::vector<LogLine>& lines, int64_t from_line);

// An event's data: a state {"id","name","state","global_step","max_steps","error","reason"}
// (error and reason null when empty) or, for a deleted job, {"id","state":"deleted"}; a scalar
// {"tag","step","value","wall_time"}; a log line {"text"}.
nlohmann::json EventToJson(const ServiceEvent& event);
// "state", "job", "scalar" or "log".
const char* EventKindName(EventKind kind);

// The error body of every non-2xx answer: {"error":{"code","message"[,"field"]}}; "field" only
// when not empty.
nlohmann::json ErrorToJson(std::string_view code, std::string_view message, std::string_view field);

// Compact JSON text; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace trainingd::api
