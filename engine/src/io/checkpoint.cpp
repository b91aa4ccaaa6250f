#include "trainingd/engine/io/checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <set>

#include "io/crc32c.h"

namespace trainingd::engine {
namespace {

constexpr char kMagic[8] = {'T', 'D', 'C', 'K', 'P', 'T', '0', '1'};
// magic[8], version u32, reserved u32, global_step i64, num_tensors u32, num_states u32, crc u32.
constexpr size_t kHeaderSize = 36;
// file_size u64, crc u32 of everything before it.
constexpr size_t kFooterSize = 12;
constexpr uint32_t kTensorRecord = 1;
constexpr uint32_t kStateRecord = 2;
// Smallest possible records: kind, name length, a 1-byte name, rank 0 or count 0, crc.
constexpr uint64_t kMinTensorRecord = 4 + 4 + 1 + 4 + 4;
constexpr uint64_t kMinStateRecord = 4 + 4 + 1 + 8 + 4;

std::string Errno(const std::string& path, const char* call) {
  return path + ": " + call + " failed: " + std::strerror(errno);
}

void PutU32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 4);
}

void PutU64(std::string& out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 8);
}

void PutName(std::string& out, const std::string& name) {
  PutU32(out, static_cast<uint32_t>(name.size()));
  out.append(name);
}

uint32_t GetU32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t GetU64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Bounds-checked cursor over the records section; every Take() checks the bytes exist.
class Cursor {
 public:
  Cursor(const unsigned char* data, size_t begin, size_t end)
      : data_(data), pos_(begin), end_(end) {}
  size_t remaining() const { return end_ - pos_; }
  size_t pos() const { return pos_; }
  const unsigned char* at(size_t pos) const { return data_ + pos; }
  bool Take(size_t n, const unsigned char** out) {
    if (n > remaining()) return false;
    *out = data_ + pos_;
    pos_ += n;
    return true;
  }
  bool U32(uint32_t* v) {
    const unsigned char* p;
    if (!Take(4, &p)) return false;
    *v = GetU32(p);
    return true;
  }
  bool U64(uint64_t* v) {
    const unsigned char* p;
    if (!Take(8, &p)) return false;
    *v = GetU64(p);
    return true;
  }

 private:
  const unsigned char* data_;
  size_t pos_;
  size_t end_;
};

Status CheckNames(const CheckpointData& data) {
  std::set<std::string> tensors, states;
  for (const auto& [name, t] : data.tensors) {
    if (name.empty() || name.size() > kMaxCheckpointNameBytes) {
      return Status::InvalidArgument("checkpoint tensor name '" + name + "' is empty or too long");
    }
    if (!tensors.insert(name).second) {
      return Status::InvalidArgument("checkpoint tensor '" + name + "' appears twice");
    }
    if (t.shape().rank() > kMaxCheckpointTensorRank || t.size() != t.shape().num_elements()) {
      return Status::InvalidArgument("checkpoint tensor '" + name + "' has shape " +
                                     t.shape().ToString() + " but " + std::to_string(t.size()) +
                                     " elements, or too many dimensions");
    }
  }
  for (const auto& [name, words] : data.states) {
    if (name.empty() || name.size() > kMaxCheckpointNameBytes) {
      return Status::InvalidArgument("checkpoint state name '" + name + "' is empty or too long");
    }
    if (!states.insert(name).second) {
      return Status::InvalidArgument("checkpoint state '" + name + "' appears twice");
    }
  }
  return Status::Ok();
}

// Bytes as they are written: a file's or a string's, in order.
using Emit = std::function<Status(std::string_view)>;

