#include "data/zip_reader.h"

#include <algorithm>
#include <cstring>

namespace trainingd::engine {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndBytes = 22;
constexpr size_t kZip64LocatorBytes = 20;
constexpr size_t kZip64EndBytes = 56;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kMaxCommentBytes = 0xFFFF;
constexpr uint64_t kMaxDeflateRatio = 1032;  // zlib's bound on deflate's compression factor
constexpr size_t kZipInputChunk = size_t{1} << 16;

uint16_t ZipU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t ZipU32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t ZipU64(const uint8_t* p) { return uint64_t{ZipU32(p)} | (uint64_t{ZipU32(p + 4)} << 32); }

std::string MethodName(uint16_t method) {
  switch (method) {
    case 12:
      return "12 (bzip2)";
    case 14:
      return "14 (lzma)";
    case 93:
      return "93 (zstd)";
    default:
      return std::to_string(method);
  }
}

// Finds the end of central directory record: the last signature from which the record and its
// comment reach exactly the end of the file.
Status FindEnd(const ByteSource& source, uint64_t* end_offset, std::vector<uint8_t>* end) {
  const uint64_t size = source.size();
  const std::string& name = source.name();
  uint8_t magic[4] = {0, 0, 0, 0};
  const bool zip_start =
      size >= 4 && source.ReadAt(0, 4, magic).ok() && ZipU32(magic) == kLocalHeaderSig;
  if (size < kEndBytes) {
    if (zip_start)
      return Status::DataLoss(name + ": truncated zip archive (" + std::to_string(size) +
                              " bytes)");
    return Status::InvalidArgument(
        name + ": not a zip archive (an .npz file is one): " + std::to_string(size) + " bytes");
  }
  const size_t tail = static_cast<size_t>(std::min<uint64_t>(size, kEndBytes + kMaxCommentBytes));
  std::vector<uint8_t> buf(tail);
  TRAININGD_RETURN_IF_ERROR(source.ReadAt(size - tail, tail, buf.data()));
  for (size_t i = tail - kEndBytes + 1; i-- > 0;) {
    const uint8_t* p = buf.data() + i;
    if (ZipU32(p) != kEndSig) continue;
    if (i + kEndBytes + ZipU16(p + 20) != tail) continue;
    *end_offset = size - tail + i;
    end->assign(p, p + kEndBytes);
    return Status::Ok();
  }
  if (zip_start) {
    return Status::DataLoss(name + ": truncated zip archive: no end of central directory record");
  }
  return Status::InvalidArgument(name + ": not a zip archive (an .npz file is one): no end of " +
                                 "central directory record");
}

// Replaces the 0xFFFF... fields of a central header by its zip64 extra field's values.
Status ApplyZip64Extra(const std::string& where, const uint8_t* extra, size_t n, ZipMember* m,
                       bool need_uncompressed, bool need_compressed, bool need_offset) {
  size_t at = 0;
  while (at + 4 <= n) {
    const uint16_t id = ZipU16(extra + at);
    const uint16_t len = ZipU16(extra + at + 2);
    if (at + 4 + len > n) break;
    if (id == 1) {
      const uint8_t* f = extra + at + 4;
      size_t off = 0;
      auto take = [&](uint64_t* v) {
        if (off + 8 > len) return false;
        *v = ZipU64(f + off);
        off += 8;
        return true;
      };
      if ((need_uncompressed && !take(&m->uncompressed_size)) ||
          (need_compressed && !take(&m->compressed_size)) ||
          (need_offset && !take(&m->local_header_offset))) {
        return Status::DataLoss(where + ": zip64 extra field too short");
      }
      return Status::Ok();
    }
    at += 4 + len;
  }
  if (need_uncompressed || need_compressed || need_offset) {
    return Status::DataLoss(where + ": sizes marked zip64 but no zip64 extra field");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ZipMember>> ReadZipDirectory(const ByteSource& source) {
  const std::string& name = source.name();
  uint64_t end_offset = 0;
  std::vector<uint8_t> end;
  TRAININGD_RETURN_IF_ERROR(FindEnd(source, &end_offset, &end));
  uint64_t disk = ZipU16(&end[4]), cd_disk = ZipU16(&end[6]);
  uint64_t disk_entries = ZipU16(&end[8]), entries = ZipU16(&end[10]);
  uint64_t cd_size = ZipU32(&end[12]), cd_offset = ZipU32(&end[16]);
  uint64_t cd_end_limit = end_offset;  // the directory ends where the next record starts

  // A zip64 locator, when there is one, sits right before the end record.
  if (end_offset >= kZip64LocatorBytes) {
    uint8_t loc[kZip64LocatorBytes];
    TRAININGD_RETURN_IF_ERROR(source.ReadAt(end_offset - kZip64LocatorBytes, sizeof loc, loc));
    if (ZipU32(loc) == kZip64LocatorSig) {
      const uint64_t z64 = ZipU64(loc + 8);
      if (z64 > end_offset - kZip64LocatorBytes ||
          end_offset - kZip64LocatorBytes - z64 < kZip64EndBytes) {
        return Status::DataLoss(name + ": corrupt zip archive: the zip64 end record's offset " +
                                std::to_string(z64) + " is out of place");
      }
      uint8_t rec[kZip64EndBytes];
      TRAININGD_RETURN_IF_ERROR(source.ReadAt(z64, sizeof rec, rec));
      if (ZipU32(rec) != kZip64EndSig) {
        return Status::DataLoss(name + ": corrupt zip archive: no zip64 end record at offset " +
                                std::to_string(z64));
      }
      disk = ZipU32(rec + 16);
      cd_disk = ZipU32(rec + 20);
      disk_entries = ZipU64(rec + 24);
      entries = ZipU64(rec + 32);
      cd_size = ZipU64(rec + 40);
      cd_offset = ZipU64(rec + 48);
      cd_end_limit = z64;
    }
  }
  if (disk != 0 || cd_disk != 0 || disk_entries != entries) {
    return Status::InvalidArgument(name + ": multi-disk zip archives are not supported");
  }
  if (entries > kMaxZipMembers) {
    return Status::InvalidArgument(name + ": " + std::to_string(entries) +
                                   " members; an npz dataset has at most 6");
  }
  if (cd_size > kMaxZipDirectoryBytes) {
    return Status::InvalidArgument(name + ": a central directory of " + std::to_string(cd_size) +
                                   " bytes; at most " + std::to_string(kMaxZipDirectoryBytes) +
                                   " are read");
  }
  if (cd_offset > cd_end_limit || cd_size > cd_end_limit - cd_offset) {
    return Status::DataLoss(name + ": corrupt or truncated zip archive: the central directory (" +
                            std::to_string(cd_size) + " bytes at offset " +
                            std::to_string(cd_offset) + ") does not fit before its end record at " +
                            std::to_string(cd_end_limit));
  }
  std::vector<uint8_t> cd(static_cast<size_t>(cd_size));
  TRAININGD_RETURN_IF_ERROR(source.ReadAt(cd_offset, cd.size(), cd.data()));

  std::vector<ZipMember> members;
  size_t at = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    const std::string where = name + ": zip member " + std::to_string(i);
    if (cd.size() - at < kCentralHeaderBytes || ZipU32(cd.data() + at) != kCentralHeaderSig) {
      return Status::DataLoss(where + ": corrupt central directory header");
    }
    const uint8_t* h = cd.data() + at;
    const uint16_t flags = ZipU16(h + 8);
    ZipMember m;
    m.method = ZipU16(h + 10);
    m.crc32 = ZipU32(h + 16);
    m.compressed_size = ZipU32(h + 20);
    m.uncompressed_size = ZipU32(h + 24);
    const size_t name_len = ZipU16(h + 28), extra_len = ZipU16(h + 30),
                 comment_len = ZipU16(h + 32);
    const uint16_t start_disk = ZipU16(h + 34);
    m.local_header_offset = ZipU32(h + 42);
    if (cd.size() - at - kCentralHeaderBytes < name_len + extra_len + comment_len) {
      return Status::DataLoss(where + ": corrupt central directory header (its name and extra " +
                              "fields run past the directory)");
    }
    m.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderBytes), name_len);
    const std::string member = name + ": " + m.name;
    TRAININGD_RETURN_IF_ERROR(ApplyZip64Extra(member, h + kCentralHeaderBytes + name_len, extra_len,
                                              &m, m.uncompressed_size == 0xFFFFFFFF,
                                              m.compressed_size == 0xFFFFFFFF,
                                              m.local_header_offset == 0xFFFFFFFF));
    if (start_disk != 0 && start_disk != 0xFFFF) {
      return Status::InvalidArgument(member + ": multi-disk zip archives are not supported");
    }
    if (flags & 1)
      return Status::InvalidArgument(member + ": encrypted zip members are not supported");
    if (m.method != 0 && m.method != 8) {
      return Status::InvalidArgument(member + ": zip compression method " + MethodName(m.method) +
                                     " is not supported; np.savez stores (0) and " +
                                     "np.savez_compressed deflates (8)");
    }
    members.push_back(std::move(m));
    at += kCentralHeaderBytes + name_len + extra_len + comment_len;
  }
  return members;
}

