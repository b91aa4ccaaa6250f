#include "data/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace trainingd::engine {
namespace {

std::string SourceErrnoText(int err) { return std::generic_category().message(err); }

class FileSource : public ByteSource {
 public:
  FileSource(std::string path, int fd, uint64_t size)
      : ByteSource(std::move(path)), fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, size_t n, uint8_t* dst) const override {
    if (offset > size_ || n > size_ - offset) return PastEnd(offset, n);
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        return Status::IoError(name() + ": read failed: " + SourceErrnoText(errno));
      }
      // The file shrank since it was opened.
      if (got == 0) return PastEnd(offset, n);
      done += static_cast<size_t>(got);
    }
    return Status::Ok();
  }

 private:
  int fd_;
  uint64_t size_;
};

class MemoryByteSource : public ByteSource {
 public:
  MemoryByteSource(std::string_view bytes, std::string name)
      : ByteSource(std::move(name)), bytes_(bytes) {}

  uint64_t size() const override { return bytes_.size(); }
  Status ReadAt(uint64_t offset, size_t n, uint8_t* dst) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) return PastEnd(offset, n);
    if (n > 0) std::memcpy(dst, bytes_.data() + offset, n);
    return Status::Ok();
  }

 private:
  std::string_view bytes_;
};

}  // namespace

Status ByteSource::PastEnd(uint64_t offset, size_t n) const {
  return Status::DataLoss(name_ + ": truncated: a read of " + std::to_string(n) +
                          " bytes at offset " + std::to_string(offset) + " goes past the end (" +
                          std::to_string(size()) + " bytes)");
}

Result<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::IoError(path + ": cannot open: " + SourceErrnoText(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IoError(path + ": cannot stat: " + SourceErrnoText(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IoError(path + ": not a regular file");
  }
  return std::unique_ptr<ByteSource>(
      std::make_unique<FileSource>(path, fd, static_cast<uint64_t>(st.st_size)));
}

std::unique_ptr<ByteSource> MemorySource(std::string_view bytes, std::string name) {
  return std::make_unique<MemoryByteSource>(bytes, std::move(name));
}

}  // namespace trainingd::engine
