// ExperimentManager: searches over small softmax jobs on Fashion-MNIST, on a real JobManager,
// Store and LocalExecutor. ASHA to its end with only the best checkpoints kept; the same search
// twice, and across a restart of the managers, decides the same; a promoted trial ends on the
// parameters of a trial that ran straight through; failing trials are retried then dropped; stop
// and resume; a trial's job is the experiment's to drive.
#include "trainingd/daemon/experiments/experiment_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "experiment_fixture.h"
#include "sanitized.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/checkpoint_manager.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
using api::ExperimentState;
using api::TrialState;

// An ASHA search of the learning rate of a softmax on 3000 examples: rungs of 10, 20 and 40
// steps, eta 2, `max_trials` trials, one at a time. `extra` is spliced into the top-level object.
std::string SearchSpec(
    const std::string& extra = "", int max_trials = 8,
    const std::string& learning_rate = R"({"type": "log", "min": 0.0001, "max": 0.1})") {
  return R"({"name": "search",
    "base_job": {"name": "t", "model": "softmax",
      "dataset": {"name": "fashion-mnist", "validation_size": 500, "max_train_examples": 3000,
                  "max_test_examples": 500},
      "batch_size": 50, "max_steps": 40, "seed": 1,
      "optimizer": {"type": "adam", "learning_rate": 0.001},
      "hooks": {"checkpoint": {"every_steps": 1000}, "summary": {"every_steps": 10},
                "evaluation": {"every_steps": 1000, "split": "validation"},
                "logging": {"enabled": false}}},
    "space": {"optimizer.learning_rate": )" +
         learning_rate + R"(},
    "searcher": {"name": "asha", "metric": "validation/accuracy", "mode": "max",
                 "max_trials": )" +
         std::to_string(max_trials) + R"(, "max_concurrent_trials": 1, "min_steps": 10,
                 "max_steps": 40, "reduction_factor": 2, "seed": 3})" +
         extra + "}";
}

class ExperimentManagerTest : public ExperimentFixture {
 protected:
  // What a search decided, without times and job ids: each trial's hyperparameters, seed,
  // results and end.
  std::vector<std::string> Outcome(const std::string& id) {
    std::vector<std::string> out;
    for (const api::TrialInfo& t : AllTrials(id)) {
      std::string line = std::to_string(t.index) + " " + t.hyperparameters[0].second + " " +
                         std::to_string(t.seed) + " " + api::TrialStateName(t.state) + " [";
      for (double m : t.rung_metrics) line += std::to_string(m) + " ";
      out.push_back(line + "]");
    }
    return out;
  }
};

TEST_F(ExperimentManagerTest, AshaRunsToItsEndAndKeepsOnlyTheBestCheckpoints) {
  const api::ExperimentInfo submitted = SubmitSearch(SearchSpec());
  EXPECT_EQ(submitted.state, ExperimentState::kRunning);
  ASSERT_EQ(submitted.plan.rungs.size(), 3u);
  const api::ExperimentInfo done = WaitForExperiment(submitted.id, {ExperimentState::kCompleted});
  EXPECT_EQ(done.reason, "every trial is done");
  EXPECT_EQ(done.trials_started, 8);
  ASSERT_TRUE(done.best.has_value());
  EXPECT_EQ(done.plan.rungs[0].trials, 8);
  EXPECT_GE(done.plan.rungs[1].trials, 4);
  EXPECT_GE(done.plan.rungs[2].trials, 1);
  const std::vector<api::TrialInfo> trials = AllTrials(submitted.id);
  ASSERT_EQ(trials.size(), 8u);
  int kept = 0;
  for (const api::TrialInfo& t : trials) {
    // Each trial is a job of the job manager, marked as the experiment's.
    auto job = manager_->Get(t.job_id);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->trial.experiment_id, submitted.id);
    EXPECT_EQ(job->trial.index, t.index);
    EXPECT_EQ(job->global_step, t.target_steps);
    EXPECT_TRUE(t.state == TrialState::kCompleted || t.state == TrialState::kPruned)
        << api::TrialStateName(t.state);
    // Only the best trial keeps checkpoints on disk.
    const auto on_disk = engine::ListCheckpoints(manager_->CheckpointDir(t.job_id).value());
    ASSERT_TRUE(on_disk.ok());
    EXPECT_EQ(t.checkpoints_kept, !on_disk->empty()) << "trial " << t.index;
    kept += t.checkpoints_kept;
    if (t.index == done.best->index) {
      EXPECT_TRUE(t.checkpoints_kept);
      EXPECT_EQ(t.metric, done.best->metric);
    }
  }
  EXPECT_EQ(kept, 1);
  // A finished experiment no longer drives its trials, but owns them.
  EXPECT_EQ(manager_->Delete(trials[0].job_id).code(), engine::StatusCode::kFailedPrecondition);
  // Deleting it deletes them.
  ASSERT_TRUE(experiments_->Delete(submitted.id).ok());
  EXPECT_EQ(manager_->Get(trials[0].job_id).status().code(), engine::StatusCode::kNotFound);
  EXPECT_EQ(experiments_->Get(submitted.id).status().code(), engine::StatusCode::kNotFound);
}

