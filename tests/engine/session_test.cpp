// Session: one step per Run, the named fetches and feeds, evaluation per split.
#include "trainingd/engine/session/session.h"

#include <gtest/gtest.h>

#include <cmath>

#include "session_test_util.h"

namespace trainingd::engine {
namespace {

using testing::FakeEnv;
using testing::SharedSmallData;
using testing::SmallConfig;

std::unique_ptr<Session> MakeSession(SessionConfig config = SmallConfig()) {
  static FakeEnv env;
  auto s = Session::Create(config, SharedSmallData(), &env, nullptr);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(SessionTest, RunTakesOneStepAndReportsTheFetches) {
  auto s = MakeSession();
  RunValues v;
  ASSERT_TRUE(
      s->Run({{"loss", "accuracy", "global_step", "learning_rate", "epoch"}, {}, {}}, &v).ok());
  EXPECT_EQ(v.get("global_step"), 1);
  EXPECT_EQ(s->global_step(), 1);
  EXPECT_GT(v.get("loss"), 1.0);  // about ln(10) at the start
  EXPECT_LT(v.get("loss"), 4.0);
  EXPECT_GE(v.get("accuracy"), 0.0);
  EXPECT_LE(v.get("accuracy"), 1.0);
  EXPECT_FLOAT_EQ(v.get("learning_rate"), 1e-3f);
  EXPECT_EQ(v.get("epoch"), 0);
  EXPECT_EQ(v.results.size(), 5u);
  ASSERT_TRUE(s->Run({}, nullptr).ok());
  EXPECT_EQ(s->global_step(), 2);
}

TEST(SessionTest, UnknownFetchOrFeedIsRefusedWithoutAStep) {
  auto s = MakeSession();
  Status st = s->Run({{"loss", "los"}, {}, {}}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("fetch 'los' is unknown"), std::string::npos) << st.message();
  st = s->Run({{}, {{"keep_prob", 0.5}}, {}}, nullptr);
  EXPECT_NE(st.message().find("feed 'keep_prob' is unknown"), std::string::npos) << st.message();
  st = s->Run({{}, {{"learning_rate", -1.0}}, {}}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->global_step(), 0);
  EXPECT_EQ(s->Run({{"validation/recall"}, {}, {}}, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(SessionTest, LearningRateFeedReplacesTheScheduleForOneStep) {
  auto s = MakeSession();
  RunValues v;
  ASSERT_TRUE(s->Run({{"learning_rate"}, {{"learning_rate", 0.25}}, {}}, &v).ok());
  EXPECT_FLOAT_EQ(v.get("learning_rate"), 0.25f);
  ASSERT_TRUE(s->Run({{"learning_rate"}, {}, {}}, &v).ok());
  EXPECT_FLOAT_EQ(v.get("learning_rate"), 1e-3f);
}

TEST(SessionTest, ZeroLearningRateLeavesTheWeightsAlone) {
  auto s = MakeSession();
  auto before = s->Capture();
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(s->Run({{}, {{"learning_rate", 0.0}}, {}}, nullptr).ok());
  auto after = s->Capture();
  ASSERT_TRUE(after.ok());
  // Parameters are the tensors without an optimizer suffix.
  for (size_t i = 0; i < before->tensors.size(); ++i) {
    const auto& [name, t] = before->tensors[i];
    if (name.find("/Adam") != std::string::npos) continue;
    const Tensor& u = after->tensors[i].second;
    for (int64_t j = 0; j < t.size(); ++j) ASSERT_EQ(t.data()[j], u.data()[j]) << name;
  }
}

TEST(SessionTest, BatchFeedTrainsOnItAndLeavesThePipelineWhereItWas) {
  auto s = MakeSession();
  const Datasets& data = testing::SmallFashionMnist();
  auto batch = std::make_shared<Batch>();
  CopyRange(data.test, 0, 8, batch->images, batch->labels);
  const auto position = s->trainer().input().state();
  RunValues v;
  ASSERT_TRUE(s->Run({{"loss", "global_step"}, {{"batch", batch}}, {}}, &v).ok());
  EXPECT_EQ(v.get("global_step"), 1);
  EXPECT_EQ(s->trainer().input().state().index_in_epoch, position.index_in_epoch);
  ASSERT_TRUE(std::isfinite(v.get("loss")));

  auto bad = std::make_shared<Batch>(*batch);
  bad->labels[3] = 10;
  Status st = s->Run({{}, {{"batch", std::shared_ptr<const Batch>(bad)}}, {}}, nullptr);
  EXPECT_NE(st.message().find("batch.labels[3]: 10 is not in [0, 10)"), std::string::npos)
      << st.message();
  auto wrong_shape = std::make_shared<Batch>();
  wrong_shape->images = Tensor(Shape{2, 28, 27, 1});
  wrong_shape->labels = {1, 2};
  st = s->Run({{}, {{"batch", std::shared_ptr<const Batch>(wrong_shape)}}, {}}, nullptr);
  EXPECT_NE(st.message().find("batch.images"), std::string::npos) << st.message();
  EXPECT_EQ(s->global_step(), 1);
}

TEST(SessionTest, EvaluationFetchesMatchEvaluateAndArePerSplit) {
  auto s = MakeSession();
  RunValues v;
  ASSERT_TRUE(
      s->Run({{"validation/loss", "validation/accuracy", "test/accuracy"}, {}, {}}, &v).ok());
  auto val = s->Evaluate("validation");
  ASSERT_TRUE(val.ok());
  EXPECT_EQ(v.get("validation/loss"), val->loss);
  EXPECT_EQ(v.get("validation/accuracy"), val->accuracy);
  auto test = s->trainer().Evaluate(testing::SmallFashionMnist().test);
  EXPECT_EQ(v.get("test/accuracy"), test->accuracy);
  EXPECT_EQ(s->Evaluate("holdout").status().code(), StatusCode::kNotFound);
}

// Every classification metric is a fetch of every split; the values are Evaluate()'s (one pass
// per split and step), and an unknown metric is refused naming the known ones.
TEST(SessionTest, ClassificationMetricFetches) {
  auto s = MakeSession();
  RunValues v;
  const std::vector<std::string> fetches = {"validation/precision_macro",
                                            "validation/recall_macro",
                                            "validation/f1_macro",
                                            "validation/auc",
                                            "validation/log_loss",
                                            "test/auc",
                                            "train/f1_macro"};
  ASSERT_TRUE(s->Run({fetches, {}, {}}, &v).ok());
  auto val = s->Evaluate("validation");
  ASSERT_TRUE(val.ok());
  const ClassificationMetrics& m = val->metrics;
  EXPECT_EQ(v.get("validation/precision_macro"), m.precision_macro);
  EXPECT_EQ(v.get("validation/recall_macro"), m.recall_macro);
  EXPECT_EQ(v.get("validation/f1_macro"), m.f1_macro);
  EXPECT_EQ(v.get("validation/auc"), m.auc);
  EXPECT_EQ(v.get("validation/log_loss"), m.log_loss);
  // The metrics' accuracy is the arg-max of the logits, as "<split>/accuracy" counts it.
  EXPECT_EQ(m.accuracy, val->accuracy);
  EXPECT_EQ(m.weight_sum, static_cast<double>(testing::SmallFashionMnist().validation.size()));
  // The log loss of the softmax probabilities is the cross-entropy of the logits (no
  // probability here is small enough to be clipped).
  EXPECT_NEAR(m.log_loss, val->loss, 1e-6);
  EXPECT_GE(v.get("test/auc"), 0.0);
  EXPECT_LE(v.get("test/auc"), 1.0);
  EXPECT_FALSE(std::isnan(v.get("train/f1_macro")));
  Status st = s->Run({{"validation/f1"}, {}, {}}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("fetch 'validation/f1' is unknown"), std::string::npos);
  EXPECT_NE(st.message().find("f1_macro, auc, log_loss"), std::string::npos) << st.message();
  EXPECT_FALSE(s->Run({{"holdout/auc"}, {}, {}}, nullptr).ok());
}

TEST(SessionTest, FetchReportsWithoutAStep) {
  auto s = MakeSession();
  RunValues v;
  ASSERT_TRUE(s->Fetch({"global_step", "loss", "learning_rate"}, &v).ok());
  EXPECT_EQ(v.get("global_step"), 0);
  EXPECT_TRUE(std::isnan(v.get("loss")));  // no step yet
  EXPECT_FLOAT_EQ(v.get("learning_rate"), 1e-3f);
  RunValues r;
  ASSERT_TRUE(s->Run({{"loss"}, {}, {}}, &r).ok());
  ASSERT_TRUE(s->Fetch({"loss", "global_step"}, &v).ok());
  EXPECT_EQ(v.get("loss"), r.get("loss"));
  EXPECT_EQ(s->global_step(), 1);
}

TEST(SessionTest, EmptyValidationSplitIsAClearError) {
  Datasets data = testing::SmallFashionMnist();
  data.validation = Split{};
  FakeEnv env;
  auto s = Session::Create(SmallConfig(), std::make_shared<const Datasets>(std::move(data)), &env,
                           nullptr);
  ASSERT_TRUE(s.ok());
  Status st = (*s)->Fetch({"validation/loss"}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("validation_size = 0"), std::string::npos);
  st = (*s)->Fetch({"validation/auc"}, nullptr);  // the new metrics as well
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("validation_size = 0"), std::string::npos);
}

TEST(SessionTest, NumEpochsEndsTheInputWithOutOfRange) {
  SessionConfig c = SmallConfig();
  c.batch_size = 2500;  // two steps per epoch of the 5000 training examples
  c.num_epochs = 1;
  auto s = MakeSession(c);
  ASSERT_TRUE(s->Run({}, nullptr).ok());
  ASSERT_TRUE(s->Run({}, nullptr).ok());
  EXPECT_EQ(s->epochs_completed(), 1);
  Status st = s->Run({}, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("1 epoch(s)"), std::string::npos) << st.message();
  EXPECT_EQ(s->global_step(), 2);
}

TEST(SessionTest, TraceHasEveryLayerForwardAndBackward) {
  auto s = MakeSession();
  RunValues v;
  ASSERT_TRUE(s->Run({{}, {}, {.trace = true}}, &v).ok());
  ASSERT_NE(v.trace, nullptr);
  std::vector<std::string> names;
  for (const auto& e : v.trace->events) {
    names.push_back(e.category + ":" + e.name);
    EXPECT_GE(e.duration_seconds, 0);
    EXPECT_GE(e.start_seconds, 0);
  }
  for (const char* want :
       {"input:input", "forward:conv2d", "forward:dense_1", "loss:softmax_cross_entropy",
        "backward:dense_1", "backward:conv2d", "optimizer:Adam"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  ASSERT_TRUE(s->Run({}, &v).ok());
  EXPECT_EQ(v.trace, nullptr);
}

}  // namespace
}  // namespace trainingd::engine