// Emits the file's bytes for `data` through `emit` without building the file in memory: the
// tensors' data goes out from the tensors themselves (a checkpoint of the CNN with Adam is 39 MB;
// a copy of it in fresh memory costs more than the write on some hypervisors).
Status EncodeTo(const CheckpointData& data, const Emit& emit) {
  uint64_t written = 0;
  uint32_t file_crc = 0;
  const auto put = [&](std::string_view bytes) {
    written += bytes.size();
    file_crc = internal::Crc32cExtend(file_crc, bytes.data(), bytes.size());
    return emit(bytes);
  };
  std::string head;
  head.append(kMagic, 8);
  PutU32(head, kCheckpointFormatVersion);
  PutU32(head, 0);
  PutU64(head, static_cast<uint64_t>(data.global_step));
  PutU32(head, static_cast<uint32_t>(data.tensors.size()));
  PutU32(head, static_cast<uint32_t>(data.states.size()));
  PutU32(head, internal::Crc32c(head.data(), head.size()));
  TRAININGD_RETURN_IF_ERROR(put(head));
  for (const auto& [name, t] : data.tensors) {
    std::string record;
    PutU32(record, kTensorRecord);
    PutName(record, name);
    PutU32(record, static_cast<uint32_t>(t.shape().rank()));
    for (int64_t d : t.shape().dims()) PutU64(record, static_cast<uint64_t>(d));
    std::string_view values;
    std::string swapped;
    if constexpr (std::endian::native == std::endian::little) {
      values = {reinterpret_cast<const char*>(t.data()), 4 * static_cast<size_t>(t.size())};
    } else {
      for (int64_t i = 0; i < t.size(); ++i) PutU32(swapped, std::bit_cast<uint32_t>(t[i]));
      values = swapped;
    }
    const uint32_t crc = internal::Crc32cExtend(internal::Crc32c(record.data(), record.size()),
                                                values.data(), values.size());
    TRAININGD_RETURN_IF_ERROR(put(record));
    TRAININGD_RETURN_IF_ERROR(put(values));
    std::string tail;
    PutU32(tail, crc);
    TRAININGD_RETURN_IF_ERROR(put(tail));
  }
  for (const auto& [name, words] : data.states) {
    std::string record;
    PutU32(record, kStateRecord);
    PutName(record, name);
    PutU64(record, words.size());
    for (uint64_t w : words) PutU64(record, w);
    PutU32(record, internal::Crc32c(record.data(), record.size()));
    TRAININGD_RETURN_IF_ERROR(put(record));
  }
  std::string footer;
  PutU64(footer, written + kFooterSize);
  TRAININGD_RETURN_IF_ERROR(put(footer));
  footer.clear();
  PutU32(footer, file_crc);
  return emit(footer);
}

// Reads one record's kind and name; `what` is "tensor" or "state" for messages.
Status ReadName(Cursor& c, uint32_t want_kind, const std::string& where, std::string* name) {
  uint32_t kind = 0, len = 0;
  if (!c.U32(&kind)) return Status::DataLoss(where + " is truncated");
  if (kind != want_kind) {
    return Status::DataLoss(where + " has record kind " + std::to_string(kind) + ", expected " +
                            std::to_string(want_kind));
  }
  if (!c.U32(&len)) return Status::DataLoss(where + " is truncated");
  const unsigned char* p;
  if (len == 0 || len > kMaxCheckpointNameBytes || !c.Take(len, &p)) {
    return Status::DataLoss(where + " has an impossible name length " + std::to_string(len));
  }
  name->assign(reinterpret_cast<const char*>(p), len);
  return Status::Ok();
}

Status CheckRecordCrc(Cursor& c, size_t start, const std::string& where) {
  const size_t end = c.pos();
  uint32_t stored = 0;
  if (!c.U32(&stored)) return Status::DataLoss(where + " is truncated before its checksum");
  if (stored != internal::Crc32c(c.at(start), end - start)) {
    return Status::DataLoss(where + " fails its checksum");
  }
  return Status::Ok();
}

