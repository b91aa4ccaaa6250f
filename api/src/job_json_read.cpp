// The inverses of job_json.h's writers, for the API's client. Lenient where the server may add
// fields later (unknown keys are ignored: an older client must read a newer daemon), strict on
// the types of the fields it reads.
#include <nlohmann/json.hpp>

#include "answer_json_util.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/strict_json.h"

namespace trainingd::api {
namespace sj = strict_json;
using nlohmann::json;

namespace {

using answer_json::NeedArray;
using answer_json::NeedObject;
using answer_json::Nullable;

engine::Status ReadState(const json& v, const std::string& path, JobState* out) {
  std::string name;
  TRAININGD_RETURN_IF_ERROR(sj::Read(v, path, &name));
  const std::optional<JobState> s = ParseJobState(name);
  if (!s) return sj::Bad(path, "unknown state " + sj::Quote(name));
  *out = *s;
  return engine::Status::Ok();
}

engine::Result<JobInfo> JobAt(const json& v, const std::string& path) {
  TRAININGD_RETURN_IF_ERROR(NeedObject(v, path));
  JobInfo job;
  for (const char* key : {"id", "state"}) TRAININGD_RETURN_IF_ERROR(sj::Require(v, path, key));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "id", &job.id));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "name", &job.name));
  TRAININGD_RETURN_IF_ERROR(ReadState(v["state"], sj::Child(path, "state"), &job.state));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "global_step", &job.global_step));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "max_steps", &job.max_steps));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "created_at", &job.created_at));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "started_at", &job.started_at));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "finished_at", &job.finished_at));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "error", &job.error));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "reason", &job.reason));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "examples_per_sec", &job.examples_per_sec));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "executor", &job.executor));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "owner", &job.owner));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "priority", &job.priority));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "preempted_by", &job.preempted_by));
  TRAININGD_RETURN_IF_ERROR(Nullable(v, path, "waiting_reason", &job.waiting_reason));
  if (const auto it = v.find("latest_scalars"); it != v.end()) {
    const std::string p = sj::Child(path, "latest_scalars");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    for (const auto& [tag, value] : it->items()) {
      TRAININGD_RETURN_IF_ERROR(sj::Read(value, sj::Child(p, tag), &job.latest_scalars[tag]));
    }
  }
  if (const auto it = v.find("experiment"); it != v.end() && !it->is_null()) {
    const std::string p = sj::Child(path, "experiment");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    TRAININGD_RETURN_IF_ERROR(sj::Require(*it, p, "id"));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "id", &job.trial.experiment_id));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "trial", &job.trial.index));
    if (const auto hp = it->find("hyperparameters"); hp != it->end()) {
      auto read = HyperparametersFromJson(*hp, sj::Child(p, "hyperparameters"));
      if (!read.ok()) return read.status();
      job.trial.hyperparameters = std::move(*read);
    }
  }
  if (const auto it = v.find("best_checkpoint"); it != v.end() && !it->is_null()) {
    const std::string p = sj::Child(path, "best_checkpoint");
    TRAININGD_RETURN_IF_ERROR(NeedObject(*it, p));
    BestCheckpointInfo best;
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "step", &best.step));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "metric", &best.metric));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "mode", &best.mode));
    TRAININGD_RETURN_IF_ERROR(sj::Field(*it, p, "value", &best.value));
    job.best_checkpoint = best;
  }
  if (const auto it = v.find("spec"); it != v.end() && !it->is_null()) job.spec_json = it->dump();
  return job;
}

}  // namespace

engine::Result<JobInfo> JobFromJson(const json& v) { return JobAt(v, ""); }

engine::Result<JobPage> JobPageFromJson(const json& v) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, "", "jobs"));
  JobPage page;
  for (size_t i = 0; i < v["jobs"].size(); ++i) {
    auto job = JobAt(v["jobs"][i], sj::Index("jobs", i));
    if (!job.ok()) return job.status();
    page.jobs.push_back(std::move(*job));
  }
  TRAININGD_RETURN_IF_ERROR(Nullable(v, "", "next_cursor", &page.next_cursor));
  return page;
}

engine::Result<std::vector<ScalarPoint>> ScalarsFromJson(const json& v) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, "", "points"));
  std::vector<ScalarPoint> points;
  for (size_t i = 0; i < v["points"].size(); ++i) {
    const json& p = v["points"][i];
    const std::string path = sj::Index("points", i);
    TRAININGD_RETURN_IF_ERROR(NeedObject(p, path));
    ScalarPoint s;
    TRAININGD_RETURN_IF_ERROR(sj::Field(p, path, "step", &s.step));
    TRAININGD_RETURN_IF_ERROR(sj::Field(p, path, "wall_time", &s.wall_time));
    TRAININGD_RETURN_IF_ERROR(sj::Field(p, path, "value", &s.value));
    TRAININGD_RETURN_IF_ERROR(sj::Field(p, path, "min", &s.min));
    TRAININGD_RETURN_IF_ERROR(sj::Field(p, path, "max", &s.max));
    points.push_back(s);
  }
  return points;
}

