// FinalOpsHook: fetches values once at the end of training (tf.train.FinalOpsHook), e.g. the
// test-set loss and accuracy ("test/loss", "test/accuracy").
//
// In End() the fetches are evaluated without a training step; the values are kept for the caller
// (final_ops_values()) and, when a summary writer is given, written as scalars at the final global
// step and logged, and each split a "<split>/..." fetch evaluated is written whole too
// (SummaryWriter::AddEvaluation: its confusion matrix). TF's final_ops_feed_dict has no equivalent:
// fetches without a step take no feeds.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class FinalOpsHook final : public SessionRunHook {
 public:
  // InvalidArgument naming an unknown fetch.
  static Result<std::shared_ptr<FinalOpsHook>> Create(
      std::vector<std::string> final_ops, std::shared_ptr<SummaryWriter> summary_writer = nullptr);

  std::string name() const override { return "FinalOpsHook"; }
  Status End(Session& session) override;

  // Empty until End() ran.
  const std::map<std::string, double>& final_ops_values() const { return values_; }

 private:
  FinalOpsHook(std::vector<std::string> ops, std::shared_ptr<SummaryWriter> writer)
      : ops_(std::move(ops)), writer_(std::move(writer)) {}

  std::vector<std::string> ops_;
  std::shared_ptr<SummaryWriter> writer_;
  std::map<std::string, double> values_;
};

}  // namespace trainingd::engine
