#include "commands/client/follow.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/sse.h"

namespace trainingd::daemon::client {
namespace {
using Clock = std::chrono::steady_clock;

constexpr auto kGiveUpAfter = std::chrono::seconds(120);
constexpr int64_t kLogPage = 1000;

// One thing followed to its end over an event stream: a job or an experiment. FollowLoop is
// the loop they share: look at the record, read the stream, look again when an event asks,
// reconnect with Last-Event-ID after a backoff.
class FollowTarget {
 public:
  virtual ~FollowTarget() = default;
  // GETs the record (and prints what is new): the exit code when it has ended; *f set (a
  // message) when a call failed, cleared otherwise.
  virtual std::optional<int> Check(Failure* f) = 0;
  // The events of one read of the stream (none for a keep-alive): true when the record should
  // be looked at now. *f set (a message) stops following.
  virtual bool OnEvents(const std::vector<api::ServiceEvent>& events, Failure* f) = 0;
  // Following stops without an end (f's exit code): prints why and how to reattach.
  virtual int Finish(const Failure& f) = 0;
};

int FollowLoop(Client& c, const std::string& events_path, FollowTarget& target,
               api::Deadline deadline, bool quiet_reconnect) {
  std::optional<Clock::time_point> failing_since;
  auto backoff = std::chrono::milliseconds(200);
  int64_t last_event_id = -1;
  while (true) {
    // What the records say now: whatever is new since the last look, and whether it ended.
    Failure f;
    if (std::optional<int> done = target.Check(&f)) return *done;
    // Unreachable before the command's first answer (this look's, or a call's before the
    // follow: a submit, the log so far): the daemon is not there (exit 5 at once); after it, a
    // restart or a dropped connection, to ride out.
    if (!f.message.empty() && (f.exit_code != kExitUnreachable || !c.answered())) {
      return target.Finish(f);
    }
    if (f.message.empty()) {
      failing_since.reset();
      std::optional<int> ended;
      api::SseParser parser;
      bool got_bytes = false;
      api::HttpReply reply;
      const engine::Status st = c.http().Stream(
          events_path, last_event_id,
          [&](std::string_view bytes) {
            got_bytes = true;
            std::vector<api::ServiceEvent> events;
            for (const api::SseFrame& frame : parser.Feed(bytes)) {
              if (frame.id) last_event_id = *frame.id;
              auto event = api::EventFromJson(frame.id.value_or(0), frame.event, frame.data);
              if (event.ok()) events.push_back(std::move(*event));
            }
            const bool look = target.OnEvents(events, &f);
            if (!f.message.empty()) return false;
            if (look) {
              ended = target.Check(&f);
              if (ended || !f.message.empty()) return false;
            }
            return true;
          },
          &reply, deadline);
      if (ended) return *ended;
      if (!f.message.empty() && f.exit_code != kExitUnreachable) return target.Finish(f);
      if (st.ok() && reply.status != 0 && reply.status / 100 != 2) {
        return target.Finish(Client::FromReply(reply, false));
      }
      if (!st.ok() && st.code() != engine::StatusCode::kUnavailable) {
        return target.Finish(Client::FromStatus(st));
      }
      if (got_bytes) backoff = std::chrono::milliseconds(200);
    }
    // The stream ended or the daemon is away: back off, then look again.
    if (!failing_since) failing_since = Clock::now();
    if (Clock::now() - *failing_since > kGiveUpAfter) {
      return target.Finish({kExitUnreachable, "the daemon is unreachable (gave up after 120 s)"});
    }
    if (c.stderr_tty() && !quiet_reconnect) {
      std::fprintf(stderr, "trainingd %s: the connection dropped; reconnecting...\n",
                   c.command().c_str());
    }
    const auto wake_at = Clock::now() + backoff;
    while (Clock::now() < wake_at) {
      if (Interrupted()) return target.Finish({kExitInterrupted, ""});
      if (Clock::now() >= deadline) return target.Finish({kExitTimeout, ""});
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

// The reattach hint of a follow that stopped without an end (timeout, Ctrl-C); its exit code.
int Detached(const Client& c, const Failure& f, const char* what, const std::string& id,
             const std::string& reattach) {
  std::fprintf(stderr, "trainingd %s: %s; %s %s keeps running. Reattach with: trainingd %s %s\n",
               c.command().c_str(), f.exit_code == kExitInterrupted ? "detached" : "timed out",
               what, id.c_str(), reattach.c_str(), id.c_str());
  return f.exit_code;
}

class JobFollower : public FollowTarget {
 public:
  JobFollower(Client& c, const std::string& id, const FollowOptions& o, api::JobInfo* final)
      : c_(c), id_(id), o_(o), next_from_(o.from_line), final_(final) {}

  int Run() { return FollowLoop(c_, JobPath(id_) + "/events", *this, o_.deadline, o_.watch); }

  bool OnEvents(const std::vector<api::ServiceEvent>& events, Failure* f) override {
    bool wake = false, end_seen = false;
    for (const api::ServiceEvent& event : events) {
      if (event.kind == api::EventKind::kLog) wake = true;
      if (const auto* s = std::get_if<api::JobStateEvent>(&event.data)) {
        job_.state = s->state;
        job_.global_step = s->global_step;
        job_.max_steps = s->max_steps;
        end_seen = end_seen || IsEndState(s->state);
      }
      if (const auto* s = std::get_if<api::ScalarEvent>(&event.data)) {
        job_.latest_scalars[s->tag] = s->value;
        job_.global_step = std::max(job_.global_step, s->step);
      }
    }
    if (o_.print_logs && wake && !PrintLogs(f)) return false;
    if (o_.watch) Draw(false);
    return end_seen;
  }

  // GET the job (and its new log lines): the exit code when it has ended.
  std::optional<int> Check(Failure* f) override {
    *f = Failure{};
    auto doc = c_.Call("GET", JobPath(id_), f, {}, false, o_.deadline);
    if (!doc) return std::nullopt;
    auto job = api::JobFromJson(*doc);
    if (!job.ok()) {
      *f = {kExitFailed, "the daemon's answer: " + job.status().message()};
      return std::nullopt;
    }
    job_ = *job;
    UpdateRate();
    if (o_.print_logs && !PrintLogs(f)) return std::nullopt;
    if (o_.watch) Draw(IsEndState(job_.state));
    if (!IsEndState(job_.state)) return std::nullopt;
    if (final_) *final_ = job_;
    return ExitCodeOfState(job_.state);
  }

  int Finish(const Failure& f) override {
    if (o_.watch && c_.stdout_tty()) std::printf("\n");
    if (f.exit_code == kExitInterrupted || f.exit_code == kExitTimeout) {
      return Detached(c_, f, "job", id_,
                      o_.print_logs ? "jobs logs -f" : (o_.watch ? "jobs watch" : "jobs wait"));
    }
    return c_.Fail(f);
  }

 private:
  bool PrintLogs(Failure* f) {
    while (true) {
      auto doc = c_.Call("GET",
                         JobPath(id_) + "/logs?from=" + std::to_string(next_from_) +
                             "&limit=" + std::to_string(kLogPage),
                         f, {}, false, o_.deadline);
      if (!doc) return false;
      int64_t next = next_from_;
      auto lines = api::LogLinesFromJson(*doc, &next);
      if (!lines.ok()) {
        *f = {kExitFailed, "the daemon's answer: " + lines.status().message()};
        return false;
      }
      for (const api::LogLine& l : *lines) {
        if (c_.mode() == OutputMode::kJsonl || c_.mode() == OutputMode::kJson) {
          std::printf("%s\n", api::DumpJson({{"line", l.line}, {"text", l.text}}).c_str());
        } else {
          std::printf("%s\n", l.text.c_str());
        }
      }
      std::fflush(stdout);
      next_from_ = std::max(next, next_from_);
      if (static_cast<int64_t>(lines->size()) < kLogPage) return true;
    }
  }

  void UpdateRate() {
    const auto now = Clock::now();
    if (rate_at_) {
      const double dt = std::chrono::duration<double>(now - *rate_at_).count();
      if (dt > 0.5 && job_.global_step >= rate_step_) {
        const double r = static_cast<double>(job_.global_step - rate_step_) / dt;
        steps_per_sec_ = steps_per_sec_ > 0 ? 0.5 * steps_per_sec_ + 0.5 * r : r;
        rate_at_ = now;
        rate_step_ = job_.global_step;
      }
    } else {
      rate_at_ = now;
      rate_step_ = job_.global_step;
    }
  }

  void Draw(bool last) {
    const auto now = Clock::now();
    if (!last && drawn_at_ &&
        now - *drawn_at_ <
            (c_.stdout_tty() ? std::chrono::milliseconds(200) : std::chrono::seconds(5))) {
      return;
    }
    if (!last && (!refreshed_at_ || now - *refreshed_at_ > std::chrono::seconds(2))) {
      refreshed_at_ = now;  // examples/s and the rate come from the job's record
      Failure ignored;
      if (auto doc = c_.Call("GET", JobPath(id_), &ignored, {}, false, o_.deadline)) {
        if (auto job = api::JobFromJson(*doc); job.ok()) job_ = *job;
      }
      UpdateRate();
    }
    drawn_at_ = now;
    if (c_.stdout_tty()) {
      winsize ws{};
      const int cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
      // The bar takes what the text leaves of the width, 10 to 30 columns; on a narrow
      // terminal the labels shorten, so that the line never wraps (which breaks the redraw).
      bool compact = false;
      int text = static_cast<int>(WatchLine(job_, steps_per_sec_, 0, false).size()) + 8;
      if (cols - text < 10) {
        compact = true;
        text = static_cast<int>(WatchLine(job_, steps_per_sec_, 0, true).size()) + 8;
      }
      const int bar = std::clamp(cols - 1 - text, 0, 30);
      const std::string line = WatchLine(job_, steps_per_sec_, bar, compact);
      std::printf("\r\033[K%s%s", line.c_str(), last ? "\n" : "");
    } else {
      std::printf("%s\n", WatchLine(job_, steps_per_sec_, 0, false).c_str());
    }
    std::fflush(stdout);
  }

  Client& c_;
  const std::string id_;
  const FollowOptions o_;
  int64_t next_from_;
  api::JobInfo* final_;
  api::JobInfo job_;
  double steps_per_sec_ = 0;
  std::optional<Clock::time_point> rate_at_, drawn_at_, refreshed_at_;
  int64_t rate_step_ = 0;
};

class ExperimentFollower : public FollowTarget {
 public:
  ExperimentFollower(Client& c, const std::string& id, const ExperimentFollowOptions& o,
                     nlohmann::json* final)
      : c_(c), id_(id), o_(o), final_(final) {}

  int Run() { return FollowLoop(c_, "/api/v1/events", *this, o_.deadline, false); }

  bool OnEvents(const std::vector<api::ServiceEvent>& events, Failure*) override {
    for (const api::ServiceEvent& event : events) {
      const auto* e = std::get_if<api::ExperimentStateEvent>(&event.data);
      if (e && e->id == id_) return true;
    }
    return false;
  }

  std::optional<int> Check(Failure* f) override {
    *f = Failure{};
    auto doc = c_.Call("GET", ExperimentPath(id_), f, {}, false, o_.deadline);
    if (!doc) return std::nullopt;
    auto e = api::ExperimentFromJson(*doc);
    if (!e.ok()) {
      *f = {kExitFailed, "the daemon's answer: " + e.status().message()};
      return std::nullopt;
    }
    if (o_.print_changes) {
      const std::string line = ExperimentLine(*e);
      if (line != last_line_) {
        if (c_.mode() == OutputMode::kJson || c_.mode() == OutputMode::kJsonl) {
          std::printf("%s\n", api::DumpJson(*doc).c_str());
        } else {
          std::printf("%s\n", line.c_str());
        }
        std::fflush(stdout);
        last_line_ = line;
      }
    }
    if (!IsEndState(e->state)) return std::nullopt;
    if (final_) *final_ = std::move(*doc);
    return ExitCodeOfState(e->state);
  }

  int Finish(const Failure& f) override {
    if (f.exit_code == kExitInterrupted || f.exit_code == kExitTimeout) {
      return Detached(c_, f, "experiment", id_,
                      o_.print_changes ? "experiments wait -f" : "experiments wait");
    }
    return c_.Fail(f);
  }

 private:
  Client& c_;
  const std::string id_;
  const ExperimentFollowOptions o_;
  nlohmann::json* final_;
  std::string last_line_;
};

std::string Duration(double secs) {
  if (!(secs >= 0) || secs > 1e7) return "-";
  const auto s = static_cast<int64_t>(secs + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

// `jobs list --watch`: the job list's stream, with no end of its own.
class JobListFollower : public FollowTarget {
 public:
  JobListFollower(Client& c, const std::function<bool(const std::string&, Failure*)>& changed)
      : c_(c), changed_(changed) {}

  int Run() { return FollowLoop(c_, "/api/v1/events", *this, api::kNoDeadline, false); }

  // Whether the daemon answers (the caller prints the list itself).
  std::optional<int> Check(Failure* f) override {
    c_.Call("GET", "/api/v1/jobs?limit=1", f);
    return std::nullopt;
  }

  bool OnEvents(const std::vector<api::ServiceEvent>& events, Failure* f) override {
    for (const api::ServiceEvent& event : events) {
      const auto* s = std::get_if<api::JobStateEvent>(&event.data);
      if (event.kind == api::EventKind::kJob && s != nullptr && !changed_(s->id, f)) return false;
    }
    return false;
  }

  int Finish(const Failure& f) override {
    return f.exit_code == kExitInterrupted ? f.exit_code : c_.Fail(f);
  }

 private:
  Client& c_;
  const std::function<bool(const std::string&, Failure*)>& changed_;
};

}  // namespace

int FollowJobList(Client& client,
                  const std::function<bool(const std::string& job_id, Failure* f)>& changed) {
  return JobListFollower(client, changed).Run();
}

std::string WatchLine(const api::JobInfo& job, double steps_per_sec, int bar_width, bool compact) {
  const auto scalar = [&](const char* tag) {
    const auto it = job.latest_scalars.find(tag);
    return it == job.latest_scalars.end() ? std::string("-") : FormatNumber(it->second);
  };
  std::string out = api::JobStateName(job.state);
  if (bar_width > 0) {
    const double frac =
        job.max_steps > 0
            ? std::clamp(static_cast<double>(job.global_step) / job.max_steps, 0.0, 1.0)
            : 0.0;
    const int full = static_cast<int>(frac * bar_width);
    char pct[16];
    std::snprintf(pct, sizeof pct, " %3d%%", static_cast<int>(frac * 100));
    out += " [" + std::string(full, '#') + std::string(bar_width - full, '.') + "]" + pct;
  }
  char eps[32];
  std::snprintf(eps, sizeof eps, "%.0f", job.examples_per_sec);
  const double eta = steps_per_sec > 0 && job.state == api::JobState::kRunning
                         ? static_cast<double>(job.max_steps - job.global_step) / steps_per_sec
                         : -1;
  const std::string steps = std::to_string(job.global_step) + "/" + std::to_string(job.max_steps);
  if (compact) {
    return out + " " + steps + " loss " + scalar("loss") + " acc " + scalar("accuracy") + " " +
           eps + " ex/s ETA " + Duration(eta);
  }
  return out + " step " + steps + " loss " + scalar("loss") + " accuracy " + scalar("accuracy") +
         " examples/s " + eps + " ETA " + Duration(eta);
}

std::string ExperimentLine(const api::ExperimentInfo& e) {
  std::string out = std::string(api::ExperimentStateName(e.state)) + ": trials " +
                    std::to_string(e.trials_started) + "/" + std::to_string(e.max_trials) +
                    " started";
  std::string by_state;
  for (const auto& [state, count] : e.trials_by_state) {
    if (count == 0) continue;
    by_state += (by_state.empty() ? "" : ", ") + std::to_string(count) + " " + state;
  }
  if (!by_state.empty()) out += " (" + by_state + ")";
  out += ", " + std::to_string(e.steps_used) + " steps";
  if (e.best) {
    out += ", best " + e.metric + " " + FormatNumber(e.best->metric) + " (trial " +
           std::to_string(e.best->index) + ")";
  }
  if (!e.reason.empty()) out += "; " + e.reason;
  if (!e.error.empty()) out += "; error: " + e.error;
  return out;
}

int FollowExperiment(Client& client, const std::string& id, const ExperimentFollowOptions& options,
                     nlohmann::json* final) {
  return ExperimentFollower(client, id, options, final).Run();
}

int FollowJob(Client& client, const std::string& id, const FollowOptions& options,
              api::JobInfo* final) {
  return JobFollower(client, id, options, final).Run();
}

}  // namespace trainingd::daemon::client