engine::Result<std::vector<CheckpointInfo>> CheckpointsFromJson(const json& v) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, "", "checkpoints"));
  std::vector<CheckpointInfo> out;
  for (size_t i = 0; i < v["checkpoints"].size(); ++i) {
    const json& c = v["checkpoints"][i];
    const std::string path = sj::Index("checkpoints", i);
    TRAININGD_RETURN_IF_ERROR(NeedObject(c, path));
    CheckpointInfo info;
    TRAININGD_RETURN_IF_ERROR(sj::Field(c, path, "global_step", &info.global_step));
    TRAININGD_RETURN_IF_ERROR(sj::Field(c, path, "name", &info.name));
    TRAININGD_RETURN_IF_ERROR(sj::Field(c, path, "bytes", &info.bytes));
    TRAININGD_RETURN_IF_ERROR(sj::Field(c, path, "mtime", &info.mtime));
    out.push_back(std::move(info));
  }
  return out;
}

engine::Result<std::vector<LogLine>> LogLinesFromJson(const json& v, int64_t* next_from) {
  TRAININGD_RETURN_IF_ERROR(NeedArray(v, "", "lines"));
  std::vector<LogLine> out;
  for (size_t i = 0; i < v["lines"].size(); ++i) {
    const json& l = v["lines"][i];
    const std::string path = sj::Index("lines", i);
    TRAININGD_RETURN_IF_ERROR(NeedObject(l, path));
    LogLine line;
    TRAININGD_RETURN_IF_ERROR(sj::Field(l, path, "line", &line.line));
    TRAININGD_RETURN_IF_ERROR(sj::Field(l, path, "text", &line.text));
    out.push_back(std::move(line));
  }
  if (next_from) {
    TRAININGD_RETURN_IF_ERROR(sj::Require(v, "", "next_from"));
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "next_from", next_from));
  }
  return out;
}

engine::Result<ServiceEvent> EventFromJson(int64_t id, std::string_view kind,
                                           std::string_view data) {
  auto doc = sj::Parse(data);
  if (!doc.ok()) return doc.status();
  const json& v = *doc;
  TRAININGD_RETURN_IF_ERROR(NeedObject(v, ""));
  ServiceEvent event;
  event.id = id;
  if (kind == "state" || kind == "job") {
    event.kind = kind == "state" ? EventKind::kState : EventKind::kJob;
    JobStateEvent e;
    TRAININGD_RETURN_IF_ERROR(sj::Require(v, "", "state"));
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "id", &e.id));
    if (v["state"] == "deleted") {
      e.deleted = true;
    } else {
      TRAININGD_RETURN_IF_ERROR(ReadState(v["state"], "state", &e.state));
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "name", &e.name));
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "global_step", &e.global_step));
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "max_steps", &e.max_steps));
      TRAININGD_RETURN_IF_ERROR(Nullable(v, "", "error", &e.error));
      TRAININGD_RETURN_IF_ERROR(Nullable(v, "", "reason", &e.reason));
    }
    event.data = std::move(e);
  } else if (kind == "scalar") {
    event.kind = EventKind::kScalar;
    ScalarEvent e;
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "tag", &e.tag));
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "step", &e.step));
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "value", &e.value));
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "wall_time", &e.wall_time));
    event.data = std::move(e);
  } else if (kind == "log") {
    event.kind = EventKind::kLog;
    LogEvent e;
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "text", &e.text));
    event.data = std::move(e);
  } else if (kind == "experiment") {
    event.kind = EventKind::kExperiment;
    ExperimentStateEvent e;
    TRAININGD_RETURN_IF_ERROR(sj::Require(v, "", "state"));
    TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "id", &e.id));
    if (v["state"] == "deleted") {
      e.deleted = true;
    } else {
      const auto state = v["state"].is_string()
                             ? ParseExperimentState(v["state"].get<std::string>())
                             : std::nullopt;
      if (!state) return sj::Bad("state", "not an experiment state");
      e.state = *state;
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "name", &e.name));
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "trials_started", &e.trials_started));
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "max_trials", &e.max_trials));
      TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "steps_used", &e.steps_used));
      if (v.contains("best") && !v["best"].is_null()) {
        double metric = 0;
        TRAININGD_RETURN_IF_ERROR(sj::Field(v["best"], "best", "trial", &e.best_trial));
        TRAININGD_RETURN_IF_ERROR(sj::Field(v["best"], "best", "metric", &metric));
        e.best_metric = metric;
      }
      TRAININGD_RETURN_IF_ERROR(Nullable(v, "", "error", &e.error));
      TRAININGD_RETURN_IF_ERROR(Nullable(v, "", "reason", &e.reason));
    }
    event.data = std::move(e);
  } else {
    return sj::Bad("event", "unknown event kind " + sj::Quote(kind));
  }
  return event;
}

bool ErrorFromJson(const json& v, std::string* code, std::string* message, std::string* field) {
  if (!v.is_object()) return false;
  const auto it = v.find("error");
  if (it == v.end() || !it->is_object()) return false;
  const auto text = [&](const char* key, std::string* out) {
    const auto f = it->find(key);
    if (out && f != it->end() && f->is_string()) *out = f->get<std::string>();
  };
  text("code", code);
  text("message", message);
  text("field", field);
  return true;
}

}  // namespace trainingd::api
