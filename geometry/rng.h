// A small, platform-independent RNG for every random choice of the geometry stages and the
// synthetic data generator. std::uniform_int_distribution / std::normal_distribution are
// implementation-defined (libstdc++ and libc++ give different streams), which would break
// "same seed => same batches" across machines, so we draw from our own xoshiro256**.
#pragma once
#include <cmath>
#include <cstdint>

namespace sl {

class Rng {
 public:
  // The state is expanded from the seed with splitmix64, as recommended by xoshiro's authors
  // (never all-zero, well mixed even for consecutive seeds).
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      w = z ^ (z >> 31);
    }
  }

  uint64_t next() {  // xoshiro256**
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform integer in [0, n), n > 0, without modulo bias (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = (unsigned __int128)next() * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = (unsigned __int128)next() * n;
        low = (uint64_t)m;
      }
    }
    return (uint64_t)(m >> 64);
  }

  // Uniform double in [0, 1) from the top 53 bits.
  double uniform() { return (double)(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

  // Standard normal by Box-Muller (one value per call; the pair's second value is dropped to
  // keep the stream position a simple function of the number of draws).
  double normal() {
    double u1 = uniform();
    const double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  double normal(double mean, double sigma) { return mean + sigma * normal(); }
  // Both values of one Box-Muller draw (the same two uniforms as normal(); *a is what normal()
  // would return): two independent standard normals for one logarithm and one sincos.
  void normal_pair(double* a, double* b) {
    double u1 = uniform();
    const double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1)), th = 6.283185307179586 * u2;
    *a = r * std::cos(th), *b = r * std::sin(th);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace sl
