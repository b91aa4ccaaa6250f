// IDX files: the array format of the MNIST family of datasets (MNIST, Fashion-MNIST, EMNIST).
//
// An IDX file is a 4-byte magic number (two zero bytes, an element-type byte, a rank byte), one
// big-endian uint32 per dimension, and then the elements in row-major order. Files may be stored
// gzip-compressed; ReadIdxFile() tells the two apart by content (the gzip magic bytes 1f 8b), never
// by the file name. Only unsigned-byte elements (type 0x08) are supported, which is what image and
// label files of the MNIST family use.
//
// Thread-safe: ReadIdxFile() keeps no state between calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

// The largest array ReadIdxFile() accepts, in elements (= bytes, for unsigned-byte files). A header
// declaring more is rejected before anything is allocated.
inline constexpr int64_t kMaxIdxElements = int64_t{1} << 31;
// The largest rank ReadIdxFile() accepts.
inline constexpr int kMaxIdxRank = 4;

// The contents of an unsigned-byte IDX file.
struct IdxArray {
  std::vector<int64_t> dims;  // outermost first; 1..kMaxIdxRank entries, each > 0
  std::vector<uint8_t> data;  // row-major; exactly num_elements() bytes

  // Product of dims.
  int64_t num_elements() const;
};

// Reads the IDX file at `path`, raw or gzip-compressed. Every error message names `path` and says
// what is wrong with it:
//   NotFound         the file does not exist.
//   IoError          the OS failed to open or read it (permissions, a directory, a read error).
//   InvalidArgument  it is not an IDX file (bad magic bytes), its element type is not unsigned byte
//                    (0x08), its rank is outside 1..kMaxIdxRank, a dimension is 0, or the
//                    dimensions multiply to more than kMaxIdxElements.
//   DataLoss         the header or the data is shorter than the header declares (the message gives
//                    the expected and the actual byte counts), there are bytes after the declared
//                    data, or the gzip stream is truncated or corrupt (bad CRC, bad deflate data,
//                    garbage after the last gzip member).
Result<IdxArray> ReadIdxFile(const std::string& path);

// The dimensions of the IDX file at `path`, from its header alone: the header is checked as
// ReadIdxFile checks it (same errors), the data is neither read nor verified. Costs a few bytes
// of reading (and of decompressing, for a gzip file) whatever the file's size.
Result<std::vector<int64_t>> ReadIdxDims(const std::string& path);

// Rows [first, first + count) along the first dimension of the IDX file at `path` (fewer when
// the file has fewer): dims are [rows read, the other dimensions...]. The header is checked as
// ReadIdxFile checks it (same errors); only the bytes up to the last row are read (and, for a
// gzip file, decompressed), and the rest of the file is not verified. InvalidArgument when
// `first` is past the rows or `count` is negative.
Result<IdxArray> ReadIdxRows(const std::string& path, int64_t first, int64_t count);

// ReadIdxFile's parse of a whole file's `bytes` (raw or gzip) already in memory; `name` stands for
// the path in messages. The same errors, less NotFound and IoError. Reads no file (the IDX fuzzer
// calls it directly).
Result<IdxArray> ParseIdx(std::string_view bytes, const std::string& name);

}  // namespace trainingd::engine
