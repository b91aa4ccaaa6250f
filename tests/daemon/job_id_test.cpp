// Job ids: from the OS's random source, 80 bits, URL-safe and valid for the API.
#include "trainingd/daemon/jobs/job_id.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

#include "trainingd/api/router.h"

namespace trainingd::daemon {
namespace {

TEST(NewJobIdTest, ShapeIsJAndSixteenBase32Characters) {
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewJobId();
    ASSERT_EQ(id.size(), 17u) << id;
    EXPECT_EQ(id[0], 'j') << id;
    for (char c : id.substr(1)) {
      EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '2' && c <= '7')) << id;
    }
    EXPECT_TRUE(api::IsValidJobId(id)) << id;
  }
}

TEST(NewJobIdTest, EncodesEveryBitOfTheRandomBytes) {
  std::array<unsigned char, kJobIdRandomBits / 8> bytes{};
  EXPECT_EQ(JobIdFromBytes(bytes.data()), "jaaaaaaaaaaaaaaaa");
  bytes.fill(0xff);
  EXPECT_EQ(JobIdFromBytes(bytes.data()), "j7777777777777777");
  // RFC 4648's base32 test vector "foobar" (lower case, our alphabet), padded to 10 bytes.
  const unsigned char foobar[10] = {'f', 'o', 'o', 'b', 'a', 'r', 0, 0, 0, 0};
  EXPECT_EQ(JobIdFromBytes(foobar), "jmzxw6ytboiaaaaaa");
  // Flipping any one bit changes the id: no bit is dropped.
  bytes.fill(0);
  std::set<std::string> ids = {JobIdFromBytes(bytes.data())};
  for (size_t bit = 0; bit < kJobIdRandomBits; ++bit) {
    bytes.fill(0);
    bytes[bit / 8] = static_cast<unsigned char>(1u << (bit % 8));
    ids.insert(JobIdFromBytes(bytes.data()));
  }
  EXPECT_EQ(ids.size(), size_t{kJobIdRandomBits} + 1);
}

// 100,000 ids: no repeats, and every position takes every character about equally often (a
// generator that fixed or biased a position, or repeated itself, fails).
TEST(NewJobIdTest, IdsAreDistinctAndUniform) {
  constexpr int kIds = 100000;
  std::set<std::string> seen;
  std::array<std::array<int, 32>, 16> counts{};
  for (int i = 0; i < kIds; ++i) {
    const std::string id = NewJobId();
    ASSERT_TRUE(seen.insert(id).second) << "repeated " << id;
    for (size_t p = 0; p < 16; ++p) {
      const char c = id[p + 1];
      ++counts[p][c >= 'a' ? c - 'a' : c - '2' + 26];
    }
  }
  // Expected 3125 per cell; the standard deviation is about 55, so 2700..3550 is > 7 sigma.
  for (size_t p = 0; p < 16; ++p) {
    for (int c = 0; c < 32; ++c) {
      EXPECT_GT(counts[p][c], 2700) << "position " << p << " character " << c;
      EXPECT_LT(counts[p][c], 3550) << "position " << p << " character " << c;
    }
  }
}

}  // namespace
}  // namespace trainingd::daemon
