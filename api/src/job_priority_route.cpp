#include "job_priority_route.h"

#include <nlohmann/json.hpp>

#include "route_util.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/router.h"
#include "trainingd/api/strict_json.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::api {

HttpResponse PatchJob(JobService& service, const HttpRequest& request, const std::string& id,
                      size_t max_body_bytes) {
  if (request.body.size() > max_body_bytes) {
    return ErrorResponse(413, "payload_too_large", "request body is too large");
  }
  auto doc = strict_json::Parse(request.body);
  engine::Status st = doc.ok() ? engine::Status::Ok() : doc.status();
  if (st.ok() && !doc->is_object()) {
    st = engine::Status::InvalidArgument(
        "priority: the body must be a JSON object like {\"priority\": 10}");
  }
  if (st.ok()) st = strict_json::CheckObject(*doc, "", {"priority"});
  int64_t priority = 0;
  if (st.ok()) {
    const auto it = doc->find("priority");
    if (it == doc->end()) {
      st = engine::Status::InvalidArgument("priority: required, an integer in [" +
                                           std::to_string(engine::kMinJobPriority) + ", " +
                                           std::to_string(engine::kMaxJobPriority) + "]");
    } else {
      st = strict_json::ReadInt(*it, "priority", engine::kMinJobPriority, engine::kMaxJobPriority,
                                &priority);
    }
  }
  if (!st.ok()) return StatusResponse(st);
  auto job = service.SetPriority(id, priority);
  if (!job.ok()) return StatusResponse(job.status());
  return route_util::JsonResponse(200, JobToJson(*job, true));
}

}  // namespace trainingd::api
