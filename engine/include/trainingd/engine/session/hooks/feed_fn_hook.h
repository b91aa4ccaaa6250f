// FeedFnHook: supplies the feeds of every run from a function (tf.train.FeedFnHook), e.g. a
// "batch" from a custom data source or a "learning_rate" chosen by user code.
#pragma once

#include <functional>
#include <memory>

#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class FeedFnHook final : public SessionRunHook {
 public:
  // Called before every run; its error fails the run (Unavailable/Aborted trigger a recovery).
  using FeedFn = std::function<Result<Feeds>()>;
  explicit FeedFnHook(FeedFn feed_fn) : feed_fn_(std::move(feed_fn)) {}

  std::string name() const override { return "FeedFnHook"; }
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;

 private:
  FeedFn feed_fn_;
};

}  // namespace trainingd::engine
