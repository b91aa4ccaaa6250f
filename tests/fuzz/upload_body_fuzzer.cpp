// Fuzz target: an upload's body through api::UploadBody, the multipart/form-data decoder of
// POST /api/v1/datasets. The input's first byte picks the size of the buffers the body arrives
// in (1 to 256 bytes); the rest is the body, with the boundary "fuzz-boundary".
//
// Properties checked: the decoder hands the upload no more bytes than the body has, only after
// a part began and to a file begun once each; every refusal is InvalidArgument naming `body`,
// `train` or `test`; a body that decodes had a train part. Then the round trip: the input
// split in two (at its second byte's share) and written as a well-formed body of parts test and
// train decodes to exactly those two files, whatever the buffers, unless a file contains the
// delimiter itself.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/api/upload_body.h"

namespace api = trainingd::api;
namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

namespace {

constexpr std::string_view kBoundary = "fuzz-boundary";

struct Files {
  std::string main, test;
  int begun_main = 0, begun_test = 0;
  bool committed = false;
};

class CheckingUpload : public api::DatasetUpload {
 public:
  explicit CheckingUpload(Files* files) : files_(files) {}
  engine::Status Begin(api::DatasetFile file) override {
    Check(!files_->committed, "Begin after Commit");
    ++(file == api::DatasetFile::kMain ? files_->begun_main : files_->begun_test);
    Check(files_->begun_main <= 1 && files_->begun_test <= 1, "a part begun twice");
    file_ = file;
    return engine::Status::Ok();
  }
  engine::Status Append(std::string_view bytes) override {
    Check(!files_->committed, "Append after Commit");
    Check(files_->begun_main + files_->begun_test > 0, "data before any part began");
    (file_ == api::DatasetFile::kMain ? files_->main : files_->test).append(bytes);
    return engine::Status::Ok();
  }
  engine::Result<api::DatasetRecord> Commit() override {
    files_->committed = true;
    return api::DatasetRecord{};
  }

 private:
  Files* files_;
  api::DatasetFile file_ = api::DatasetFile::kMain;
};

engine::Status Decode(std::string_view body, size_t piece, Files* files) {
  api::UploadBody decoder(std::make_unique<CheckingUpload>(files), std::string(kBoundary));
  for (size_t at = 0; at < body.size(); at += piece) {
    engine::Status st = decoder.Write(body.substr(at, piece));
    if (!st.ok()) return st;
  }
  return decoder.Finish().status();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t piece = 1 + data[0];
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  Files files;
  engine::Status st = Decode(body, piece, &files);
  Check(files.main.size() + files.test.size() <= body.size(), "more bytes out than in");
  if (st.ok()) {
    Check(files.committed && files.begun_main == 1, "decoded without a train part");
  } else {
    Check(st.code() == engine::StatusCode::kInvalidArgument, "an undocumented code", st.ToString());
    const std::string& m = st.message();
    Check(m.rfind("body: ", 0) == 0 || m.rfind("train: ", 0) == 0 || m.rfind("test: ", 0) == 0,
          "a refusal that names no field", m);
    Check(!files.committed, "committed after a refusal");
  }

  // The round trip.
  const size_t cut = body.size() * data[1] / 255;
  const std::string train(body.substr(0, cut)), test(body.substr(cut));
  const std::string delimiter = "\r\n--" + std::string(kBoundary);
  if ((train + "\r\n").find(delimiter) != std::string::npos ||
      (test + "\r\n").find(delimiter) != std::string::npos) {
    return 0;
  }
  const std::string dash = "--" + std::string(kBoundary);
  const std::string good =
      dash + "\r\nContent-Disposition: form-data; name=\"test\"\r\n\r\n" + test + "\r\n" + dash +
      "\r\nContent-Disposition: form-data; name=train\r\n\r\n" + train + "\r\n" + dash + "--\r\n";
  Files back;
  st = Decode(good, piece, &back);
  Check(st.ok(), "a well-formed body was refused", st.ToString());
  Check(back.main == train && back.test == test, "the round trip changed a file");
  return 0;
}
