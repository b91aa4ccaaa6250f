// An in-memory ExperimentService for the router tests: experiment "exp-1" (running, a space of
// "optimizer.learning_rate" and "batch_size") and "done" (completed); Submit adds "exp-2".
// Records what it was asked (the last spec, spec text and trial query). Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/api/experiment_service.h"

namespace trainingd::api {

class FakeExperimentService : public ExperimentService {
 public:
  std::optional<ExperimentSpec> last_spec;
  std::string last_spec_json;
  std::optional<TrialQuery> last_query;
  std::optional<ExperimentState> last_list_state;
  int64_t last_list_limit = 0;
  std::string last_cursor;

  engine::Result<ExperimentPlan> Preview(const ExperimentSpec& spec) override {
    last_spec = spec;
    if (spec.searcher.max_trials == 99) {
      return engine::Status::InvalidArgument("searcher.max_trials: over the memory budget");
    }
    ExperimentPlan plan;
    plan.rungs = {{0, 0, spec.searcher.min_steps, spec.searcher.max_trials, 0, 0, std::nullopt},
                  {0, 1, spec.searcher.max_steps, 1, 0, 0, std::nullopt}};
    plan.trials = spec.searcher.max_trials;
    plan.max_total_steps = 1234;
    plan.first_trials = {{{"batch_size", "64"}}};
    return plan;
  }
  engine::Result<ExperimentInfo> Submit(ExperimentSpec spec, std::string spec_json,
                                        std::string owner = std::string(kAdminUser)) override {
    last_spec = spec;
    last_spec_json = spec_json;
    ExperimentInfo e = Info("exp-2", ExperimentState::kRunning);
    e.owner = std::move(owner);
    e.name = spec.name;
    e.spec_json = std::move(spec_json);
    return e;
  }
  engine::Result<ExperimentPage> List(std::optional<ExperimentState> state, int64_t limit,
                                      const std::string& cursor) override {
    last_list_state = state;
    last_list_limit = limit;
    last_cursor = cursor;
    ExperimentPage page;
    page.experiments = {Info("exp-1", ExperimentState::kRunning)};
    page.next_cursor = "c2";
    return page;
  }
  // The owner Get answers for an experiment; the admin when not set.
  std::map<std::string, std::string> owners;

  engine::Result<ExperimentInfo> Get(const std::string& id) override {
    std::optional<ExperimentInfo> e;
    if (id == "exp-1") e = Info(id, ExperimentState::kRunning);
    if (id == "done") e = Info(id, ExperimentState::kCompleted);
    if (!e) return engine::Status::NotFound("experiment " + id + " not found");
    if (auto it = owners.find(id); it != owners.end()) e->owner = it->second;
    return *e;
  }
  engine::Result<TrialPage> Trials(const std::string& id, const TrialQuery& query) override {
    TRAININGD_RETURN_IF_ERROR(Get(id).status());
    // As the daemon's: a column or a path of the space (here batch_size and the learning rate).
    for (const char* known :
         {"index", "metric", "state", "global_step", "batch_size", "optimizer.learning_rate"}) {
      if (query.sort == known) {
        last_query = query;
        break;
      }
    }
    if (!last_query || last_query->sort != query.sort) {
      return engine::Status::InvalidArgument(
          "sort: must be index, metric, state, global_step or a path of the experiment's space "
          "(batch_size, optimizer.learning_rate); got \"" +
          query.sort + "\"");
    }
    last_query = query;
    TrialPage page;
    TrialInfo t;
    t.index = 3;
    t.job_id = "job-3";
    t.hyperparameters = {{"batch_size", "64"}, {"optimizer.learning_rate", "0.001"}};
    t.state = TrialState::kWaiting;
    t.rung = 0;
    t.rung_metrics = {0.8};
    t.metric = 0.8;
    page.trials = {t};
    page.total = 7;
    return page;
  }
  engine::Result<ExperimentInfo> Stop(const std::string& id) override {
    auto e = Get(id);
    if (!e.ok()) return e.status();
    if (e->state != ExperimentState::kRunning) {
      return engine::Status::FailedPrecondition("experiment " + id + " is completed");
    }
    e->state = ExperimentState::kStopping;
    return e;
  }
  engine::Result<ExperimentInfo> Resume(const std::string& id) override {
    auto e = Get(id);
    if (!e.ok()) return e.status();
    if (e->state == ExperimentState::kRunning) {
      return engine::Status::FailedPrecondition("experiment " + id + " is running");
    }
    e->state = ExperimentState::kRunning;
    return e;
  }
  engine::Status Delete(const std::string& id) override {
    auto e = Get(id);
    if (!e.ok()) return e.status();
    if (e->state == ExperimentState::kRunning) {
      return engine::Status::FailedPrecondition("experiment " + id + " is running");
    }
    return engine::Status::Ok();
  }
  std::vector<Metric> Metrics() override { return {}; }

 private:
  static ExperimentInfo Info(const std::string& id, ExperimentState state) {
    ExperimentInfo e;
    e.id = id;
    e.name = "search";
    e.state = state;
    e.searcher = "asha";
    e.metric = "validation/accuracy";
    e.created_at = 1700000000;
    e.max_trials = 16;
    e.spec_json =
        R"({"name":"search","space":{"batch_size":{"type":"int","min":32,"max":128,"count":0},)"
        R"("optimizer.learning_rate":{"type":"log","min":0.0001,"max":0.01,"count":0}}})";
    return e;
  }
};

}  // namespace trainingd::api
