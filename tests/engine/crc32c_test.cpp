// CRC-32C, shared by the event files and the checkpoints.
#include "../../engine/src/io/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace trainingd::engine {
namespace {

TEST(Crc32cTest, StandardCheckValueAndExtension) {
  EXPECT_EQ(internal::Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(internal::Crc32cExtend(internal::Crc32c("1234", 4), "56789", 5), 0xE3069283u);
  EXPECT_EQ(internal::Crc32c("", 0), 0u);
  EXPECT_EQ(internal::Crc32cExtendPortable(0, "123456789", 9), 0xE3069283u);
}

// The instruction's path (8 bytes at a time, then a byte at a time) against the table, at every
// length and start offset around its 8-byte steps, and on a checkpoint-sized buffer.
TEST(Crc32cTest, TheFastPathIsTheTableAtEveryLengthAndOffset) {
  std::mt19937 rng(7);
  std::vector<unsigned char> bytes((size_t{1} << 20) + 64);
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t size = 0; size < 70; ++size) {
      ASSERT_EQ(internal::Crc32cExtend(0x12345678u, bytes.data() + offset, size),
                internal::Crc32cExtendPortable(0x12345678u, bytes.data() + offset, size))
          << "offset " << offset << ", size " << size;
    }
  }
  EXPECT_EQ(internal::Crc32c(bytes.data() + 3, bytes.size() - 3),
            internal::Crc32cExtendPortable(0, bytes.data() + 3, bytes.size() - 3));
}

}  // namespace
}  // namespace trainingd::engine