ZipMemberReader::ZipMemberReader(const ByteSource& source, const ZipMember& member,
                                 std::string label)
    : source_(source), member_(member), label_(std::move(label)) {}

ZipMemberReader::~ZipMemberReader() {
  if (inflating_) inflateEnd(&zs_);
}

Status ZipMemberReader::Open() {
  const uint64_t size = source_.size();
  const ZipMember& m = member_;
  uint8_t h[kLocalHeaderBytes];
  if (m.local_header_offset > size || size - m.local_header_offset < kLocalHeaderBytes) {
    return Status::DataLoss(label_ + ": truncated zip archive: the local header at offset " +
                            std::to_string(m.local_header_offset) + " is past the end of the " +
                            std::to_string(size) + "-byte file");
  }
  TRAININGD_RETURN_IF_ERROR(source_.ReadAt(m.local_header_offset, sizeof h, h));
  if (ZipU32(h) != kLocalHeaderSig) {
    return Status::DataLoss(label_ + ": corrupt zip archive: no local header at offset " +
                            std::to_string(m.local_header_offset));
  }
  const size_t name_len = ZipU16(h + 26), extra_len = ZipU16(h + 28);
  std::string local_name(name_len, '\0');
  const uint64_t name_at = m.local_header_offset + kLocalHeaderBytes;
  if (size - name_at < name_len) {
    return Status::DataLoss(label_ + ": truncated zip archive: the local header runs past the end");
  }
  TRAININGD_RETURN_IF_ERROR(
      source_.ReadAt(name_at, name_len, reinterpret_cast<uint8_t*>(local_name.data())));
  if (local_name != m.name) {
    return Status::DataLoss(label_ + ": corrupt zip archive: the local header names '" +
                            local_name + "'");
  }
  data_offset_ = name_at + name_len + extra_len;
  if (data_offset_ > size || m.compressed_size > size - data_offset_) {
    return Status::DataLoss(label_ +
                            ": truncated zip archive: " + std::to_string(m.compressed_size) +
                            " bytes of data at offset " + std::to_string(data_offset_) +
                            " but the file has " + std::to_string(size) + " bytes");
  }
  if (m.method == 0) {
    if (m.compressed_size != m.uncompressed_size) {
      return Status::DataLoss(label_ + ": corrupt zip archive: a stored member of " +
                              std::to_string(m.compressed_size) + " bytes declares " +
                              std::to_string(m.uncompressed_size) + " uncompressed");
    }
    return Status::Ok();
  }
  if (m.uncompressed_size / kMaxDeflateRatio > m.compressed_size) {
    return Status::DataLoss(label_ + ": corrupt zip archive: " + std::to_string(m.compressed_size) +
                            " deflated bytes cannot hold the " +
                            std::to_string(m.uncompressed_size) + " bytes the member declares");
  }
  if (inflateInit2(&zs_, -15) != Z_OK) return Status::Internal(label_ + ": inflateInit2 failed");
  inflating_ = true;
  in_buf_.resize(static_cast<size_t>(std::min<uint64_t>(kZipInputChunk, m.compressed_size + 1)));
  return Status::Ok();
}

