#include "trainingd/engine/base/random.h"

#include <cmath>

namespace trainingd::engine {
namespace {
uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

void Rng::Seed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& w : s_) w = SplitMix64(x);
}

__extension__ using Uint128 = unsigned __int128;

uint64_t Rng::UniformInt(uint64_t n) {
  const Uint128 m = static_cast<Uint128>(Next()) * n;
  return static_cast<uint64_t>(m >> 64);
}

float Rng::Normal() {
  // Box-Muller on doubles; u1 in (0, 1] so log is finite.
  const double u1 = (static_cast<double>(Next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  const double u2 = static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

float Rng::TruncatedNormal(float stddev) {
  for (;;) {
    const float z = Normal();
    if (std::fabs(z) <= 2.0f) return z * stddev;
  }
}

Rng Rng::ForStream(uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (0xD1B54A32D192ED03ull * (stream + 1));
  return Rng(SplitMix64(x));
}

}  // namespace trainingd::engine
