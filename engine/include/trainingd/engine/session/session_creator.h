// SessionCreator: how a MonitoredSession gets its Session, first and after every recovery
// (TF's ChiefSessionCreator / WorkerSessionCreator).
//
// Chief: builds the session, then restores the latest checkpoint in checkpoint_dir if there is
// one -- restore or initialise, never a mix. A truncated or corrupt latest checkpoint is skipped
// for the previous one with a warning; a checkpoint of another model fails with the variable's
// name and both shapes.
// Worker (non-chief): never restores. Waits until the chief is ready (by default: the chief has
// written a checkpoint in checkpoint_dir), polling every poll_secs -- configurable, unlike TF's
// fixed 30 s -- and fails after max_wait_secs with TF's "Session was not ready after waiting N
// secs."; then initialises from the seed (a distributed runner then broadcasts the chief's
// weights).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/session/session.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

class SessionCreator {
 public:
  virtual ~SessionCreator() = default;
  // A ready session. `coordinator` lets a long wait end early when a stop is requested
  // (Cancelled). Called from the thread that drives the monitored session.
  virtual Result<std::unique_ptr<Session>> CreateSession(const Coordinator& coordinator) = 0;
};

// What both creators need to build a session.
struct SessionSource {
  SessionConfig config;
  std::shared_ptr<const Datasets> datasets;
  Env* env = nullptr;              // null = Env::Default()
  std::shared_ptr<Logger> logger;  // null = Logger::Stderr()
};

class ChiefSessionCreator final : public SessionCreator {
 public:
  // Empty `checkpoint_dir` = always initialise.
  ChiefSessionCreator(SessionSource source, std::string checkpoint_dir,
                      CheckpointManagerOptions checkpoint_options = {});
  Result<std::unique_ptr<Session>> CreateSession(const Coordinator& coordinator) override;

 private:
  SessionSource source_;
  std::string checkpoint_dir_;
  CheckpointManagerOptions checkpoint_options_;
};

class WorkerSessionCreator final : public SessionCreator {
 public:
  // Returns true once the chief is ready; an error ends the wait with that error.
  using ReadyCheck = std::function<Result<bool>()>;
  struct Options {
    double poll_secs = 1;         // TF: 30, not configurable
    double max_wait_secs = 7200;  // TF MonitoredTrainingSession's default
    // Empty = "checkpoint_dir holds a checkpoint" (ready at once without a checkpoint_dir).
    ReadyCheck ready;
    std::string checkpoint_dir;
  };
  WorkerSessionCreator(SessionSource source, Options options);
  Result<std::unique_ptr<Session>> CreateSession(const Coordinator& coordinator) override;

 private:
  SessionSource source_;
  Options options_;
};

}  // namespace trainingd::engine
