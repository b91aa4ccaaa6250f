// JobState names: the strings the REST API, the SQLite store and the logs use for job states.
#include <string_view>

#include "trainingd/api/job_service.h"

namespace trainingd::api {

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kStopping:
      return "stopping";
    case JobState::kCompleted:
      return "completed";
    case JobState::kFailed:
      return "failed";
    case JobState::kStopped:
      return "stopped";
    case JobState::kPreempted:
      return "preempted";
  }
  return "unknown";
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (JobState s :
       {JobState::kQueued, JobState::kRunning, JobState::kStopping, JobState::kCompleted,
        JobState::kFailed, JobState::kStopped, JobState::kPreempted}) {
    if (name == JobStateName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace trainingd::api
