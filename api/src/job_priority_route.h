// PATCH /api/v1/jobs/{id}: {"priority": N} changes a job's place in the daemon's queue
// (docs/http-api.md#change-a-jobs-priority). Who may is the route table's (router.cpp: the
// job's owner or an admin).
#pragma once

#include <cstddef>
#include <string>

#include "trainingd/api/http_message.h"
#include "trainingd/api/job_service.h"

namespace trainingd::api {

// 200 with the job; 400 naming "priority" for a body that is not {"priority": integer in
// [kMinJobPriority, kMaxJobPriority]}; 404 for an unknown job; 413 over max_body_bytes.
HttpResponse PatchJob(JobService& service, const HttpRequest& request, const std::string& id,
                      size_t max_body_bytes);

}  // namespace trainingd::api
