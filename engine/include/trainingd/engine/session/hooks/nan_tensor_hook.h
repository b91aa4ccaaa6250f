// NanTensorHook: watches the loss for NaN (tf.train.NanTensorHook).
//
// After every run, if the loss is NaN (not infinity, as in TF): with fail_on_nan_loss, logs
// "Model diverged with loss = NaN." as an error and fails the run with FailedPrecondition
// "NaN loss during training." (then Close() skips End(), so no checkpoint of NaN weights is
// written); otherwise logs it as a warning and requests a clean stop.
#pragma once

#include <memory>

#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class NanTensorHook final : public SessionRunHook {
 public:
  explicit NanTensorHook(bool fail_on_nan_loss = true) : fail_(fail_on_nan_loss) {}

  std::string name() const override { return "NanTensorHook"; }
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;

 private:
  bool fail_;
};

}  // namespace trainingd::engine
