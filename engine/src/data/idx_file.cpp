#include "trainingd/engine/data/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {
namespace {

constexpr size_t kInputChunk = size_t{1} << 16;  // compressed bytes read per fread
constexpr size_t kDataChunk = size_t{1} << 22;   // decompressed bytes requested per Read, at most
// The first Read of the data asks for at most this much; each later one for at most as much as
// has arrived so far. So the buffer grows with the data that is there, never with what the header
// declares: a small corrupt file claiming a huge array allocates about twice its own size.
constexpr size_t kFirstDataChunk = size_t{1} << 16;

std::string ErrnoText(int err) { return std::generic_category().message(err); }

std::string Hex(uint8_t b) {
  static const char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

const char* IdxTypeName(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "unknown";
  }
}

// A sequential byte source over a file that is either raw or a gzip stream (one or more members,
// as gzip -d accepts). Detects truncated and corrupt gzip data; every error names the file.
class ByteStream {
 public:
  explicit ByteStream(std::string path) : path_(std::move(path)) {}
  ~ByteStream() {
    if (inflate_initialized_) inflateEnd(&zs_);
    if (file_) std::fclose(file_);
  }
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  // Opens the file at the path given to the constructor.
  Status Open();
  // Reads `bytes` instead of a file (they must outlive the stream).
  Status OpenMemory(std::string_view bytes);
  // Reads up to `n` bytes into `dst`; `*got` is less than `n` only at the end of the data.
  Status Read(uint8_t* dst, size_t n, size_t* got);
  bool gzip() const { return gzip_; }

 private:
  Status ReadRaw(uint8_t* dst, size_t n, size_t* got);
  Status ReadGzip(uint8_t* dst, size_t n, size_t* got);
  // Reads the next chunk of compressed input; `*eof` is set when the file has no more bytes.
  Status Refill(bool* eof);
  // Tells raw from gzip by the first two bytes of the opened file_ and sets up zlib for gzip.
  Status Start();

  std::string path_;
  std::FILE* file_ = nullptr;
  bool gzip_ = false;
  // gzip state.
  z_stream zs_{};
  bool inflate_initialized_ = false;
  std::vector<uint8_t> in_buf_;
  bool member_done_ = false;  // the last inflate() call finished a gzip member
  bool stream_done_ = false;  // the file ended right after a complete member
  int64_t members_ = 0;       // complete members so far
  uint64_t total_out_ = 0;    // decompressed bytes over all members
  uint64_t member_out_ = 0;   // decompressed bytes of the current member
};

Status ByteStream::Open() {
  std::error_code ec;
  const auto st = std::filesystem::status(path_, ec);
  if (st.type() == std::filesystem::file_type::not_found) {
    return Status::NotFound(path_ + ": no such file");
  }
  if (st.type() == std::filesystem::file_type::directory) {
    return Status::IoError(path_ + ": is a directory, expected an IDX file");
  }
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path_ + ": no such file");
    return Status::IoError(path_ + ": cannot open: " + ErrnoText(err));
  }
  return Start();
}

Status ByteStream::OpenMemory(std::string_view bytes) {
  // Mode "rb" never writes through the pointer.
  file_ = ::fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
  if (!file_) return Status::Internal(path_ + ": fmemopen failed: " + ErrnoText(errno));
  return Start();
}

Status ByteStream::Start() {
  uint8_t magic[2] = {0, 0};
  const size_t n = std::fread(magic, 1, 2, file_);
  if (n < 2 && std::ferror(file_)) {
    return Status::IoError(path_ + ": read failed: " + ErrnoText(errno));
  }
  if (std::fseek(file_, 0, SEEK_SET) != 0) {
    return Status::IoError(path_ + ": cannot seek: " + ErrnoText(errno));
  }
  gzip_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzip_) {
    // 15 + 16: a gzip wrapper only (a zlib or raw deflate stream is rejected), CRC-32 and length
    // checked at the end of each member.
    if (inflateInit2(&zs_, 15 + 16) != Z_OK) {
      return Status::Internal(path_ +
                              ": cannot initialise zlib: " + (zs_.msg ? zs_.msg : "out of memory"));
    }
    inflate_initialized_ = true;
    in_buf_.resize(kInputChunk);
  }
  return Status::Ok();
}

Status ByteStream::Read(uint8_t* dst, size_t n, size_t* got) {
  return gzip_ ? ReadGzip(dst, n, got) : ReadRaw(dst, n, got);
}

Status ByteStream::ReadRaw(uint8_t* dst, size_t n, size_t* got) {
  *got = std::fread(dst, 1, n, file_);
  if (*got < n && std::ferror(file_)) {
    return Status::IoError(path_ + ": read failed: " + ErrnoText(errno));
  }
  return Status::Ok();
}

