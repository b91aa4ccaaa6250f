// LoggingTensorHook: logs fetched values every N local iterations or seconds
// (tf.train.LoggingTensorHook).
//
// Counts this hook's own iterations (runs), not the global step, and logs at iterations
// 0, N, 2N, ... The line is TF's: "loss = 0.31, accuracy = 0.9 (0.123 sec)", the number being
// seconds since the previous line (absent on the first). Tags come in the order given, or sorted
// when given as a tag -> fetch map (TF's dict). A formatter replaces the whole line. With at_end,
// End() logs once more (fetched without a step). at_end alone (no period) logs only at the end.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/engine/session/second_or_step_timer.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class LoggingTensorHook final : public SessionRunHook {
 public:
  // Gets (tag, value) pairs in logging order.
  using Formatter = std::function<std::string(const std::vector<std::pair<std::string, double>>&)>;
  struct Options {
    // Exactly one > 0, unless at_end (then neither may be given).
    int64_t every_n_iter = 0;
    double every_n_secs = 0;
    bool at_end = false;
    Formatter formatter;  // optional
  };
  // Tags are the fetch names, in this order.
  static Result<std::shared_ptr<LoggingTensorHook>> Create(std::vector<std::string> fetches,
                                                           Options options);
  // Tag -> fetch name; logged in sorted tag order.
  static Result<std::shared_ptr<LoggingTensorHook>> Create(
      const std::map<std::string, std::string>& tagged_fetches, Options options);

  std::string name() const override { return "LoggingTensorHook"; }
  Status Begin() override;
  Status AfterCreateSession(Session& session, Coordinator& coordinator) override;
  Status BeforeRun(RunContext& ctx, RunArgs& request) override;
  Status AfterRun(RunContext& ctx, const RunValues& values) override;
  Status End(Session& session) override;

 private:
  LoggingTensorHook(std::vector<std::pair<std::string, std::string>> tags, Options options,
                    SecondOrStepTimer timer)
      : tags_(std::move(tags)), options_(std::move(options)), timer_(std::move(timer)) {}
  void LogValues(Logger& logger, const RunValues& values);

  std::vector<std::pair<std::string, std::string>> tags_;  // (tag, fetch)
  std::vector<std::string> fetches_;
  Options options_;
  bool only_at_end_ = false;
  Env* env_ = Env::Default();
  SecondOrStepTimer timer_;
  int64_t iter_count_ = 0;
  bool should_trigger_ = false;
};

}  // namespace trainingd::engine