Status Parse(const std::string& path, std::string_view bytes, CheckpointData* out) {
  const auto* d = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t size = bytes.size();
  const std::string file = path + ": ";
  if (size < sizeof(kMagic) || std::memcmp(d, kMagic, sizeof(kMagic)) != 0) {
    return Status::DataLoss(file + "not a trainingd checkpoint (bad magic in the first 8 bytes)");
  }
  if (size < kHeaderSize + kFooterSize) {
    return Status::DataLoss(file + "truncated: " + std::to_string(size) +
                            " bytes is shorter than a header and footer");
  }
  const uint32_t version = GetU32(d + 8);
  if (version != kCheckpointFormatVersion) {
    return Status::DataLoss(file + "unsupported format version " + std::to_string(version) +
                            " (this build reads version " +
                            std::to_string(kCheckpointFormatVersion) + ")");
  }
  if (GetU32(d + 32) != internal::Crc32c(d, 32))
    return Status::DataLoss(file + "header checksum mismatch");
  if (GetU32(d + 12) != 0) return Status::DataLoss(file + "reserved header field is not zero");
  const uint64_t recorded_size = GetU64(d + size - kFooterSize);
  if (recorded_size != size) {
    return Status::DataLoss(file + "file is " + std::to_string(size) +
                            " bytes but its footer says " + std::to_string(recorded_size) +
                            " (truncated, extended or corrupt)");
  }
  if (GetU32(d + size - 4) != internal::Crc32c(d, size - 4)) {
    return Status::DataLoss(file + "file checksum mismatch (corrupt)");
  }

  out->global_step = static_cast<int64_t>(GetU64(d + 16));
  const uint32_t num_tensors = GetU32(d + 24);
  const uint32_t num_states = GetU32(d + 28);
  Cursor c(d, kHeaderSize, size - kFooterSize);
  if (num_tensors * kMinTensorRecord + num_states * kMinStateRecord > c.remaining()) {
    return Status::DataLoss(file + "header declares " + std::to_string(num_tensors) +
                            " tensors and " + std::to_string(num_states) +
                            " states, more than the file can hold");
  }
  std::set<std::string> seen;
  out->tensors.reserve(num_tensors);
  for (uint32_t i = 0; i < num_tensors; ++i) {
    const std::string where = file + "tensor record " + std::to_string(i);
    const size_t start = c.pos();
    std::string name;
    TRAININGD_RETURN_IF_ERROR(ReadName(c, kTensorRecord, where, &name));
    uint32_t rank = 0;
    if (!c.U32(&rank)) return Status::DataLoss(where + " is truncated");
    if (rank > static_cast<uint32_t>(kMaxCheckpointTensorRank)) {
      return Status::DataLoss(where + " ('" + name + "') has impossible rank " +
                              std::to_string(rank));
    }
    std::vector<int64_t> dims(rank);
    uint64_t elements = 1;
    for (uint32_t k = 0; k < rank; ++k) {
      uint64_t dim = 0;
      if (!c.U64(&dim)) return Status::DataLoss(where + " is truncated");
      // Each factor is bounded by the bytes left, so the product cannot overflow.
      if (dim > c.remaining() || (dim != 0 && elements > c.remaining() / dim)) {
        return Status::DataLoss(where + " ('" + name + "') has an impossible dimension " +
                                std::to_string(dim));
      }
      elements *= dim;
      dims[k] = static_cast<int64_t>(dim);
    }
    const unsigned char* p;
    if (elements > c.remaining() / 4 || !c.Take(4 * elements, &p)) {
      return Status::DataLoss(where + " ('" + name + "') declares " + std::to_string(elements) +
                              " floats, more than the file holds");
    }
    TRAININGD_RETURN_IF_ERROR(CheckRecordCrc(c, start, where + " ('" + name + "')"));
    if (!seen.insert(name).second) return Status::DataLoss(where + ": duplicate name " + name);
    Tensor t{Shape(std::move(dims))};
    if constexpr (std::endian::native == std::endian::little) {
      if (elements > 0) std::memcpy(t.data(), p, 4 * elements);
    } else {
      for (uint64_t k = 0; k < elements; ++k) {
        t[static_cast<int64_t>(k)] = std::bit_cast<float>(GetU32(p + 4 * k));
      }
    }
    out->tensors.emplace_back(std::move(name), std::move(t));
  }
  seen.clear();
  out->states.reserve(num_states);
  for (uint32_t i = 0; i < num_states; ++i) {
    const std::string where = file + "state record " + std::to_string(i);
    const size_t start = c.pos();
    std::string name;
    TRAININGD_RETURN_IF_ERROR(ReadName(c, kStateRecord, where, &name));
    uint64_t count = 0;
    if (!c.U64(&count)) return Status::DataLoss(where + " is truncated");
    const unsigned char* p;
    if (count > c.remaining() / 8 || !c.Take(8 * count, &p)) {
      return Status::DataLoss(where + " ('" + name + "') declares " + std::to_string(count) +
                              " words, more than the file holds");
    }
    TRAININGD_RETURN_IF_ERROR(CheckRecordCrc(c, start, where + " ('" + name + "')"));
    if (!seen.insert(name).second) return Status::DataLoss(where + ": duplicate name " + name);
    std::vector<uint64_t> words(count);
    for (uint64_t k = 0; k < count; ++k) words[k] = GetU64(p + 8 * k);
    out->states.emplace_back(std::move(name), std::move(words));
  }
  if (c.remaining() != 0) {
    return Status::DataLoss(file + std::to_string(c.remaining()) +
                            " unexpected bytes after the last record");
  }
  return Status::Ok();
}

