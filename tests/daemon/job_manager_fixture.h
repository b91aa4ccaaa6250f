// The JobManager tests' fixture: a JobManager on a real Store and EventBus in a fresh directory,
// training small softmax jobs on Fashion-MNIST, with waits for a state or a step.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <thread>

#include "trainingd/api/job_json.h"
#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/prometheus.h"
#include "trainingd/daemon/executors/local_executor.h"
#include "trainingd/daemon/jobs/event_bus.h"
#include "trainingd/daemon/jobs/job_manager.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::api {
// States print by name in test failures.
inline void PrintTo(JobState state, std::ostream* os) { *os << JobStateName(state); }
}  // namespace trainingd::api

namespace trainingd::daemon {

// A softmax job on 3000 examples: a checkpoint every 100 steps, summaries every 10.
inline engine::JobSpec SmallJob(const std::string& name, int64_t max_steps) {
  engine::JobSpec s;
  s.name = name;
  s.model_preset = "softmax";
  s.model = *engine::PresetModel("softmax");
  s.batch_size = 50;
  s.max_steps = max_steps;
  s.dataset.validation_size = 500;
  s.dataset.max_train_examples = 3000;
  s.dataset.max_test_examples = 500;
  s.hooks.checkpoint.trigger.every_steps = 100;
  s.hooks.summary.trigger.every_steps = 10;
  return s;
}

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::path(::testing::TempDir()) /
            ("jm_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    OpenAll();
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A manager on the test's store: on `executor`, or on a LocalExecutor with `concurrent` slots.
  void OpenAll(int concurrent = 1, JobManagerOptions o = {},
               std::unique_ptr<Executor> executor = nullptr) {
    auto store = Store::Open(dir_ + "/trainingd.db", store_options_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    o.data_dir = dir_;
    o.threads_per_job = 1;
    if (!executor) {
      LocalExecutorOptions local;
      local.slots = concurrent;
      local.threads_per_job = 1;
      executor = std::make_unique<LocalExecutor>(local);
    }
    auto m = JobManager::Create(*store_, bus_, std::move(executor), o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    manager_ = std::move(m).value();
  }
  // The manager's metrics as /metrics shows them.
  std::string MetricsText() { return api::WritePrometheus(manager_->Metrics()); }

  // Submits as the HTTP API does: the spec and its canonical text.
  engine::Result<api::JobInfo> Submit(const engine::JobSpec& spec) {
    return manager_->Submit(spec, api::JobSpecToJson(spec));
  }

  api::JobInfo WaitFor(const std::string& id, std::initializer_list<api::JobState> states) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    api::JobInfo info;
    while (std::chrono::steady_clock::now() < deadline) {
      info = *manager_->Get(id);
      for (api::JobState s : states) {
        if (info.state == s) return info;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "job " << id << " stuck in " << api::JobStateName(info.state);
    return info;
  }

  // Waits until the job has trained (its summaries report a global step >= `step`).
  void WaitForStep(const std::string& id, int64_t step) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline && manager_->Get(id)->global_step < step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GE(manager_->Get(id)->global_step, step);
  }

  std::string dir_;
  StoreOptions store_options_;  // e.g. a fault-injecting VFS
  EventBus bus_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> manager_;
};

}  // namespace trainingd::daemon
