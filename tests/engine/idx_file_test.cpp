#include "trainingd/engine/data/idx_file.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "largest_allocation.h"
#include "trainingd/engine/base/random.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

// The bytes of an IDX file: magic (0, 0, type, rank), big-endian dims, then `data`.
std::vector<uint8_t> TypedIdxBytes(uint8_t type, const std::vector<uint32_t>& dims,
                                   const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    out.push_back(static_cast<uint8_t>(d >> 24));
    out.push_back(static_cast<uint8_t>(d >> 16));
    out.push_back(static_cast<uint8_t>(d >> 8));
    out.push_back(static_cast<uint8_t>(d));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void WriteRaw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng.Next() >> 56);
  return out;
}

class IdxFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "trainingd_idx_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Expects `r` to fail with `code` and a message naming `path` and containing every `parts`.
  static void ExpectError(const Result<IdxArray>& r, StatusCode code, const std::string& path,
                          const std::vector<std::string>& parts = {}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().ToString();
    for (const auto& p : parts) {
      EXPECT_NE(r.status().message().find(p), std::string::npos)
          << "missing '" << p << "' in " << r.status().ToString();
    }
  }

  fs::path dir_;
};

TEST_F(IdxFileTest, RawRoundTripKeepsDimsAndBytes) {
  const std::vector<uint8_t> data = {0, 1, 2, 127, 128, 255, 10, 20, 30, 40, 50, 60};
  WriteRaw(Path("a"), TypedIdxBytes(0x08, {2, 3, 2}, data));
  auto r = ReadIdxFile(Path("a"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dims, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(r->data, data);
  EXPECT_EQ(r->num_elements(), 12);
}

TEST_F(IdxFileTest, LargeDimensionsAreBigEndian) {
  // 300 = 0x0000012c: a little-endian reader would see 0x2c010000.
  const auto data = RandomBytes(300 * 2, 1);
  WriteRaw(Path("a"), TypedIdxBytes(0x08, {300, 2}, data));
  auto r = ReadIdxFile(Path("a"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dims, (std::vector<int64_t>{300, 2}));
  EXPECT_EQ(r->data, data);
}

TEST_F(IdxFileTest, GzipIsDetectedByContentAndEqualsRaw) {
  const auto data = RandomBytes(5 * 7 * 3, 2);
  const auto bytes = TypedIdxBytes(0x08, {5, 7, 3}, data);
  // Names deliberately lie about the format.
  WriteRaw(Path("raw.gz"), bytes);
  WriteGzip(Path("compressed"), bytes);
  ASSERT_NE(ReadAll(Path("compressed")), bytes);
  auto raw = ReadIdxFile(Path("raw.gz"));
  auto gz = ReadIdxFile(Path("compressed"));
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  EXPECT_EQ(gz->dims, raw->dims);
  EXPECT_EQ(gz->data, raw->data);
  EXPECT_EQ(gz->data, data);
}

TEST_F(IdxFileTest, ConcatenatedGzipMembersAreOneStream) {
  const auto bytes = TypedIdxBytes(0x08, {4, 100}, RandomBytes(400, 3));
  const std::vector<uint8_t> first(bytes.begin(), bytes.begin() + 150);
  const std::vector<uint8_t> second(bytes.begin() + 150, bytes.end());
  WriteGzip(Path("p1"), first);
  WriteGzip(Path("p2"), second);
  auto joined = ReadAll(Path("p1"));
  const auto p2 = ReadAll(Path("p2"));
  joined.insert(joined.end(), p2.begin(), p2.end());
  WriteRaw(Path("joined"), joined);
  auto r = ReadIdxFile(Path("joined"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data, std::vector<uint8_t>(bytes.begin() + 12, bytes.end()));
}

TEST_F(IdxFileTest, RankOneLabels) {
  WriteRaw(Path("labels"), TypedIdxBytes(0x08, {5}, {9, 0, 0, 3, 0}));
  auto r = ReadIdxFile(Path("labels"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dims, (std::vector<int64_t>{5}));
  EXPECT_EQ(r->data, (std::vector<uint8_t>{9, 0, 0, 3, 0}));
}

TEST_F(IdxFileTest, MissingFileIsNotFound) {
  ExpectError(ReadIdxFile(Path("nope")), StatusCode::kNotFound, Path("nope"));
}

TEST_F(IdxFileTest, DirectoryIsAnIoError) {
  fs::create_directory(Path("sub"));
  ExpectError(ReadIdxFile(Path("sub")), StatusCode::kIoError, Path("sub"), {"directory"});
}

TEST_F(IdxFileTest, EmptyFileIsDataLoss) {
  WriteRaw(Path("empty"), {});
  ExpectError(ReadIdxFile(Path("empty")), StatusCode::kDataLoss, Path("empty"), {"header"});
}

TEST_F(IdxFileTest, BadMagicIsRejected) {
  auto bytes = TypedIdxBytes(0x08, {2}, {1, 2});
  bytes[0] = 0x12;
  bytes[1] = 0x34;
  WriteRaw(Path("bad"), bytes);
  ExpectError(ReadIdxFile(Path("bad")), StatusCode::kInvalidArgument, Path("bad"),
              {"not an IDX file", "0x12 0x34"});
}

TEST_F(IdxFileTest, UnsupportedElementTypeIsRejected) {
  WriteRaw(Path("floats"), TypedIdxBytes(0x0D, {2}, {0, 0, 0, 0, 0, 0, 0, 0}));
  ExpectError(ReadIdxFile(Path("floats")), StatusCode::kInvalidArgument, Path("floats"),
              {"0x0d", "float32", "0x08"});
}

TEST_F(IdxFileTest, RankOutOfRangeIsRejected) {
  WriteRaw(Path("rank0"), {0, 0, 0x08, 0});
  ExpectError(ReadIdxFile(Path("rank0")), StatusCode::kInvalidArgument, Path("rank0"), {"rank 0"});
  WriteRaw(Path("rank5"), TypedIdxBytes(0x08, {1, 1, 1, 1, 1}, {7}));
  ExpectError(ReadIdxFile(Path("rank5")), StatusCode::kInvalidArgument, Path("rank5"), {"rank 5"});
}

TEST_F(IdxFileTest, ZeroDimensionIsRejected) {
  WriteRaw(Path("zero"), TypedIdxBytes(0x08, {3, 0, 2}, {}));
  ExpectError(ReadIdxFile(Path("zero")), StatusCode::kInvalidArgument, Path("zero"),
              {"dimension 1", "[3,0,2]"});
}

TEST_F(IdxFileTest, AbsurdSizeIsRejectedBeforeReading) {
  // 65536^3 = 2^48 elements; the file holds 4 bytes of data.
  WriteRaw(Path("huge"), TypedIdxBytes(0x08, {65536, 65536, 65536}, {1, 2, 3, 4}));
  ExpectError(ReadIdxFile(Path("huge")), StatusCode::kInvalidArgument, Path("huge"),
              {"maximum", "2147483648"});
}

TEST_F(IdxFileTest, TruncatedHeaderIsDataLoss) {
  auto bytes = TypedIdxBytes(0x08, {60000, 28, 28}, {});
  bytes.resize(10);
  WriteRaw(Path("short"), bytes);
  ExpectError(ReadIdxFile(Path("short")), StatusCode::kDataLoss, Path("short"),
              {"header", "16", "10"});
}

TEST_F(IdxFileTest, TruncatedRawDataIsDataLossWithCounts) {
  WriteRaw(Path("cut"), TypedIdxBytes(0x08, {4, 5}, RandomBytes(17, 4)));
  ExpectError(ReadIdxFile(Path("cut")), StatusCode::kDataLoss, Path("cut"),
              {"truncated", "need 20 data bytes", "has 17"});
}

TEST_F(IdxFileTest, TrailingBytesAreDataLoss) {
  WriteRaw(Path("long"), TypedIdxBytes(0x08, {4, 5}, RandomBytes(23, 5)));
  ExpectError(ReadIdxFile(Path("long")), StatusCode::kDataLoss, Path("long"),
              {"3 unexpected trailing bytes", "exactly 20", "has 23"});
}

TEST_F(IdxFileTest, TrailingBytesInsideGzipAreDataLoss) {
  WriteGzip(Path("long.gz"), TypedIdxBytes(0x08, {4, 5}, RandomBytes(21, 6)));
  ExpectError(ReadIdxFile(Path("long.gz")), StatusCode::kDataLoss, Path("long.gz"),
              {"1 unexpected trailing bytes", "decompressed"});
}

TEST_F(IdxFileTest, TruncatedGzipIsDataLoss) {
  // Random data does not compress, so cutting the file in half cuts the array's bytes too.
  WriteGzip(Path("full.gz"), TypedIdxBytes(0x08, {100, 100}, RandomBytes(10000, 7)));
  auto bytes = ReadAll(Path("full.gz"));
  ASSERT_GT(bytes.size(), 10000u);
  bytes.resize(bytes.size() / 2);
  WriteRaw(Path("half.gz"), bytes);
  ExpectError(ReadIdxFile(Path("half.gz")), StatusCode::kDataLoss, Path("half.gz"), {"truncated"});
}

TEST_F(IdxFileTest, GzipMissingOnlyItsTrailerIsDataLoss) {
  // All array bytes decompress; only the CRC-32 and length trailer is gone.
  WriteGzip(Path("full.gz"), TypedIdxBytes(0x08, {10, 10}, RandomBytes(100, 8)));
  auto bytes = ReadAll(Path("full.gz"));
  bytes.resize(bytes.size() - 8);
  WriteRaw(Path("notrailer.gz"), bytes);
  ExpectError(ReadIdxFile(Path("notrailer.gz")), StatusCode::kDataLoss, Path("notrailer.gz"),
              {"truncated"});
}

TEST_F(IdxFileTest, GzipWithBadCrcIsDataLoss) {
  WriteGzip(Path("full.gz"), TypedIdxBytes(0x08, {10, 10}, RandomBytes(100, 9)));
  auto bytes = ReadAll(Path("full.gz"));
  bytes[bytes.size() - 8] ^= 0xff;  // first byte of the CRC-32
  WriteRaw(Path("crc.gz"), bytes);
  ExpectError(ReadIdxFile(Path("crc.gz")), StatusCode::kDataLoss, Path("crc.gz"),
              {"corrupt gzip", "incorrect data check"});
}

TEST_F(IdxFileTest, GarbageAfterGzipStreamIsDataLoss) {
  WriteGzip(Path("full.gz"), TypedIdxBytes(0x08, {10, 10}, RandomBytes(100, 10)));
  auto bytes = ReadAll(Path("full.gz"));
  bytes.insert(bytes.end(), {'j', 'u', 'n', 'k'});
  WriteRaw(Path("junk.gz"), bytes);
  ExpectError(ReadIdxFile(Path("junk.gz")), StatusCode::kDataLoss, Path("junk.gz"),
              {"after the end of the gzip stream"});
}

// Found by the IDX fuzzer (tests/fuzz/regressions/idx/oom-reserve-64mib-for-74-byte-file): a
// 74-byte file whose header declares [10, 8257537, 2, 2] (330 MB) made the reader reserve 64 MiB
// and zero-fill a 4 MiB chunk before it learnt that the data was not there. The buffer now grows
// with the data that arrives.
TEST_F(IdxFileTest, ASmallFileDeclaringAHugeArrayAllocatesLittle) {
  const std::string input =
      ReadFile(TRAININGD_FUZZ_REGRESSIONS_DIR "/idx/oom-reserve-64mib-for-74-byte-file");
  ASSERT_EQ(input.size(), 74u);
  testing::LargestAllocation largest;
  const auto r = ParseIdx(input, "fuzz.idx");
  ExpectError(r, StatusCode::kDataLoss, "fuzz.idx", {"truncated IDX data", "[10,8257537,2,2]"});
  EXPECT_LE(largest.bytes(), size_t{1} << 20);
}

TEST_F(IdxFileTest, ParseIdxReadsRawAndGzipBytes) {
  const std::vector<uint8_t> raw = TypedIdxBytes(0x08, {2, 3}, {1, 2, 3, 4, 5, 6});
  WriteGzip(Path("g"), raw);
  const std::vector<uint8_t> gz = ReadAll(Path("g"));
  for (const auto& bytes : {raw, gz}) {
    const auto r = ParseIdx(std::string(bytes.begin(), bytes.end()), "mem");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(r->data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  }
  ExpectError(ParseIdx("", "mem"), StatusCode::kDataLoss, "mem", {"header"});
}

// ReadIdxRows: the rows asked for of a raw and a gzip file (more than one buffer to skip), the
// file's end, and the checks of the range and of a file that ends too soon.
TEST_F(IdxFileTest, ReadIdxRowsReadsOnlyTheRowsAskedFor) {
  const uint32_t rows = 3000, h = 28, w = 28;
  const std::vector<uint8_t> data = RandomBytes(size_t{rows} * h * w, 11);
  WriteRaw(Path("raw"), TypedIdxBytes(0x08, {rows, h, w}, data));
  WriteGzip(Path("gz"), TypedIdxBytes(0x08, {rows, h, w}, data));
  for (const char* name : {"raw", "gz"}) {
    for (auto [first, count] :
         {std::pair<int64_t, int64_t>{0, 1}, {7, 5}, {2998, 100}, {3000, 4}, {1000, 0}}) {
      Result<IdxArray> r = ReadIdxRows(Path(name), first, count);
      ASSERT_TRUE(r.ok()) << name << " " << first << ": " << r.status().ToString();
      const int64_t got = std::min<int64_t>(count, rows - first);
      EXPECT_EQ(r->dims, (std::vector<int64_t>{got, h, w})) << name << " " << first;
      ASSERT_EQ(r->data.size(), static_cast<size_t>(got * h * w));
      EXPECT_TRUE(std::equal(r->data.begin(), r->data.end(), data.begin() + first * h * w))
          << name << " " << first;
    }
    EXPECT_EQ(ReadIdxRows(Path(name), 3001, 1).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(ReadIdxRows(Path(name), -1, 1).status().code(), StatusCode::kInvalidArgument);
  }
  // Rows the header declares but the file does not hold.
  std::vector<uint8_t> cut = TypedIdxBytes(0x08, {rows, h, w}, data);
  cut.resize(cut.size() - 10);
  WriteRaw(Path("cut"), cut);
  EXPECT_TRUE(ReadIdxRows(Path("cut"), 0, 2).ok());  // what is not read is not verified
  ExpectError(ReadIdxRows(Path("cut"), 2990, 10), StatusCode::kDataLoss, Path("cut"),
              {"truncated"});
  ExpectError(ReadIdxRows(Path("nothing"), 0, 1), StatusCode::kNotFound, Path("nothing"));
}

}  // namespace
}  // namespace trainingd::engine
