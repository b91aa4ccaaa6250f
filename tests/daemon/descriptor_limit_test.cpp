// The connection cap against the descriptor limit: the reserve, the fit, and the raise of the
// soft limit (in a child process, so this test's own limit stays as it was).
#include "trainingd/daemon/service/descriptor_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace trainingd::daemon {
namespace {

TEST(DescriptorLimitTest, ReserveGrowsWithJobsAndHandlers) {
  EXPECT_EQ(DescriptorReserve(1, 2), 64u + 8u + 16u);
  EXPECT_EQ(DescriptorReserve(4, 8), 64u + 32u + 64u);
}

TEST(DescriptorLimitTest, CapFitsBelowTheLimit) {
  EXPECT_EQ(FitConnectionCap(1024, 65536, 88), 1024u);       // fits
  EXPECT_EQ(FitConnectionCap(1024, 1024 + 88, 88), 1024u);   // just fits
  EXPECT_EQ(FitConnectionCap(1024, 1024, 88), 1024u - 88u);  // the usual soft limit: lowered
  EXPECT_EQ(FitConnectionCap(5000, 300, 88), 212u);
  EXPECT_EQ(FitConnectionCap(20, 100, 88), 0u);   // 12 left: below kMinConnections
  EXPECT_EQ(FitConnectionCap(10, 100, 88), 10u);  // but 10 wanted fit
  EXPECT_EQ(FitConnectionCap(1024, 50, 88), 0u);  // nothing left
  EXPECT_EQ(FitConnectionCap(1024, 88 + kMinConnections, 88), kMinConnections);
}

TEST(DescriptorLimitTest, RaisesTheSoftLimitToTheHardOne) {
  rlimit mine{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &mine), 0);
  if (mine.rlim_max < 128) GTEST_SKIP() << "hard limit " << mine.rlim_max;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit low = mine;
    low.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) _exit(2);
    auto raised = RaiseDescriptorLimit();
    rlimit now{};
    getrlimit(RLIMIT_NOFILE, &now);
    const bool ok =
        raised.ok() && now.rlim_cur == mine.rlim_max &&
        (mine.rlim_max == RLIM_INFINITY ? *raised == UINT64_MAX : *raised == mine.rlim_max);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace trainingd::daemon
