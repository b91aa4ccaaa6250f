// UploadBody: a plain body and multipart/form-data decoded into the upload's files, whatever the
// buffers' boundaries; malformed bodies refused naming what is wrong.
#include "trainingd/api/upload_body.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trainingd::api {
namespace {

using engine::StatusCode;

// Records what the body decoder hands the service.
class RecordingUpload : public DatasetUpload {
 public:
  struct Seen {
    std::string main, test;
    std::vector<DatasetFile> begun;
    bool committed = false;
  };
  explicit RecordingUpload(Seen* seen, bool csv = true) : seen_(seen), csv_(csv) {}
  engine::Status Begin(DatasetFile file) override {
    if (file == DatasetFile::kTest && !csv_) return engine::Status::InvalidArgument("test: npz");
    seen_->begun.push_back(file);
    file_ = file;
    return engine::Status::Ok();
  }
  engine::Status Append(std::string_view bytes) override {
    (file_ == DatasetFile::kMain ? seen_->main : seen_->test).append(bytes);
    return engine::Status::Ok();
  }
  engine::Result<DatasetRecord> Commit() override {
    seen_->committed = true;
    return DatasetRecord{};
  }

 private:
  Seen* seen_;
  bool csv_;
  DatasetFile file_ = DatasetFile::kMain;
};

const std::string kBoundary = "------------------------d74496d66958873e";

std::string Part(const std::string& name, const std::string& data) {
  return "--" + kBoundary + "\r\nContent-Disposition: form-data; name=\"" + name +
         "\"; filename=\"" + name + ".csv\"\r\nContent-Type: text/csv\r\n\r\n" + data + "\r\n";
}

std::string Close() { return "--" + kBoundary + "--\r\n"; }

// Data that looks like the delimiter's start without being it.
const std::string kTrain = "a,b,label\r\n1,2,x\r\n--\r\n-" + kBoundary.substr(0, 20) + "\r\n\r\n--";
const std::string kTest = std::string("a,b,label\n3,4,y\n\0\r", 18);

// Feeds `body` in pieces of `piece` bytes and finishes.
engine::Status Feed(UploadBody& body, const std::string& bytes, size_t piece) {
  for (size_t at = 0; at < bytes.size(); at += piece) {
    auto st = body.Write(std::string_view(bytes).substr(at, piece));
    if (!st.ok()) return st;
  }
  return body.Finish().status();
}

engine::Status Decode(const std::string& bytes, RecordingUpload::Seen* seen, size_t piece = 7,
                      bool csv = true) {
  UploadBody body(std::make_unique<RecordingUpload>(seen, csv), kBoundary);
  return Feed(body, bytes, piece);
}

TEST(UploadBodyTest, APlainBodyIsTheDatasetsFile) {
  RecordingUpload::Seen seen;
  UploadBody body(std::make_unique<RecordingUpload>(&seen), std::nullopt);
  ASSERT_TRUE(Feed(body, kTrain, 3).ok());
  EXPECT_EQ(seen.main, kTrain);
  EXPECT_TRUE(seen.begun.empty());
  EXPECT_TRUE(seen.committed);
}

TEST(UploadBodyTest, PartsAreDecodedWhereverTheBuffersSplitThem) {
  const std::string bytes =
      "preamble\r\n" + Part("test", kTest) + Part("train", kTrain) + Close() + "epilogue";
  for (size_t piece = 1; piece <= bytes.size(); ++piece) {
    RecordingUpload::Seen seen;
    ASSERT_TRUE(Decode(bytes, &seen, piece).ok()) << piece;
    EXPECT_EQ(seen.main, kTrain) << piece;
    EXPECT_EQ(seen.test, kTest) << piece;
    EXPECT_EQ(seen.begun, (std::vector<DatasetFile>{DatasetFile::kTest, DatasetFile::kMain}));
    EXPECT_TRUE(seen.committed);
  }
}

TEST(UploadBodyTest, PartsWithoutPreambleAndWithPadding) {
  RecordingUpload::Seen seen;
  std::string bytes = Part("train", "x");
  bytes.insert(2 + kBoundary.size(), " \t");  // transport padding after the delimiter
  ASSERT_TRUE(Decode(bytes + Close(), &seen).ok());
  EXPECT_EQ(seen.main, "x");
  EXPECT_TRUE(seen.test.empty());
}

TEST(UploadBodyTest, MalformedBodiesAreRefusedNamingTheProblem) {
  struct Case {
    std::string body;
    std::string message_start;
  };
  const std::vector<Case> cases = {
      {Part("train", "x"), "body: the multipart body ended before its closing delimiter"},
      {"no parts at all", "body: the multipart body ended before"},
      {Part("test", "x") + Close(), "train: missing"},
      {Part("train", "x") + Part("train", "y") + Close(), "body: the part 'train' comes twice"},
      {Part("labels", "x") + Close(), "body: unknown part 'labels'"},
      {"--" + kBoundary + "\r\nContent-Type: text/csv\r\n\r\nx\r\n" + Close(),
       "body: a multipart part has no Content-Disposition"},
      {"--" + kBoundary + "\r\nContent-Disposition: attachment; name=\"train\"\r\n\r\nx\r\n" +
           Close(),
       "body: a multipart part is not form-data"},
      {"--" + kBoundary + "\r\nno colon here\r\n\r\nx\r\n" + Close(),
       "body: a multipart part's header line has no colon"},
      {"--" + kBoundary + "xx\r\n", "body: a multipart delimiter must be followed by"},
      {"--" + kBoundary + "\r\nX: " + std::string(10000, 'a') + "\r\n\r\n",
       "body: a multipart part's header is over 8192 bytes"},
  };
  for (const Case& c : cases) {
    RecordingUpload::Seen seen;
    auto st = Decode(c.body, &seen);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.body.substr(0, 80);
    EXPECT_EQ(st.message().rfind(c.message_start, 0), 0u) << st.message();
    EXPECT_FALSE(seen.committed) << c.body.substr(0, 80);
  }
  RecordingUpload::Seen seen;  // the service's refusal of a test file passes through
  auto st = Decode(Part("train", "x") + Part("test", "y") + Close(), &seen, 7, /*csv=*/false);
  EXPECT_EQ(st.message(), "test: npz");
}

TEST(UploadBodyTest, TheBoundaryComesFromTheContentType) {
  auto plain = UploadBody::BoundaryOf("application/octet-stream");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->has_value());
  auto token = UploadBody::BoundaryOf("multipart/form-data; boundary=abc-123");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->value(), "abc-123");
  auto quoted = UploadBody::BoundaryOf("Multipart/Form-Data; charset=x; boundary=\"a b;c\"");
  ASSERT_TRUE(quoted.ok());
  EXPECT_EQ(quoted->value(), "a b;c");
  for (const char* bad :
       {"multipart/form-data",
        "multipart/form-data; boundary=", "multipart/form-data; boundary=\"unclosed",
        "multipart/form-data; boundary=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    auto r = UploadBody::BoundaryOf(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.status().message().rfind("Content-Type: ", 0), 0u) << bad;
  }
}

}  // namespace
}  // namespace trainingd::api