// Any classification metric ranks the trials (docs/job-spec.md#metrics): here the validation log
// loss with no mode given, so lower is better. Each rung result is the trial's own
// validation/log_loss series at that step, and the best trial has the lowest final one.
TEST_F(ExperimentManagerTest, AshaRanksByLogLossLowerFirstWithoutAMode) {
  std::string text = SearchSpec("", 4);
  const std::string from = R"("metric": "validation/accuracy", "mode": "max",)";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), R"("metric": "validation/log_loss",)");
  const api::ExperimentInfo submitted = SubmitSearch(text);
  const api::ExperimentInfo done = WaitForExperiment(submitted.id, {ExperimentState::kCompleted});
  ASSERT_TRUE(done.best.has_value());
  double lowest = std::numeric_limits<double>::infinity();
  for (const api::TrialInfo& t : AllTrials(submitted.id)) {
    ASSERT_FALSE(t.rung_metrics.empty()) << "trial " << t.index;
    auto series = manager_->Scalars(t.job_id, {.tag = "validation/log_loss"});
    ASSERT_TRUE(series.ok());
    ASSERT_FALSE(series->empty());
    EXPECT_EQ(series->back().step, t.target_steps);
    EXPECT_EQ(series->back().value, t.rung_metrics.back()) << "trial " << t.index;
    if (t.target_steps == 40) lowest = std::min(lowest, t.rung_metrics.back());
  }
  EXPECT_EQ(done.best->metric, lowest);
}

TEST_F(ExperimentManagerTest, BracketsStartTheirTrialsAtTheirFirstRung) {
  // Two brackets over rungs 10, 20, 40 (eta 2): bracket 0's five trials start at 10 steps,
  // bracket 1's three at 20; each bracket promotes among its own.
  nlohmann::json doc = nlohmann::json::parse(SearchSpec());
  doc["searcher"]["brackets"] = 2;
  const api::ExperimentInfo submitted = SubmitSearch(doc.dump());
  ASSERT_EQ(submitted.plan.rungs.size(), 5u);
  EXPECT_EQ(submitted.plan.rungs[3].bracket, 1);
  EXPECT_EQ(submitted.plan.rungs[3].steps, 20);
  EXPECT_EQ(submitted.plan.rungs[3].max_trials, 3);
  const api::ExperimentInfo done = WaitForExperiment(submitted.id, {ExperimentState::kCompleted});
  EXPECT_EQ(done.trials_started, 8);
  EXPECT_EQ(done.plan.rungs[0].trials, 5);  // bracket 0, rung 0
  EXPECT_EQ(done.plan.rungs[3].trials, 3);  // bracket 1, rung 0
  EXPECT_EQ(done.plan.rungs[3].promoted, 1);
  EXPECT_EQ(done.plan.rungs[4].trials, 1);
  int in_bracket[2] = {0, 0};
  for (const api::TrialInfo& t : AllTrials(submitted.id)) {
    ASSERT_TRUE(t.bracket == 0 || t.bracket == 1) << t.bracket;
    ++in_bracket[t.bracket];
    ASSERT_FALSE(t.rung_metrics.empty()) << "trial " << t.index;
    EXPECT_LE(t.rung_metrics.size(), t.bracket == 0 ? 3u : 2u);
    EXPECT_EQ(t.target_steps,
              (t.bracket == 0 ? std::vector<int64_t>{10, 20, 40}
                              : std::vector<int64_t>{20, 40})[t.rung_metrics.size() - 1]);
    EXPECT_EQ(manager_->Get(t.job_id)->global_step, t.target_steps);
  }
  EXPECT_EQ(in_bracket[0], 5);
  EXPECT_EQ(in_bracket[1], 3);
}

