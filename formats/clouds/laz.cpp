#include "formats/clouds/laz.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>

#include "graph/error.h"
#include "formats/clouds/laz_coder.h"

namespace sl {

static_assert(std::endian::native == std::endian::little, "LAZ is little-endian");

namespace {

using namespace laz;

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

std::string num(uint64_t v) { return std::to_string(v); }

constexpr size_t kNoChunk = SIZE_MAX;  // (the chunk table's stream)

[[noreturn]] void chunk_fail(const std::string& path, size_t chunk, uint64_t byte, const std::string& why) {
  fail(path, (chunk == kNoChunk ? "" : "chunk " + num(chunk) + ": ") + "byte " + num(byte) + ": " + why);
}

// A chunk is plausible only if its points could be coded in its bytes: LASzip's adaptive models
// never give a symbol more than 1 - 2^-15 of the interval, so a point (several symbols) costs
// at least ~0.008 bits, ~1,000 points a byte for a chunk of identical points. Twice that is
// refused before anything is allocated for it.
constexpr uint64_t kMaxPointsPerByte = 2048;

// ---- the byte source: a bounded range of the file ----------------------------------------------

// Bytes [p, end) of the file starting at `file`; a read past `end` is an error naming the chunk,
// the byte and what the range was (the chunk, or one of its layers).
struct Source {
  const uint8_t* file = nullptr;
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  const uint8_t* begin = nullptr;
  const std::string* path = nullptr;
  size_t chunk = 0;
  const char* what = "the chunk";

  uint8_t byte() {
    if (p == end) [[unlikely]]
      ran_out();
    return *p++;
  }
  uint64_t offset() const { return uint64_t(p - file); }
  [[noreturn]] void ran_out() const {
    chunk_fail(*path, chunk, offset(),
               std::string("the compressed data ends early: the decoder needs more than the ") + num(uint64_t(end - begin)) +
                   " bytes of " + what + " (bytes " + num(uint64_t(begin - file)) + " to " + num(uint64_t(end - file)) +
                   ")");
  }
  [[noreturn]] void corrupt(const char* why) const {
    chunk_fail(*path, chunk, offset(), std::string("corrupt compressed data in ") + what + ": " + why);
  }
};

// The decoder: `value` is the code's offset in the current interval [0, length), which holds
// for every stream an encoder can write (value < length; checked where a corrupt stream would
// break it, so that no table index leaves its table).
class ArithDecoder {
 public:
  void init(Source* s) {
    src_ = s;
    length_ = 0xFFFFFFFFu;
    value_ = uint32_t(s->byte()) << 24;
    value_ |= uint32_t(s->byte()) << 16;
    value_ |= uint32_t(s->byte()) << 8;
    value_ |= uint32_t(s->byte());
    if (value_ >= length_) s->corrupt("the first four bytes lie outside the coder's interval");
  }

  uint32_t bit(BitModel& m) {
    const uint32_t x = m.zero_prob * (length_ >> kBitShift);
    uint32_t sym;
    if (value_ < x) {
      sym = 0;
      length_ = x;
      ++m.zero_count;
    } else {
      sym = 1;
      value_ -= x;
      length_ -= x;
    }
    if (length_ < kMinLength) renorm();
    if (--m.until == 0) m.update();
    return sym;
  }

  uint32_t symbol(SymbolModel& m) {
    uint32_t sym, x, y = length_;
    if (m.table_size) {
      length_ >>= kSymShift;
      const uint32_t dv = value_ / length_;
      const uint32_t t = dv >> m.table_shift;
      if (t > m.table_size) [[unlikely]]
        src_->corrupt("a value beyond the last symbol");
      sym = m.table[t];
      uint32_t n = m.table[t + 1] + 1;
      while (n > sym + 1) {
        const uint32_t k = (sym + n) >> 1;
        if (m.dist[k] > dv) n = k;
        else sym = k;
      }
      x = m.dist[sym] * length_;
      if (sym != m.last) y = m.dist[sym + 1] * length_;
    } else {
      x = sym = 0;
      length_ >>= kSymShift;
      uint32_t n = m.n, k = n >> 1;
      do {
        const uint32_t z = length_ * m.dist[k];
        if (z > value_) {
          n = k;
          y = z;
        } else {
          sym = k;
          x = z;
        }
      } while ((k = (sym + n) >> 1) != sym);
    }
    value_ -= x;
    length_ = y - x;
    if (length_ < kMinLength) renorm();
    ++m.count[sym];
    if (--m.until == 0) m.update();
    return sym;
  }

  // `bits` raw bits (1 to 32), most significant first as LASzip writes them (above 19 bits: the
  // low 16, then the rest).
  uint32_t bits(uint32_t bits) {
    if (bits > 19) {
      const uint32_t low = u16();
      return (this->bits(bits - 16) << 16) | low;
    }
    length_ >>= bits;
    const uint32_t sym = value_ / length_;
    if (sym >> bits) [[unlikely]]
      src_->corrupt("raw bits beyond their range");
    value_ -= length_ * sym;
    if (length_ < kMinLength) renorm();
    return sym;
  }
  uint32_t u16() { return bits(16); }
  uint32_t u32() {
    const uint32_t low = u16();
    return (u16() << 16) | low;
  }
  uint64_t u64() {
    const uint64_t low = u32();
    return (uint64_t(u32()) << 32) | low;
  }

 private:
  void renorm() {
    do value_ = (value_ << 8) | src_->byte();
    while ((length_ <<= 8) < kMinLength);
  }

  Source* src_ = nullptr;
  uint32_t value_ = 0, length_ = 0;
};

// LASzip's integer compressor: a value is coded as its difference from a prediction, the
// "corrector" c: first k, the number of bits of |c| (a symbol model per context), then c within
// [-(2^k - 1), -2^(k-1)] u [2^(k-1) + 1, 2^k] (a symbol model per k up to `bits_high` bits,
// then raw low bits); k = 0 codes c = 0 or 1 with a bit model. The result wraps into `bits` bits.
class IntDecoder {
 public:
  explicit IntDecoder(uint32_t bits = 16, uint32_t contexts = 1, uint32_t bits_high = 8) : bits_high_(bits_high) {
    if (bits && bits < 32) {
      corr_bits_ = bits;
      corr_range_ = 1u << bits;
      corr_min_ = -int32_t(corr_range_ / 2);
    } else {
      corr_bits_ = 32;
      corr_range_ = 0;
      corr_min_ = INT32_MIN;
    }
    // Made on first use (a fresh model is what LASzip's init gives): a chunk sets up many
    // compressors, most of whose contexts and corrector sizes a chunk never meets.
    m_bits_.resize(contexts);
    for (LazyModel& m : m_bits_) m.n = corr_bits_ + 1;
    m_corr_.resize(corr_bits_);
    for (uint32_t i = 1; i <= corr_bits_; ++i) m_corr_[i - 1].n = 1u << std::min(i, bits_high_);
  }

  int32_t decode(ArithDecoder& d, int32_t pred, uint32_t context = 0) {
    k_ = d.symbol(m_bits_[context].get());
    int64_t c;
    if (k_ == 0) {
      c = d.bit(m_corr0_);
    } else if (k_ < 32) {
      uint32_t v = d.symbol(m_corr_[k_ - 1].get());
      if (k_ > bits_high_) {
        const uint32_t low_bits = k_ - bits_high_;
        v = (v << low_bits) | d.bits(low_bits);
      }
      c = v >= (1u << (k_ - 1)) ? int64_t(v) + 1 : int64_t(v) - int64_t((uint64_t(1) << k_) - 1);
    } else {
      c = corr_min_;  // (k = 32: LASzip's writer codes a 32-bit difference of -2^31 so, with nothing after it)
    }
    if (corr_range_ == 0) return int32_t(uint32_t(pred) + uint32_t(int32_t(c)));
    int64_t real = int64_t(pred) + c;
    if (real < 0) real += corr_range_;
    else if (real >= int64_t(corr_range_)) real -= corr_range_;
    return int32_t(real);
  }
  uint32_t k() const { return k_; }

