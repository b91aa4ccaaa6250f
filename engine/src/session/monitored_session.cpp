#include "trainingd/engine/session/monitored_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "trainingd/engine/base/format.h"

namespace trainingd::engine {
namespace {

bool IsTransient(const Status& st) {
  return st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kAborted;
}

void AppendUnique(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& f : from) {
    if (std::find(to.begin(), to.end(), f) == to.end()) to.push_back(f);
  }
}

// The subset of `all` named by `fetches`.
void Select(const RunValues& all, const std::vector<std::string>& fetches, bool with_trace,
            RunValues* out) {
  out->results.clear();
  for (const std::string& f : fetches) {
    const auto it = all.results.find(f);
    if (it != all.results.end()) out->results.insert(*it);
  }
  out->trace = with_trace ? all.trace : nullptr;
}

}  // namespace

MonitoredSession::MonitoredSession(std::unique_ptr<SessionCreator> creator,
                                   std::vector<std::shared_ptr<SessionRunHook>> hooks,
                                   MonitoredSessionOptions options)
    : creator_(std::move(creator)), hooks_(std::move(hooks)), options_(std::move(options)) {
  if (!options_.env) options_.env = Env::Default();
  if (!options_.logger) options_.logger = Logger::Stderr();
}

Result<std::unique_ptr<MonitoredSession>> MonitoredSession::Create(
    std::unique_ptr<SessionCreator> creator, std::vector<std::shared_ptr<SessionRunHook>> hooks,
    MonitoredSessionOptions options) {
  if (!creator) return Status::InvalidArgument("session creator: none given");
  for (size_t i = 0; i < hooks.size(); ++i) {
    if (!hooks[i]) return Status::InvalidArgument("hooks[" + std::to_string(i) + "] is null");
  }
  if (options.max_recovery_attempts < 0 || !(options.initial_backoff_secs >= 0) ||
      !(options.max_backoff_secs >= 0)) {
    return Status::InvalidArgument(
        "max_recovery_attempts, initial_backoff_secs and max_backoff_secs must be >= 0");
  }
  std::unique_ptr<MonitoredSession> ms(
      new MonitoredSession(std::move(creator), std::move(hooks), std::move(options)));
  for (auto& hook : ms->hooks_) TRAININGD_RETURN_IF_ERROR(hook->Begin());
  Status st = ms->WithRecovery([] { return Status::Ok(); });
  if (!st.ok()) {
    ms->closed_ = true;  // nothing ran: no End(), nothing to save
    ms->session_.reset();
    return st;
  }
  return ms;
}

MonitoredSession::~MonitoredSession() {
  if (closed_) return;
  Status st = Close();
  if (!st.ok()) options_.logger->Error("closing the session: " + st.ToString());
}

Status MonitoredSession::CreateSessionAndNotifyHooks() {
  auto session = creator_->CreateSession(*this);
  if (!session.ok()) return session.status();
  session_ = std::move(session).value();
  ++sessions_created_;
  const auto& comm = session_->config().communicator;
  distributed_ = comm && comm->size() > 1;
  global_step_ = session_->global_step();
  for (auto& hook : hooks_) TRAININGD_RETURN_IF_ERROR(hook->AfterCreateSession(*session_, *this));
  return Status::Ok();
}

template <typename Body>
Status MonitoredSession::WithRecovery(Body body) {
  for (int attempt = 0;; ++attempt) {
    Status st = session_ ? Status::Ok() : CreateSessionAndNotifyHooks();
    if (st.ok()) st = body();
    if (st.ok() || !IsTransient(st) || attempt >= options_.max_recovery_attempts) return st;
    const double backoff =
        std::min(options_.max_backoff_secs, options_.initial_backoff_secs * std::pow(2.0, attempt));
    options_.logger->Warning(
        st.ToString() + "; recreating the session in " + FormatSeconds(backoff) +
        " s, from the latest checkpoint if there is one (recovery " + std::to_string(attempt + 1) +
        " of " + std::to_string(options_.max_recovery_attempts) + ")");
    session_.reset();
    options_.env->SleepForSeconds(backoff);
  }
}

Status MonitoredSession::Run(const RunArgs& args, RunValues* values) {
  if (closed_) return Status::FailedPrecondition("Run called on a closed session.");
  if (!failure_.ok()) {
    return Status::FailedPrecondition("Run called after the session failed: " +
                                      failure_.ToString());
  }
  if (stopped_by_last_run_)
    return Status::FailedPrecondition("Run called even after should_stop requested.");
  Status st = WithRecovery([&] { return RunOnce(args, values); });
  if (st.code() == StatusCode::kOutOfRange) {
    options_.logger->Info(st.message() + "; stopping.");
    stop_requested_ = true;
  } else if (!st.ok()) {
    failure_ = st;
  }
  stopped_by_last_run_ = ShouldStop();
  return st;
}