TEST_F(ExperimentManagerTest, TheSameSearchDecidesTheSameAlsoAcrossARestart) {
  const std::string first = SubmitSearch(SearchSpec("", 4)).id;
  WaitForExperiment(first, {ExperimentState::kCompleted});
  const std::vector<std::string> straight = Outcome(first);

  const std::string second = SubmitSearch(SearchSpec("", 4)).id;
  // Restart the daemon's managers once two trials have results.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto info = experiments_->Get(second);
    if (info->plan.rungs[0].trials >= 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Restart();
  const api::ExperimentInfo done = WaitForExperiment(second, {ExperimentState::kCompleted});
  EXPECT_EQ(Outcome(second), straight);
  // Every result keeps when it was recorded, those from before the restart included.
  for (const api::TrialInfo& t : AllTrials(second)) {
    ASSERT_EQ(t.rung_recorded_at.size(), t.rung_metrics.size()) << t.index;
    for (size_t k = 0; k < t.rung_recorded_at.size(); ++k) {
      EXPECT_GE(t.rung_recorded_at[k], t.created_at) << t.index;
      EXPECT_LE(t.rung_recorded_at[k], done.finished_at) << t.index;
      if (k > 0) {
        EXPECT_GE(t.rung_recorded_at[k], t.rung_recorded_at[k - 1]) << t.index;
      }
    }
  }
  // The decisions were logged once each: one start per trial.
  auto decisions = store_->ListDecisions(second, 10000);
  ASSERT_TRUE(decisions.ok());
  int starts = 0;
  for (const DecisionRecord& d : *decisions) starts += d.kind == "start";
  EXPECT_EQ(starts, 4);
  EXPECT_EQ(done.trials_started, 4);
}

// A trial preempted by a more urgent job (operations.md#preemption) resumes from its final
// checkpoint when the slot is free; its experiment waits for it and decides exactly as in a
// search without the preemption.
TEST_F(ExperimentManagerTest, APreemptedTrialResumesAndTheSearchDecidesTheSame) {
  experiments_.reset();
  manager_.reset();
  store_.reset();
  JobManagerOptions o;
  o.scheduler.min_run_secs = 0;
  OpenAll(1, o);
  OpenExperiments();
  // Rungs of 4000, 8000 and 16000 steps: long enough to be preempted in the middle of one. A
  // sanitizer build's steps are about ten times slower, so a quarter of that holds the same
  // margin in time (the trial is preempted within a few steps of step 100) at a quarter of the
  // CPU.
  const int rung = test_support::kSanitized ? 1000 : 4000;
  const std::string spec = std::regex_replace(
      std::regex_replace(SearchSpec("", 4), std::regex(R"("min_steps": 10)"),
                         "\"min_steps\": " + std::to_string(rung)),
      std::regex(R"("max_steps": 40)"), "\"max_steps\": " + std::to_string(4 * rung));
  const std::string first = SubmitSearch(spec).id;
  WaitForExperiment(first, {ExperimentState::kCompleted});
  const std::vector<std::string> straight = Outcome(first);

  const std::string second = SubmitSearch(spec).id;
  // Once its first trial has trained a little, a job of a higher priority comes.
  std::string trial_job;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && trial_job.empty()) {
    for (const api::TrialInfo& t : AllTrials(second)) {
      auto job = manager_->Get(t.job_id);
      if (job.ok() && job->state == api::JobState::kRunning && job->global_step >= 100) {
        trial_job = t.job_id;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(trial_job.empty());
  engine::JobSpec urgent = SmallJob("urgent", 10);
  urgent.priority = 5;
  auto high = Submit(urgent);
  ASSERT_TRUE(high.ok()) << high.status().ToString();
  WaitFor(high->id, {api::JobState::kCompleted});
  EXPECT_EQ(manager_->Get(trial_job)->preempted_by, high->id);
  const api::ExperimentInfo done = WaitForExperiment(second, {ExperimentState::kCompleted});
  EXPECT_EQ(Outcome(second), straight);
  EXPECT_EQ(done.trials_started, 4);
}

TEST_F(ExperimentManagerTest, APromotedTrialEndsOnTheParametersOfAStraightRun) {
  const api::ExperimentInfo done = WaitForExperiment(
      SubmitSearch(SearchSpec(R"(, "keep_best": 4)", 4)).id, {ExperimentState::kCompleted});
  ASSERT_TRUE(done.best.has_value());
  api::TrialInfo top;
  for (const api::TrialInfo& t : AllTrials(done.id)) {
    if (t.rung_metrics.size() == 3) top = t;  // trained 10, then 20, then 40 steps
  }
  ASSERT_FALSE(top.job_id.empty());
  // The same job spec, trained from step 0 to 40 at once.
  auto trial_job = manager_->Get(top.job_id);
  ASSERT_TRUE(trial_job.ok());
  auto spec = api::ParseJobSpec(trial_job->spec_json);
  ASSERT_TRUE(spec.ok());
  spec->name = "straight";
  auto straight = Submit(*spec);
  ASSERT_TRUE(straight.ok());
  WaitFor(straight->id, {api::JobState::kCompleted});
  const auto read_latest = [&](const std::string& job) {
    auto kept = engine::ListCheckpoints(manager_->CheckpointDir(job).value());
    EXPECT_TRUE(kept.ok() && !kept->empty());
    auto data = engine::ReadCheckpointFile(kept->back().path);
    EXPECT_TRUE(data.ok()) << data.status().ToString();
    return std::move(data).value();
  };
  const engine::CheckpointData a = read_latest(top.job_id);
  const engine::CheckpointData b = read_latest(straight->id);
  EXPECT_EQ(a.global_step, 40);
  EXPECT_EQ(b.global_step, 40);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].first, b.tensors[i].first);
    const engine::Tensor& x = a.tensors[i].second;
    const engine::Tensor& y = b.tensors[i].second;
    ASSERT_EQ(x.size(), y.size());
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0)
        << a.tensors[i].first << " differs";
  }
  EXPECT_EQ(a.states, b.states);
}

