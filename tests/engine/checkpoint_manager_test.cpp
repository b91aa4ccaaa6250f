// CheckpointManager: directory layout, the TensorFlow state file, retention and restore fallback.
#include "trainingd/engine/io/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

class CheckpointManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(::testing::TempDir()) /
            ("ckmgr_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
    dir_ = (root_ / "run" / "ckpt").string();  // created by the manager
  }
  void TearDown() override { fs::remove_all(root_); }

  CheckpointManagerOptions Options(int max_to_keep = 5, double hours = 0) {
    CheckpointManagerOptions o;
    o.max_to_keep = max_to_keep;
    o.keep_checkpoint_every_n_hours = hours;
    o.now_seconds = [this] { return now_; };
    return o;
  }
  std::unique_ptr<CheckpointManager> Make(const CheckpointManagerOptions& o,
                                          std::vector<std::string>* warnings = nullptr) {
    auto m = CheckpointManager::Create(dir_, o, warnings);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> Paths(std::initializer_list<const char*> names) const {
    std::vector<std::string> out;
    for (const char* n : names) out.push_back(Path(n));
    return out;
  }
  std::vector<std::string> Listing() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string StateFile() const {
    std::ifstream in(Path("checkpoint"));
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path root_;
  std::string dir_;
  double now_ = 1000;
};

CheckpointData Step(int64_t step, float value = 0) {
  CheckpointData d;
  d.global_step = step;
  d.tensors.emplace_back("w", Tensor(Shape{2}, value));
  d.states.push_back({"input_pipeline", {0, static_cast<uint64_t>(step)}});
  return d;
}

TEST_F(CheckpointManagerTest, CreatesTheDirectoryAndWritesTheStateFileExactly) {
  auto m = Make(Options());
  ASSERT_TRUE(fs::is_directory(dir_));
  EXPECT_EQ(m->LatestCheckpointPath(), std::nullopt);
  Result<std::string> p = m->Save(Step(10));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, Path("model.ckpt-10"));
  now_ = 1001.5;
  ASSERT_TRUE(m->Save(Step(20)).ok());
  EXPECT_EQ(StateFile(),
            "model_checkpoint_path: \"model.ckpt-20\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-10\"\n"
            "all_model_checkpoint_paths: \"model.ckpt-20\"\n"
            "all_model_checkpoint_timestamps: 1000\n"
            "all_model_checkpoint_timestamps: 1001.5\n"
            "last_preserved_timestamp: 1000\n");
  EXPECT_EQ(m->LatestCheckpointPath(), Path("model.ckpt-20"));
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-10", "model.ckpt-20"}));
  EXPECT_EQ(Listing(), (std::vector<std::string>{"checkpoint", "model.ckpt-10", "model.ckpt-20"}));
}

TEST_F(CheckpointManagerTest, KeepsOnlyTheNewestMaxToKeepAndLeavesNoTempFiles) {
  auto m = Make(Options(3));
  for (int64_t s = 1; s <= 6; ++s) ASSERT_TRUE(m->Save(Step(s * 100)).ok());
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-400", "model.ckpt-500", "model.ckpt-600"}));
  EXPECT_EQ(Listing(), (std::vector<std::string>{"checkpoint", "model.ckpt-400", "model.ckpt-500",
                                                 "model.ckpt-600"}));
}

TEST_F(CheckpointManagerTest, TempFilesOfDeadWritersAreDeletedOnOpen) {
  // A process that died part way through writing a checkpoint and a state file.
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  { auto m = Make(Options()); }
  const std::string d = std::to_string(dead), live = std::to_string(::getpid());
  for (const std::string& name :
       {"model.ckpt-100.tmp-" + d + "-0", "checkpoint.tmp-" + d + "-1",
        "model.ckpt-200.tmp-" + live + "-2", std::string("notes.tmp-x-1")}) {
    std::ofstream(Path(name)) << "partial";
  }
  auto m = Make(Options());
  // This process's own may still be written; a name that is not a temp file's is not touched.
  EXPECT_EQ(Listing(),
            (std::vector<std::string>{"model.ckpt-200.tmp-" + live + "-2", "notes.tmp-x-1"}));
}

