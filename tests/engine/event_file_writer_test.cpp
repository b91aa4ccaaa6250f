#include "trainingd/engine/io/event_file_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../engine/src/io/crc32c.h"
#include "test_util.h"

namespace trainingd::engine {
namespace {

std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// The byte-exact vectors of shared/reference/monitored-session.md section 6.
TEST(EventFileWriterTest, FileVersionRecordMatchesTheReferenceBytes) {
  const std::string record =
      EventFileWriter::FrameRecord(EventFileWriter::EncodeFileVersionEvent(1700000000.0));
  EXPECT_EQ(Hex(record),
            "1800000000000000a37f4b22"
            "0900000040fc54d9411a0d627261696e2e4576656e743a32"
            "eced8f9d");
}

TEST(EventFileWriterTest, ScalarRecordMatchesTheReferenceBytes) {
  const std::string record = EventFileWriter::FrameRecord(
      EventFileWriter::EncodeScalarEvent("loss", 1, 0.5f, 1700000001.0));
  EXPECT_EQ(Hex(record),
            "1a00000000000000129bd82d"
            "0900004040fc54d94110012a0d0a0b0a046c6f7373150000003f"
            "97d67404");
}

TEST(EventFileWriterTest, SessionLogEncodesStatusAndCheckpointPath) {
  const std::string e =
      EventFileWriter::EncodeSessionLogEvent(SessionLogStatus::kCheckpoint, "model.ckpt-5", 5, 1.0);
  // wall_time, step 5, field 7 (session_log, key 3a) { status = 3 (key 08), checkpoint_path
  // (field 2, key 12) = "model.ckpt-5" }
  EXPECT_EQ(Hex(e), "09000000000000f03f10053a100803120c6d6f64656c2e636b70742d35");
}

TEST(EventFileWriterTest, WritesANamedFileWhoseRecordsReadBack) {
  const std::string dir = ::testing::TempDir() + "/events_test";
  std::filesystem::remove_all(dir);
  EventFileWriter::Options o;
  o.start_wall_time = 1700000000.0;
  o.filename_suffix = ".v2";
  auto w = EventFileWriter::Create(dir, o);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string name = std::filesystem::path((*w)->path()).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.1700000000.", 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - 3), ".v2");
  ASSERT_TRUE((*w)->AddScalar("loss", 1, 0.5f, 1700000001.0).ok());
  ASSERT_TRUE((*w)->AddScalar("accuracy", 101, 0.75f, 1700000002.0).ok());
  ASSERT_TRUE(
      (*w)->AddSessionLog(SessionLogStatus::kCheckpoint, "model.ckpt-101", 101, 1700000003.0).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_FALSE((*w)->AddScalar("loss", 2, 0.1f, 1.0).ok());
  const auto payloads = testing::ReadRecords((*w)->path());
  ASSERT_EQ(payloads.size(), 4u);
  EXPECT_EQ(payloads[0], EventFileWriter::EncodeFileVersionEvent(1700000000.0));
  EXPECT_EQ(payloads[1], EventFileWriter::EncodeScalarEvent("loss", 1, 0.5f, 1700000001.0));
  EXPECT_EQ(payloads[2], EventFileWriter::EncodeScalarEvent("accuracy", 101, 0.75f, 1700000002.0));
  std::filesystem::remove_all(dir);
}

TEST(EventFileWriterTest, UnwritableDirectoryIsAnError) {
  auto w = EventFileWriter::Create("/proc/no/such/dir", {});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kIoError);
  EXPECT_NE(w.status().message().find("/proc/no/such/dir"), std::string::npos);
}

}  // namespace
}  // namespace trainingd::engine