 private:
  uint32_t corr_bits_ = 0, corr_range_ = 0, bits_high_ = 8, k_ = 0;
  int32_t corr_min_ = 0;
  std::vector<LazyModel> m_bits_;  // per context
  BitModel m_corr0_;
  std::vector<LazyModel> m_corr_;  // [k - 1] for k = 1 .. corr_bits
};

// ---- point-wise items (compressor 1 and 2) ------------------------------------------------------

// An item's decoder lives for one chunk: its models start fresh, as LASzip's init leaves them.
class PointwiseItem {
 public:
  virtual ~PointwiseItem() = default;
  virtual void init(const uint8_t* item) = 0;                 // the chunk's raw first record
  virtual void read(ArithDecoder& d, uint8_t* item) = 0;      // the next record
};

// The 20 bytes of a LAS 1.0-1.3 point.
struct Point10 {
  int32_t x, y, z;
  uint16_t intensity;
  uint8_t flags;  // return number (3 bits), number of returns (3), scan direction, edge of flight line
  uint8_t classification;
  uint8_t scan_angle;  // scan angle rank (int8 as stored)
  uint8_t user_data;
  uint16_t source;

  void from(const uint8_t* p) {
    x = load<int32_t>(p), y = load<int32_t>(p + 4), z = load<int32_t>(p + 8);
    intensity = load<uint16_t>(p + 12);
    flags = p[14], classification = p[15], scan_angle = p[16], user_data = p[17];
    source = load<uint16_t>(p + 18);
  }
  void to(uint8_t* p) const {
    store(p, x), store(p + 4, y), store(p + 8, z);
    store(p + 12, intensity);
    p[14] = flags, p[15] = classification, p[16] = scan_angle, p[17] = user_data;
    store(p + 18, source);
  }
  uint32_t return_number() const { return flags & 7; }
  uint32_t returns() const { return (flags >> 3) & 7; }
  uint32_t scan_direction() const { return (flags >> 6) & 1; }
};

class Point10V1 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    std::fill(std::begin(last_dx_), std::end(last_dx_), 0);
    std::fill(std::begin(last_dy_), std::end(last_dy_), 0);
    incr_ = 0;
    last_.from(item);
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    const int32_t mx = median3(last_dx_), my = median3(last_dy_);
    const int32_t dx = ic_dx_.decode(d, mx);
    last_.x = wrap_add(last_.x, dx);
    uint32_t k = ic_dx_.k();
    const int32_t dy = ic_dy_.decode(d, my, std::min<uint32_t>(k, 19));
    last_.y = wrap_add(last_.y, dy);
    k = (k + ic_dy_.k()) / 2;
    last_.z = ic_z_.decode(d, last_.z, std::min<uint32_t>(k, 19));
    if (const uint32_t changed = d.symbol(m_changed_)) {
      if (changed & 32) last_.intensity = uint16_t(ic_intensity_.decode(d, last_.intensity));
      if (changed & 16) last_.flags = uint8_t(d.symbol(m_flags_[last_.flags].get()));
      if (changed & 8) last_.classification = uint8_t(d.symbol(m_class_[last_.classification].get()));
      if (changed & 4) last_.scan_angle = uint8_t(ic_scan_angle_.decode(d, last_.scan_angle, k < 3));
      if (changed & 2) last_.user_data = uint8_t(d.symbol(m_user_[last_.user_data].get()));
      if (changed & 1) last_.source = uint16_t(ic_source_.decode(d, last_.source));
    }
    last_dx_[incr_] = dx;
    last_dy_[incr_] = dy;
    incr_ = incr_ == 2 ? 0 : incr_ + 1;
    last_.to(item);
  }

 private:
  static int32_t median3(const int32_t* v) {
    if (v[0] < v[1]) return v[1] < v[2] ? v[1] : v[0] < v[2] ? v[2] : v[0];
    return v[0] < v[2] ? v[0] : v[1] < v[2] ? v[2] : v[1];
  }
  IntDecoder ic_dx_{32, 1}, ic_dy_{32, 20}, ic_z_{32, 20}, ic_intensity_{16}, ic_scan_angle_{8, 2}, ic_source_{16};
  SymbolModel m_changed_{64};
  std::array<LazyModel, 256> m_flags_ = lazy_models<256>(256), m_class_ = lazy_models<256>(256),
                             m_user_ = lazy_models<256>(256);
  Point10 last_{};
  int32_t last_dx_[3] = {}, last_dy_[3] = {};
  int incr_ = 0;
};

class Point10V2 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    for (int i = 0; i < 16; ++i) x_median_[i] = y_median_[i] = Median5{}, last_intensity_[i] = 0;
    std::fill(std::begin(last_height_), std::end(last_height_), 0);
    last_.from(item);
    last_.intensity = 0;  // (LASzip predicts the intensity from last_intensity_, not from the raw point)
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    const uint32_t changed = d.symbol(m_changed_);
    if (changed) {
      if (changed & 32) last_.flags = uint8_t(d.symbol(m_flags_[last_.flags].get()));
      const uint32_t m = kReturnMap[last_.returns()][last_.return_number()];
      if (changed & 16) {
        last_.intensity = uint16_t(ic_intensity_.decode(d, last_intensity_[m], m < 3 ? m : 3));
        last_intensity_[m] = last_.intensity;
      } else {
        last_.intensity = last_intensity_[m];
      }
      if (changed & 8) last_.classification = uint8_t(d.symbol(m_class_[last_.classification].get()));
      if (changed & 4)
        last_.scan_angle = fold(int32_t(d.symbol(m_scan_angle_[last_.scan_direction()].get())) + last_.scan_angle);
      if (changed & 2) last_.user_data = uint8_t(d.symbol(m_user_[last_.user_data].get()));
      if (changed & 1) last_.source = uint16_t(ic_source_.decode(d, last_.source));
    }
    const uint32_t n = last_.returns(), r = last_.return_number();
    const uint32_t m = kReturnMap[n][r], l = return_level(n, r), single = n == 1;
    const int32_t dx = ic_dx_.decode(d, x_median_[m].get(), single);
    last_.x = wrap_add(last_.x, dx);
    x_median_[m].add(dx);
    uint32_t k = ic_dx_.k();
    const int32_t dy = ic_dy_.decode(d, y_median_[m].get(), single + (k < 20 ? k & ~1u : 20));
    last_.y = wrap_add(last_.y, dy);
    y_median_[m].add(dy);
    k = (ic_dx_.k() + ic_dy_.k()) / 2;
    last_.z = ic_z_.decode(d, last_height_[l], single + (k < 18 ? k & ~1u : 18));
    last_height_[l] = last_.z;
    last_.to(item);
  }

 private:
  SymbolModel m_changed_{64};
  IntDecoder ic_intensity_{16, 4};
  std::array<LazyModel, 2> m_scan_angle_ = lazy_models<2>(256);
  IntDecoder ic_source_{16};
  std::array<LazyModel, 256> m_flags_ = lazy_models<256>(256), m_class_ = lazy_models<256>(256),
                             m_user_ = lazy_models<256>(256);
  IntDecoder ic_dx_{32, 2}, ic_dy_{32, 22}, ic_z_{32, 20};
  Median5 x_median_[16], y_median_[16];
  uint16_t last_intensity_[16] = {};
  int32_t last_height_[8] = {};
  Point10 last_{};
};

