// UploadBody: the body of POST /api/v1/datasets as it arrives, decoded into the files of a
// DatasetUpload. Two encodings (docs/data.md#uploading):
//   - the dataset's file itself (application/octet-stream, `curl --data-binary @x.npz`);
//   - multipart/form-data (`curl -F train=@train.csv -F test=@test.csv`) with a part "train"
//     (the dataset's file) and optionally a part "test" (a CSV's own test file), in either order.
// Both are decoded as they stream, a buffer at a time: a file is never held in memory whole. A
// multipart body keeps at most one delimiter's length of data back between buffers (a boundary
// may be split across them) and at most kMaxPartHeaderBytes of one part's header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "trainingd/api/dataset_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api {

class UploadBody {
 public:
  static constexpr size_t kMaxPartHeaderBytes = 8192;

  // How the body is encoded, from the request's Content-Type: nullopt for the file itself; for
  // multipart/form-data, the boundary (InvalidArgument naming Content-Type when it has none or
  // an invalid one: RFC 2046 allows 1 to 70 characters).
  static engine::Result<std::optional<std::string>> BoundaryOf(std::string_view content_type);

  // `boundary` as BoundaryOf returns it.
  UploadBody(std::unique_ptr<DatasetUpload> upload, std::optional<std::string> boundary);

  // The next bytes of the body. InvalidArgument "body: ..." for a malformed multipart body, an
  // unknown or repeated part; the upload's own errors (size limit, disk) as they are.
  engine::Status Write(std::string_view bytes);
  // After the last byte: checks that a multipart body ended with its closing delimiter and had
  // a "train" part, then commits the upload (DatasetUpload::Commit).
  engine::Result<DatasetRecord> Finish();

 private:
  enum class State { kPreamble, kPartHeader, kPartData, kAfterDelimiter, kEpilogue };

  engine::Status Decode();
  engine::Status StartPart(std::string_view header);

  std::unique_ptr<DatasetUpload> upload_;
  const bool multipart_;
  // "\r\n--" + boundary: what ends a part's data.
  std::string delimiter_;
  State state_ = State::kPreamble;
  // Bytes received and not decoded yet: at most a delimiter, or a part's header, or a buffer.
  std::string pending_;
  bool seen_main_ = false;
  bool seen_test_ = false;
};

}  // namespace trainingd::api
