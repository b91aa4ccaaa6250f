// The zip container of an .npz file: its central directory, and one member's bytes as a stream.
//
// Reads what Python's zipfile writes for np.savez (stored, method 0) and np.savez_compressed
// (deflate, method 8), zip64 records and extra fields included, from the central directory (the
// local headers only locate the data). Inflation is zlib's (raw deflate); every member's CRC-32
// and size are verified when it has been read to its end. Encrypted members, other methods and
// multi-disk archives are refused.
//
// Sizes are checked against the file before anything is read or allocated: a member's data must
// lie inside the file, a stored member's sizes must agree, and a deflated member may not declare
// more than deflate can produce from its compressed bytes (1032:1). A member never yields more
// than its declared size, whatever its deflate stream holds.
//
// Not thread-safe; one reader at a time over one ByteSource.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/byte_source.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

// The most members ReadZipDirectory accepts, and the largest central directory it reads.
inline constexpr size_t kMaxZipMembers = 64;
inline constexpr uint64_t kMaxZipDirectoryBytes = uint64_t{1} << 20;

struct ZipMember {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

// The members listed in the central directory, in its order. DataLoss for a truncated or
// corrupt archive (no end record, records past the end of the file, a directory that does not
// parse); InvalidArgument for what is a zip but not one this reader takes (not a zip at all,
// several disks, encryption, a method other than 0 and 8, more than kMaxZipMembers members).
// Each message names the source.
Result<std::vector<ZipMember>> ReadZipDirectory(const ByteSource& source);

// One member's uncompressed bytes, in order.
class ZipMemberReader {
 public:
  // `source` and `member` must outlive the reader; `label` names the member in messages
  // ("<file>: x_train.npy").
  ZipMemberReader(const ByteSource& source, const ZipMember& member, std::string label);
  ~ZipMemberReader();
  ZipMemberReader(const ZipMemberReader&) = delete;
  ZipMemberReader& operator=(const ZipMemberReader&) = delete;

  // Locates the data through the member's local header and checks the sizes (above).
  Status Open();
  // Reads up to `n` bytes into `dst`; `*got` is less than `n` only at the member's declared end.
  // DataLoss for corrupt or truncated deflate data.
  Status Read(uint8_t* dst, size_t n, size_t* got);
  // After the declared size has been read: DataLoss unless the deflate stream ends exactly there
  // and the CRC-32 matches.
  Status Finish();
  // Uncompressed bytes read so far.
  uint64_t position() const { return out_; }

 private:
  Status ReadStored(uint8_t* dst, size_t n);
  Status Inflate(uint8_t* dst, size_t n, size_t* got);

  const ByteSource& source_;
  const ZipMember& member_;
  std::string label_;
  uint64_t data_offset_ = 0;
  uint64_t in_ = 0;   // compressed bytes consumed from the source
  uint64_t out_ = 0;  // uncompressed bytes produced
  uint32_t crc_ = 0;
  z_stream zs_{};
  bool inflating_ = false;
  bool stream_end_ = false;
  std::vector<uint8_t> in_buf_;
};

}  // namespace trainingd::engine