class GpsTime11V1 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    last_diff_ = 0, extreme_ = 0;
    last_ = load<uint64_t>(item);
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    constexpr int32_t kMultiMax = 512;
    if (last_diff_ == 0) {
      const uint32_t multi = d.symbol(m_zero_);
      if (multi == 1) {
        last_diff_ = ic_.decode(d, 0, 0);
        last_ += uint64_t(int64_t(last_diff_));
      } else if (multi == 2) {
        last_ = d.u64();
      }
    } else {
      const int32_t multi = int32_t(d.symbol(m_multi_.get()));
      if (multi < kMultiMax - 2) {
        int32_t diff;
        if (multi == 1) {
          diff = ic_.decode(d, last_diff_, 1);
          last_diff_ = diff;
          extreme_ = 0;
        } else if (multi == 0) {
          diff = ic_.decode(d, last_diff_ / 4, 2);
          if (++extreme_ > 3) last_diff_ = diff, extreme_ = 0;
        } else if (multi < 10) {
          diff = ic_.decode(d, wrap_mul(multi, last_diff_), 3);
        } else if (multi < 50) {
          diff = ic_.decode(d, wrap_mul(multi, last_diff_), 4);
        } else {
          diff = ic_.decode(d, wrap_mul(multi, last_diff_), 5);
          if (multi == kMultiMax - 3 && ++extreme_ > 3) last_diff_ = diff, extreme_ = 0;
        }
        last_ += uint64_t(int64_t(diff));
      } else if (multi < kMultiMax - 1) {
        last_ = d.u64();
      }
    }
    store(item, last_);
  }

 private:
  LazyModel m_multi_{512};
  SymbolModel m_zero_{3};
  IntDecoder ic_{32, 6};
  uint64_t last_ = 0;
  int32_t last_diff_ = 0, extreme_ = 0;
};

// The GPS-time state of GPSTIME11 v2 and of POINT14 v3: four sequences (the time may jump
// between interleaved flight lines), each with its last value and difference.
struct GpsSequences {
  static constexpr int32_t kMulti = 500, kMultiMinus = -10;
  uint32_t last = 0, next = 0;
  uint64_t time[4] = {};
  int32_t diff[4] = {}, extreme[4] = {};

  void init(uint64_t first) { *this = GpsSequences{}, time[0] = first; }

  // The differences coded as multiples of the last difference (`multi` from 0 to 510, not 1).
  void multiple(ArithDecoder& d, IntDecoder& ic, int32_t multi) {
    int32_t t;
    if (multi == 0) {
      t = ic.decode(d, 0, 7);
      count_extreme(t);
    } else if (multi < kMulti) {
      t = ic.decode(d, wrap_mul(multi, diff[last]), multi < 10 ? 2 : 3);
    } else if (multi == kMulti) {
      t = ic.decode(d, wrap_mul(kMulti, diff[last]), 4);
      count_extreme(t);
    } else {
      multi = kMulti - multi;
      if (multi > kMultiMinus) {
        t = ic.decode(d, wrap_mul(multi, diff[last]), 5);
      } else {
        t = ic.decode(d, wrap_mul(kMultiMinus, diff[last]), 6);
        count_extreme(t);
      }
    }
    time[last] += uint64_t(int64_t(t));
  }
  void count_extreme(int32_t t) {
    if (++extreme[last] > 3) diff[last] = t, extreme[last] = 0;
  }
  void small(ArithDecoder& d, IntDecoder& ic) {  // a first difference that fits 32 bits
    diff[last] = ic.decode(d, 0, 0);
    time[last] += uint64_t(int64_t(diff[last]));
    extreme[last] = 0;
  }
  void one(ArithDecoder& d, IntDecoder& ic) {  // the last difference again, corrected
    time[last] += uint64_t(int64_t(ic.decode(d, diff[last], 1)));
    extreme[last] = 0;
  }
  void full(ArithDecoder& d, IntDecoder& ic) {  // a new sequence: the high 32 bits predicted, the low raw
    next = (next + 1) & 3;
    const uint32_t high = uint32_t(ic.decode(d, int32_t(uint32_t(time[last] >> 32)), 8));
    time[next] = (uint64_t(high) << 32) | d.u32();
    last = next;
    diff[last] = 0;
    extreme[last] = 0;
  }
};

class GpsTime11V2 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    g_.init(load<uint64_t>(item));
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    constexpr uint32_t kUnchanged = 511, kFull = 512;
    for (;;) {  // a switch to another sequence codes the time again in that one
      if (g_.diff[g_.last] == 0) {
        const uint32_t multi = d.symbol(m_zero_);
        if (multi == 1) g_.small(d, ic_);
        else if (multi == 2) g_.full(d, ic_);
        else if (multi > 2) {
          g_.last = (g_.last + multi - 2) & 3;
          continue;
        }
      } else {
        const uint32_t multi = d.symbol(m_multi_.get());
        if (multi == 1) g_.one(d, ic_);
        else if (multi < kUnchanged) g_.multiple(d, ic_, int32_t(multi));
        else if (multi == kFull) g_.full(d, ic_);
        else if (multi > kFull) {
          g_.last = (g_.last + multi - kFull) & 3;
          continue;
        }
      }
      break;
    }
    store(item, g_.time[g_.last]);
  }

 private:
  LazyModel m_multi_{516};
  SymbolModel m_zero_{6};
  IntDecoder ic_{32, 9};
  GpsSequences g_;
};

class Rgb12V1 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    std::memcpy(last_, item, 6);
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    const uint32_t sym = d.symbol(m_used_);
    uint16_t c[3];
    for (uint32_t i = 0; i < 3; ++i) {
      const uint32_t lo = (sym >> (2 * i)) & 1 ? uint32_t(ic_.decode(d, last_[i] & 255, 2 * i)) & 255 : last_[i] & 255;
      const uint32_t hi = (sym >> (2 * i + 1)) & 1 ? uint32_t(ic_.decode(d, last_[i] >> 8, 2 * i + 1)) & 255
                                                    : uint32_t(last_[i] >> 8);
      c[i] = uint16_t(lo | (hi << 8));
    }
    std::memcpy(last_, c, 6);
    std::memcpy(item, c, 6);
  }

 private:
  SymbolModel m_used_{64};
  IntDecoder ic_{8, 6};
  uint16_t last_[3] = {};
};

// The RGB coding of RGB12 v2 and RGB14 / RGBNIR14 v3: which bytes changed, then each byte's
// difference, green and blue predicted from red's change.
struct RgbModels {
  LazyModel used{128};
  std::array<LazyModel, 6> diff = lazy_models<6>(256);
  // Decodes c[0..2] from `last` (c may alias nothing; last is not changed here).
  void read(ArithDecoder& d, const uint16_t* last, uint16_t* c) {
    const uint32_t sym = d.symbol(used.get());
    uint32_t r = sym & 1 ? fold(int32_t(d.symbol(diff[0].get())) + (last[0] & 255)) : last[0] & 255;
    r |= (sym & 2 ? uint32_t(fold(int32_t(d.symbol(diff[1].get())) + (last[0] >> 8))) : uint32_t(last[0] >> 8)) << 8;
    c[0] = uint16_t(r);
    if (sym & (1 << 6)) {
      int32_t delta = int32_t(c[0] & 255) - int32_t(last[0] & 255);
      uint32_t g = sym & 4 ? fold(int32_t(d.symbol(diff[2].get())) + clamp8(delta + (last[1] & 255))) : last[1] & 255;
      uint32_t b;
      if (sym & 16) {
        const int32_t s = int32_t(d.symbol(diff[4].get()));
        delta = (delta + (int32_t(g) - int32_t(last[1] & 255))) / 2;
        b = fold(s + clamp8(delta + (last[2] & 255)));
      } else {
        b = last[2] & 255;
      }
      delta = int32_t(c[0] >> 8) - int32_t(last[0] >> 8);
      uint32_t gh = sym & 8 ? fold(int32_t(d.symbol(diff[3].get())) + clamp8(delta + (last[1] >> 8))) : last[1] >> 8;
      uint32_t bh;
      if (sym & 32) {
        const int32_t s = int32_t(d.symbol(diff[5].get()));
        delta = (delta + (int32_t(gh) - int32_t(last[1] >> 8))) / 2;
        bh = fold(s + clamp8(delta + (last[2] >> 8)));
      } else {
        bh = last[2] >> 8;
      }
      c[1] = uint16_t(g | (gh << 8));
      c[2] = uint16_t(b | (bh << 8));
    } else {
      c[1] = c[2] = c[0];
    }
  }
};

class Rgb12V2 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    std::memcpy(last_, item, 6);
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    uint16_t c[3];
    m_.read(d, last_, c);
    std::memcpy(last_, c, 6);
    std::memcpy(item, c, 6);
  }

 private:
  RgbModels m_;
  uint16_t last_[3] = {};
};

