// ProfilerHook: records a full trace of a step every N steps or seconds and writes it as
// `timeline-<global step>.json` in Chrome's trace-event format (tf.train.ProfilerHook), which
// chrome://tracing and Perfetto (ui.perfetto.dev) open.
//
// TF's schedule: the first run is never traced (it sets the timer's baseline); later runs are
// traced when the step they start from + 1 triggers the timer, so with save_steps = 100 from
// step 0 the files are timeline-100.json, timeline-200.json, ... A trace holds the real wall
// time of the input, every layer's forward and backward pass, the loss, the optimizer update and
// any evaluation the run did, as complete ("X") events on one timeline.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class ProfilerHook final : public SessionRunHook {
 public:
  struct Options {
    // Exactly one > 0.
    int64_t save_steps = 0;
    double save_secs = 0;
    std::string output_dir;  // required; created if missing
    // Keep at most this many timeline-*.json files in output_dir (earlier runs' included): the
    // oldest step's goes when a new one is written. 0 = keep every one (TF's behaviour).
    int max_traces = 0;
  };
  static Result<std::shared_ptr<ProfilerHook>> Create(Options options);

  std::string name() const override { return "ProfilerHook"; }
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;

  // The JSON of one trace (exposed for tests).
  static std::string TraceToJson(const StepTrace& trace, int64_t global_step);
  // "<output_dir>/timeline-<step>.json"
  std::string PathFor(int64_t step) const;
  // Path of the latest file written.
  const std::string& last_file() const { return last_file_; }

 private:
  ProfilerHook(Options options, SecondOrStepTimer timer)
      : options_(std::move(options)), timer_(std::move(timer)) {}

  Options options_;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  std::optional<int64_t> next_step_;
  std::vector<int64_t> kept_;  // steps of the timelines in output_dir, ascending (max_traces > 0)
  bool request_trace_ = false;
  std::string last_file_;
};

}  // namespace trainingd::engine
