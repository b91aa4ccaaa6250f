#include "trainingd/engine/session/hooks/final_ops_hook.h"

#include <set>

#include "session/hooks/hook_util.h"

namespace trainingd::engine {

Result<std::shared_ptr<FinalOpsHook>> FinalOpsHook::Create(
    std::vector<std::string> final_ops, std::shared_ptr<SummaryWriter> summary_writer) {
  TRAININGD_RETURN_IF_ERROR(Session::CheckFetchNames(final_ops));
  return std::shared_ptr<FinalOpsHook>(
      new FinalOpsHook(std::move(final_ops), std::move(summary_writer)));
}

Status FinalOpsHook::End(Session& session) {
  RunValues values;
  TRAININGD_RETURN_IF_ERROR(session.Fetch(ops_, &values));
  values_ = values.results;
  if (!writer_) return Status::Ok();
  const int64_t step = session.global_step();
  std::string line;
  for (const auto& [tag, value] : values_) {
    TRAININGD_RETURN_IF_ERROR(writer_->AddScalar(tag, step, value));
    line += (line.empty() ? "" : ", ") + tag + " = " + internal::FormatValue(value);
  }
  session.logger().Info("Final values at global step " + std::to_string(step) + ": " + line);
  // Each split evaluated, whole (its confusion matrix): the evaluation is cached, not redone.
  std::set<std::string> splits;
  for (const std::string& op : ops_) {
    const size_t slash = op.find('/');
    if (slash != std::string::npos) splits.insert(op.substr(0, slash));
  }
  for (const std::string& split : splits) {
    TRAININGD_RETURN_IF_ERROR(internal::RecordEvaluationSummary(session, split, *writer_));
  }
  return writer_->Flush();
}

}  // namespace trainingd::engine