class ByteV1 final : public PointwiseItem {
 public:
  explicit ByteV1(uint32_t n) : ic_(8, n), last_(n) {}
  void init(const uint8_t* item) override {
    std::memcpy(last_.data(), item, last_.size());
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    for (uint32_t i = 0; i < last_.size(); ++i) item[i] = last_[i] = uint8_t(ic_.decode(d, last_[i], i));
  }

 private:
  IntDecoder ic_;
  std::vector<uint8_t> last_;
};

class ByteV2 final : public PointwiseItem {
 public:
  explicit ByteV2(uint32_t n) : m_(n), last_(n) {
    for (LazyModel& m : m_) m.n = 256;
  }
  void init(const uint8_t* item) override {
    std::memcpy(last_.data(), item, last_.size());
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    for (uint32_t i = 0; i < last_.size(); ++i) item[i] = last_[i] = fold(int32_t(last_[i]) + int32_t(d.symbol(m_[i].get())));
  }

 private:
  std::vector<LazyModel> m_;
  std::vector<uint8_t> last_;
};

// WAVEPACKET13 (formats 4 and 5; LASzip has version 1 only): the 29 bytes of a wave packet --
// descriptor index (u8), byte offset of its waveform (u64), packet size (u32), return point
// location and the direction x(t), y(t), z(t) (float32s, coded as their int32 bits). The offset
// is coded as one of four cases, each predicted from the last case: the same offset, the last
// offset plus the last packet's size, the last offset plus a 32-bit difference (predicted from
// the last such difference), or the 64 bits raw.
class WavePacket13V1 final : public PointwiseItem {
 public:
  void init(const uint8_t* item) override {
    std::memcpy(last_, item, 29);
    last_diff_ = 0;
    last_case_ = 0;
  }
  void read(ArithDecoder& d, uint8_t* item) override {
    uint8_t w[29];
    w[0] = uint8_t(d.symbol(m_index_));
    last_case_ = d.symbol(m_offset_case_[last_case_]);
    const uint64_t last_offset = load<uint64_t>(last_ + 1);
    const uint32_t last_size = load<uint32_t>(last_ + 9);
    uint64_t offset;
    switch (last_case_) {
      case 0: offset = last_offset; break;
      case 1: offset = last_offset + last_size; break;
      case 2:
        last_diff_ = ic_offset_diff_.decode(d, last_diff_);
        offset = last_offset + uint64_t(int64_t(last_diff_));  // (wraps as LASzip's U64 + I32)
        break;
      default: offset = d.u64();
    }
    store(w + 1, offset);
    store(w + 9, uint32_t(ic_size_.decode(d, int32_t(last_size))));
    store(w + 13, ic_return_point_.decode(d, load<int32_t>(last_ + 13)));
    for (uint32_t c = 0; c < 3; ++c) store(w + 17 + 4 * c, ic_xyz_.decode(d, load<int32_t>(last_ + 17 + 4 * c), c));
    std::memcpy(last_, w, 29);
    std::memcpy(item, w, 29);
  }

 private:
  SymbolModel m_index_{256};
  SymbolModel m_offset_case_[4] = {SymbolModel(4), SymbolModel(4), SymbolModel(4), SymbolModel(4)};
  IntDecoder ic_offset_diff_{32}, ic_size_{32}, ic_return_point_{32}, ic_xyz_{32, 3};
  uint8_t last_[29] = {};
  int32_t last_diff_ = 0;
  uint32_t last_case_ = 0;
};

// ---- layered items (compressor 3, LAS 1.4) -------------------------------------------------------

// One layer: its bytes in the chunk and its own decoder. A layer of 0 bytes did not change in
// the chunk (every point keeps the chunk's first value); it is never read.
struct Layer {
  const char* name = "";
  std::string what;  // "its z layer", for errors
  uint32_t bytes = 0;
  Source src;
  ArithDecoder dec;
  bool started = false;

  bool changed() const { return bytes != 0; }
  ArithDecoder& d() {
    if (!started) [[unlikely]] {
      dec.init(&src);
      started = true;
    }
    return dec;
  }
};

// Reads a layered chunk's header (the point count, the layers' byte counts) and places the
// layers, from `at` on within [.., end).
struct ChunkReader {
  const uint8_t* file;
  uint64_t at, end;
  const std::string* path;
  size_t chunk;

  uint32_t u32(const std::string& what) {
    if (end - at < 4)
      chunk_fail(*path, chunk, at, "the chunk ends (at byte " + num(end) + ") inside " + what);
    const uint32_t v = load<uint32_t>(file + at);
    at += 4;
    return v;
  }
  void place(Layer& layer) {
    layer.what = std::string("its ") + layer.name + " layer";
    if (layer.bytes > end - at)
      chunk_fail(*path, chunk, at,
                 "the " + std::string(layer.name) + " layer's " + num(layer.bytes) + " bytes run past the chunk's end (byte " +
                     num(end) + ")");
    layer.src = Source{file, file + at, file + at + layer.bytes, file + at, path, chunk, layer.what.c_str()};
    at += layer.bytes;
  }
};

class LayeredItem {
 public:
  virtual ~LayeredItem() = default;
  virtual std::vector<Layer*> layers() = 0;                         // in the order of their byte counts
  virtual void init(const uint8_t* item, uint32_t& context) = 0;    // the chunk's raw first record
  virtual void read(uint8_t* item, uint32_t& context) = 0;
};

// The fields of a LAS 1.4 point (formats 6-10, first 30 bytes).
struct Point14 {
  int32_t x, y, z;
  uint16_t intensity;
  uint8_t return_number, returns;  // 4 bits each
  uint8_t class_flags;             // synthetic, key-point, withheld, overlap
  uint8_t channel;                 // scanner channel (2 bits)
  uint8_t scan_direction, edge;
  uint8_t classification, user_data;
  int16_t scan_angle;
  uint16_t source;
  uint64_t gps;  // the double's bits
  bool gps_changed;

  void from(const uint8_t* p) {
    x = load<int32_t>(p), y = load<int32_t>(p + 4), z = load<int32_t>(p + 8);
    intensity = load<uint16_t>(p + 12);
    return_number = p[14] & 15, returns = p[14] >> 4;
    class_flags = p[15] & 15, channel = (p[15] >> 4) & 3, scan_direction = (p[15] >> 6) & 1, edge = p[15] >> 7;
    classification = p[16], user_data = p[17];
    scan_angle = load<int16_t>(p + 18);
    source = load<uint16_t>(p + 20);
    gps = load<uint64_t>(p + 22);
    gps_changed = false;
  }
  void to(uint8_t* p) const {
    store(p, x), store(p + 4, y), store(p + 8, z);
    store(p + 12, intensity);
    p[14] = uint8_t(return_number | (returns << 4));
    p[15] = uint8_t(class_flags | (channel << 4) | (scan_direction << 6) | (edge << 7));
    p[16] = classification, p[17] = user_data;
    store(p + 18, scan_angle);
    store(p + 20, source);
    store(p + 22, gps);
  }
};

