// SHA-256 (FIPS 180-4), incremental: what names a dataset's exact bytes. Not thread-safe; one
// object per stream.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainingd::engine {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view bytes);
  void Update(const void* data, size_t size);
  // The digest of everything updated so far, as 64 lowercase hex digits. Ends the stream: call
  // nothing else on the object afterwards.
  std::string HexDigest();

 private:
  void Block(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace trainingd::engine