Status ZipMemberReader::ReadStored(uint8_t* dst, size_t n) {
  TRAININGD_RETURN_IF_ERROR(source_.ReadAt(data_offset_ + out_, n, dst));
  in_ += n;
  return Status::Ok();
}

// Inflates into dst[0, n), feeding compressed input as needed; *got < n only when the stream
// ended or the compressed bytes ran out.
Status ZipMemberReader::Inflate(uint8_t* dst, size_t n, size_t* got) {
  *got = 0;
  while (*got < n && !stream_end_) {
    if (zs_.avail_in == 0) {
      const uint64_t left = member_.compressed_size - in_;
      if (left == 0) break;
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, in_buf_.size()));
      TRAININGD_RETURN_IF_ERROR(source_.ReadAt(data_offset_ + in_, take, in_buf_.data()));
      in_ += take;
      zs_.next_in = in_buf_.data();
      zs_.avail_in = static_cast<uInt>(take);
    }
    const size_t want = std::min<size_t>(n - *got, size_t{1} << 30);
    zs_.next_out = dst + *got;
    zs_.avail_out = static_cast<uInt>(want);
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    *got += want - zs_.avail_out;
    if (rc == Z_STREAM_END) {
      stream_end_ = true;
    } else if (rc == Z_OK || rc == Z_BUF_ERROR) {
      continue;
    } else if (rc == Z_MEM_ERROR) {
      return Status::Internal(label_ + ": zlib is out of memory");
    } else {
      return Status::DataLoss(label_ + ": corrupt deflate data after " +
                              std::to_string(out_ + *got) +
                              " bytes: " + (zs_.msg ? zs_.msg : zError(rc)));
    }
  }
  return Status::Ok();
}