class Point14V3 final : public LayeredItem {
 public:
  Point14V3() {
    const char* names[9] = {"x/y/returns", "z", "classification", "flags", "intensity", "scan angle",
                            "user data", "point source", "GPS time"};
    for (int i = 0; i < 9; ++i) layer_[i].name = names[i];
  }
  std::vector<Layer*> layers() override {
    std::vector<Layer*> v;
    for (Layer& l : layer_) v.push_back(&l);
    return v;
  }
  void init(const uint8_t* item, uint32_t& context) override {
    Point14 p;
    p.from(item);
    for (auto& c : ctx_) c.reset();
    current_ = p.channel;
    context = current_;
    start_context(current_, p);
  }
  void read(uint8_t* item, uint32_t& context) override {
    Context* c = ctx_[current_].get();
    Point14* last = &c->last;
    // single (3) / first (1) / last (2) / intermediate (0) return of the last point, and
    // whether its GPS time changed
    const uint32_t lpr = (last->return_number == 1 ? 1 : 0) + (last->return_number >= last->returns ? 2 : 0) +
                         (last->gps_changed ? 4 : 0);
    ArithDecoder& xy = layer_[0].d();
    const uint32_t changed = xy.symbol(c->m_changed[lpr].get());
    if (changed & (1 << 6)) {  // another scanner channel
      const uint32_t channel = (current_ + xy.symbol(c->m_channel) + 1) % 4;
      if (!ctx_[channel]) start_context(channel, *last);
      current_ = channel;
      context = current_;
      c = ctx_[current_].get();
      last = &c->last;
      last->channel = uint8_t(channel);
    }
    const bool source_changed = changed & (1 << 5), gps_changed = changed & (1 << 4),
               angle_changed = changed & (1 << 3);
    const uint32_t last_n = last->returns, last_r = last->return_number;
    uint32_t n = last_n, r = last_r;
    if (changed & (1 << 2)) n = last->returns = uint8_t(xy.symbol(c->m_returns[last_n].get()));
    switch (changed & 3) {
      case 0: break;
      case 1: r = (last_r + 1) % 16; break;
      case 2: r = (last_r + 15) % 16; break;
      default:
        if (gps_changed) r = xy.symbol(c->m_return_number[last_r].get());
        else r = (last_r + xy.symbol(c->m_return_gps_same) + 2) % 16;
    }
    last->return_number = uint8_t(r);
    const uint32_t m = kReturnMap6[n][r], l = return_level8(n, r);
    const uint32_t cpr = (r == 1 ? 1 : 0) + (r >= n ? 2 : 0);  // this point's single / first / last
    const uint32_t single = n == 1, mg = (m << 1) | uint32_t(gps_changed);

    const int32_t dx = c->ic_dx.decode(xy, c->x_median[mg].get(), single);
    last->x = wrap_add(last->x, dx);
    c->x_median[mg].add(dx);
    uint32_t k = c->ic_dx.k();
    const int32_t dy = c->ic_dy.decode(xy, c->y_median[mg].get(), single + (k < 20 ? k & ~1u : 20));
    last->y = wrap_add(last->y, dy);
    c->y_median[mg].add(dy);

    if (layer_[1].changed()) {
      k = (c->ic_dx.k() + c->ic_dy.k()) / 2;
      last->z = c->ic_z.decode(layer_[1].d(), c->last_z[l], single + (k < 18 ? k & ~1u : 18));
      c->last_z[l] = last->z;
    }
    if (layer_[2].changed()) {
      const uint32_t ccc = ((last->classification & 0x1Fu) << 1) + (cpr == 3 ? 1 : 0);
      last->classification = uint8_t(layer_[2].d().symbol(c->m_class[ccc].get()));
    }
    if (layer_[3].changed()) {
      const uint32_t f = (uint32_t(last->edge) << 5) | (uint32_t(last->scan_direction) << 4) | last->class_flags;
      const uint32_t flags = layer_[3].d().symbol(c->m_flags[f].get());
      last->edge = (flags >> 5) & 1;
      last->scan_direction = (flags >> 4) & 1;
      last->class_flags = flags & 15;
    }
    if (layer_[4].changed()) {
      const uint32_t slot = (cpr << 1) | uint32_t(gps_changed);
      last->intensity = uint16_t(c->ic_intensity.decode(layer_[4].d(), c->last_intensity[slot], cpr));
      c->last_intensity[slot] = last->intensity;
    }
    if (layer_[5].changed() && angle_changed)
      last->scan_angle = int16_t(c->ic_scan_angle.decode(layer_[5].d(), last->scan_angle, gps_changed));
    if (layer_[6].changed())
      last->user_data = uint8_t(layer_[6].d().symbol(c->m_user[last->user_data / 4].get()));
    if (layer_[7].changed() && source_changed)
      last->source = uint16_t(c->ic_source.decode(layer_[7].d(), last->source));
    if (layer_[8].changed() && gps_changed) {
      read_gps(*c);
      last->gps = c->gps.time[c->gps.last];
    }
    last->to(item);
    last->gps_changed = gps_changed;
  }

 private:
  struct Context {
    Point14 last{};
    uint16_t last_intensity[8] = {};
    Median5 x_median[12], y_median[12];
    int32_t last_z[8] = {};
    std::array<LazyModel, 8> m_changed = lazy_models<8>(128);
    SymbolModel m_channel{3};
    std::array<LazyModel, 16> m_returns = lazy_models<16>(16), m_return_number = lazy_models<16>(16);
    SymbolModel m_return_gps_same{13};
    IntDecoder ic_dx{32, 2}, ic_dy{32, 22}, ic_z{32, 20};
    std::array<LazyModel, 64> m_class = lazy_models<64>(256), m_flags = lazy_models<64>(64),
                              m_user = lazy_models<64>(256);
    IntDecoder ic_intensity{16, 4}, ic_scan_angle{16, 2}, ic_source{16};
    GpsSequences gps;
    LazyModel m_gps_multi{515};
    SymbolModel m_gps_zero{5};
    IntDecoder ic_gps{32, 9};
  };

  // A channel's first point in the chunk: its models fresh, its predictions from `seed` (the
  // chunk's first point, or the last point of the channel seen before it).
  void start_context(uint32_t channel, const Point14& seed) {
    auto c = std::make_unique<Context>();
    for (int i = 0; i < 8; ++i) c->last_z[i] = seed.z, c->last_intensity[i] = seed.intensity;
    c->gps.init(seed.gps);
    c->last = seed;
    c->last.gps_changed = false;
    ctx_[channel] = std::move(c);
  }

  void read_gps(Context& c) {
    constexpr uint32_t kFull = 511;  // (v3 has no "unchanged" code: the change bit says it)
    ArithDecoder& d = layer_[8].d();
    GpsSequences& g = c.gps;
    for (;;) {
      if (g.diff[g.last] == 0) {
        const uint32_t multi = d.symbol(c.m_gps_zero);
        if (multi == 0) g.small(d, c.ic_gps);
        else if (multi == 1) g.full(d, c.ic_gps);
        else {
          g.last = (g.last + multi - 1) & 3;
          continue;
        }
      } else {
        const uint32_t multi = d.symbol(c.m_gps_multi.get());
        if (multi == 1) g.one(d, c.ic_gps);
        else if (multi < kFull) g.multiple(d, c.ic_gps, int32_t(multi));
        else if (multi == kFull) g.full(d, c.ic_gps);
        else {
          g.last = (g.last + multi - kFull) & 3;
          continue;
        }
      }
      return;
    }
  }

  Layer layer_[9];
  std::unique_ptr<Context> ctx_[4];
  uint32_t current_ = 0;
};

// RGB14 and RGBNIR14 v3 (the NIR layer when `nir`).
class Rgb14V3 final : public LayeredItem {
 public:
  Rgb14V3(bool nir, bool v4) : nir_(nir), v4_(v4) {
    rgb_.name = "RGB";
    nir_layer_.name = "NIR";
  }
  std::vector<Layer*> layers() override {
    if (nir_) return {&rgb_, &nir_layer_};
    return {&rgb_};
  }
  void init(const uint8_t* item, uint32_t& context) override {
    for (auto& c : ctx_) c.reset();
    current_ = context;
    start_context(current_, item);
  }
  void read(uint8_t* item, uint32_t& context) override {
    uint16_t* last = ctx_[current_]->last;
    if (current_ != context) {
      current_ = context;
      // (version 3, as LASzip: a switch to a channel seen before keeps predicting from the
      // previous channel's values; version 4 takes the channel's own)
      const bool seen = ctx_[current_] != nullptr;
      if (!seen) {
        uint8_t seed[8];
        std::memcpy(seed, last, 8);
        start_context(current_, seed);
      }
      if (!seen || v4_) last = ctx_[current_]->last;
    }
    Context& c = *ctx_[current_];
    uint16_t v[4];
    if (rgb_.changed()) {
      c.rgb.read(rgb_.d(), last, v);
      std::memcpy(last, v, 6);
    } else {
      std::memcpy(v, last, 6);
    }
    if (nir_) {
      if (nir_layer_.changed()) {
        ArithDecoder& d = nir_layer_.d();
        const uint32_t sym = d.symbol(c.m_nir_used);
        uint32_t lo = sym & 1 ? fold(int32_t(d.symbol(c.m_nir[0].get())) + (last[3] & 255)) : last[3] & 255;
        uint32_t hi = sym & 2 ? fold(int32_t(d.symbol(c.m_nir[1].get())) + (last[3] >> 8)) : last[3] >> 8;
        v[3] = last[3] = uint16_t(lo | (hi << 8));
      } else {
        v[3] = last[3];
      }
    }
    std::memcpy(item, v, nir_ ? 8 : 6);
  }

