// The engine's writers on a real full disk: a small tmpfs (tests/support/small_filesystem.h)
// filled by a filler file. A write that does not fit is a ResourceExhausted error naming the
// file; it leaves no temp file and no half-written file behind, never replaces the latest
// checkpoint with a broken one, and what fits afterwards is written whole. A job that runs out
// of space ends saying so. Skipped, naming the reason, where a tmpfs cannot be mounted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "session_test_util.h"
#include "small_filesystem.h"
#include "test_util.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/io/event_file_writer.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;
using test_support::SmallFileSystem;
using testing::ReadFile;

constexpr int64_t kPage = 4096;

// A checkpoint of about `floats` * 4 bytes.
CheckpointData Checkpoint(int64_t step, int64_t floats) {
  CheckpointData d;
  d.global_step = step;
  Tensor t{Shape({floats})};
  for (int64_t i = 0; i < floats; ++i) t[i] = static_cast<float>(i + step);
  d.tensors.emplace_back("w", std::move(t));
  return d;
}

class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string why;
    disk_ = SmallFileSystem::Mount(
        ::testing::TempDir() + "/full_disk_" + std::to_string(::getpid()) + "_" + info->name(),
        int64_t{4} << 20, &why);
    if (!disk_) GTEST_SKIP() << why;
    dir_ = disk_->dir();
  }

  // The names in `dir`, sorted; the filler left out.
  static std::vector<std::string> Files(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name != "filler") out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<SmallFileSystem> disk_;
  std::string dir_;
};

TEST_F(FullDiskTest, AnAtomicWriteThatDoesNotFitKeepsTheOldFileAndLeavesNoTempFile) {
  const std::string path = dir_ + "/state";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents").ok());
  ASSERT_TRUE(disk_->Fill(4 * kPage));
  const int64_t free = disk_->FreeBytes();
  ASSERT_EQ(free, 4 * kPage);
  const std::string big(16 * kPage, 'x');
  const Status st = WriteFileAtomically(path, big);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find(path + ".tmp-"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.message();
  EXPECT_EQ(ReadFile(path), "old contents");
  EXPECT_EQ(Files(dir_), std::vector<std::string>{"state"});
  EXPECT_EQ(disk_->FreeBytes(), free);  // the partial temp file's pages are free again

  disk_->Unfill();
  ASSERT_TRUE(WriteFileAtomically(path, big).ok());
  EXPECT_EQ(ReadFile(path), big);
}

TEST_F(FullDiskTest, ACheckpointThatDoesNotFitKeepsTheLatestAndLeavesNoFiles) {
  const std::string ckpt = dir_ + "/ckpt";
  auto manager = CheckpointManager::Create(ckpt);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  ASSERT_TRUE((*manager)->Save(Checkpoint(1, 20000)).ok());
  ASSERT_TRUE(disk_->Fill(8 * kPage));  // room for part of the next one

  auto saved = (*manager)->Save(Checkpoint(2, 20000));
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), StatusCode::kResourceExhausted) << saved.status().ToString();
  EXPECT_EQ(fs::path(*(*manager)->LatestCheckpointPath()).filename(), "model.ckpt-1");
  EXPECT_EQ(Files(ckpt), (std::vector<std::string>{"checkpoint", "model.ckpt-1"}));
  // What a restart sees: the latest good checkpoint.
  auto reopened = CheckpointManager::Create(ckpt);
  ASSERT_TRUE(reopened.ok());
  auto restored = (*reopened)->RestoreLatest(nullptr);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->global_step, 1);

  disk_->Unfill();
  ASSERT_TRUE((*manager)->Save(Checkpoint(3, 20000)).ok());
  EXPECT_EQ(Files(ckpt), (std::vector<std::string>{"checkpoint", "model.ckpt-1", "model.ckpt-3"}));
}

