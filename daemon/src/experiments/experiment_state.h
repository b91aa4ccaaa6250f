// The state ExperimentManager keeps per experiment and trial, and what both of its files share:
// experiment_manager.cpp (loading, the supervisor that drives trials) and experiment_service.cpp
// (the api::ExperimentService calls and the answers built from that state). Private to
// daemon/src/experiments.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/daemon/experiments/experiment_manager.h"

namespace trainingd::daemon {
namespace experiment_detail {

using api::JobState;
using api::TrialState;

inline constexpr std::chrono::seconds kRecordTimeout{5};

inline bool JobEnded(JobState s) {
  return s == JobState::kCompleted || s == JobState::kFailed || s == JobState::kStopped;
}

// A trial that trains toward its next rung (its job queued, running or stopping).
inline bool Active(TrialState s) { return s == TrialState::kRunning; }

// A trial that is done with the search for good.
inline bool Final(TrialState s) {
  return s == TrialState::kCompleted || s == TrialState::kFailed || s == TrialState::kPruned;
}

inline std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A hyperparameter's value as a number, when it is one.
inline std::optional<double> AsNumber(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace experiment_detail

struct ExperimentManager::Trial {
  TrialRecord rec;
  int bracket = 0;  // TrialBracket(spec, index)
  api::Hyperparameters hyperparameters;
  std::vector<double> rung_metrics;      // by rung of its bracket
  std::vector<double> rung_recorded_at;  // when each result was recorded
  // Its job as last seen.
  api::JobState job_state = api::JobState::kQueued;
  int64_t global_step = 0;
  double finished_at = 0;
  // Its job directory's bytes when last measured; -1 = to measure (its job changed, or its
  // checkpoints went). A training trial is measured at every tick.
  int64_t disk_bytes = -1;
};

struct ExperimentManager::Experiment {
  ExperimentRecord rec;
  api::ExperimentSpec spec;
  std::vector<std::vector<int64_t>> rungs;  // each bracket's rungs' steps
  std::vector<Trial> trials;                // by index
  int64_t disk_bytes = 0;

  const std::vector<int64_t>& RungsOf(const Trial& t) const {
    return rungs[static_cast<size_t>(t.bracket)];
  }
};

struct ExperimentManager::JobNews {
  bool exists = false;
  api::JobState state = api::JobState::kQueued;
  int64_t global_step = 0;
  double finished_at = 0;
  std::string error;
  std::string reason;
  std::optional<double> metric;  // completed jobs: the metric at their final step
};

}  // namespace trainingd::daemon
