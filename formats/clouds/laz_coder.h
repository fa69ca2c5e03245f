// The parts of LASzip's coder shared by the decoder (laz.cpp) and the test writer
// (tests' laz_writer): the adaptive entropy models, the running median and the return-number
// context tables. Internal to the LAZ code: not an interface.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace sl::laz {

// ---- entropy models (LASzip's arithmetic coder, after Said's) ------------------------------------

constexpr uint32_t kMinLength = 1u << 24;  // renormalise below this interval length
constexpr uint32_t kBitShift = 13, kBitMaxCount = 1u << 13;
constexpr uint32_t kSymShift = 15, kSymMaxCount = 1u << 15;

// A binary model: the probability of 0 adapts every `cycle` bits (more and more rarely).
struct BitModel {
  uint32_t zero_count = 1, count = 2, zero_prob = 1u << (kBitShift - 1), cycle = 4, until = 4;
  void init() { *this = BitModel{}; }
  void update() {
    if ((count += cycle) > kBitMaxCount) {
      count = (count + 1) >> 1;
      zero_count = (zero_count + 1) >> 1;
      if (zero_count == count) ++count;
    }
    zero_prob = (zero_count * (0x80000000u / count)) >> (31 - kBitShift);
    cycle = std::min<uint32_t>((5 * cycle) >> 2, 64);
    until = cycle;
  }
};

// An adaptive model of `n` symbols (2 to 2048): counts, their cumulative distribution scaled to
// 2^15, and above 16 symbols a table that narrows the search for a value's symbol. One
// allocation holds the three (a chunk sets up hundreds of models).
struct SymbolModel {
  explicit SymbolModel(uint32_t symbols) : n(symbols), last(symbols - 1) {
    if (n > 16) {
      uint32_t bits = 3;
      while (n > (1u << (bits + 2))) ++bits;
      table_size = 1u << bits;
      table_shift = kSymShift - bits;
    }
    buf.reset(new uint32_t[2 * size_t(n) + (table_size ? table_size + 2 : 0)]());
    dist = buf.get();
    count = dist + n;
    table = table_size ? count + n : nullptr;
    init();
  }
  void init() {
    total = 0;
    cycle = n;
    std::fill(count, count + n, 1u);
    update();
    until = cycle = (n + 6) >> 1;
  }
  void update() {
    if ((total += cycle) > kSymMaxCount) {
      total = 0;
      for (uint32_t k = 0; k < n; ++k) total += (count[k] = (count[k] + 1) >> 1);
    }
    const uint32_t scale = 0x80000000u / total;
    uint32_t sum = 0;
    if (table_size == 0) {
      for (uint32_t k = 0; k < n; ++k) {
        dist[k] = (scale * sum) >> (31 - kSymShift);
        sum += count[k];
      }
    } else {
      uint32_t s = 0;
      for (uint32_t k = 0; k < n; ++k) {
        dist[k] = (scale * sum) >> (31 - kSymShift);
        sum += count[k];
        const uint32_t w = dist[k] >> table_shift;
        while (s < w) table[++s] = k - 1;
      }
      table[0] = 0;
      while (s <= table_size) table[++s] = n - 1;
    }
    cycle = std::min((5 * cycle) >> 2, (n + 6) << 3);
    until = cycle;
  }

  uint32_t n, last, table_size = 0, table_shift = 0, total = 0, cycle = 0, until = 0;
  uint32_t *dist = nullptr, *count = nullptr, *table = nullptr;  // into buf
  std::unique_ptr<uint32_t[]> buf;
};

// A symbol model made on first use (LASzip creates them lazily; a fresh one is the same).
struct LazyModel {
  uint32_t n;
  std::unique_ptr<SymbolModel> m;
  SymbolModel& get() {
    if (!m) m = std::make_unique<SymbolModel>(n);
    return *m;
  }
};
template <size_t N>
std::array<LazyModel, N> lazy_models(uint32_t symbols) {
  std::array<LazyModel, N> a;
  for (LazyModel& m : a) m.n = symbols;
  return a;
}

// The median of the last five values (x/y differences of POINT10 v2 and POINT14).
class Median5 {
 public:
  int32_t get() const { return v_[2]; }
  void add(int32_t x) {
    if (high_) {
      if (x < v_[2]) {
        v_[4] = v_[3];
        v_[3] = v_[2];
        if (x < v_[0]) {
          v_[2] = v_[1];
          v_[1] = v_[0];
          v_[0] = x;
        } else if (x < v_[1]) {
          v_[2] = v_[1];
          v_[1] = x;
        } else {
          v_[2] = x;
        }
      } else {
        if (x < v_[3]) {
          v_[4] = v_[3];
          v_[3] = x;
        } else {
          v_[4] = x;
        }
        high_ = false;
      }
    } else {
      if (v_[2] < x) {
        v_[0] = v_[1];
        v_[1] = v_[2];
        if (v_[4] < x) {
          v_[2] = v_[3];
          v_[3] = v_[4];
          v_[4] = x;
        } else if (v_[3] < x) {
          v_[2] = v_[3];
          v_[3] = x;
        } else {
          v_[2] = x;
        }
      } else {
        if (v_[1] < x) {
          v_[0] = v_[1];
          v_[1] = x;
        } else {
          v_[0] = x;
        }
        high_ = true;
      }
    }
  }

 private:
  int32_t v_[5] = {0, 0, 0, 0, 0};
  bool high_ = true;
};

inline int32_t wrap_add(int32_t a, int32_t b) { return int32_t(uint32_t(a) + uint32_t(b)); }
inline int32_t wrap_mul(int32_t a, int32_t b) { return int32_t(uint32_t(a) * uint32_t(b)); }
inline uint8_t fold(int32_t v) { return uint8_t(v); }  // LASzip's U8_FOLD: the value mod 256
inline int32_t clamp8(int32_t v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

// Contexts of POINT10 v2 by (number of returns n, return number r): LASzip's tables.
constexpr uint8_t kReturnMap[8][8] = {
    {15, 14, 13, 12, 11, 10, 9, 8}, {14, 0, 1, 3, 6, 10, 10, 9},  {13, 1, 2, 4, 7, 11, 11, 10},
    {12, 3, 4, 5, 8, 12, 12, 11},   {11, 6, 7, 8, 9, 13, 13, 12}, {10, 10, 11, 12, 13, 14, 14, 13},
    {9, 10, 11, 12, 13, 14, 15, 14}, {8, 9, 10, 11, 12, 13, 14, 15}};
inline uint32_t return_level(uint32_t n, uint32_t r) { return n > r ? n - r : r - n; }  // |n - r|
// ... and of POINT14 (16 x 16; the level is |n - r| capped at 7).
constexpr uint8_t kReturnMap6[16][16] = {
    {0, 1, 2, 3, 4, 5, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5}, {1, 0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
    {2, 1, 2, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3}, {3, 3, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
    {4, 3, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, {5, 3, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
    {3, 3, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4}, {4, 3, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4},
    {4, 3, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4}, {5, 3, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4},
    {5, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4}, {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 4, 4, 4},
    {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4, 4}, {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4},
    {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5}, {5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5}};
inline uint32_t return_level8(uint32_t n, uint32_t r) { return std::min<uint32_t>(return_level(n, r), 7); }

}  // namespace sl::laz
