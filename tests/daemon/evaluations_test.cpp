// Each job's latest evaluation of each split (schema 10, docs/storage.md#evaluations): kept by
// the store, replaced by the next one, dropped with the steps a resume redoes and with its job;
// and a real run's evaluations reach JobManager::Evaluation with their confusion matrix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "job_manager_fixture.h"
#include "trainingd/api/evaluation_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {
// Named, not anonymous: the unity build compiles the tests together.
namespace evaluations_test {

namespace fs = std::filesystem;
using api::JobState;

JobRecord Job(const std::string& id) {
  JobRecord j;
  j.id = id;
  j.name = id;
  j.spec_json = "{}";
  j.created_at = 1;
  return j;
}

EvaluationRecord Evaluation(const std::string& job, const std::string& split, int64_t step,
                            double wall_time) {
  return {job, split, step, wall_time, R"({"step":)" + std::to_string(step) + "}"};
}

class StoreEvaluationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("evals_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<Store> Open() {
    auto store = Store::Open((dir_ / "trainingd.db").string());
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  fs::path dir_;
};

TEST_F(StoreEvaluationsTest, TheLatestOfEachSplitIsKeptAndDroppedWithItsStepsAndJob) {
  {
    auto store = Open();
    store->PutJob(Job("a"));
    store->PutJob(Job("b"));
    store->PutEvaluation(Evaluation("a", "validation", 100, 10));
    store->PutEvaluation(Evaluation("a", "validation", 200, 20));  // replaces step 100
    store->PutEvaluation(Evaluation("a", "test", 200, 21));
    store->PutEvaluation(Evaluation("b", "validation", 50, 5));
    store->PutEvaluation(Evaluation("gone", "validation", 1, 1));  // no such job: nothing
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = Open();  // and it survives a reopen
  auto v = store->GetEvaluation("a", "validation");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ((*v)->step, 200);
  EXPECT_EQ((*v)->wall_time, 20);
  EXPECT_EQ((*v)->body_json, R"({"step":200})");
  auto latest = store->GetEvaluation("a", "");  // the latest of any split: test, at 21
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->split, "test");
  EXPECT_FALSE(store->GetEvaluation("a", "train")->has_value());
  EXPECT_FALSE(store->GetEvaluation("gone", "validation")->has_value());

  // A resume from step 150 redoes step 200: its evaluations go, b's stay.
  store->DropScalarsAfter("a", 150);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_FALSE(store->GetEvaluation("a", "validation")->has_value());
  EXPECT_FALSE(store->GetEvaluation("a", "")->has_value());
  EXPECT_TRUE(store->GetEvaluation("b", "validation")->has_value());
  store->PutEvaluation(Evaluation("a", "validation", 150, 30));
  store->DeleteJob("b");
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ((*store->GetEvaluation("a", "validation"))->step, 150);
  EXPECT_FALSE(store->GetEvaluation("b", "validation")->has_value());
}

// A softmax job with the default validation evaluation and a final evaluation of the test
// split: each split's latest evaluation is served, with every example in its confusion matrix.
TEST_F(JobManagerTest, ARunsEvaluationsAreServedWithTheirConfusionMatrix) {
  engine::JobSpec spec = SmallJob("evaluated", 100);
  spec.hooks.evaluation.enabled = true;
  spec.hooks.evaluation.trigger.every_steps = 50;
  spec.hooks.final_eval.enabled = true;
  auto job = Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const api::JobInfo done = WaitFor(job->id, {JobState::kCompleted, JobState::kFailed});
  ASSERT_EQ(done.state, JobState::kCompleted) << done.error;
  ASSERT_TRUE(store_->Flush().ok());
  auto validation = manager_->Evaluation(job->id, "validation");
  ASSERT_TRUE(validation.ok()) << validation.status().ToString();
  const engine::EvaluationSummary& v = validation->evaluation;
  EXPECT_EQ(v.split, "validation");
  EXPECT_EQ(v.step, 100);
  EXPECT_EQ(v.metrics.num_classes, 10);
  EXPECT_EQ(v.class_names.size(), 10u);
  double total = 0;
  for (double c : v.metrics.confusion) total += c;
  EXPECT_EQ(total, 500);  // dataset.validation_size
  EXPECT_GT(v.metrics.accuracy, 0.5);
  // The same numbers as the scalar series of the same evaluation.
  auto auc = manager_->Scalars(job->id, {.tag = "validation/auc"});
  ASSERT_TRUE(auc.ok());
  ASSERT_FALSE(auc->empty());
  EXPECT_EQ(auc->back().step, 100);
  EXPECT_EQ(auc->back().value, v.metrics.auc);
  auto test = manager_->Evaluation(job->id, "test");
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(test->evaluation.split, "test");
  total = 0;
  for (double c : test->evaluation.metrics.confusion) total += c;
  EXPECT_EQ(total, 500);  // dataset.max_test_examples
  // Errors: no evaluation of a split, an unknown job.
  auto train = manager_->Evaluation(job->id, "train");
  EXPECT_EQ(train.status().code(), engine::StatusCode::kNotFound);
  EXPECT_NE(train.status().message().find("no evaluation of the train split"), std::string::npos);
  EXPECT_EQ(manager_->Evaluation("ghost", "").status().code(), engine::StatusCode::kNotFound);
}

}  // namespace evaluations_test
}  // namespace trainingd::daemon
