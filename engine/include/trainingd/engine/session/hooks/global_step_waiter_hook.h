// GlobalStepWaiterHook: delays a worker's first step until the global step reaches a value
// (tf.train.GlobalStepWaiterHook), to start workers gradually.
//
// On the first BeforeRun, polls every poll_secs (TF: 0.5) until the observed global step is
// >= wait_until_step. The observed step comes from `global_step_source`; by default it is the
// step of the latest checkpoint in checkpoint_dir (the chief's progress as this process can see
// it), or the session's own step when no checkpoint_dir is given -- which nothing else advances,
// so waiting on it for a higher step is an error rather than a hang. Unlike TF, the wait ends
// with Cancelled when a stop is requested and with DeadlineExceeded after max_wait_secs (if > 0).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class GlobalStepWaiterHook final : public SessionRunHook {
 public:
  using StepSource = std::function<Result<int64_t>()>;
  struct Options {
    int64_t wait_until_step = 0;  // <= 0: no wait
    double poll_secs = 0.5;
    double max_wait_secs = 0;    // 0 = no limit
    std::string checkpoint_dir;  // the default source's directory
    StepSource global_step_source;
  };
  static Result<std::shared_ptr<GlobalStepWaiterHook>> Create(Options options);

  std::string name() const override { return "GlobalStepWaiterHook"; }
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;

 private:
  explicit GlobalStepWaiterHook(Options options) : options_(std::move(options)) {}
  Options options_;
  bool started_ = false;
};

}  // namespace trainingd::engine