Status ByteStream::Refill(bool* eof) {
  const size_t n = std::fread(in_buf_.data(), 1, in_buf_.size(), file_);
  if (n == 0 && std::ferror(file_)) {
    return Status::IoError(path_ + ": read failed: " + ErrnoText(errno));
  }
  zs_.next_in = in_buf_.data();
  zs_.avail_in = static_cast<uInt>(n);
  *eof = n == 0;
  return Status::Ok();
}

Status ByteStream::ReadGzip(uint8_t* dst, size_t n, size_t* got) {
  *got = 0;
  while (*got < n && !stream_done_) {
    if (zs_.avail_in == 0) {
      bool eof = false;
      TRAININGD_RETURN_IF_ERROR(Refill(&eof));
      if (eof) {
        if (member_done_) {
          stream_done_ = true;
          break;
        }
        return Status::DataLoss(path_ + ": gzip stream is truncated: the file ends inside a " +
                                "gzip member, after " + std::to_string(total_out_) +
                                " decompressed bytes");
      }
    }
    if (member_done_) {
      // More input after a complete member: it must be another member.
      if (inflateReset(&zs_) != Z_OK) return Status::Internal(path_ + ": inflateReset failed");
      member_done_ = false;
      member_out_ = 0;
    }
    const size_t want = std::min(n - *got, kDataChunk);
    zs_.next_out = dst + *got;
    zs_.avail_out = static_cast<uInt>(want);
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    const size_t produced = want - zs_.avail_out;
    *got += produced;
    total_out_ += produced;
    member_out_ += produced;
    if (rc == Z_STREAM_END) {
      member_done_ = true;
      ++members_;
      continue;
    }
    if (rc == Z_OK || (rc == Z_BUF_ERROR && zs_.avail_in == 0)) continue;
    const std::string reason = zs_.msg ? zs_.msg : zError(rc);
    if (rc == Z_DATA_ERROR && members_ > 0 && member_out_ == 0) {
      return Status::DataLoss(path_ + ": unexpected bytes after the end of the gzip stream (" +
                              reason + ")");
    }
    if (rc == Z_MEM_ERROR) return Status::Internal(path_ + ": zlib is out of memory");
    return Status::DataLoss(path_ + ": corrupt gzip data after " + std::to_string(total_out_) +
                            " decompressed bytes: " + reason);
  }
  return Status::Ok();
}

// Reads and checks the header of the open file `in` at `path`: the dimensions go to `dims`, the
// header's size to `header_bytes`.
Status ReadHeader(ByteStream& in, const std::string& path, std::vector<int64_t>* dims,
                  size_t* header_bytes_out) {
  const std::string source = in.gzip() ? "its decompressed data has " : "the file has ";
  uint8_t magic[4];
  size_t got = 0;
  TRAININGD_RETURN_IF_ERROR(in.Read(magic, 4, &got));
  if (got < 4) {
    return Status::DataLoss(path + ": truncated IDX header: expected at least 4 bytes, " + source +
                            std::to_string(got));
  }
  if (magic[0] != 0 || magic[1] != 0) {
    return Status::InvalidArgument(path + ": not an IDX file: the magic number starts with " +
                                   Hex(magic[0]) + " " + Hex(magic[1]) + ", expected 0x00 0x00");
  }
  if (magic[2] != 0x08) {
    return Status::InvalidArgument(path + ": unsupported IDX element type " + Hex(magic[2]) + " (" +
                                   IdxTypeName(magic[2]) +
                                   "); only 0x08 (unsigned byte) is supported");
  }
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxIdxRank) {
    return Status::InvalidArgument(path + ": unsupported IDX rank " + std::to_string(rank) +
                                   "; expected 1 to " + std::to_string(kMaxIdxRank));
  }

  const size_t header_bytes = 4 + 4 * static_cast<size_t>(rank);
  uint8_t dim_bytes[4 * kMaxIdxRank];
  TRAININGD_RETURN_IF_ERROR(in.Read(dim_bytes, 4 * static_cast<size_t>(rank), &got));
  if (got < 4 * static_cast<size_t>(rank)) {
    return Status::DataLoss(path + ": truncated IDX header: rank " + std::to_string(rank) +
                            " needs " + std::to_string(header_bytes) + " header bytes, " + source +
                            std::to_string(4 + got));
  }

  dims->resize(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const uint8_t* b = dim_bytes + 4 * i;
    (*dims)[static_cast<size_t>(i)] =
        (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | int64_t{b[3]};
  }
  // The running product stays <= 2^31 and each dimension is < 2^32, so it cannot overflow.
  int64_t elements = 1;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = (*dims)[static_cast<size_t>(i)];
    if (d == 0) {
      return Status::InvalidArgument(path + ": IDX dimension " + std::to_string(i) + " of " +
                                     Shape(*dims).ToString() + " is 0");
    }
    elements *= d;
    if (elements > kMaxIdxElements) {
      return Status::InvalidArgument(path + ": IDX dimensions " + Shape(*dims).ToString() +
                                     " declare more than the supported maximum of " +
                                     std::to_string(kMaxIdxElements) + " elements");
    }
  }
  *header_bytes_out = header_bytes;
  return Status::Ok();
}

