// SessionRunHook: code that runs around every step of a MonitoredSession (TF's
// tf.train.SessionRunHook), and the objects a hook is handed.
//
// Call order (docs/hooks.md#lifecycle):
//   Begin()                          once, before the session exists, in hook order
//   AfterCreateSession(session, c)   after the session was created or restored, in hook order;
//                                    again after every recovery
//   per run: BeforeRun(ctx, request) in hook order -- add fetches, feeds, options to `request`
//            the step
//            AfterRun(ctx, values)   in hook order; `values` holds only this hook's fetches
//   End(session)                     at Close() (see MonitoredSession::Close for when)
// Every method returns a Status: a non-OK one fails the run (or the close) with that error.
// Unavailable and Aborted count as transient: the monitored session recovers from them.
// Hooks are called from the thread that drives the session, one at a time.
#pragma once

#include <string>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/session/session.h"

namespace trainingd::engine {

// Asking the whole training loop to stop (TF's tf.train.Coordinator, the part hooks use).
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  // Thread-safe. The loop stops after the current run.
  virtual void RequestStop() = 0;
  virtual bool ShouldStop() const = 0;
};

// One run() as the hooks see it (TF's SessionRunContext).
class RunContext {
 public:
  RunContext(const RunArgs& original_args, Session& session, Coordinator& coordinator)
      : original_args_(original_args), session_(session), coordinator_(coordinator) {}

  // What the caller of MonitoredSession::Run asked for.
  const RunArgs& original_args() const { return original_args_; }
  Session& session() { return session_; }
  // Stop the loop after this run: should_stop() turns true once the run finishes.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }
  // True if a stop was requested from anywhere (another thread, an earlier run).
  bool ShouldStopLoop() const { return stop_requested_ || coordinator_.ShouldStop(); }

 private:
  const RunArgs& original_args_;
  Session& session_;
  Coordinator& coordinator_;
  bool stop_requested_ = false;
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;

  // For messages ("feed 'batch' is given by both FeedFnHook and ...").
  virtual std::string name() const { return "custom hook"; }

  virtual Status Begin() { return Status::Ok(); }
  virtual Status AfterCreateSession(Session& /*session*/, Coordinator& /*coordinator*/) {
    return Status::Ok();
  }
  virtual Status BeforeRun(RunContext& /*ctx*/, RunArgs& /*request*/) { return Status::Ok(); }
  virtual Status AfterRun(RunContext& /*ctx*/, const RunValues& /*values*/) { return Status::Ok(); }
  virtual Status End(Session& /*session*/) { return Status::Ok(); }
};

}  // namespace trainingd::engine