TEST_F(ExperimentManagerTest, FailingTrialsAreRetriedThenDroppedWithTheirReason) {
  // A learning rate of 1e37 overflows the softmax's logits within 3 steps: the loss is NaN and
  // the NaN guard fails the job, again when it is retried.
  const api::ExperimentInfo done = WaitForExperiment(
      SubmitSearch(SearchSpec(R"(, "max_trial_restarts": 1)", 6,
                              R"({"type": "categorical", "values": [0.001, 0.01, 1e37]})"))
          .id,
      {ExperimentState::kCompleted});
  int failed = 0;
  for (const api::TrialInfo& t : AllTrials(done.id)) {
    if (t.state != TrialState::kFailed) continue;
    ++failed;
    EXPECT_EQ(t.restarts, 1);
    EXPECT_NE(t.reason.find("NaN"), std::string::npos) << t.reason;
  }
  EXPECT_GT(failed, 0);
  EXPECT_LT(failed, 6);
  ASSERT_TRUE(done.best.has_value());
}

TEST_F(ExperimentManagerTest, StopWhenAndTheStepBudgetEndTheSearch) {
  // Any accuracy reaches 0: the first result ends it.
  const api::ExperimentInfo reached = WaitForExperiment(
      SubmitSearch(SearchSpec(R"(, "stop_when": 0.0)", 4)).id, {ExperimentState::kCompleted});
  EXPECT_EQ(reached.reason.rfind("stop_when: trial 0 reached validation/accuracy = ", 0), 0u)
      << reached.reason;
  EXPECT_EQ(reached.trials_started, 1);
  // 30 steps: two trials of 10, then the better one promoted to 20 (ASHA promotes before it
  // starts a trial); nothing more fits.
  const api::ExperimentInfo spent =
      WaitForExperiment(SubmitSearch(SearchSpec(R"(, "budget": {"max_steps": 30})", 4)).id,
                        {ExperimentState::kCompleted});
  EXPECT_EQ(spent.reason, "budget: max_steps reached");
  EXPECT_EQ(spent.steps_used, 30);
  EXPECT_EQ(spent.trials_started, 2);
  EXPECT_EQ(spent.plan.rungs[1].trials, 1);
}

TEST_F(ExperimentManagerTest, StopAndResumeGoOnWhereTheSearchWas) {
  const std::string id = SubmitSearch(SearchSpec("", 4)).id;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         experiments_->Get(id)->plan.rungs[0].trials < 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(experiments_->Stop(id).ok());
  const api::ExperimentInfo stopped = WaitForExperiment(id, {ExperimentState::kStopped});
  const int64_t started = stopped.trials_started;
  // While stopped, nothing runs, and its trials are the experiment's to resume.
  for (const api::TrialInfo& t : AllTrials(id)) {
    EXPECT_NE(t.state, TrialState::kRunning);
    EXPECT_EQ(manager_->Resume(t.job_id, 100).status().code(),
              engine::StatusCode::kFailedPrecondition);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(experiments_->Get(id)->trials_started, started);
  EXPECT_EQ(experiments_->Stop(id).status().code(), engine::StatusCode::kFailedPrecondition);
  // Resumed, it finishes the search: every trial started once.
  ASSERT_TRUE(experiments_->Resume(id).ok());
  const api::ExperimentInfo done = WaitForExperiment(id, {ExperimentState::kCompleted});
  EXPECT_EQ(done.trials_started, 4);
  auto decisions = store_->ListDecisions(id, 10000);
  ASSERT_TRUE(decisions.ok());
  int starts = 0, stops = 0;
  for (const DecisionRecord& d : *decisions) {
    starts += d.kind == "start";
    stops += d.kind == "stop";
  }
  EXPECT_EQ(starts, 4);
  EXPECT_EQ(stops, 1);
  EXPECT_EQ(experiments_->Resume(id).status().code(), engine::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace trainingd::daemon
