// The checkpoint file format: round trip, byte layout, and rejection of every kind of damage.
#include "trainingd/engine/io/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "../../engine/src/io/crc32c.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

// A fresh, empty directory per test, removed afterwards.
class CheckpointFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("ckpt_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void PutU32At(std::string& b, size_t pos, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[pos + static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
}

// Recomputes the header and file checksums after a deliberate edit, so only the edit is wrong.
void Reseal(std::string& b) {
  PutU32At(b, 32, internal::Crc32c(b.data(), 32));
  PutU32At(b, b.size() - 4, internal::Crc32c(b.data(), b.size() - 4));
}

CheckpointData Sample() {
  CheckpointData d;
  d.global_step = 1234567890123;
  Tensor k(Shape{2, 3});
  for (int64_t i = 0; i < k.size(); ++i) k[i] = 0.25f * static_cast<float>(i) - 0.5f;
  k[5] = -0.0f;
  Tensor scalar(Shape{}, std::numeric_limits<float>::infinity());
  Tensor nan(Shape{1, 2}, std::numeric_limits<float>::quiet_NaN());
  d.tensors.emplace_back("dense/kernel", k);
  d.tensors.emplace_back("scalar", scalar);
  d.tensors.emplace_back("weird/nan", nan);
  d.tensors.emplace_back("empty", Tensor(Shape{0, 4}));
  d.states.push_back({"input_pipeline", {3, 40}});
  d.states.push_back({"dropout/rng", {1, 0xFFFFFFFFFFFFFFFFull, 0, 42}});
  d.states.push_back({"nothing", {}});
  return d;
}

void ExpectSame(const CheckpointData& a, const CheckpointData& b) {
  EXPECT_EQ(a.global_step, b.global_step);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].first, b.tensors[i].first);
    ASSERT_EQ(a.tensors[i].second.shape(), b.tensors[i].second.shape());
    if (a.tensors[i].second.size() == 0) continue;
    EXPECT_EQ(std::memcmp(a.tensors[i].second.data(), b.tensors[i].second.data(),
                          4 * static_cast<size_t>(a.tensors[i].second.size())),
              0)
        << a.tensors[i].first;
  }
  EXPECT_EQ(a.states, b.states);
}

TEST_F(CheckpointFileTest, RoundTripIsBitExact) {
  const CheckpointData d = Sample();
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), d).ok());
  Result<CheckpointData> r = ReadCheckpointFile(Path("a"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectSame(d, *r);
}

TEST_F(CheckpointFileTest, EncodeAndParseAreTheFilesBytes) {
  const std::string path = Path("model.ckpt-7");
  ASSERT_TRUE(WriteCheckpointFile(path, Sample()).ok());
  const auto encoded = EncodeCheckpoint(Sample());
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_EQ(*encoded, ReadBytes(path));
  const auto parsed = ParseCheckpoint(*encoded, "mem");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ExpectSame(*parsed, Sample());
  const auto bad = ParseCheckpoint(encoded->substr(1), "mem");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(bad.status().message().rfind("mem: ", 0), 0u) << bad.status().message();
}

// Tensors of a megabyte and more go to the file from their own memory, between small records
// gathered into one write: the file is still the encoding, byte for byte, and reads back.
TEST_F(CheckpointFileTest, LargeTensorsBetweenSmallRecordsAreTheSameFile) {
  CheckpointData d = Sample();
  Tensor big(Shape{3, 1 << 17});  // 1.5 MiB
  for (int64_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 1013) * 0.5f;
  d.tensors.insert(d.tensors.begin() + 1, {"dense_1/kernel", big});
  d.tensors.emplace_back("dense_1/kernel/Adam", big);
  const std::string path = Path("model.ckpt-8");
  ASSERT_TRUE(WriteCheckpointFile(path, d).ok());
  const auto encoded = EncodeCheckpoint(d);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_GT(encoded->size(), size_t{3} << 20);
  EXPECT_TRUE(*encoded == ReadBytes(path));
  Result<CheckpointData> r = ReadCheckpointFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectSame(d, *r);
}

TEST_F(CheckpointFileTest, LayoutIsLittleEndianWithMagicVersionAndFooter) {
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), Sample()).ok());
  const std::string b = ReadBytes(Path("a"));
  ASSERT_GT(b.size(), 48u);
  EXPECT_EQ(b.substr(0, 8), "TDCKPT01");
  EXPECT_EQ(b.substr(8, 8), std::string("\x01\0\0\0\0\0\0\0", 8));  // version 1, reserved 0
  EXPECT_EQ(b.substr(16, 8), std::string("\xCB\x04\xFB\x71\x1F\x01\0\0", 8));  // 1234567890123
  EXPECT_EQ(b.substr(24, 8), std::string("\x04\0\0\0\x03\0\0\0", 8));  // 4 tensors, 3 states
  // First record: kind 1, name length 12, "dense/kernel", rank 2, dims 2 and 3, then floats.
  EXPECT_EQ(b.substr(36, 8), std::string("\x01\0\0\0\x0C\0\0\0", 8));
  EXPECT_EQ(b.substr(44, 12), "dense/kernel");
  EXPECT_EQ(b.substr(56, 4), std::string("\x02\0\0\0", 4));
  EXPECT_EQ(b.substr(60, 16), std::string("\x02\0\0\0\0\0\0\0\x03\0\0\0\0\0\0\0", 16));
  EXPECT_EQ(b.substr(76, 4), std::string("\0\0\0\xBF", 4));  // -0.5f
  // Footer: the file's length, then the checksum of everything before the checksum.
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(b[b.size() - 12 + i]);
  EXPECT_EQ(len, b.size());
}

