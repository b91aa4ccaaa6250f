#include "trainingd/api/run_report.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "trainingd/api/evaluation_json.h"
#include "trainingd/api/job_json.h"

namespace trainingd::api {
namespace {

using json = nlohmann::json;
namespace eng = trainingd::engine;

constexpr eng::LogSeverity kSeverities[] = {eng::LogSeverity::kInfo, eng::LogSeverity::kWarning,
                                            eng::LogSeverity::kError};
constexpr eng::JobResult::Outcome kOutcomes[] = {eng::JobResult::Outcome::kCompleted,
                                                 eng::JobResult::Outcome::kStopped,
                                                 eng::JobResult::Outcome::kFailed};
constexpr eng::JobResult::StopCause kStopCauses[] = {eng::JobResult::StopCause::kRequest,
                                                     eng::JobResult::StopCause::kTimeLimit,
                                                     eng::JobResult::StopCause::kDiskFull};

// JSON has no NaN or infinity; a diverged loss is still a value to report.
json Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

std::optional<double> NumberFrom(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

json StatusValue(const eng::Status& st) {
  return {{"code", eng::StatusCodeName(st.code())}, {"message", st.message()}};
}

std::optional<eng::Status> StatusFrom(const json& v) {
  if (!v.is_object() || !v.contains("code") || !v["code"].is_string() || !v.contains("message") ||
      !v["message"].is_string()) {
    return std::nullopt;
  }
  const std::string code = v["code"].get<std::string>();
  for (int c = 0; c <= static_cast<int>(eng::StatusCode::kInternal); ++c) {
    const auto sc = static_cast<eng::StatusCode>(c);
    if (code == eng::StatusCodeName(sc)) return eng::Status(sc, v["message"].get<std::string>());
  }
  return eng::Status::Internal(v["message"].get<std::string>());
}

json ProgressValue(const eng::RankTimings& t) {
  json ranks = json::array();
  for (const eng::RankTiming& r : t.ranks) {
    ranks.push_back({{"compute_ms", Number(r.compute_seconds * 1e3)},
                     {"allreduce_ms", Number(r.allreduce_seconds * 1e3)}});
  }
  return {{"event", "progress"}, {"global_step", t.global_step}, {"ranks", std::move(ranks)}};
}

json EventValue(const eng::RunEvent& event) {
  if (const auto* e = std::get_if<eng::SessionCreated>(&event)) {
    return {{"event", "session"}, {"global_step", e->global_step}};
  }
  if (const auto* e = std::get_if<eng::ScalarRecorded>(&event)) {
    return {{"event", "scalar"},
            {"tag", e->tag},
            {"step", e->step},
            {"value", Number(e->value)},
            {"wall_time", e->wall_time}};
  }
  if (const auto* e = std::get_if<eng::LogWritten>(&event)) {
    return {{"event", "log"}, {"severity", eng::LogSeverityName(e->severity)}, {"text", e->text}};
  }
  if (const auto* e = std::get_if<eng::AttemptStarted>(&event)) {
    return {{"event", "attempt_started"},      {"attempt", e->attempt},
            {"max_attempts", e->max_attempts}, {"workers", e->workers},
            {"from_step", e->from_step},       {"wall_time", e->wall_time}};
  }
  if (const auto* e = std::get_if<eng::AttemptEnded>(&event)) {
    return {{"event", "attempt_ended"},
            {"attempt", e->attempt},
            {"reason", e->reason},
            {"wall_time", e->wall_time}};
  }
  if (const auto* e = std::get_if<eng::RankTimings>(&event)) return ProgressValue(*e);
  if (const auto* e = std::get_if<eng::SchedulerStatus>(&event)) {
    return {{"event", "scheduler"}, {"job_id", e->job_id}, {"state", e->state},
            {"reason", e->reason},  {"nodes", e->nodes},   {"restarts", e->restarts}};
  }
  if (const auto* e = std::get_if<eng::EvaluationRecorded>(&event)) {
    json o = EvaluationToJson(e->evaluation, e->wall_time);
    o["event"] = "evaluation";
    return o;
  }
  const auto& end = std::get<eng::RunEnded>(event);
  if (!end.result.ok()) return {{"event", "end"}, {"error", StatusValue(end.result.status())}};
  const eng::JobResult& r = *end.result;
  json o = {{"event", "end"},
            {"outcome", eng::JobOutcomeName(r.outcome)},
            {"global_step", r.global_step},
            {"reason", r.reason},
            {"final_values", json::object()}};
  if (r.stop_cause != eng::JobResult::StopCause::kNone)
    o["stop_cause"] = eng::StopCauseName(r.stop_cause);
  for (const auto& [k, v] : r.final_values) o["final_values"][k] = Number(v);
  if (!r.error.ok()) o["run_error"] = StatusValue(r.error);
  return o;
}

template <typename T>
bool GetField(const json& o, const char* key, T* out) {
  const auto it = o.find(key);
  if (it == o.end()) return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return false;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (!it->is_number_integer()) return false;
  } else {
    const auto v = NumberFrom(*it);
    if (!v) return false;
    *out = *v;
    return true;
  }
  *out = it->get<T>();
  return true;
}

std::optional<eng::RunEvent> EventFrom(const json& o) {
  std::string kind;
  if (!o.is_object() || !GetField(o, "event", &kind)) return std::nullopt;
  if (kind == "session") {
    eng::SessionCreated e;
    if (!GetField(o, "global_step", &e.global_step)) return std::nullopt;
    return e;
  }
  if (kind == "scalar") {
    eng::ScalarRecorded e;
    if (!GetField(o, "tag", &e.tag) || !GetField(o, "step", &e.step) ||
        !GetField(o, "value", &e.value) || !GetField(o, "wall_time", &e.wall_time)) {
      return std::nullopt;
    }
    return e;
  }
  if (kind == "log") {
    eng::LogWritten e;
    std::string severity;
    if (!GetField(o, "severity", &severity) || !GetField(o, "text", &e.text)) return std::nullopt;
    bool known = false;
    for (eng::LogSeverity s : kSeverities) {
      if (severity == eng::LogSeverityName(s)) {
        e.severity = s;
        known = true;
      }
    }
    if (!known) return std::nullopt;
    return e;
  }
  if (kind == "attempt_started") {
    eng::AttemptStarted e;
    int64_t attempt = 0, max_attempts = 0, workers = 0;
    if (!GetField(o, "attempt", &attempt) || !GetField(o, "max_attempts", &max_attempts) ||
        !GetField(o, "workers", &workers) || !GetField(o, "from_step", &e.from_step) ||
        !GetField(o, "wall_time", &e.wall_time)) {
      return std::nullopt;
    }
    e.attempt = static_cast<int>(attempt);
    e.max_attempts = static_cast<int>(max_attempts);
    e.workers = static_cast<int>(workers);
    return e;
  }
  if (kind == "attempt_ended") {
    eng::AttemptEnded e;
    int64_t attempt = 0;
    if (!GetField(o, "attempt", &attempt) || !GetField(o, "reason", &e.reason) ||
        !GetField(o, "wall_time", &e.wall_time)) {
      return std::nullopt;
    }
    e.attempt = static_cast<int>(attempt);
    return e;
  }
  if (kind == "progress") {
    eng::RankTimings t;
    if (!GetField(o, "global_step", &t.global_step)) return std::nullopt;
    const auto it = o.find("ranks");
    if (it != o.end()) {
      if (!it->is_array() || it->size() > 4096) return std::nullopt;
      for (const json& r : *it) {
        if (!r.is_object()) return std::nullopt;
        double compute = 0, allreduce = 0;
        if (!GetField(r, "compute_ms", &compute) || !GetField(r, "allreduce_ms", &allreduce)) {
          return std::nullopt;
        }
        t.ranks.push_back({compute / 1e3, allreduce / 1e3});
      }
    }
    return t;
  }
  if (kind == "scheduler") {
    eng::SchedulerStatus e;
    int64_t restarts = 0;
    if (!GetField(o, "job_id", &e.job_id) || !GetField(o, "state", &e.state) ||
        !GetField(o, "reason", &e.reason) || !GetField(o, "nodes", &e.nodes) ||
        !GetField(o, "restarts", &restarts) || restarts < 0 || restarts > 1 << 30) {
      return std::nullopt;
    }
    e.restarts = static_cast<int>(restarts);
    return e;
  }
  if (kind == "evaluation") {
    eng::EvaluationRecorded e;
    auto evaluation = EvaluationFromJson(o, &e.wall_time);
    if (!evaluation.ok()) return std::nullopt;
    e.evaluation = std::move(evaluation).value();
    return e;
  }
  if (kind != "end") return std::nullopt;
  if (const auto it = o.find("error"); it != o.end()) {
    auto st = StatusFrom(*it);
    if (!st || st->ok()) return std::nullopt;
    return eng::RunEnded{*st};
  }
  eng::JobResult r;
  std::string outcome;
  if (!GetField(o, "outcome", &outcome) || !GetField(o, "global_step", &r.global_step) ||
      !GetField(o, "reason", &r.reason)) {
    return std::nullopt;
  }
  bool known = false;
  for (auto oc : kOutcomes) {
    if (outcome == eng::JobOutcomeName(oc)) {
      r.outcome = oc;
      known = true;
    }
  }
  if (!known) return std::nullopt;
  if (const auto it = o.find("stop_cause"); it != o.end()) {
    if (!it->is_string() || r.outcome != eng::JobResult::Outcome::kStopped) return std::nullopt;
    known = false;
    for (auto cause : kStopCauses) {
      if (it->get<std::string>() == eng::StopCauseName(cause)) {
        r.stop_cause = cause;
        known = true;
      }
    }
    if (!known) return std::nullopt;
  }
  if (const auto it = o.find("final_values"); it != o.end()) {
    if (!it->is_object()) return std::nullopt;
    for (const auto& [k, v] : it->items()) {
      const auto value = NumberFrom(v);
      if (!value) return std::nullopt;
      r.final_values[k] = *value;
    }
  }
  if (const auto it = o.find("run_error"); it != o.end()) {
    auto st = StatusFrom(*it);
    if (!st) return std::nullopt;
    r.error = *st;
  }
  return eng::RunEnded{r};
}

}  // namespace

std::string FormatRunReport(const engine::RunEvent& event) {
  return DumpJson(EventValue(event)) + "\n";
}

std::optional<engine::RunEvent> ParseRunReport(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty() || line.front() != '{') return std::nullopt;
  const json o = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded()) return std::nullopt;
  try {
    return EventFrom(o);
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

}  // namespace trainingd::api