 private:
  struct Context {
    uint16_t last[4] = {};
    RgbModels rgb;
    SymbolModel m_nir_used{4};
    std::array<LazyModel, 2> m_nir = lazy_models<2>(256);
  };
  void start_context(uint32_t channel, const uint8_t* seed) {
    auto c = std::make_unique<Context>();
    std::memcpy(c->last, seed, nir_ ? 8 : 6);
    ctx_[channel] = std::move(c);
  }

  bool nir_, v4_;
  Layer rgb_, nir_layer_;
  std::unique_ptr<Context> ctx_[4];
  uint32_t current_ = 0;
};

class Byte14V3 final : public LayeredItem {
 public:
  Byte14V3(uint32_t n, bool v4) : n_(n), v4_(v4), layer_(n) {
    for (Layer& l : layer_) l.name = "extra byte";
  }
  std::vector<Layer*> layers() override {
    std::vector<Layer*> v;
    for (Layer& l : layer_) v.push_back(&l);
    return v;
  }
  void init(const uint8_t* item, uint32_t& context) override {
    for (auto& c : ctx_) c.reset();
    current_ = context;
    start_context(current_, item);
  }
  void read(uint8_t* item, uint32_t& context) override {
    uint8_t* last = ctx_[current_]->last.data();
    if (current_ != context) {
      current_ = context;
      const bool seen = ctx_[current_] != nullptr;  // (as in Rgb14V3)
      if (!seen) start_context(current_, last);
      if (!seen || v4_) last = ctx_[current_]->last.data();
    }
    Context& c = *ctx_[current_];
    for (uint32_t i = 0; i < n_; ++i) {
      if (layer_[i].changed()) last[i] = fold(int32_t(last[i]) + int32_t(layer_[i].d().symbol(c.m[i].get())));
      item[i] = last[i];
    }
  }

 private:
  struct Context {
    std::vector<uint8_t> last;
    std::vector<LazyModel> m;
  };
  void start_context(uint32_t channel, const uint8_t* seed) {
    auto c = std::make_unique<Context>();
    c->last.assign(seed, seed + n_);
    c->m.resize(n_);
    for (LazyModel& m : c->m) m.n = 256;
    ctx_[channel] = std::move(c);
  }

  uint32_t n_;
  bool v4_;
  std::vector<Layer> layer_;
  std::unique_ptr<Context> ctx_[4];
  uint32_t current_ = 0;
};

// WAVEPACKET14 (formats 9 and 10): its layer is skipped, as LASzip's selective decompression
// skips a layer it is not asked for; every record keeps the chunk's first point's 29 bytes (the
// waveform's descriptor index, offset, size, return point and direction). The layer is separate
// from the others, so the rest of the point decodes the same whether it is read or not.
class WavePacket14Skip final : public LayeredItem {
 public:
  WavePacket14Skip() { layer_.name = "wave packet"; }
  std::vector<Layer*> layers() override { return {&layer_}; }
  void init(const uint8_t* item, uint32_t&) override { std::memcpy(first_, item, 29); }
  void read(uint8_t* item, uint32_t&) override { std::memcpy(item, first_, 29); }

 private:
  Layer layer_;
  uint8_t first_[29] = {};
};

// ---- item lists --------------------------------------------------------------------------------

// Bytes of a point record of formats 0..10 (without extra bytes).
constexpr uint16_t kRecordSize[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};

// The items of point formats 0-10 without extra bytes, in record order.
std::vector<LazItem> format_items(int format) {
  std::vector<LazItem> v;
  if (format <= 5) {
    v.push_back({kLazPoint10, 20, 0});
    if (format == 1 || format >= 3) v.push_back({kLazGpsTime11, 8, 0});
    if (format == 2 || format == 3 || format == 5) v.push_back({kLazRgb12, 6, 0});
    if (format >= 4) v.push_back({kLazWavePacket13, 29, 0});
  } else {
    v.push_back({kLazPoint14, 30, 0});
    if (format == 7) v.push_back({kLazRgb14, 6, 0});
    if (format == 8 || format == 10) v.push_back({kLazRgbNir14, 8, 0});
    if (format >= 9) v.push_back({kLazWavePacket14, 29, 0});
  }
  return v;
}