TEST_F(CheckpointFileTest, MissingFileIsNotFound) {
  const Result<CheckpointData> r = ReadCheckpointFile(Path("nope"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST_F(CheckpointFileTest, WrongMagicIsDataLossNamingTheFile) {
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), Sample()).ok());
  std::string b = ReadBytes(Path("a"));
  b[3] = 'X';
  WriteBytes(Path("a"), b);
  const Result<CheckpointData> r = ReadCheckpointFile(Path("a"));
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(Path("a")), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("magic"), std::string::npos) << r.status().message();
}

TEST_F(CheckpointFileTest, UnsupportedVersionIsRejected) {
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), Sample()).ok());
  std::string b = ReadBytes(Path("a"));
  PutU32At(b, 8, 2);
  Reseal(b);
  WriteBytes(Path("a"), b);
  const Result<CheckpointData> r = ReadCheckpointFile(Path("a"));
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("unsupported format version 2"), std::string::npos)
      << r.status().message();
}

TEST_F(CheckpointFileTest, EveryTruncationIsDetected) {
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), Sample()).ok());
  const std::string b = ReadBytes(Path("a"));
  for (size_t n = 0; n < b.size(); ++n) {
    WriteBytes(Path("t"), b.substr(0, n));
    const Result<CheckpointData> r = ReadCheckpointFile(Path("t"));
    ASSERT_FALSE(r.ok()) << "truncated at " << n;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << n << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(Path("t")), std::string::npos);
  }
  WriteBytes(Path("t"), b + std::string("\0", 1));  // extended by one byte
  EXPECT_EQ(ReadCheckpointFile(Path("t")).status().code(), StatusCode::kDataLoss);
}

TEST_F(CheckpointFileTest, EveryFlippedBitIsDetected) {
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), Sample()).ok());
  const std::string b = ReadBytes(Path("a"));
  for (size_t i = 0; i < b.size(); ++i) {
    for (const int bit : {static_cast<int>(i % 8), static_cast<int>((i + 3) % 8)}) {
      std::string c = b;
      c[i] = static_cast<char>(c[i] ^ (1 << bit));
      WriteBytes(Path("f"), c);
      const Result<CheckpointData> r = ReadCheckpointFile(Path("f"));
      ASSERT_FALSE(r.ok()) << "byte " << i << " bit " << bit;
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << i << ": " << r.status().ToString();
    }
  }
}

TEST_F(CheckpointFileTest, AbsurdLengthsAreRejectedBeforeAllocating) {
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), Sample()).ok());
  const std::string b = ReadBytes(Path("a"));
  struct Edit {
    size_t pos;
    uint32_t value;
    const char* expect;
  };
  const Edit edits[] = {
      {24, 0xFFFFFFFFu, "more than the file can hold"},  // number of tensors
      {28, 0x10000000u, "more than the file can hold"},  // number of states
      {40, 0xFFFFFFF0u, "impossible name length"},       // first name length
      {56, 0x7FFFFFFFu, "impossible rank"},              // first tensor's rank
      {64, 0x40000000u, "impossible dimension"},         // high word of its first dimension
      {60, 0x7FFFFFFFu, "impossible dimension"},         // low word of its first dimension
  };
  for (const Edit& e : edits) {
    std::string c = b;
    PutU32At(c, e.pos, e.value);
    Reseal(c);  // checksums valid: only the length itself can give the edit away
    WriteBytes(Path("x"), c);
    const Result<CheckpointData> r = ReadCheckpointFile(Path("x"));
    ASSERT_FALSE(r.ok()) << e.pos;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find(e.expect), std::string::npos)
        << e.pos << ": " << r.status().message();
  }
}

TEST_F(CheckpointFileTest, WriterRejectsBadNamesAndShapes) {
  CheckpointData d;
  d.tensors.emplace_back("a", Tensor(Shape{1}));
  d.tensors.emplace_back("a", Tensor(Shape{1}));
  EXPECT_EQ(WriteCheckpointFile(Path("a"), d).code(), StatusCode::kInvalidArgument);
  d.tensors.pop_back();
  d.states.push_back({"", {1}});
  EXPECT_EQ(WriteCheckpointFile(Path("a"), d).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(Path("a")));
}

TEST_F(CheckpointFileTest, RewriteReplacesAndLeavesNoTempFiles) {
  CheckpointData d = Sample();
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), d).ok());
  d.global_step = 7;
  ASSERT_TRUE(WriteCheckpointFile(Path("a"), d).ok());
  EXPECT_EQ(ReadCheckpointFile(Path("a"))->global_step, 7);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"a"});
}

TEST_F(CheckpointFileTest, UnwritableDirectoryIsIoErrorNamingTheFile) {
  const std::string path = Path("missing_dir/a");
  const Status st = WriteCheckpointFile(path, Sample());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
}

}  // namespace
}  // namespace trainingd::engine
