// The ExperimentManager tests' fixture: an ExperimentManager on the JobManager fixture's real
// Store, EventBus and LocalExecutor (job_manager_fixture.h), with a submit, a wait for a state and
// the trials' listing, and the daemon's restart.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "job_manager_fixture.h"
#include "trainingd/api/experiment_json.h"
#include "trainingd/daemon/experiments/experiment_manager.h"

namespace trainingd::daemon {

class ExperimentFixture : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    if (slots_ != 1) {  // the base fixture opened one slot
      manager_.reset();
      store_.reset();
      OpenAll(slots_);
    }
    OpenExperiments();
  }
  void TearDown() override {
    experiments_.reset();
    JobManagerTest::TearDown();
  }
  void OpenExperiments() {
    ExperimentManagerOptions o;
    o.tick = std::chrono::milliseconds(50);
    auto m = ExperimentManager::Create(*store_, bus_, *manager_, o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    experiments_ = std::move(m).value();
  }
  // The daemon's restart: both managers shut down (running trials stop with a checkpoint and
  // stay queued in the database) and come back on the same files.
  void Restart() {
    experiments_.reset();
    manager_.reset();
    store_.reset();
    OpenAll(slots_);
    OpenExperiments();
  }

  api::ExperimentInfo SubmitSearch(const std::string& text) {
    auto spec = api::ParseExperimentSpec(text);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (!spec.ok()) return {};
    auto info = experiments_->Submit(*spec, api::DumpJson(api::ExperimentSpecToJson(*spec)));
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    return info.ok() ? *info : api::ExperimentInfo{};
  }

  api::ExperimentInfo WaitForExperiment(const std::string& id,
                                        std::initializer_list<api::ExperimentState> states) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
    api::ExperimentInfo info;
    while (std::chrono::steady_clock::now() < deadline) {
      info = *experiments_->Get(id);
      for (api::ExperimentState s : states) {
        if (info.state == s) return info;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "experiment " << id << " stuck in " << api::ExperimentStateName(info.state);
    return info;
  }

  std::vector<api::TrialInfo> AllTrials(const std::string& id) {
    api::TrialQuery q;
    q.limit = api::kMaxTrialPage;
    auto page = experiments_->Trials(id, q);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? page->trials : std::vector<api::TrialInfo>{};
  }

  int slots_ = 1;  // the LocalExecutor's; a subclass sets it before SetUp
  std::unique_ptr<ExperimentManager> experiments_;
};

}  // namespace trainingd::daemon
