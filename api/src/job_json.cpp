#include "trainingd/api/job_json.h"

#include <nlohmann/json.hpp>

#include "answer_json_util.h"
#include "trainingd/api/experiment_json.h"

namespace trainingd::api {
using nlohmann::json;

using answer_json::TextOrNull;
using answer_json::TimeOrNull;

json JobToJson(const JobInfo& job, bool detail) {
  json out = {
      {"id", job.id},
      {"name", job.name},
      {"state", JobStateName(job.state)},
      {"global_step", job.global_step},
      {"max_steps", job.max_steps},
      {"created_at", TimeOrNull(job.created_at)},
      {"started_at", TimeOrNull(job.started_at)},
      {"finished_at", TimeOrNull(job.finished_at)},
      {"error", TextOrNull(job.error)},
      {"reason", TextOrNull(job.reason)},
      {"examples_per_sec", job.examples_per_sec},
      {"latest_scalars", json::object()},
      {"owner", job.owner},
      {"priority", job.priority},
      {"preempted_by", TextOrNull(job.preempted_by)},
      {"waiting_reason", TextOrNull(job.waiting_reason)},
  };
  for (const auto& [tag, value] : job.latest_scalars) out["latest_scalars"][tag] = value;
  if (job.workers > 1 || !job.attempts.empty()) {
    json attempts = json::array();
    for (const AttemptInfo& a : job.attempts) {
      attempts.push_back({{"attempt", a.attempt},
                          {"workers", a.workers},
                          {"from_step", a.from_step},
                          {"started_at", TimeOrNull(a.started_at)},
                          {"ended_at", TimeOrNull(a.ended_at)},
                          {"end", TextOrNull(a.end)}});
    }
    json ranks = json::array();
    for (size_t r = 0; r < job.ranks.size(); ++r) {
      ranks.push_back({{"rank", r},
                       {"compute_ms", job.ranks[r].compute_ms},
                       {"allreduce_ms", job.ranks[r].allreduce_ms}});
    }
    out["distributed"] = {
        {"workers", job.workers}, {"attempts", std::move(attempts)}, {"ranks", std::move(ranks)}};
  }
  out["executor"] = job.executor;
  if (job.executor == "slurm") {
    const SlurmInfo& s = job.slurm;
    out["slurm"] = s.job_id == 0 ? json(nullptr)
                                 : json{{"job_id", s.job_id},
                                        {"state", s.state},
                                        {"reason", s.reason},
                                        {"nodes", s.nodes},
                                        {"restarts", s.restarts}};
  }
  out["experiment"] =
      job.trial.experiment_id.empty()
          ? json(nullptr)
          : json{{"id", job.trial.experiment_id},
                 {"trial", job.trial.index},
                 {"hyperparameters", HyperparametersToJson(job.trial.hyperparameters)}};
  if (detail) {
    out["best_checkpoint"] = job.best_checkpoint ? json{{"step", job.best_checkpoint->step},
                                                        {"metric", job.best_checkpoint->metric},
                                                        {"mode", job.best_checkpoint->mode},
                                                        {"value", job.best_checkpoint->value}}
                                                 : json(nullptr);
    // The service stores the canonical spec as text; a spec that does not parse (it always should)
    // is shown as null rather than failing the whole answer.
    json spec = json::parse(job.spec_json, nullptr, /*allow_exceptions=*/false);
    out["spec"] = spec.is_discarded() ? json(nullptr) : std::move(spec);
  }
  return out;
}

json JobPageToJson(const JobPage& page) {
  json jobs = json::array();
  for (const JobInfo& job : page.jobs) jobs.push_back(JobToJson(job, false));
  return {{"jobs", std::move(jobs)}, {"next_cursor", TextOrNull(page.next_cursor)}};
}

json ScalarsToJson(std::string_view job_id, std::string_view tag,
                   const std::vector<ScalarPoint>& points) {
  json array = json::array();
  for (const ScalarPoint& p : points) {
    array.push_back({{"step", p.step},
                     {"wall_time", p.wall_time},
                     {"value", p.value},
                     {"min", p.min},
                     {"max", p.max}});
  }
  return {{"job_id", job_id}, {"tag", tag}, {"points", std::move(array)}};
}

json CheckpointsToJson(const std::vector<CheckpointInfo>& checkpoints) {
  json array = json::array();
  for (const CheckpointInfo& c : checkpoints) {
    array.push_back(
        {{"global_step", c.global_step}, {"name", c.name}, {"bytes", c.bytes}, {"mtime", c.mtime}});
  }
  return {{"checkpoints", std::move(array)}};
}

json LogLinesToJson(const std::vector<LogLine>& lines, int64_t from_line) {
  json array = json::array();
  int64_t next = from_line;
  for (const LogLine& l : lines) {
    array.push_back({{"line", l.line}, {"text", l.text}});
    if (l.line + 1 > next) next = l.line + 1;
  }
  return {{"lines", std::move(array)}, {"next_from", next}};
}

json EventToJson(const ServiceEvent& event) {
  struct Visitor {
    json operator()(const JobStateEvent& e) const {
      if (e.deleted) return {{"id", e.id}, {"state", "deleted"}};
      return {{"id", e.id},
              {"name", e.name},
              {"state", JobStateName(e.state)},
              {"global_step", e.global_step},
              {"max_steps", e.max_steps},
              {"error", TextOrNull(e.error)},
              {"reason", TextOrNull(e.reason)}};
    }
    json operator()(const ScalarEvent& e) const {
      return {{"tag", e.tag}, {"step", e.step}, {"value", e.value}, {"wall_time", e.wall_time}};
    }
    json operator()(const LogEvent& e) const { return {{"text", e.text}}; }
    json operator()(const ExperimentStateEvent& e) const {
      if (e.deleted) return {{"id", e.id}, {"state", "deleted"}};
      json best = nullptr;
      if (e.best_metric) best = {{"trial", e.best_trial}, {"metric", *e.best_metric}};
      return {{"id", e.id},
              {"name", e.name},
              {"state", ExperimentStateName(e.state)},
              {"trials_started", e.trials_started},
              {"max_trials", e.max_trials},
              {"steps_used", e.steps_used},
              {"best", std::move(best)},
              {"error", TextOrNull(e.error)},
              {"reason", TextOrNull(e.reason)}};
    }
  };
  return std::visit(Visitor{}, event.data);
}

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kState:
      return "state";
    case EventKind::kJob:
      return "job";
    case EventKind::kScalar:
      return "scalar";
    case EventKind::kLog:
      return "log";
    case EventKind::kExperiment:
      return "experiment";
  }
  return "message";
}

json ErrorToJson(std::string_view code, std::string_view message, std::string_view field) {
  json error = {{"code", code}, {"message", message}};
  if (!field.empty()) error["field"] = field;
  return {{"error", std::move(error)}};
}

std::string DumpJson(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainingd::api
