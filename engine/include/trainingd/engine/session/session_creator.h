// SessionCreator: how a MonitoredSession gets its Session, first and after every recovery
// (TF's ChiefSessionCreator / WorkerSessionCreator).
//
// Chief: builds the session, then restores the latest checkpoint in checkpoint_dir if there is
// one -- restore or initialise, never a mix. A truncated or corrupt latest checkpoint is skipped
// for the previous one with a warning; a checkpoint of another model fails with the variable's
// name and both shapes.
// Worker (non-chief): never restores. In a data-parallel job (SessionConfig::communicator of
// more than one rank) it receives the chief's state: the chief broadcasts its parameters,
// optimizer slots, global step, input position and random streams once it has restored or
// initialised them, so every rank starts the same. Without a communicator (workers sharing only
// a checkpoint_dir) it waits until the chief is ready (by default: the chief has written a
// checkpoint in checkpoint_dir), polling every poll_secs -- configurable, unlike TF's fixed 30 s
// -- and fails after max_wait_secs with TF's "Session was not ready after waiting N secs."; then
// initialises from the seed.
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
  Result<std::unique_ptr<Session>> RestoreOrInitialize();

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
