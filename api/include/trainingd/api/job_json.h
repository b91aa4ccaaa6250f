// The REST API's JSON for the JobService's values (docs/openapi.yaml has the schemas). Strings
// that are not valid UTF-8 are fine here; dump the result with DumpJson, which replaces bad bytes.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/job_service.h"
#include "trainingd/engine/base/status.h"

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

// The inverses, for the client of the API (trainingd jobs ...): the same objects read back, so
// the client and the server cannot drift apart. InvalidArgument "<field>: ..." for a document
// that is not what the functions above write. JobFromJson reads what JobToJson writes but
// "distributed" and "slurm" (the client shows those as JSON only); "spec", when present, comes
// back as compact text in spec_json.
engine::Result<JobInfo> JobFromJson(const nlohmann::json& v);
engine::Result<JobPage> JobPageFromJson(const nlohmann::json& v);
engine::Result<std::vector<ScalarPoint>> ScalarsFromJson(const nlohmann::json& v);
engine::Result<std::vector<CheckpointInfo>> CheckpointsFromJson(const nlohmann::json& v);
// The lines and *next_from (when not null).
engine::Result<std::vector<LogLine>> LogLinesFromJson(const nlohmann::json& v, int64_t* next_from);
// An event from its stream frame: `kind` is the frame's event name ("state", "job", "scalar",
// "log"), `data` its JSON text.
engine::Result<ServiceEvent> EventFromJson(int64_t id, std::string_view kind,
                                           std::string_view data);
// The error body's message and field (ErrorToJson's), when `v` is one.
bool ErrorFromJson(const nlohmann::json& v, std::string* code, std::string* message,
                   std::string* field);

// Compact JSON text; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace trainingd::api