TEST_F(FullDiskTest, ACheckpointWhoseStateFileDoesNotFitIsNotLeftBehind) {
  const std::string ckpt = dir_ + "/ckpt";
  auto manager = CheckpointManager::Create(ckpt);
  ASSERT_TRUE(manager.ok());
  ASSERT_TRUE((*manager)->Save(Checkpoint(1, 20000)).ok());
  // Exactly the pages of the next checkpoint file are free: it is written, and then the new
  // state file, which names it, has no room.
  auto encoded = EncodeCheckpoint(Checkpoint(2, 20000));
  ASSERT_TRUE(encoded.ok());
  const int64_t pages = (static_cast<int64_t>(encoded->size()) + kPage - 1) / kPage;
  ASSERT_TRUE(disk_->Fill(pages * kPage));
  ASSERT_EQ(disk_->FreeBytes(), pages * kPage);

  auto saved = (*manager)->Save(Checkpoint(2, 20000));
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.status().code(), StatusCode::kResourceExhausted) << saved.status().ToString();
  EXPECT_NE(saved.status().message().find(ckpt + "/checkpoint"), std::string::npos)
      << saved.status().message();
  EXPECT_EQ(fs::path(*(*manager)->LatestCheckpointPath()).filename(), "model.ckpt-1");
  // The checkpoint no state file names would pass for a preserved one and hold the space.
  EXPECT_EQ(Files(ckpt), (std::vector<std::string>{"checkpoint", "model.ckpt-1"}));
  EXPECT_EQ(disk_->FreeBytes(), pages * kPage);
}

TEST_F(FullDiskTest, AnEventFileThatRunsOutOfSpaceKeepsWholeRecordsAndWritesTheRestLater) {
  auto w = EventFileWriter::Create(dir_ + "/events", {.start_wall_time = 1.7e9});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<std::string> want = {EventFileWriter::EncodeFileVersionEvent(1.7e9)};
  auto add = [&](int64_t from, int64_t to) {
    Status first;
    for (int64_t s = from; s < to; ++s) {
      const float v = 1.0f / static_cast<float>(s);
      Status st = (*w)->AddScalar("loss", s, v, 1.7e9 + static_cast<double>(s));
      if (first.ok()) first = st;
      want.push_back(
          EventFileWriter::EncodeScalarEvent("loss", s, v, 1.7e9 + static_cast<double>(s)));
    }
    return first;
  };
  ASSERT_TRUE(add(1, 11).ok());
  ASSERT_TRUE((*w)->Flush().ok());
  ASSERT_TRUE(disk_->Fill(0));

  // Far more than the rest of the file's last page: the flush fails part way through.
  Status st = add(11, 2000);
  if (st.ok()) st = (*w)->Flush();
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find((*w)->path()), std::string::npos) << st.message();
  // What is on disk meanwhile is whole records only: a reader stops at none.
  EXPECT_FALSE(testing::ReadRecords((*w)->path()).empty());

  disk_->Unfill();
  ASSERT_TRUE(add(2000, 2005).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(testing::ReadRecords((*w)->path()), want);  // nothing lost, nothing torn
}

// Calls `on_step` with the step of every scalar summary: the test acts at known steps.
class StepSink final : public SummarySink {
 public:
  explicit StepSink(std::function<void(int64_t)> on_step) : on_step_(std::move(on_step)) {}
  Status AddScalar(std::string_view, int64_t step, double, double) override {
    on_step_(step);
    return Status::Ok();
  }

 private:
  std::function<void(int64_t)> on_step_;
};

// A small job (summaries every step) whose disk the test fills while it runs.
class FullDiskJobTest : public FullDiskTest {
 protected:
  static JobSpec Spec(int64_t max_steps) {
    JobSpec s;
    s.name = "full";
    s.model_preset = "softmax";
    s.model = *PresetModel("softmax");
    s.batch_size = 50;
    s.max_steps = max_steps;
    s.hooks.summary.trigger.every_steps = 1;
    return s;
  }
  Result<JobResult> Run(const JobSpec& spec, std::function<void(int64_t)> on_step,
                        const std::atomic<bool>* stop = nullptr) {
    static const auto data = std::make_shared<const Datasets>(testing::SmallFashionMnist());
    JobRunOptions o;
    o.checkpoint_dir = dir_ + "/job";
    o.datasets = data;
    o.logger = logger_;
    o.stop = stop;
    o.summary_sinks = {std::make_shared<StepSink>(std::move(on_step))};
    return RunJob(spec, o);
  }
  // No temp file of an atomic write is left in the job's directory.
  void ExpectNoTempFiles() {
    for (const std::string& f : Files(dir_ + "/job")) {
      EXPECT_EQ(f.find(".tmp-"), std::string::npos) << f;
    }
  }

  std::shared_ptr<testing::CapturingLogger> logger_ = std::make_shared<testing::CapturingLogger>();
};