TEST_F(CheckpointManagerTest, KeepEveryNHoursPreservesOnePerPeriod) {
  now_ = 0;
  auto m = Make(Options(2, 1.0));
  // A checkpoint every 20 minutes. The oldest leaving the window is preserved when at least an
  // hour passed since the last preserved one (the manager's start at t=0 counts as the first).
  for (int64_t s = 1; s <= 10; ++s) {
    now_ = 1200.0 * static_cast<double>(s);
    ASSERT_TRUE(m->Save(Step(s)).ok());
  }
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-9", "model.ckpt-10"}));
  EXPECT_EQ(Listing(), (std::vector<std::string>{"checkpoint", "model.ckpt-10", "model.ckpt-3",
                                                 "model.ckpt-6", "model.ckpt-9"}));
  EXPECT_NE(StateFile().find("last_preserved_timestamp: 7200\n"), std::string::npos) << StateFile();
}

TEST_F(CheckpointManagerTest, MaxPreservedCapsThePreservedCheckpoints) {
  now_ = 0;
  CheckpointManagerOptions o = Options(2, 1.0);
  o.max_preserved = 1;
  auto m = Make(o);
  // As above, 3 and 6 would be preserved; with a cap of one, preserving 6 deletes 3.
  for (int64_t s = 1; s <= 10; ++s) {
    now_ = 1200.0 * static_cast<double>(s);
    ASSERT_TRUE(m->Save(Step(s)).ok());
  }
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-9", "model.ckpt-10"}));
  EXPECT_EQ(Listing(), (std::vector<std::string>{"checkpoint", "model.ckpt-10", "model.ckpt-6",
                                                 "model.ckpt-9"}));
}

TEST_F(CheckpointManagerTest, RetentionContinuesAcrossRestarts) {
  {
    auto m = Make(Options(3));
    for (int64_t s = 1; s <= 3; ++s) ASSERT_TRUE(m->Save(Step(s)).ok());
  }
  auto m = Make(Options(3));
  EXPECT_EQ(m->LatestCheckpointPath(), Path("model.ckpt-3"));
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-1", "model.ckpt-2", "model.ckpt-3"}));
  ASSERT_TRUE(m->Save(Step(4)).ok());
  EXPECT_FALSE(fs::exists(Path("model.ckpt-1")));
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-2", "model.ckpt-3", "model.ckpt-4"}));
}

TEST_F(CheckpointManagerTest, SavingTheSameStepAgainReplacesIt) {
  auto m = Make(Options());
  ASSERT_TRUE(m->Save(Step(5, 1.0f)).ok());
  ASSERT_TRUE(m->Save(Step(6)).ok());
  ASSERT_TRUE(m->Save(Step(5, 2.0f)).ok());
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-6", "model.ckpt-5"}));
  EXPECT_EQ(m->LatestCheckpointPath(), Path("model.ckpt-5"));
  Result<CheckpointData> r = m->RestoreLatest(nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tensors[0].second[0], 2.0f);
  EXPECT_EQ(Listing(), (std::vector<std::string>{"checkpoint", "model.ckpt-5", "model.ckpt-6"}));
}

TEST_F(CheckpointManagerTest, FallsBackToThePreviousCheckpointWithAWarning) {
  auto m = Make(Options());
  for (int64_t s = 1; s <= 3; ++s) ASSERT_TRUE(m->Save(Step(s)).ok());
  fs::resize_file(Path("model.ckpt-3"), fs::file_size(Path("model.ckpt-3")) / 2);
  std::vector<std::string> warnings;
  Result<CheckpointData> r = m->RestoreLatest(&warnings);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->global_step, 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(Path("model.ckpt-3")), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("DataLoss"), std::string::npos) << warnings[0];

  fs::remove(Path("model.ckpt-2"));  // now the latest is corrupt and the previous one missing
  warnings.clear();
  r = m->RestoreLatest(&warnings);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->global_step, 1);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find(Path("model.ckpt-2")), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[1].find("NotFound"), std::string::npos) << warnings[1];

  fs::remove(Path("model.ckpt-1"));
  r = m->RestoreLatest(nullptr);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
}