// The IDX parse proper, over an opened stream; `path` names it in messages.
Result<IdxArray> ReadIdx(ByteStream& in, const std::string& path) {
  const std::string source = in.gzip() ? "its decompressed data has " : "the file has ";
  IdxArray array;
  size_t header_bytes = 0;
  size_t got = 0;
  TRAININGD_RETURN_IF_ERROR(ReadHeader(in, path, &array.dims, &header_bytes));
  const int64_t elements = array.num_elements();
  const size_t expected = static_cast<size_t>(elements);
  size_t have = 0;
  while (have < expected) {
    const size_t want = std::min({kDataChunk, expected - have, std::max(have, kFirstDataChunk)});
    array.data.resize(have + want);
    const Status st = in.Read(array.data.data() + have, want, &got);
    if (!st.ok()) {
      return Status(st.code(), st.message() + " (the " + std::to_string(header_bytes) +
                                   "-byte header declares dimensions " +
                                   Shape(array.dims).ToString() + ", " + std::to_string(expected) +
                                   " data bytes)");
    }
    have += got;
    if (got < want) break;
  }
  if (have < expected) {
    return Status::DataLoss(path + ": truncated IDX data: dimensions " +
                            Shape(array.dims).ToString() + " need " + std::to_string(expected) +
                            " data bytes after the " + std::to_string(header_bytes) +
                            "-byte header, " + source + std::to_string(have));
  }

  // Read to the end: a gzip stream is only verified (CRC, length) once it is fully consumed, and
  // bytes beyond the declared array mean the header and the data disagree.
  uint64_t extra = 0;
  std::vector<uint8_t> scratch(kInputChunk);
  do {
    TRAININGD_RETURN_IF_ERROR(in.Read(scratch.data(), scratch.size(), &got));
    extra += got;
  } while (got == scratch.size());
  if (extra > 0) {
    return Status::DataLoss(
        path + ": " + std::to_string(extra) + " unexpected trailing bytes: dimensions " +
        Shape(array.dims).ToString() + " need exactly " + std::to_string(expected) +
        " data bytes after the " + std::to_string(header_bytes) + "-byte header, " + source +
        std::to_string(expected + extra));
  }
  return array;
}

}  // namespace

int64_t IdxArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Result<IdxArray> ReadIdxFile(const std::string& path) {
  ByteStream in(path);
  TRAININGD_RETURN_IF_ERROR(in.Open());
  return ReadIdx(in, path);
}

Result<IdxArray> ParseIdx(std::string_view bytes, const std::string& name) {
  ByteStream in(name);
  TRAININGD_RETURN_IF_ERROR(in.OpenMemory(bytes));
  return ReadIdx(in, name);
}

Result<std::vector<int64_t>> ReadIdxDims(const std::string& path) {
  ByteStream in(path);
  TRAININGD_RETURN_IF_ERROR(in.Open());
  std::vector<int64_t> dims;
  size_t header_bytes = 0;
  TRAININGD_RETURN_IF_ERROR(ReadHeader(in, path, &dims, &header_bytes));
  return dims;
}

Result<IdxArray> ReadIdxRows(const std::string& path, int64_t first, int64_t count) {
  ByteStream in(path);
  TRAININGD_RETURN_IF_ERROR(in.Open());
  IdxArray array;
  size_t header_bytes = 0;
  TRAININGD_RETURN_IF_ERROR(ReadHeader(in, path, &array.dims, &header_bytes));
  const int64_t rows = array.dims[0];
  if (first < 0 || first > rows || count < 0) {
    return Status::InvalidArgument(path + ": rows from " + std::to_string(first) + " of " +
                                   std::to_string(rows));
  }
  const int64_t row_bytes = array.num_elements() / rows;
  count = std::min(count, rows - first);
  // Skips the rows before `first` through a bounded buffer.
  std::vector<uint8_t> skip(std::min<size_t>(kDataChunk, static_cast<size_t>(first * row_bytes)));
  size_t got = 0;
  for (int64_t left = first * row_bytes; left > 0;) {
    const size_t want = std::min(skip.size(), static_cast<size_t>(left));
    TRAININGD_RETURN_IF_ERROR(in.Read(skip.data(), want, &got));
    if (got < want) break;
    left -= static_cast<int64_t>(got);
  }
  array.dims[0] = count;
  array.data.resize(static_cast<size_t>(count * row_bytes));
  got = 0;
  if (count > 0) TRAININGD_RETURN_IF_ERROR(in.Read(array.data.data(), array.data.size(), &got));
  if (got < array.data.size()) {
    return Status::DataLoss(path + ": truncated IDX data: dimensions need " +
                            std::to_string(rows * row_bytes) + " data bytes after the " +
                            std::to_string(header_bytes) + "-byte header; the file ends sooner");
  }
  return array;
}

}  // namespace trainingd::engine
