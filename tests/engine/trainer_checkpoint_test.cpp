// Capturing and restoring a Trainer: a resumed run repeats the uninterrupted one exactly, and a
// checkpoint of another model is refused without touching the trainer.
#include "trainingd/engine/train/trainer_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "test_util.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

using testing::kSanitized;
using testing::SmallFashionMnist;

OptimizerOptions Optimizer(OptimizerOptions::Type type = OptimizerOptions::Type::kAdam) {
  OptimizerOptions o;
  o.type = type;
  o.learning_rate = LearningRateSchedule::Constant(1e-3f);
  return o;
}

std::unique_ptr<Trainer> MakeTrainer(const ModelSpec& spec,
                                     const OptimizerOptions& opt = Optimizer()) {
  const Datasets& data = SmallFashionMnist();
  auto t = Trainer::Create(spec, opt, data.train, data.num_classes, {20, 7});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

ModelSpec Cnn() { return *PresetModel("cnn"); }

class TrainerCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) /
            ("trainer_ckpt_" + std::to_string(::getpid()) + "_" + info->name()))
               .string();
    fs::remove_all(dir_);
    ASSERT_EQ(SmallFashionMnist().train.size(), 5000);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
};

TEST_F(TrainerCheckpointTest, ResumedRunRepeatsTheUninterruptedOne) {
  // 30 steps, saved at 12; 10 and 4 under the sanitizers (28 s under ASan for 30).
  const int steps = kSanitized ? 10 : 30, saved_at = kSanitized ? 4 : 12;
  std::vector<double> reference;
  {
    auto t = MakeTrainer(Cnn());
    for (int i = 0; i < steps; ++i) reference.push_back(t->Step().loss);
  }
  std::vector<double> resumed;
  {
    auto t = MakeTrainer(Cnn());
    for (int i = 0; i < saved_at; ++i) resumed.push_back(t->Step().loss);
    Result<CheckpointData> data = CaptureTrainer(*t);
    ASSERT_TRUE(data.ok()) << data.status().ToString();
    auto m = CheckpointManager::Create(dir_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_TRUE((*m)->Save(*data).ok());
  }
  auto m = CheckpointManager::Create(dir_);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<std::string> warnings;
  Result<CheckpointData> data = (*m)->RestoreLatest(&warnings);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_TRUE(warnings.empty());
  auto t = MakeTrainer(Cnn());
  const Status st = RestoreTrainer(*t, *data);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(t->global_step(), saved_at);
  for (int i = saved_at; i < steps; ++i) resumed.push_back(t->Step().loss);
  EXPECT_EQ(t->global_step(), steps);
  ASSERT_EQ(resumed.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    EXPECT_NEAR(resumed[i], reference[i], 1e-6) << "step " << i + 1;
  }
}

TEST_F(TrainerCheckpointTest, CaptureHoldsVariablesSlotsInputPositionAndRngs) {
  auto t = MakeTrainer(Cnn());
  Result<CheckpointData> at_zero = CaptureTrainer(*t);  // slots exist (as zeros) before step 1
  ASSERT_TRUE(at_zero.ok());
  for (int i = 0; i < 3; ++i) (void)t->Step();
  Result<CheckpointData> d = CaptureTrainer(*t);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->global_step, 3);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : d->tensors) names.push_back(name);
  std::vector<std::string> names_at_zero;
  for (const auto& [name, tensor] : at_zero->tensors) names_at_zero.push_back(name);
  EXPECT_EQ(names, names_at_zero);
  EXPECT_EQ(names.size(), 8u * 3u);  // 8 variables, each with Adam and Adam_1
  for (const char* n : {"conv2d/kernel", "conv2d_1/bias", "dense/kernel", "dense_1/bias",
                        "dense/kernel/Adam", "dense/kernel/Adam_1", "conv2d/bias/Adam_1"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  ASSERT_EQ(d->states.size(), 2u);
  EXPECT_EQ(d->states[0].first, "input_pipeline");
  EXPECT_EQ(d->states[0].second, (std::vector<uint64_t>{0, 60}));
  EXPECT_EQ(d->states[1].first, "dropout/rng");
  EXPECT_EQ(d->states[1].second.size(), 4u);
}

// Restoring `data` into `t` fails with exactly `message` and leaves `t` as it was.
void ExpectRefusedUntouched(Trainer& t, const CheckpointData& data, const std::string& message) {
  (void)t.Step();
  const std::vector<Tensor> before = [&] {
    std::vector<Tensor> v;
    for (const Parameter* p : t.model().parameters()) v.push_back(p->value);
    return v;
  }();
  const auto slots_before = t.optimizer().Slots().size();
  const Status st = RestoreTrainer(t, data);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_EQ(st.message(), message);
  EXPECT_EQ(t.global_step(), 1);
  EXPECT_EQ(t.input().state().index_in_epoch, 20);
  EXPECT_EQ(t.optimizer().Slots().size(), slots_before);
  for (size_t i = 0; i < before.size(); ++i) {
    const Tensor& now = t.model().parameters()[i]->value;
    EXPECT_TRUE(std::equal(now.data(), now.data() + now.size(), before[i].data()))
        << t.model().parameters()[i]->name;
  }
}

class RefusedRestoreTest : public TrainerCheckpointTest {
 protected:
  void SetUp() override {
    TrainerCheckpointTest::SetUp();
    auto t = MakeTrainer(Cnn());
    (void)t->Step();  // Adam's slots exist after a step
    Result<CheckpointData> d = CaptureTrainer(*t);
    ASSERT_TRUE(d.ok());
    data_ = std::move(d).value();
  }
  CheckpointData data_;
};

TEST_F(RefusedRestoreTest, IntoTheMlpPresetNamesTheVariableAndBothShapes) {
  auto t = MakeTrainer(*PresetModel("mlp"));
  ExpectRefusedUntouched(*t, data_,
                         "dense/kernel: checkpoint has [3136,1024], model has [784,128]");
}

TEST_F(RefusedRestoreTest, IntoACnnWithFewerDenseUnitsNamesTheVariableAndBothShapes) {
  ModelSpec spec = Cnn();
  for (LayerSpec& l : spec.layers) {
    if (l.type == LayerType::kDense && l.units == 1024) l.units = 512;
  }
  auto t = MakeTrainer(spec);
  ExpectRefusedUntouched(*t, data_,
                         "dense/kernel: checkpoint has [3136,1024], model has [3136,512]");
}

TEST_F(RefusedRestoreTest, MissingVariableIsNamed) {
  data_.tensors.erase(std::find_if(data_.tensors.begin(), data_.tensors.end(),
                                   [](const auto& e) { return e.first == "dense_1/bias"; }));
  auto t = MakeTrainer(Cnn());
  ExpectRefusedUntouched(*t, data_, "dense_1/bias: missing from the checkpoint");
}

TEST_F(RefusedRestoreTest, UnknownExtraTensorIsRefused) {
  data_.tensors.emplace_back("extra/kernel", Tensor(Shape{1}));
  auto t = MakeTrainer(Cnn());
  ExpectRefusedUntouched(*t, data_,
                         "extra/kernel: in the checkpoint but neither a variable of this model nor "
                         "a slot of its Adam optimizer (a checkpoint of a different model or "
                         "optimizer?)");
}

TEST_F(RefusedRestoreTest, AdamSlotsIntoAMomentumTrainerAreRefused) {
  auto t = MakeTrainer(Cnn(), Optimizer(OptimizerOptions::Type::kMomentum));
  const Status st = RestoreTrainer(*t, data_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("/Adam"), std::string::npos) << st.message();
  EXPECT_EQ(t->global_step(), 0);
}

TEST_F(RefusedRestoreTest, MissingSlotAndBadInputPositionAreRefused) {
  CheckpointData no_slot = data_;
  no_slot.tensors.erase(std::find_if(no_slot.tensors.begin(), no_slot.tensors.end(),
                                     [](const auto& e) { return e.first == "dense/bias/Adam_1"; }));
  auto t = MakeTrainer(Cnn());
  ExpectRefusedUntouched(*t, no_slot,
                         "dense/bias/Adam_1: optimizer slot missing from the checkpoint");
  CheckpointData bad_pos = data_;
  bad_pos.states[0].second = {0, 5001};
  t = MakeTrainer(Cnn());
  ExpectRefusedUntouched(
      *t, bad_pos,
      "input_pipeline: position (epoch 0, index 5001) is out of range for 5000 examples");
}

}  // namespace
}  // namespace trainingd::engine