TEST_F(CheckpointManagerTest, NoCheckpointIsNotFound) {
  auto m = Make(Options());
  std::vector<std::string> warnings;
  EXPECT_EQ(m->RestoreLatest(&warnings).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(CheckpointManagerTest, UnreadableStateFileMeansNoCheckpointWithAWarning) {
  fs::create_directories(dir_);
  std::ofstream(Path("checkpoint")) << "model_checkpoint_path: \"model.ckpt-5\n{garbage";
  std::vector<std::string> warnings;
  auto m = Make(Options(), &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(Path("checkpoint")), std::string::npos) << warnings[0];
  EXPECT_EQ(m->LatestCheckpointPath(), std::nullopt);
  EXPECT_EQ(m->RestoreLatest(nullptr).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(m->Save(Step(8)).ok());  // and the state file is rewritten cleanly
  EXPECT_EQ(Make(Options())->KeptCheckpoints(), Paths({"model.ckpt-8"}));
}

TEST_F(CheckpointManagerTest, UnreadableStateFileIsRebuiltFromTheCheckpointFiles) {
  {
    auto m = Make(Options(/*max_to_keep=*/2));
    for (int64_t s : {3, 10, 20}) ASSERT_TRUE(m->Save(Step(s, static_cast<float>(s))).ok());
  }
  std::ofstream(Path("checkpoint")) << "{garbage";
  std::ofstream(Path("model.ckpt-30.tmp-1-2")) << "half written";  // not a checkpoint
  std::ofstream(Path("model.ckpt-x")) << "not a step";
  std::vector<std::string> warnings;
  auto m = Make(Options(/*max_to_keep=*/2), &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("rebuilt from the 2 newest checkpoint files, latest model.ckpt-20"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-10", "model.ckpt-20"}));
  auto data = m->RestoreLatest(nullptr);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->global_step, 20);
}

TEST_F(CheckpointManagerTest, ReadsAStateFileWrittenByTensorFlow) {
  fs::create_directories(dir_);
  std::ofstream(Path("checkpoint")) << "model_checkpoint_path: \"model.ckpt-7\"\n"
                                       "all_model_checkpoint_paths: \"model.ckpt-5\"\n"
                                       "all_model_checkpoint_paths: \"model.ckpt-7\"\n";
  std::vector<std::string> warnings;
  auto m = Make(Options(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-5", "model.ckpt-7"}));
}

TEST_F(CheckpointManagerTest, RejectsBadOptions) {
  CheckpointManagerOptions o = Options(0);
  EXPECT_EQ(CheckpointManager::Create(dir_, o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.basename = "a/b";
  EXPECT_EQ(CheckpointManager::Create(dir_, o).status().code(), StatusCode::kInvalidArgument);
  o = Options(5, -1);
  EXPECT_EQ(CheckpointManager::Create(dir_, o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace trainingd::engine

namespace trainingd::engine {
namespace {

TEST_F(CheckpointManagerTest, ListCheckpointsReadsWithoutTouchingTheDirectory) {
  // No directory: nothing, and nothing created.
  auto none = ListCheckpoints(dir_);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(fs::exists(dir_));

  auto m = Make(Options(/*max_to_keep=*/2));
  for (int64_t s : {100, 200, 300}) ASSERT_TRUE(m->Save(Step(s)).ok());
  // A writer's temp file in flight (another manager's write) is left alone.
  const std::string temp = Path("model.ckpt-400.tmp-in-flight");
  { std::ofstream(temp) << "partial"; }
  auto list = ListCheckpoints(dir_);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);  // retention dropped 100
  EXPECT_EQ((*list)[0].global_step, 200);
  EXPECT_EQ((*list)[1].global_step, 300);
  EXPECT_EQ((*list)[1].path, Path("model.ckpt-300"));
  EXPECT_EQ((*list)[1].bytes, static_cast<int64_t>(fs::file_size(Path("model.ckpt-300"))));
  EXPECT_GT((*list)[1].mtime, 1e9);
  EXPECT_TRUE(fs::exists(temp));
  // Agrees with the manager.
  EXPECT_EQ(m->KeptCheckpoints(), Paths({"model.ckpt-200", "model.ckpt-300"}));

  // A tracked checkpoint deleted meanwhile is left out; a broken state file reads as the files.
  fs::remove(Path("model.ckpt-200"));
  EXPECT_EQ(ListCheckpoints(dir_)->size(), 1u);
  { std::ofstream(Path("checkpoint")) << "garbage"; }
  list = ListCheckpoints(dir_);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].global_step, 300);
  EXPECT_EQ(StateFile(), "garbage");  // not rewritten
}

}  // namespace
}  // namespace trainingd::engine
