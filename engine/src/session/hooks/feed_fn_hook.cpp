#include "trainingd/engine/session/hooks/feed_fn_hook.h"

namespace trainingd::engine {

Status FeedFnHook::BeforeRun(RunContext&, RunArgs& request) {
  auto feeds = feed_fn_();
  if (!feeds.ok()) return feeds.status();
  request.feeds = std::move(feeds).value();
  return Status::Ok();
}

}  // namespace trainingd::engine