Status ZipMemberReader::Read(uint8_t* dst, size_t n, size_t* got) {
  *got = 0;
  const uint64_t left = member_.uncompressed_size - out_;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(n, left));
  if (want == 0) return Status::Ok();
  if (member_.method == 0) {
    TRAININGD_RETURN_IF_ERROR(ReadStored(dst, want));
    *got = want;
  } else {
    TRAININGD_RETURN_IF_ERROR(Inflate(dst, want, got));
    if (*got < want) {
      return Status::DataLoss(
          label_ + ": truncated deflate data: it ends after " + std::to_string(out_ + *got) +
          " of the " + std::to_string(member_.uncompressed_size) + " bytes the member declares");
    }
  }
  crc_ = static_cast<uint32_t>(crc32_z(crc_, dst, *got));
  out_ += *got;
  return Status::Ok();
}

Status ZipMemberReader::Finish() {
  if (out_ != member_.uncompressed_size) {
    return Status::Internal(label_ + ": Finish before the end of the member");
  }
  if (member_.method == 8 && !stream_end_) {
    uint8_t extra = 0;
    size_t got = 0;
    TRAININGD_RETURN_IF_ERROR(Inflate(&extra, 1, &got));
    if (got > 0) {
      return Status::DataLoss(label_ + ": the deflate data holds more than the " +
                              std::to_string(member_.uncompressed_size) +
                              " bytes the member declares");
    }
    if (!stream_end_) {
      return Status::DataLoss(label_ + ": truncated deflate data: no end of stream after " +
                              std::to_string(out_) + " bytes");
    }
  }
  if (crc_ != member_.crc32) {
    return Status::DataLoss(label_ + ": CRC-32 mismatch: the data's is " + std::to_string(crc_) +
                            ", the zip directory's " + std::to_string(member_.crc32));
  }
  return Status::Ok();
}

}  // namespace trainingd::engine
