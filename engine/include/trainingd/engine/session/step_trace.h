// StepTrace: what one training step did and when, for the profiler (ProfilerHook).
//
// Times are seconds on the steady clock, relative to StepTrace::origin, so a trace can be laid out
// on a timeline (Chrome trace-event format, docs/hooks.md#profilerhook).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace trainingd::engine {

struct TraceEvent {
  std::string name;          // "conv2d_1", "input", "loss", "optimizer"
  std::string category;      // "forward", "backward", "input", "loss", "optimizer", "evaluation"
  double start_seconds = 0;  // since the trace's origin
  double duration_seconds = 0;
};

struct StepTrace {
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  std::vector<TraceEvent> events;

  double SecondsSinceOrigin(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double>(t - origin).count();
  }
  // Records an event that ran from `begin` to now.
  void Add(std::string name, std::string category, std::chrono::steady_clock::time_point begin) {
    const auto end = std::chrono::steady_clock::now();
    events.push_back({std::move(name), std::move(category), SecondsSinceOrigin(begin),
                      std::chrono::duration<double>(end - begin).count()});
  }
};

}  // namespace trainingd::engine
