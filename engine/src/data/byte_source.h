// ByteSource: random-access reads of a file's bytes, from an open file descriptor (pread) or from
// memory. The npz reader reads through one, so that LoadNpz (a file) and ParseNpz (the fuzzer's
// buffer) run the same code.
//
// Not thread-safe; one reader at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // The number of bytes.
  virtual uint64_t size() const = 0;
  // Reads exactly `n` bytes at `offset` into `dst`. DataLoss naming the source when the range
  // goes past size(); IoError when the OS fails the read.
  virtual Status ReadAt(uint64_t offset, size_t n, uint8_t* dst) const = 0;
  // The name errors use (the path, or the name ParseNpz was given).
  const std::string& name() const { return name_; }

 protected:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  // DataLoss for a read of `n` bytes at `offset` past the end.
  Status PastEnd(uint64_t offset, size_t n) const;

 private:
  std::string name_;
};

// The file at `path`, opened for reading (closed when the source is destroyed). NotFound when it
// does not exist, IoError when it cannot be opened or is a directory.
Result<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path);

// `bytes`, which must outlive the source; `name` stands for the path in messages.
std::unique_ptr<ByteSource> MemorySource(std::string_view bytes, std::string name);

}  // namespace trainingd::engine
