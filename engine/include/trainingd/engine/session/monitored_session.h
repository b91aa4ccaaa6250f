// MonitoredSession: a Session driven with hooks, recovery and a clean close (TF's
// tf.train.MonitoredSession). Build one for training with MonitoredTrainingSession
// (monitored_training_session.h); build one directly for a custom set of hooks.
//
// Creation: Begin() on every hook, the creator's session (chief: restore or initialise), then
// AfterCreateSession() on every hook.
// Run(): BeforeRun on every hook (their fetches and feeds merged with the caller's; the same feed
// given twice is an error), one training step, AfterRun on every hook with its own results.
// Any hook may request a stop; ShouldStop() is then true.
// Recovery: when creation, a hook or the step fails with Unavailable or Aborted, the session is
// dropped and recreated by the creator (the chief restores the latest checkpoint, so steps since
// then are redone), AfterCreateSession() runs again on every hook, and the call is retried --
// up to max_recovery_attempts times in a row with exponential backoff (TF retried forever).
// Close(): see there. Thread-safety: one thread drives Run/Close/AddHook; RequestStop() and
// ShouldStop() may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "trainingd/engine/io/summary_writer.h"
#include "trainingd/engine/session/session.h"
#include "trainingd/engine/session/session_creator.h"
#include "trainingd/engine/session/session_run_hook.h"

namespace trainingd::engine {

struct MonitoredSessionOptions {
  // Recoveries in a row before the error is returned; 0 = never recover.
  int max_recovery_attempts = 5;
  // Wait before the first recovery; doubled each further attempt, capped at max_backoff_secs.
  double initial_backoff_secs = 1;
  double max_backoff_secs = 60;
  Env* env = nullptr;                             // null = Env::Default()
  std::shared_ptr<Logger> logger;                 // null = Logger::Stderr()
  std::shared_ptr<SummaryWriter> summary_writer;  // optional; flushed at Close
  // Optional flag another thread sets to stop (e.g. the daemon's stop button, Ctrl-C). Seen by
  // ShouldStop() from the start -- also while a non-chief waits for the chief in Create. In a
  // data-parallel session it is a vote instead: the next step carries it to every rank, and all
  // stop after that step (stop_agreed()).
  const std::atomic<bool>* stop_flag = nullptr;
};

class MonitoredSession final : public Coordinator {
 public:
  // Begin, create (with recovery), AfterCreateSession. On error nothing has run yet and End() is
  // not called.
  static Result<std::unique_ptr<MonitoredSession>> Create(
      std::unique_ptr<SessionCreator> creator, std::vector<std::shared_ptr<SessionRunHook>> hooks,
      MonitoredSessionOptions options = {});
  // Closes if not closed yet; an error is logged.
  ~MonitoredSession() override;
  MonitoredSession(const MonitoredSession&) = delete;
  MonitoredSession& operator=(const MonitoredSession&) = delete;

  // One step with the hooks. `values` (may be null) gets the caller's own fetches.
  // FailedPrecondition once the previous Run returned with ShouldStop() true ("Run called even
  // after should_stop requested."), after Close, or after a failed run. A stop from another
  // thread (RequestStop, stop_flag) that lands after the previous Run returned takes effect after
  // this run's step: the caller's loop cannot tell it from one that landed just after its
  // ShouldStop() check, so it is not an error (TF raised it, a race its users hit with
  // coordinator threads). OutOfRange when the input is exhausted
  // (num_epochs): logged, no step taken, ShouldStop() turns true, and Close() ends normally.
  // Any other error is the run's failure, returned after recovery gave up.
  Status Run(const RunArgs& args, RunValues* values = nullptr);
  // Values without a step and without hooks: evaluation runs that must not fire the hooks.
  Status Fetch(const std::vector<std::string>& fetches, RunValues* values);

  bool ShouldStop() const override;
  // From any thread, e.g. the daemon's stop button; the loop stops after the current run. In a
  // data-parallel session, a vote like stop_flag.
  void RequestStop() override;
  // Data-parallel: the ranks stopped together on a stop vote (stop_flag or RequestStop on some
  // rank).
  bool stop_agreed() const { return stop_agreed_.load(); }

  // Adds a hook to a live session: Begin() and AfterCreateSession() run now, then it takes part in
  // every later run and in End(). (TF could not add anything after creation.)
  Status AddHook(std::shared_ptr<SessionRunHook> hook);

  // Ends the session. End() runs on every hook, in order, even if an earlier one failed (the first
  // error is returned) -- after a normal stop, end of input, or a failed run, as long as the model
  // is sound. It is skipped only when the session failed and the latest step's loss was NaN or
  // infinite: saving those weights would replace the last good checkpoint. The summary writer is
  // always flushed. A second Close() does nothing and returns OK.
  Status Close();

  bool closed() const { return closed_.load(); }
  // The global step after the latest step trained (or creation), also when a hook's after_run
  // then failed (the step happened; its end hooks see the same step); kept after Close().
  int64_t global_step() const { return global_step_; }
  // The error that failed a run, OK if none.
  const Status& failure() const { return failure_; }
  // The live session; valid until Close() and while has_session() (a recovery that failed to
  // create a new session leaves none).
  Session& session() { return *session_; }
  bool has_session() const { return session_ != nullptr; }
  SummaryWriter* summary_writer() { return options_.summary_writer.get(); }
  // Sessions created, counting the first (1 + recoveries).
  int sessions_created() const { return sessions_created_; }

 private:
  MonitoredSession(std::unique_ptr<SessionCreator> creator,
                   std::vector<std::shared_ptr<SessionRunHook>> hooks,
                   MonitoredSessionOptions options);
  // Runs `body` with a live session, recreating the session on transient errors.
  template <typename Body>
  Status WithRecovery(Body body);
  Status CreateSessionAndNotifyHooks();
  Status RunOnce(const RunArgs& args, RunValues* values);

  std::unique_ptr<SessionCreator> creator_;
  std::vector<std::shared_ptr<SessionRunHook>> hooks_;
  MonitoredSessionOptions options_;
  std::unique_ptr<Session> session_;
  std::atomic<bool> stop_requested_{false};
  bool stopped_by_last_run_ = false;      // ShouldStop() when the previous Run returned
  std::atomic<bool> stop_vote_{false};    // RequestStop in a data-parallel session
  std::atomic<bool> stop_agreed_{false};  // a step's reduction carried a stop vote
  std::atomic<bool> distributed_{false};  // the session has more than one rank
  std::atomic<bool> closed_{false};
  int64_t global_step_ = 0;
  Status failure_;
  int sessions_created_ = 0;
};

}  // namespace trainingd::engine
