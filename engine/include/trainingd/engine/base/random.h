// Rng: a small, fast, seedable and serializable random generator (xoshiro256**, seeded through
// SplitMix64). Used for initialisers, dropout masks and data shuffling. Its whole state is four
// 64-bit words, so checkpoints can store it and resume the exact same stream.
#pragma once

#include <array>
#include <cstdint>

namespace trainingd::engine {

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed = 0) { Seed(seed); }
  void Seed(uint64_t seed);

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 24 random bits.
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n), n > 0, without modulo bias worth noticing (Lemire's method).
  uint64_t UniformInt(uint64_t n);
  // Standard normal (Box-Muller, one value per call).
  float Normal();
  // Normal(0, stddev) redrawn until within two standard deviations, as tf.truncated_normal does.
  float TruncatedNormal(float stddev);

  const State& state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

  // A generator derived from this seed and a stream id, independent of other streams; used to give
  // each layer or each worker its own reproducible stream.
  static Rng ForStream(uint64_t seed, uint64_t stream);

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_{};
};

}  // namespace trainingd::engine
