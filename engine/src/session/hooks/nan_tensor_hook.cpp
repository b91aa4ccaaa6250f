#include "trainingd/engine/session/hooks/nan_tensor_hook.h"

#include <cmath>

namespace trainingd::engine {

Status NanTensorHook::BeforeRun(RunContext&, RunArgs& request) {
  request.fetches.push_back(kLossFetch);
  return Status::Ok();
}

Status NanTensorHook::AfterRun(RunContext& ctx, const RunValues& values) {
  if (!std::isnan(values.get(kLossFetch))) return Status::Ok();
  constexpr const char* kMessage = "Model diverged with loss = NaN.";
  if (fail_) {
    ctx.session().logger().Error(kMessage);
    return Status::FailedPrecondition("NaN loss during training.");
  }
  ctx.session().logger().Warning(kMessage);
  ctx.RequestStop();
  return Status::Ok();
}

}  // namespace trainingd::engine