Status MonitoredSession::RunOnce(const RunArgs& args, RunValues* values) {
  RunContext ctx(args, *session_, *this);
  RunArgs merged = args;
  std::map<std::string, std::string> feed_owner;
  for (const auto& feed : args.feeds) feed_owner[feed.first] = "the caller";
  std::vector<RunArgs> requests(hooks_.size());
  for (size_t i = 0; i < hooks_.size(); ++i) {
    TRAININGD_RETURN_IF_ERROR(hooks_[i]->BeforeRun(ctx, requests[i]));
    AppendUnique(merged.fetches, requests[i].fetches);
    for (const auto& [name, value] : requests[i].feeds) {
      const auto [it, inserted] = feed_owner.emplace(name, hooks_[i]->name());
      if (!inserted) {
        return Status::InvalidArgument("feed '" + name + "' is given twice: by " + it->second +
                                       " and by " + hooks_[i]->name());
      }
      merged.feeds.emplace(name, value);
    }
    merged.options.trace = merged.options.trace || requests[i].options.trace;
    merged.options.whole_state = merged.options.whole_state || requests[i].options.whole_state;
  }
  merged.options.stop_vote = stop_vote_ || (options_.stop_flag && options_.stop_flag->load());
  RunValues all;
  TRAININGD_RETURN_IF_ERROR(session_->Run(merged, &all));
  global_step_ = session_->global_step();  // trained, whatever the hooks say next
  RunValues own;
  for (size_t i = 0; i < hooks_.size(); ++i) {
    Select(all, requests[i].fetches, requests[i].options.trace, &own);
    TRAININGD_RETURN_IF_ERROR(hooks_[i]->AfterRun(ctx, own));
  }
  if (ctx.stop_requested()) stop_requested_ = true;
  if (session_->last_step() && session_->last_step()->stop_agreed) {
    stop_agreed_ = true;
    stop_requested_ = true;
  }
  if (values) Select(all, args.fetches, args.options.trace, values);
  return Status::Ok();
}

Status MonitoredSession::Fetch(const std::vector<std::string>& fetches, RunValues* values) {
  if (closed_ || !session_) return Status::FailedPrecondition("Fetch called on a closed session.");
  return session_->Fetch(fetches, values);
}

bool MonitoredSession::ShouldStop() const {
  // Data-parallel ranks stop together, at the step whose reduction carried a stop vote; the
  // flag alone would stop this rank while the others wait for it in the next step.
  return closed_.load() || stop_requested_.load() ||
         (options_.stop_flag && !distributed_ && options_.stop_flag->load());
}

void MonitoredSession::RequestStop() {
  if (distributed_) {
    stop_vote_ = true;
  } else {
    stop_requested_ = true;
  }
}

Status MonitoredSession::AddHook(std::shared_ptr<SessionRunHook> hook) {
  if (!hook) return Status::InvalidArgument("hook is null");
  if (closed_ || !session_)
    return Status::FailedPrecondition("AddHook called on a closed session.");
  TRAININGD_RETURN_IF_ERROR(hook->Begin());
  TRAININGD_RETURN_IF_ERROR(hook->AfterCreateSession(*session_, *this));
  hooks_.push_back(std::move(hook));
  return Status::Ok();
}

Status MonitoredSession::Close() {
  if (closed_.exchange(true)) return Status::Ok();
  Status result;
  if (session_ && !failure_.ok() && session_->diverged()) {
    options_.logger->Warning(
        "Not running the hooks' end(): the model diverged (loss = " +
        std::to_string(session_->last_step() ? session_->last_step()->loss : 0.0) +
        "), so no final checkpoint replaces the last good one.");
  } else if (session_) {
    // Data-parallel ranks that ended together (a stop vote, the same last step) make the whole
    // state every rank's, so the chief's final checkpoint can capture it. After a failure the
    // others may not be here: no collective, and no checkpoint from a partial state.
    if (distributed_ && failure_.ok()) {
      result = session_->MakeStateWhole();
      if (!result.ok()) options_.logger->Error("making the state whole: " + result.ToString());
    }
    for (auto& hook : hooks_) {
      Status st = hook->End(*session_);
      if (!st.ok()) {
        options_.logger->Error(hook->name() + " end(): " + st.ToString());
        if (result.ok()) result = st;
      }
    }
  }
  if (options_.summary_writer) {
    Status st = options_.summary_writer->Flush();
    if (result.ok()) result = st;
  }
  session_.reset();
  return result;
}

}  // namespace trainingd::engine
