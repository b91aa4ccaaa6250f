// The names of the experiment service's enums: the strings the REST API, the SQLite store and
// the logs use for them.
#include <string_view>

#include "trainingd/api/experiment_service.h"

namespace trainingd::api {

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "double";
    case ParamType::kLog:
      return "log";
    case ParamType::kCategorical:
      return "categorical";
  }
  return "unknown";
}

const char* SearcherName(SearcherSpec::Name name) {
  switch (name) {
    case SearcherSpec::Name::kGrid:
      return "grid";
    case SearcherSpec::Name::kRandom:
      return "random";
    case SearcherSpec::Name::kAsha:
      return "asha";
    case SearcherSpec::Name::kCrossValidation:
      return "cross_validation";
  }
  return "unknown";
}

const char* ExperimentStateName(ExperimentState state) {
  switch (state) {
    case ExperimentState::kRunning:
      return "running";
    case ExperimentState::kStopping:
      return "stopping";
    case ExperimentState::kCompleted:
      return "completed";
    case ExperimentState::kFailed:
      return "failed";
    case ExperimentState::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::optional<ExperimentState> ParseExperimentState(std::string_view name) {
  for (ExperimentState s :
       {ExperimentState::kRunning, ExperimentState::kStopping, ExperimentState::kCompleted,
        ExperimentState::kFailed, ExperimentState::kStopped}) {
    if (name == ExperimentStateName(s)) return s;
  }
  return std::nullopt;
}

const char* TrialStateName(TrialState state) {
  switch (state) {
    case TrialState::kRunning:
      return "running";
    case TrialState::kWaiting:
      return "waiting";
    case TrialState::kPruned:
      return "pruned";
    case TrialState::kCompleted:
      return "completed";
    case TrialState::kFailed:
      return "failed";
    case TrialState::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::optional<TrialState> ParseTrialState(std::string_view name) {
  for (TrialState s : {TrialState::kRunning, TrialState::kWaiting, TrialState::kPruned,
                       TrialState::kCompleted, TrialState::kFailed, TrialState::kStopped}) {
    if (name == TrialStateName(s)) return s;
  }
  return std::nullopt;
}

}  // namespace trainingd::api
