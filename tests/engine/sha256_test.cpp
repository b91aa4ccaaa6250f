#include "trainingd/engine/base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace trainingd::engine {
namespace {

std::string Digest(const std::string& s, bool use_cpu_extensions = true) {
  Sha256 h(use_cpu_extensions);
  h.Update(s);
  return h.HexDigest();
}

// FIPS 180-4's examples (and NIST's CAVS vectors for the padding edges).
TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Digest(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The CPU's SHA extensions (where it has them) and the portable code agree, on every length
// around the block edges and on many blocks at once.
TEST(Sha256Test, CpuExtensionsAndPortableCodeAgree) {
  std::string data;
  for (int i = 0; i < 5000; ++i) data += static_cast<char>(i * 31 + i / 7);
  for (size_t len : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{128},
                     size_t{1000}, size_t{5000}}) {
    EXPECT_EQ(Digest(data.substr(0, len), true), Digest(data.substr(0, len), false)) << len;
  }
  EXPECT_EQ(Digest("abc", false),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// Any split of the input into Update calls gives the same digest, across the block and padding
// edges (55, 56, 63, 64 bytes).
TEST(Sha256Test, PiecesEqualWhole) {
  std::string data;
  for (int i = 0; i < 300; ++i) data += static_cast<char>(i * 7 + 3);
  for (size_t len : {size_t{55}, size_t{56}, size_t{63}, size_t{64}, size_t{65}, size_t{300}}) {
    const std::string whole = Digest(data.substr(0, len));
    for (size_t piece : {size_t{1}, size_t{13}, size_t{64}}) {
      Sha256 h;
      for (size_t at = 0; at < len; at += piece)
        h.Update(data.substr(at, std::min(piece, len - at)));
      EXPECT_EQ(h.HexDigest(), whole) << "length " << len << ", pieces of " << piece;
    }
  }
}

}  // namespace
}  // namespace trainingd::engine
