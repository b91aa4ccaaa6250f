#include "trainingd/daemon/jobs/job_id.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace trainingd::daemon {
namespace {

constexpr size_t kRandomBytes = kJobIdRandomBits / 8;
static_assert(kJobIdRandomBits % 40 == 0, "whole groups of 5 bytes = 8 base32 characters");

// Fills `out` from /dev/urandom; false when it cannot.
bool ReadUrandom(unsigned char* out, size_t n) {
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, out + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  return got == n;
}

void FillRandom(unsigned char* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out + got, n - got, 0);
    if (r >= 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == ENOSYS && ReadUrandom(out, n)) return;
    std::fprintf(stderr, "trainingd: the OS random source failed (%s); cannot make a job id\n",
                 std::strerror(errno));
    std::abort();
  }
}

}  // namespace

void FillRandomBytes(unsigned char* out, size_t n) { FillRandom(out, n); }

std::string JobIdFromBytes(const unsigned char* random_bytes) {
  static constexpr char kBase32[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string id = "j";
  // 5 bits per character, most significant first.
  uint32_t buffer = 0;
  int bits = 0;
  for (size_t i = 0; i < kRandomBytes; ++i) {
    buffer = (buffer << 8) | random_bytes[i];
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      id += kBase32[(buffer >> bits) & 31];
    }
  }
  return id;
}

std::string NewJobId() {
  unsigned char bytes[kRandomBytes];
  FillRandom(bytes, sizeof bytes);
  return JobIdFromBytes(bytes);
}

}  // namespace trainingd::daemon
