// JobFiles: a job's log appended, rotated at its size cap with one old file kept, read from any
// line through the index, and picked up again by a new JobFiles (a daemon restart); appends on a
// real full disk (a small tmpfs).
#include "trainingd/daemon/jobs/job_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "small_filesystem.h"

namespace trainingd::daemon {
namespace {
namespace fs = std::filesystem;

class JobFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::path(::testing::TempDir()) /
            ("jf_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  JobFiles Make(int64_t max_log_bytes = 1 << 20) {
    return JobFiles(JobFilesOptions{dir_, "", max_log_bytes});
  }
  static std::string Line(int64_t n) { return "INFO:trainingd:line " + std::to_string(n); }

  std::string dir_;
};

TEST_F(JobFilesTest, AppendsAndReadsFromAnyLine) {
  JobFiles files = Make();
  ASSERT_TRUE(files.CreateDir("j").ok());
  for (int64_t n = 1; n <= 1000; ++n) ASSERT_TRUE(files.AppendLog("j", Line(n)).ok());
  for (int64_t from : {1, 2, 255, 256, 257, 513, 999, 1000}) {
    auto got = files.ReadLog("j", from, 3);
    ASSERT_TRUE(got.ok());
    ASSERT_FALSE(got->empty()) << from;
    EXPECT_EQ(got->front().line, from);
    EXPECT_EQ(got->front().text, Line(from));
    EXPECT_EQ(got->size(), static_cast<size_t>(std::min<int64_t>(3, 1001 - from)));
  }
  EXPECT_TRUE(files.ReadLog("j", 1001, 10)->empty());
  EXPECT_TRUE(files.ReadLog("nobody", 1, 10)->empty());
}

TEST_F(JobFilesTest, ANewlineInALineStaysOneLine) {
  JobFiles files = Make();
  ASSERT_TRUE(files.CreateDir("j").ok());
  ASSERT_TRUE(files.AppendLog("j", "one\ntwo").ok());
  ASSERT_TRUE(files.AppendLog("j", "three").ok());
  auto got = files.ReadLog("j", 1, 10);
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].text, "one two");
  EXPECT_EQ((*got)[1].line, 2);
}

TEST_F(JobFilesTest, RotatesAtTheCapKeepingOneOldFileAndTheNumbering) {
  const int64_t cap = 4096;
  JobFiles files = Make(cap);
  ASSERT_TRUE(files.CreateDir("j").ok());
  const int64_t total = 2000;  // ~56 KB: many rotations
  for (int64_t n = 1; n <= total; ++n) ASSERT_TRUE(files.AppendLog("j", Line(n)).ok());
  int64_t bytes = 0, logs = 0;
  for (const auto& e : fs::directory_iterator(files.Dir("j"))) {
    bytes += static_cast<int64_t>(fs::file_size(e.path()));
    ++logs;
  }
  EXPECT_EQ(logs, 2);  // log.txt and one log-<first>.txt
  EXPECT_LE(bytes, 2 * cap);
  // The first line still there comes after every rotated-away one; numbers are unchanged.
  auto from_start = files.ReadLog("j", 1, 100000);
  ASSERT_TRUE(from_start.ok());
  ASSERT_FALSE(from_start->empty());
  const int64_t first = from_start->front().line;
  EXPECT_GT(first, 1);
  for (size_t i = 0; i < from_start->size(); ++i) {
    EXPECT_EQ((*from_start)[i].line, first + static_cast<int64_t>(i));
    EXPECT_EQ((*from_start)[i].text, Line(first + static_cast<int64_t>(i)));
  }
  EXPECT_EQ(from_start->back().line, total);
  // A read that spans the rotated file and the current one.
  auto tail = files.ReadLog("j", total - 150, 1000);
  ASSERT_EQ(tail->size(), 151u);
  EXPECT_EQ(tail->back().text, Line(total));
}

TEST_F(JobFilesTest, ARestartContinuesTheNumberingAndCompletesATornLine) {
  {
    JobFiles files = Make(4096);
    ASSERT_TRUE(files.CreateDir("j").ok());
    for (int64_t n = 1; n <= 500; ++n) ASSERT_TRUE(files.AppendLog("j", Line(n)).ok());
  }
  // A crash mid-append leaves a line without its newline.
  std::ofstream(dir_ + "/jobs/j/log.txt", std::ios::app) << "torn";
  JobFiles files = Make(4096);
  ASSERT_TRUE(files.AppendLog("j", Line(502)).ok());
  auto got = files.ReadLog("j", 500, 10);
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].text, Line(500));
  EXPECT_EQ((*got)[1].text, "torn");
  EXPECT_EQ((*got)[2].line, 502);
  EXPECT_EQ((*got)[2].text, Line(502));
}

TEST_F(JobFilesTest, RemoveDeletesTheDirectory) {
  JobFiles files = Make();
  ASSERT_TRUE(files.CreateDir("j").ok());
  ASSERT_TRUE(files.AppendLog("j", "x").ok());
  ASSERT_TRUE(files.Remove("j").ok());
  EXPECT_FALSE(fs::exists(files.Dir("j")));
}

TEST_F(JobFilesTest, AnAppendOnAFullDiskFailsWholeAndTheLogGoesOnAfter) {
  std::string why;
  auto disk = test_support::SmallFileSystem::Mount(dir_, 1 << 20, &why);
  if (!disk) GTEST_SKIP() << why;
  JobFiles files = Make();
  ASSERT_TRUE(files.CreateDir("j").ok());
  for (int64_t n = 1; n <= 100; ++n) ASSERT_TRUE(files.AppendLog("j", Line(n)).ok());
  ASSERT_TRUE(disk->Fill(0));
  const std::string path = dir_ + "/jobs/j/log.txt";
  const auto size = fs::file_size(path);
  // Longer than what is left of the log's last page: part of it would fit.
  const std::string long_line(6000, 'x');
  const engine::Status st = files.AppendLog("j", long_line);
  EXPECT_EQ(st.code(), engine::StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_EQ(fs::file_size(path), size);  // no partial line left to be glued to the next

  disk->Unfill();
  ASSERT_TRUE(files.AppendLog("j", Line(101)).ok());
  auto got = files.ReadLog("j", 99, 10);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[1].text, Line(100));
  EXPECT_EQ((*got)[2].line, 101);
  EXPECT_EQ((*got)[2].text, Line(101));
}

}  // namespace
}  // namespace trainingd::daemon
