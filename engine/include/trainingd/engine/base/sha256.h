// SHA-256 (FIPS 180-4), incremental: what names a dataset's exact bytes. Uses the CPU's SHA
// extensions (x86 SHA-NI: Intel since Ice Lake and Goldmont, AMD since Zen) when it has them,
// about ten times the speed of the portable code, which is the fallback. Not thread-safe; one
// object per stream.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace trainingd::engine {

class Sha256 {
 public:
  // `use_cpu_extensions` false: the portable code even where the CPU has SHA-NI (for tests).
  explicit Sha256(bool use_cpu_extensions = true);
  void Update(std::string_view bytes);
  void Update(const void* data, size_t size);
  // The digest of everything updated so far, as 64 lowercase hex digits. Ends the stream: call
  // nothing else on the object afterwards.
  std::string HexDigest();

 private:
  // Hashes `blocks` 64-byte blocks at `data` into state_.
  void Blocks(const uint8_t* data, size_t blocks);
  void Block(const uint8_t* block);  // the portable code

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool sha_ni_;
};

}  // namespace trainingd::engine