TEST_F(FullDiskJobTest, AJobWhosePeriodicCheckpointDoesNotFitFailsSayingTheDiskIsFull) {
  JobSpec spec = Spec(100);
  spec.hooks.checkpoint.trigger.every_steps = 20;
  bool filled = false;
  auto result = Run(spec, [&](int64_t) {
    if (!filled) filled = disk_->Fill(0);  // at step 1, after the first checkpoint (step 0)
  });
  ASSERT_TRUE(filled);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, JobResult::Outcome::kFailed);
  EXPECT_EQ(result->error.code(), StatusCode::kResourceExhausted) << result->error.ToString();
  EXPECT_EQ(result->reason.rfind("disk full (", 0), 0u) << result->reason;
  EXPECT_NE(result->reason.find("no final checkpoint fitted"), std::string::npos) << result->reason;
  EXPECT_LT(result->global_step, 100);
  // The first checkpoint (before the disk filled) is still the latest, and whole.
  auto manager = CheckpointManager::Create(dir_ + "/job");
  ASSERT_TRUE(manager.ok());
  EXPECT_EQ(fs::path(*(*manager)->LatestCheckpointPath()).filename(), "model.ckpt-0");
  EXPECT_TRUE((*manager)->RestoreLatest(nullptr).ok());
  ExpectNoTempFiles();
}

TEST_F(FullDiskJobTest, AJobStoppedWhenItsFinalCheckpointFitsButItsSummariesDoNotIsStopped) {
  // At step 150 the disk fills but for the pages of one checkpoint (as large as the one at step
  // 100) and its state file; at 200 the job is stopped, as the daemon stops jobs on a full disk.
  // The final checkpoint fits; the summaries buffered since the start (two events per step) do
  // not, so closing the event file fails.
  JobSpec spec = Spec(100000);
  spec.hooks.checkpoint.trigger.every_steps = 100;
  std::atomic<bool> stop{false};
  bool filled = false;
  auto result = Run(
      spec,
      [&](int64_t step) {
        if (step >= 150 && !filled) {
          const auto bytes = static_cast<int64_t>(fs::file_size(dir_ + "/job/model.ckpt-100"));
          filled = disk_->Fill(((bytes + kPage - 1) / kPage + 1) * kPage);
        }
        if (step >= 200) stop = true;
      },
      &stop);
  ASSERT_TRUE(filled);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, JobResult::Outcome::kStopped) << result->reason;
  EXPECT_EQ(result->stop_cause, JobResult::StopCause::kDiskFull);
  EXPECT_EQ(result->reason.rfind("disk full (", 0), 0u) << result->reason;
  EXPECT_NE(result->reason.find("stopped after a final checkpoint at global step " +
                                std::to_string(result->global_step)),
            std::string::npos)
      << result->reason;
  EXPECT_GE(result->global_step, 200);
  EXPECT_TRUE(HasCheckpointAt(dir_ + "/job", result->global_step));
  ExpectNoTempFiles();
}

TEST_F(FullDiskJobTest, AJobWhoseSummariesDoNotFitStopsAfterAFinalCheckpointAtItsLastStep) {
  // Plain SGD: every checkpoint is as large as the first (no optimizer slots), about 8 pages.
  // At step 150 the disk fills but for the pages of one and its state file. Near step 900 the
  // event file's buffer (two events per step) reaches 64 KiB and is written out: it does not
  // fit, and the write is cut back, giving its pages back. That step's summary hook fails, and
  // the final checkpoint -- at the step that was trained -- fits.
  JobSpec spec = Spec(100000);
  spec.optimizer.type = OptimizerOptions::Type::kSgd;
  spec.hooks.checkpoint.trigger.every_steps = 1000000;
  bool filled = false;
  auto result = Run(spec, [&](int64_t step) {
    if (step >= 150 && !filled) {
      const auto bytes = static_cast<int64_t>(fs::file_size(dir_ + "/job/model.ckpt-0"));
      filled = disk_->Fill(((bytes + kPage - 1) / kPage + 1) * kPage);
    }
  });
  ASSERT_TRUE(filled);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, JobResult::Outcome::kStopped) << result->reason;
  EXPECT_NE(result->reason.find("cannot write event file"), std::string::npos) << result->reason;
  EXPECT_NE(result->reason.find("stopped after a final checkpoint at global step " +
                                std::to_string(result->global_step)),
            std::string::npos)
      << result->reason;
  EXPECT_GT(result->global_step, 150);
  EXPECT_TRUE(HasCheckpointAt(dir_ + "/job", result->global_step));
  ExpectNoTempFiles();
}

}  // namespace
}  // namespace trainingd::engine