struct BufferDeleter {
  size_t bytes;
  void operator()(char* p) const { FreeBuffer(p, bytes); }
};

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteAll(int fd, const std::string& path, std::string_view contents) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, Errno(path, "write"));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// WriteFileAtomically with the contents produced by `produce`, which passes them to the Emit it
// is given in pieces. Small pieces are gathered into writes of about kGather bytes; large ones
// are written from where they are.
Status WriteAtomicallyFrom(const std::string& path,
                           const std::function<Status(const Emit&)>& produce, bool* replaced) {
  constexpr size_t kGather = size_t{1} << 20;
  if (replaced != nullptr) *replaced = false;
  static std::atomic<uint64_t> counter{0};
  const std::string tmp =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, Errno(tmp, "open"));
  std::string gathered;
  const auto flush = [&] {
    Status st = WriteAll(fd, tmp, gathered);
    gathered.clear();
    return st;
  };
  Status st = produce([&](std::string_view bytes) {
    if (bytes.size() < kGather) {
      gathered.append(bytes);
      return gathered.size() < kGather ? Status::Ok() : flush();
    }
    TRAININGD_RETURN_IF_ERROR(flush());
    return WriteAll(fd, tmp, bytes);
  });
  if (st.ok()) st = flush();
  if (st.ok() && ::fsync(fd) != 0) st = ErrnoStatus(errno, Errno(tmp, "fsync"));
  if (::close(fd) != 0 && st.ok()) st = ErrnoStatus(errno, Errno(tmp, "close"));
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoStatus(errno, Errno(path, "rename"));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (replaced != nullptr) *replaced = true;
  const std::string dir = DirectoryOf(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoStatus(errno, Errno(dir, "open"));
  if (::fsync(dfd) != 0) st = ErrnoStatus(errno, Errno(dir, "fsync"));
  ::close(dfd);
  return st;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view contents, bool* replaced) {
  return WriteAtomicallyFrom(
      path, [&](const Emit& emit) { return emit(contents); }, replaced);
}

int RemoveStaleTempFiles(const std::string& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos) continue;
    // "<pid>-<n>" after it.
    const char* p = name.data() + at + 5;
    const char* end = name.data() + name.size();
    pid_t pid = 0;
    uint64_t n = 0;
    auto parsed = std::from_chars(p, end, pid);
    if (parsed.ec != std::errc() || parsed.ptr == end || *parsed.ptr != '-' || pid <= 0) continue;
    parsed = std::from_chars(parsed.ptr + 1, end, n);
    if (parsed.ec != std::errc() || parsed.ptr != end) continue;
    // A live process may be writing it (ours, or another on the same directory).
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

Status WriteCheckpointFile(const std::string& path, const CheckpointData& data) {
  TRAININGD_RETURN_IF_ERROR(CheckNames(data));
  return WriteAtomicallyFrom(
      path, [&](const Emit& emit) { return EncodeTo(data, emit); }, nullptr);
}

Result<std::string> EncodeCheckpoint(const CheckpointData& data) {
  TRAININGD_RETURN_IF_ERROR(CheckNames(data));
  std::string out;
  TRAININGD_RETURN_IF_ERROR(EncodeTo(data, [&](std::string_view bytes) {
    out.append(bytes);
    return Status::Ok();
  }));
  return out;
}

Result<CheckpointData> ReadCheckpointFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(path + ": no such checkpoint file");
    return Status::IoError(Errno(path, "open"));
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const Status st = Status::IoError(Errno(path, "fstat"));
    ::close(fd);
    return st;
  }
  // Not a std::string: that would zero the whole size first, on fresh 4 KiB pages.
  const size_t size = static_cast<size_t>(sb.st_size);
  const std::unique_ptr<char, BufferDeleter> bytes(static_cast<char*>(AllocateBuffer(size)),
                                                   BufferDeleter{size});
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, bytes.get() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status st = Status::IoError(Errno(path, "read"));
      ::close(fd);
      return st;
    }
    if (n == 0) break;  // shrank while reading; Parse reports the truncation
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return ParseCheckpoint(std::string_view(bytes.get(), done), path);
}

Result<CheckpointData> ParseCheckpoint(std::string_view bytes, const std::string& name) {
  CheckpointData data;
  TRAININGD_RETURN_IF_ERROR(Parse(name, bytes, &data));
  return data;
}

}  // namespace trainingd::engine
