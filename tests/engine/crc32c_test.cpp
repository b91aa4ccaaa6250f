// CRC-32C, shared by the event files and the checkpoints.
#include "../../engine/src/io/crc32c.h"

#include <gtest/gtest.h>

namespace trainingd::engine {
namespace {

TEST(Crc32cTest, StandardCheckValueAndExtension) {
  EXPECT_EQ(internal::Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(internal::Crc32cExtend(internal::Crc32c("1234", 4), "56789", 5), 0xE3069283u);
  EXPECT_EQ(internal::Crc32c("", 0), 0u);
}

}  // namespace
}  // namespace trainingd::engine
