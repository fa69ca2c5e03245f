// A small, platform-independent RNG (splitmix64 seeding xoshiro256**): the same seed gives the
// same numbers on every compiler and standard library, unlike std::*_distribution.
#pragma once
#include <cstdint>
#include <cmath>

namespace sl {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    const uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0]; s_[3] ^= s_[1]; s_[1] ^= s_[2]; s_[0] ^= s_[3];
    s_[2] ^= t; s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform in [0, n) without modulo bias (Lemire's method).
  uint64_t below(uint64_t n) {
    __uint128_t m = (__uint128_t)next() * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
      uint64_t t = -n % n;
      while (l < t) { m = (__uint128_t)next() * n; l = (uint64_t)m; }
    }
    return (uint64_t)(m >> 64);
  }
  double uniform() { return (next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {  // Box-Muller, one value per call (simple and reproducible)
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace sl
