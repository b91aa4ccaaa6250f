// Job ids: unguessable names for jobs, drawn from the operating system's random source.
//
// A job id appears in URLs and names the job's directory (<data_dir>/jobs/<id>/), so it is
// URL-safe, lower-case (directories on case-insensitive file systems cannot collide) and
// within api::IsValidJobId (1 to 64 of [A-Za-z0-9_-]): "j" followed by 16 characters of
// base32 ([a-z2-7]), 80 random bits. Knowing one id tells nothing about another (the previous
// ids came from a per-thread std::mt19937_64, whose outputs give away its state).
#pragma once

#include <cstddef>
#include <string>

namespace trainingd::daemon {

// Bits of randomness in each id.
inline constexpr int kJobIdRandomBits = 80;

// A new id from getrandom(2) (/dev/urandom where the kernel lacks it). Thread-safe. The OS's
// random source does not fail on Linux >= 3.17 once booted; if it does anyway, the process
// aborts with a message rather than hand out a predictable id.
std::string NewJobId();

// Fills `out` with `n` bytes from getrandom(2), as NewJobId draws them (and aborts as it does);
// for other secrets (API tokens).
void FillRandomBytes(unsigned char* out, size_t n);

// The id NewJobId makes of `random_bytes` (kJobIdRandomBits / 8 of them); for tests.
std::string JobIdFromBytes(const unsigned char* random_bytes);

}  // namespace trainingd::daemon