std::string items_text(const std::vector<LazItem>& items) {
  std::string s;
  for (const LazItem& it : items) {
    if (!s.empty()) s += ", ";
    s += laz_item_name(it.type) + " (" + num(it.size) + " bytes)";
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::string laz_item_name(uint16_t type) {
  switch (type) {
    case kLazByte: return "BYTE";
    case 1: return "SHORT";
    case 2: return "INT";
    case 3: return "LONG";
    case 4: return "FLOAT";
    case 5: return "DOUBLE";
    case kLazPoint10: return "POINT10";
    case kLazGpsTime11: return "GPSTIME11";
    case kLazRgb12: return "RGB12";
    case kLazWavePacket13: return "WAVEPACKET13";
    case kLazPoint14: return "POINT14";
    case kLazRgb14: return "RGB14";
    case kLazRgbNir14: return "RGBNIR14";
    case kLazWavePacket14: return "WAVEPACKET14";
    case kLazByte14: return "BYTE14";
    default: return "item type " + num(type);
  }
}

LazInfo parse_laz_vlr(const char* payload, size_t size, const std::string& path, uint64_t at) {
  const auto* p = reinterpret_cast<const uint8_t*>(payload);
  auto bad = [&](uint64_t off, const std::string& why) {
    fail(path, "byte " + num(at + off) + ": the LASzip VLR ('laszip encoded' 22204): " + why);
  };
  if (size < 34) bad(0, "it has " + num(size) + " bytes, fewer than the 34 of its fixed part");
  LazInfo z;
  z.compressor = load<uint16_t>(p);
  z.coder = load<uint16_t>(p + 2);
  z.version_major = p[4];
  z.version_minor = p[5];
  z.version_revision = load<uint16_t>(p + 6);
  z.options = load<uint32_t>(p + 8);
  z.chunk_size = load<uint32_t>(p + 12);
  z.special_evlr_count = load<int64_t>(p + 16);
  z.special_evlr_offset = load<int64_t>(p + 24);
  const uint16_t n = load<uint16_t>(p + 32);
  if (34 + 6 * uint64_t(n) > size)
    bad(32, num(n) + " items need " + num(34 + 6 * uint64_t(n)) + " bytes, the VLR has " + num(size));
  for (uint16_t i = 0; i < n; ++i) {
    const uint8_t* q = p + 34 + 6 * size_t(i);
    z.items.push_back({load<uint16_t>(q), load<uint16_t>(q + 2), load<uint16_t>(q + 4)});
  }
  return z;
}

void check_laz_items(const LazInfo& z, int format, uint16_t record_length, const std::string& path, uint64_t at) {
  auto bad = [&](uint64_t off, const std::string& why) {
    fail(path, "byte " + num(at + off) + ": the LASzip VLR ('laszip encoded' 22204): " + why);
  };
  if (z.compressor == 0 || z.compressor > 3)
    bad(0, "compressor " + num(z.compressor) +
               (z.compressor == 0 ? " (none) does not compress the points" : " is unknown (1 point-wise, 2 point-wise chunked, 3 layered chunked)"));
  if (z.coder != 0) bad(2, "coder " + num(z.coder) + " is unknown (0, arithmetic, is the only one)");
  if (format < 0 || format > 10) bad(0, "point format " + num(uint64_t(format)) + " does not exist (0 to 10)");
  const bool layered = z.compressor == 3;
  if (layered != (format >= 6))
    bad(0, (layered ? std::string("the layered compressor (3) is for point formats 6-10, not ")
                    : std::string("the point-wise compressor (") + num(z.compressor) + ") is for point formats 0-5, not ") +
               num(uint64_t(format)));
  // The format's items in order, then the extra bytes as one BYTE / BYTE14 item.
  const std::vector<LazItem> want = format_items(format);
  const uint16_t base = kRecordSize[format];
  const std::string expected = items_text(want) + (record_length > base ? ", " + laz_item_name(layered ? kLazByte14 : kLazByte) +
                                                                               " (" + num(record_length - base) + " bytes)"
                                                                         : "");
  auto mismatch = [&](const std::string& why) {
    bad(34, why + ": point format " + num(uint64_t(format)) + " with " + num(record_length) + "-byte records has the items " +
                expected + "; the VLR lists " + items_text(z.items));
  };
  if (record_length < base) mismatch("the record length is shorter than the format's " + num(base) + " bytes");
  size_t i = 0;
  for (; i < want.size(); ++i)
    if (i >= z.items.size() || z.items[i].type != want[i].type || z.items[i].size != want[i].size)
      mismatch("item " + num(i + 1) + " does not match");
  uint32_t total = base;
  for (; i < z.items.size(); ++i) {
    if (z.items[i].type != (layered ? kLazByte14 : kLazByte) || z.items[i].size == 0)
      mismatch("item " + num(i + 1) + " is not extra bytes");
    total += z.items[i].size;
  }
  if (total != record_length) mismatch("the items add up to " + num(total) + " bytes, not the record length");
  for (size_t k = 0; k < z.items.size(); ++k) {
    const LazItem& it = z.items[k];
    const uint64_t off = 34 + 6 * k + 4;
    const std::string name = laz_item_name(it.type) + " version " + num(it.version);
    if (it.type == kLazWavePacket13 && it.version != 1)
      bad(off, name + " is unknown (LASzip codes wave packets of point formats 4 and 5 with version 1 only)");
    if (layered) {
      // (version 2: what early laz-perf wrote for the same coding; LASzip reads it as 3)
      if (it.version < 2 || it.version > 4) bad(off, name + " is unknown (layered items have version 3 or 4)");
    } else if (it.version != 1 && it.version != 2) {
      bad(off, name + " is unknown (point-wise items have version 1 or 2)");
    }
  }
}

// ---- chunks ------------------------------------------------------------------------------------

struct LazChunkDecoder::Impl {
  const uint8_t* file;
  size_t size;
  const LazInfo* info;
  LazChunk chunk;
  size_t index;
  uint16_t record_length;
  const std::string* path;
  uint64_t done = 0;  // records read
  uint64_t end = 0;   // byte after the data read
  // point-wise
  Source src;
  ArithDecoder dec;
  std::vector<std::unique_ptr<PointwiseItem>> pointwise;
  // layered
  std::vector<std::unique_ptr<LayeredItem>> layered;
  uint32_t context = 0;
  bool channel_context = false;  // POINT14 version 4: the context is the current channel on every point
  std::vector<uint32_t> offsets;  // of the items in a record

  void start(uint8_t* out) {
    const LazInfo& z = *info;
    uint64_t at = chunk.start;
    if (chunk.start > chunk.end || chunk.end > size)
      chunk_fail(*path, index, chunk.start, "the chunk's bytes " + num(chunk.start) + " to " + num(chunk.end) +
                                                 " are not inside the file (" + num(size) + " bytes)");
    if (chunk.end - at < record_length)
      chunk_fail(*path, index, at,
                 "the chunk's first point (" + num(record_length) + " bytes, stored raw) runs past the chunk's end (byte " +
                     num(chunk.end) + ")");
    std::memcpy(out, file + at, record_length);
    at += record_length;
    uint32_t off = 0;
    for (const LazItem& it : z.items) offsets.push_back(off), off += it.size;
    if (z.compressor != 3) {
      for (const LazItem& it : z.items) {
        const bool v1 = it.version == 1;
        switch (it.type) {
          case kLazPoint10:
            pointwise.push_back(v1 ? std::unique_ptr<PointwiseItem>(new Point10V1) : std::make_unique<Point10V2>());
            break;
          case kLazGpsTime11:
            pointwise.push_back(v1 ? std::unique_ptr<PointwiseItem>(new GpsTime11V1) : std::make_unique<GpsTime11V2>());
            break;
          case kLazRgb12:
            pointwise.push_back(v1 ? std::unique_ptr<PointwiseItem>(new Rgb12V1) : std::make_unique<Rgb12V2>());
            break;
          case kLazWavePacket13: pointwise.push_back(std::make_unique<WavePacket13V1>()); break;
          default:  // kLazByte (check_laz_items let nothing else through)
            pointwise.push_back(v1 ? std::unique_ptr<PointwiseItem>(new ByteV1(it.size))
                                   : std::make_unique<ByteV2>(it.size));
        }
      }
      for (size_t i = 0; i < pointwise.size(); ++i) pointwise[i]->init(out + offsets[i]);
      // The arithmetic stream follows the raw point; LASzip reads its first four bytes even in a
      // chunk of one point (its writer always ends a stream with them).
      src = Source{file, file + at, file + chunk.end, file + chunk.start, path, index, "the chunk"};
      dec.init(&src);
      end = src.offset();
    } else {
      for (const LazItem& it : z.items) {
        switch (it.type) {
          case kLazPoint14:
            layered.push_back(std::make_unique<Point14V3>());
            channel_context = it.version == 4;
            break;
          case kLazRgb14: layered.push_back(std::make_unique<Rgb14V3>(false, it.version == 4)); break;
          case kLazRgbNir14: layered.push_back(std::make_unique<Rgb14V3>(true, it.version == 4)); break;
          case kLazWavePacket14: layered.push_back(std::make_unique<WavePacket14Skip>()); break;
          default: layered.push_back(std::make_unique<Byte14V3>(it.size, it.version == 4));  // kLazByte14
        }
      }
      ChunkReader r{file, at, chunk.end, path, index};
      r.u32("its point count");  // (LASzip reads it and goes by the chunk table's or the VLR's count)
      std::vector<Layer*> all;
      for (auto& item : layered)
        for (Layer* l : item->layers()) {
          l->bytes = r.u32(std::string("the byte count of its ") + l->name + " layer");
          all.push_back(l);
        }
      for (Layer* l : all) r.place(*l);
      end = r.at;
      context = 0;
      for (size_t i = 0; i < layered.size(); ++i) layered[i]->init(out + offsets[i], context);
    }
  }

  void next(uint8_t* out) {  // (every item writes all of its bytes)
    if (!pointwise.empty()) {
      for (size_t i = 0; i < pointwise.size(); ++i) pointwise[i]->read(dec, out + offsets[i]);
      end = src.offset();
    } else {
      // POINT14 version 3 sets the context only when the channel changes: the other points give
      // the items after it context 0 (LASzip's reader starts each point from 0); version 4 keeps
      // the current channel.
      if (!channel_context) context = 0;
      for (size_t i = 0; i < layered.size(); ++i) layered[i]->read(out + offsets[i], context);
    }
  }
};

LazChunkDecoder::LazChunkDecoder(const char* file, size_t size, const LazInfo& info, const LazChunk& chunk, size_t index,
                                 uint16_t record_length, const std::string& path)
    : impl_(std::make_unique<Impl>()) {
  impl_->file = reinterpret_cast<const uint8_t*>(file);
  impl_->size = size;
  impl_->info = &info;
  impl_->chunk = chunk;
  impl_->index = index;
  impl_->record_length = record_length;
  impl_->path = &path;
}

LazChunkDecoder::~LazChunkDecoder() = default;

void LazChunkDecoder::read(uint8_t* out, uint64_t n) {
  Impl& s = *impl_;
  if (n > s.chunk.points - s.done)
    fail(*s.path, "chunk " + num(s.index) + ": " + num(n) + " more points asked of a chunk of " + num(s.chunk.points) +
                      " with " + num(s.done) + " read");
  for (uint64_t i = 0; i < n; ++i, out += s.record_length) {
    if (s.done++ == 0) s.start(out);
    else s.next(out);
  }
}

uint64_t LazChunkDecoder::end() const { return impl_->end; }

uint64_t decode_laz_chunk(const char* file, size_t size, const LazInfo& info, const LazChunk& chunk, size_t index,
                          uint16_t record_length, uint8_t* out, const std::string& path) {
  LazChunkDecoder d(file, size, info, chunk, index, record_length, path);
  d.read(out, chunk.points);
  return d.end();
}

LazChunks laz_chunks(const char* file_chars, size_t size, const LazInfo& z, uint64_t point_offset, uint64_t points,
                     uint16_t record_length, uint64_t data_end, const std::string& path) {
  const auto* file = reinterpret_cast<const uint8_t*>(file_chars);
  LazChunks out;
  out.data_end = std::min<uint64_t>(data_end, size);
  auto bad = [&](uint64_t at, const std::string& why) { fail(path, "byte " + num(at) + ": " + why); };
  if (point_offset > out.data_end)
    bad(point_offset, "the point data starts after its end (byte " + num(out.data_end) + ")");
  if (points == 0) return out;
  auto plausible = [&](size_t chunk, uint64_t at, uint64_t n, uint64_t bytes) {
    if (n > kMaxPointsPerByte * bytes)
      chunk_fail(path, chunk, at,
                 num(n) + " points cannot be coded in " + num(bytes) + " bytes (LASzip codes at most ~1,000 points a byte)");
  };
  if (!z.chunked()) {  // one stream for all points, no table
    plausible(0, point_offset, points, out.data_end - point_offset);
    out.chunks.push_back({0, points, point_offset, out.data_end});
    out.tabled = 1;
    return out;
  }
  if (out.data_end - point_offset < 8)
    bad(point_offset, "the point data (" + num(out.data_end - point_offset) +
                          " bytes) ends before the 8-byte offset of the chunk table that starts it");
  const uint64_t chunks_start = point_offset + 8;
  const bool variable = z.variable_chunks();
  const uint64_t fixed = z.chunk_size;

  // The table's place: -1 means "in the file's last 8 bytes" (a writer that could not seek);
  // 0, or the pointer's own place (an interrupted writer), mean there is none.
  int64_t table = load<int64_t>(file + point_offset);
  uint64_t table_field = point_offset;
  if (table == -1) {
    if (size < 8) bad(0, "the file is too short to end with a chunk table offset");
    table_field = size - 8;
    table = load<int64_t>(file + table_field);
  }
  std::string missing;
  if (table == 0 || uint64_t(table) == point_offset) {
    missing = "there is no chunk table (its offset at byte " + num(table_field) + " is " + std::to_string(table) + ")";
  } else if (table < int64_t(chunks_start) || uint64_t(table) > size || size - uint64_t(table) < 8) {
    bad(table_field, "the chunk table's offset " + std::to_string(table) +
                         (table < int64_t(chunks_start) ? " lies before the chunks (byte " + num(chunks_start) + ")"
                                                        : " lies outside the file (" + num(size) + " bytes)"));
  }

  // The table: version 0, the chunk count, then per chunk (integer-compressed, each predicted
  // from the previous chunk's) the point count (variable chunks only) and the byte count.
  uint64_t covered = 0, at = chunks_start;
  if (missing.empty()) {
    const uint64_t t = uint64_t(table);
    const uint32_t version = load<uint32_t>(file + t), count = load<uint32_t>(file + t + 4);
    if (version != 0) {
      missing = "the chunk table at byte " + num(t) + " has version " + num(version) + ", not 0";
    } else if (count > 0) {
      Source src{file, file + t + 8, file + size, file + t + 8, &path, kNoChunk, "the chunk table"};
      ArithDecoder d;
      IntDecoder ic(32, 2);
      uint32_t last_points = 0, last_bytes = 0;
      try {
        d.init(&src);
        for (uint32_t i = 0; i < count && covered < points; ++i) {
          const uint32_t n = variable ? uint32_t(ic.decode(d, int32_t(last_points), 0)) : 0;
          const uint32_t b = uint32_t(ic.decode(d, int32_t(last_bytes), 1));
          last_points = n, last_bytes = b;
          const uint64_t chunk_points = variable ? n : std::min<uint64_t>(fixed, points - covered);
          const size_t k = out.chunks.size();
          if (b < record_length || uint64_t(b) > size - at) {
            const std::string why = b < record_length
                                        ? "the chunk table gives it " + num(b) + " bytes, fewer than its first point's " +
                                              num(record_length)
                                        : "the chunk table gives it bytes " + num(at) + " to " + num(at + b) +
                                              ", past the end of the file (" + num(size) + " bytes)";
            if (variable || b >= record_length) chunk_fail(path, k, at, why);
            missing = "chunk " + num(k) + " at byte " + num(at) + ": " + why;  // a fixed size: walk on from here
            break;
          }
          if (variable && n == 0) chunk_fail(path, k, at, "the chunk table gives it 0 points");
          plausible(k, at, chunk_points, b);
          out.chunks.push_back({covered, std::min<uint64_t>(chunk_points, points - covered), at, at + b});
          covered += out.chunks.back().points;
          at += b;
        }
      } catch (const Error& e) {
        // A table that ends early: as LASzip, keep the chunks read and walk on (fixed sizes).
        if (variable) throw;
        missing = e.what();
      }
    }
    if (missing.empty() && covered < points && variable)
      bad(t, "the chunk table's " + num(out.chunks.size()) + " chunks hold " + num(covered) + " points, fewer than the " +
                 num(points) + " the header declares");
  }
  out.tabled = out.chunks.size();
  if (covered == points) return out;

  // The rest, found by decoding one chunk after the other (fixed sizes only).
  if (variable)
    bad(table_field, missing + ", and the chunks have variable sizes (chunk size " + num(z.chunk_size) +
                         " in the LASzip VLR): their point counts are unknown");
  uint64_t walk_end = out.data_end;
  if (table > int64_t(at) && uint64_t(table) < walk_end) walk_end = uint64_t(table);
  if (at >= walk_end)
    chunk_fail(path, out.chunks.size(), at, "the point data ends (byte " + num(walk_end) + ") before the chunk");
  const uint64_t rest = points - covered, bytes = walk_end - at;
  const uint64_t chunks = (rest + fixed - 1) / fixed;
  if (chunks > bytes / record_length)
    chunk_fail(path, out.chunks.size(), at,
               num(rest) + " points in chunks of " + num(fixed) + " need " + num(chunks) + " chunks, which cannot fit in the " +
                   num(bytes) + " bytes left (" + missing + ")");
  plausible(out.chunks.size(), at, rest, bytes);
  for (uint64_t k = 0; k < chunks; ++k) {
    const uint64_t n = std::min<uint64_t>(fixed, points - covered);
    out.chunks.push_back({covered, n, k == 0 ? at : 0, walk_end});
    covered += n;
  }
  out.data_end = walk_end;
  return out;
}

void decode_laz(const char* file, size_t size, const LazInfo& info, uint64_t point_offset, uint64_t points,
                uint16_t record_length, uint64_t data_end, const std::string& path, const LazSink& sink) {
  const LazChunks cs = laz_chunks(file, size, info, point_offset, points, record_length, data_end, path);
  constexpr uint64_t kBlock = 4096;  // records decoded at a time: memory is bounded whatever a chunk claims
  std::vector<uint8_t> buf(kBlock * record_length);
  uint64_t next = 0;
  for (size_t i = 0; i < cs.chunks.size(); ++i) {
    LazChunk c = cs.chunks[i];
    if (i > cs.tabled) c.start = next;
    if (i >= cs.tabled && c.start >= c.end)
      chunk_fail(path, i, c.start, "the point data ends (byte " + num(c.end) + ") before the chunk");
    LazChunkDecoder d(file, size, info, c, i, record_length, path);
    for (uint64_t k = 0; k < c.points; k += kBlock) {
      const uint64_t n = std::min(kBlock, c.points - k);
      d.read(buf.data(), n);
      sink(c.first_point + k, n, buf.data());
    }
    next = d.end();
  }
}

}  // namespace sl
