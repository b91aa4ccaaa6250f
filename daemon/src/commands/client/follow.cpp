#include "commands/client/follow.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "trainingd/api/job_json.h"
#include "trainingd/api/sse.h"

namespace trainingd::daemon::client {
namespace {
using Clock = std::chrono::steady_clock;

constexpr auto kGiveUpAfter = std::chrono::seconds(120);
constexpr int64_t kLogPage = 1000;

class Follower {
 public:
  Follower(Client& c, const std::string& id, const FollowOptions& o)
      : c_(c), id_(id), o_(o), next_from_(o.from_line) {}

  int Run(api::JobInfo* final) {
    std::optional<Clock::time_point> failing_since;
    auto backoff = std::chrono::milliseconds(200);
    int64_t last_event_id = -1;
    while (true) {
      // What the records say now: the log since the last line printed, and whether it ended.
      Failure f;
      if (std::optional<int> done = Check(&f, final)) return *done;
      // Unreachable before the first answer: the daemon is not there (exit 5 at once); after
      // it, a restart or a dropped connection, to ride out.
      if (!f.message.empty() && (f.exit_code != kExitUnreachable || !answered_)) return Finish(f);
      if (f.message.empty()) answered_ = true;
      if (f.message.empty()) {
        failing_since.reset();
        bool ended = false;
        int exit_code = 0;
        api::SseParser parser;
        bool got_bytes = false;
        api::HttpReply reply;
        const engine::Status st = c_.http().Stream(
            JobPath(id_) + "/events", last_event_id,
            [&](std::string_view bytes) {
              got_bytes = true;
              bool wake = false, end_seen = false;
              for (const api::SseFrame& frame : parser.Feed(bytes)) {
                if (frame.id) last_event_id = *frame.id;
                auto event = api::EventFromJson(frame.id.value_or(0), frame.event, frame.data);
                if (!event.ok()) continue;
                if (event->kind == api::EventKind::kLog) wake = true;
                if (const auto* s = std::get_if<api::JobStateEvent>(&event->data)) {
                  job_.state = s->state;
                  job_.global_step = s->global_step;
                  job_.max_steps = s->max_steps;
                  end_seen = end_seen || IsEndState(s->state);
                }
                if (const auto* s = std::get_if<api::ScalarEvent>(&event->data)) {
                  job_.latest_scalars[s->tag] = s->value;
                  job_.global_step = std::max(job_.global_step, s->step);
                }
              }
              if (o_.print_logs && wake && !PrintLogs(&f)) return false;
              if (o_.watch) Draw(false);
              if (end_seen) {
                if (std::optional<int> done = Check(&f, final)) {
                  ended = true;
                  exit_code = *done;
                  return false;
                }
                if (!f.message.empty()) return false;
              }
              return true;
            },
            &reply, o_.deadline);
        if (ended) return exit_code;
        if (!f.message.empty() && f.exit_code != kExitUnreachable) return Finish(f);
        if (st.ok() && reply.status != 0 && reply.status / 100 != 2) {
          return Finish(Client::FromReply(reply, false));
        }
        if (!st.ok() && st.code() != engine::StatusCode::kUnavailable) {
          return Finish(Client::FromStatus(st));
        }
        if (got_bytes) backoff = std::chrono::milliseconds(200);
      }
      // The stream ended or the daemon is away: back off, then look again.
      if (!failing_since) failing_since = Clock::now();
      if (Clock::now() - *failing_since > kGiveUpAfter) {
        return Finish({kExitUnreachable, "the daemon is unreachable (gave up after 120 s)"});
      }
      if (c_.stderr_tty() && !o_.watch) {
        std::fprintf(stderr, "trainingd %s: the connection dropped; reconnecting...\n",
                     c_.command().c_str());
      }
      const auto wake_at = Clock::now() + backoff;
      while (Clock::now() < wake_at) {
        if (Interrupted()) return Finish({kExitInterrupted, ""});
        if (Clock::now() >= o_.deadline) return Finish({kExitTimeout, ""});
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
    }
  }

 private:
  // GET the job (and its new log lines): the exit code when it has ended; *f set when the call
  // failed (f->message empty otherwise).
  std::optional<int> Check(Failure* f, api::JobInfo* final) {
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
    if (final) *final = job_;
    return ExitCodeOfState(job_.state);
  }

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

  int Finish(const Failure& f) {
    if (o_.watch && c_.stdout_tty()) std::printf("\n");
    if (f.exit_code == kExitInterrupted || f.exit_code == kExitTimeout) {
      std::fprintf(
          stderr, "trainingd %s: %s; job %s keeps running. Reattach with: trainingd jobs %s %s\n",
          c_.command().c_str(), f.exit_code == kExitInterrupted ? "detached" : "timed out",
          id_.c_str(), o_.print_logs ? "logs -f" : (o_.watch ? "watch" : "wait"), id_.c_str());
      return f.exit_code;
    }
    return c_.Fail(f);
  }

  Client& c_;
  const std::string id_;
  const FollowOptions o_;
  int64_t next_from_;
  api::JobInfo job_;
  double steps_per_sec_ = 0;
  std::optional<Clock::time_point> rate_at_, drawn_at_, refreshed_at_;
  int64_t rate_step_ = 0;
  bool answered_ = false;
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

}  // namespace

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

int FollowJob(Client& client, const std::string& id, const FollowOptions& options,
              api::JobInfo* final) {
  return Follower(client, id, options).Run(final);
}

}  // namespace trainingd::daemon::client
