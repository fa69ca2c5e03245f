#include "tests/formats/clouds/laz_writer.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "formats/clouds/laz_coder.h"

namespace sl::test {

namespace {

using namespace sl::laz;

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void put(std::string& s, size_t at, T v) {
  std::memcpy(s.data() + at, &v, sizeof v);
}
template <class T>
void append(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// LASzip's arithmetic encoder (the mirror of the decoder in laz.cpp).
class ArithEncoder {
 public:
  void bit(BitModel& m, uint32_t sym) {
    const uint32_t x = m.zero_prob * (length_ >> kBitShift);
    if (sym == 0) {
      length_ = x;
      ++m.zero_count;
    } else {
      add(x);
      length_ -= x;
    }
    if (length_ < kMinLength) renorm();
    if (--m.until == 0) m.update();
  }
  void symbol(SymbolModel& m, uint32_t sym) {
    uint32_t x;
    if (sym == m.last) {
      x = m.dist[sym] * (length_ >> kSymShift);
      add(x);
      length_ -= x;
    } else {
      length_ >>= kSymShift;
      x = m.dist[sym] * length_;
      add(x);
      length_ = m.dist[sym + 1] * length_ - x;
    }
    if (length_ < kMinLength) renorm();
    ++m.count[sym];
    if (--m.until == 0) m.update();
  }
  void bits(uint32_t n, uint32_t v) {
    if (n > 19) {
      bits(16, v & 0xFFFF);
      v >>= 16;
      n -= 16;
    }
    length_ >>= n;
    add(v * length_);
    if (length_ < kMinLength) renorm();
  }
  void u32(uint32_t v) {
    bits(16, v & 0xFFFF);
    bits(16, v >> 16);
  }
  std::string done() {
    bool another = true;
    if (length_ > 2 * kMinLength) {
      add(kMinLength);
      length_ = kMinLength >> 1;
    } else {
      add(kMinLength >> 1);
      length_ = kMinLength >> 9;
      another = false;
    }
    renorm();
    out_.push_back(0);
    out_.push_back(0);
    if (another) out_.push_back(0);
    return std::string(out_.begin(), out_.end());
  }

 private:
  void add(uint32_t x) {
    const uint32_t before = base_;
    base_ += x;
    if (before > base_) {  // carry into the bytes already written
      size_t p = out_.size() - 1;
      while (out_[p] == 0xFF) out_[p--] = 0;
      ++out_[p];
    }
  }
  void renorm() {
    do {
      out_.push_back(uint8_t(base_ >> 24));
      base_ <<= 8;
    } while ((length_ <<= 8) < kMinLength);
  }
  std::vector<uint8_t> out_;
  uint32_t base_ = 0, length_ = 0xFFFFFFFFu;
};

class IntEncoder {
 public:
  explicit IntEncoder(uint32_t bits = 16, uint32_t contexts = 1, uint32_t bits_high = 8) : bits_high_(bits_high) {
    if (bits && bits < 32) {
      corr_bits_ = bits;
      corr_range_ = 1u << bits;
      corr_min_ = -int32_t(corr_range_ / 2);
      corr_max_ = corr_min_ + int32_t(corr_range_) - 1;
    } else {
      corr_bits_ = 32;
    }
    for (uint32_t i = 0; i < contexts; ++i) m_bits_.emplace_back(corr_bits_ + 1);
    for (uint32_t i = 1; i <= corr_bits_; ++i) m_corr_.emplace_back(1u << std::min(i, bits_high_));
  }
  void encode(ArithEncoder& e, int32_t pred, int32_t real, uint32_t context = 0) {
    int64_t c;
    if (corr_range_) {
      c = int64_t(real) - pred;
      if (c < corr_min_) c += corr_range_;
      else if (c > corr_max_) c -= corr_range_;
    } else {
      c = int32_t(uint32_t(real) - uint32_t(pred));
    }
    const uint64_t c1 = c <= 0 ? uint64_t(-c) : uint64_t(c - 1);
    k_ = 0;
    while (c1 >> k_) ++k_;
    e.symbol(m_bits_[context], k_);
    if (k_ == 32) return;  // (32-bit values only: c = -2^31, which k = 32 alone says, as in LASzip)
    if (k_ == 0) {
      e.bit(m_corr0_, uint32_t(c));
      return;
    }
    uint32_t v = uint32_t(c < 0 ? c + int64_t((uint64_t(1) << k_) - 1) : c - 1);
    if (k_ <= bits_high_) {
      e.symbol(m_corr_[k_ - 1], v);
    } else {
      const uint32_t low_bits = k_ - bits_high_;
      e.symbol(m_corr_[k_ - 1], v >> low_bits);
      e.bits(low_bits, v & ((1u << low_bits) - 1));
    }
  }
  uint32_t k() const { return k_; }

 private:
  uint32_t corr_bits_ = 0, corr_range_ = 0, bits_high_ = 8, k_ = 0;
  int32_t corr_min_ = 0, corr_max_ = 0;
  std::vector<SymbolModel> m_bits_;
  BitModel m_corr0_;
  std::vector<SymbolModel> m_corr_;
};

bool fits32(int64_t v) { return v == int64_t(int32_t(v)); }

// The GPS time sequences, encoder side (LASzip's writer's choices: a 32-bit difference, a
// multiple of the last one, another of the four sequences, or a new one).
struct GpsWriter {
  uint32_t last = 0, next = 0;
  uint64_t time[4] = {};
  int32_t diff[4] = {}, extreme[4] = {};
  SymbolModel multi_model, zero_model;
  IntEncoder ic{32, 9};
  bool v3;

  explicit GpsWriter(bool layered) : multi_model(layered ? 515 : 516), zero_model(layered ? 5 : 6), v3(layered) {}
  void init(uint64_t first) {
    last = next = 0;
    for (int i = 0; i < 4; ++i) time[i] = 0, diff[i] = 0, extreme[i] = 0;
    time[0] = first;
  }
  void count_extreme(int32_t t) {
    if (++extreme[last] > 3) diff[last] = t, extreme[last] = 0;
  }
  void full(ArithEncoder& e, uint64_t t) {
    ic.encode(e, int32_t(uint32_t(time[last] >> 32)), int32_t(uint32_t(t >> 32)), 8);
    e.u32(uint32_t(t));
    next = (next + 1) & 3;
    last = next;
    time[last] = t;
    diff[last] = 0;
    extreme[last] = 0;
  }
  void write(ArithEncoder& e, uint64_t t) {
    const uint32_t full_code = v3 ? 511 : 512, zero_base = v3 ? 0 : 1;  // v2 codes "unchanged" as 0 / 511
    for (;;) {
      const int64_t d64 = int64_t(t - time[last]);
      if (diff[last] == 0) {
        if (!v3 && t == time[last]) return e.symbol(zero_model, 0);
        if (fits32(d64)) {
          e.symbol(zero_model, zero_base);
          diff[last] = int32_t(d64);
          ic.encode(e, 0, diff[last], 0);
          time[last] = t;
          extreme[last] = 0;
          return;
        }
        if (switched(e, t, zero_model, zero_base + 2 - 1)) continue;
        e.symbol(zero_model, zero_base + 1);
        return full(e, t);
      }
      if (!v3 && t == time[last]) return e.symbol(multi_model, 511);
      if (!fits32(d64)) {
        if (switched(e, t, multi_model, full_code)) continue;
        e.symbol(multi_model, full_code);
        return full(e, t);
      }
      const int32_t d = int32_t(d64);
      const double ratio = double(d) / double(diff[last]);
      const int64_t multi = std::llround(std::clamp(ratio, -1e6, 1e6));
      if (multi == 1) {
        e.symbol(multi_model, 1);
        ic.encode(e, diff[last], d, 1);
        extreme[last] = 0;
      } else if (multi > 0 && multi < 500) {
        e.symbol(multi_model, uint32_t(multi));
        ic.encode(e, wrap_mul(int32_t(multi), diff[last]), d, multi < 10 ? 2 : 3);
      } else if (multi >= 500) {
        e.symbol(multi_model, 500);
        ic.encode(e, wrap_mul(500, diff[last]), d, 4);
        count_extreme(d);
      } else if (multi < 0 && multi > -10) {
        e.symbol(multi_model, uint32_t(500 - multi));
        ic.encode(e, wrap_mul(int32_t(multi), diff[last]), d, 5);
      } else if (multi <= -10) {
        e.symbol(multi_model, 510);
        ic.encode(e, wrap_mul(-10, diff[last]), d, 6);
        count_extreme(d);
      } else {
        e.symbol(multi_model, 0);
        ic.encode(e, 0, d, 7);
        count_extreme(d);
      }
      time[last] = t;
      return;
    }
  }
  // Another sequence within 32 bits of t: code the switch (base + i) and go on in it.
  bool switched(ArithEncoder& e, uint64_t t, SymbolModel& m, uint32_t base) {
    for (uint32_t i = 1; i < 4; ++i)
      if (fits32(int64_t(t - time[(last + i) & 3]))) {
        e.symbol(m, base + i);
        last = (last + i) & 3;
        return true;
      }
    return false;
  }
};

// ---- point-wise, version 2 -----------------------------------------------------------------

struct PointwiseWriter {
  virtual ~PointwiseWriter() = default;
  virtual void init(const uint8_t* item) = 0;
  virtual void write(ArithEncoder& e, const uint8_t* item) = 0;
};

class Point10Writer final : public PointwiseWriter {
 public:
  void init(const uint8_t* item) override {
    std::memcpy(last_, item, 20);
    last_[12] = last_[13] = 0;
  }
  void write(ArithEncoder& e, const uint8_t* p) override {
    const uint32_t n = (p[14] >> 3) & 7, r = p[14] & 7, m = kReturnMap[n][r], l = return_level(n, r), single = n == 1;
    const uint16_t intensity = load<uint16_t>(p + 12), source = load<uint16_t>(p + 18);
    const uint32_t changed = (uint32_t(last_[14] != p[14]) << 5) | (uint32_t(last_intensity_[m] != intensity) << 4) |
                             (uint32_t(last_[15] != p[15]) << 3) | (uint32_t(last_[16] != p[16]) << 2) |
                             (uint32_t(last_[17] != p[17]) << 1) | uint32_t(load<uint16_t>(last_ + 18) != source);
    e.symbol(m_changed_, changed);
    if (changed & 32) e.symbol(m_flags_[last_[14]].get(), p[14]);
    if (changed & 16) ic_intensity_.encode(e, last_intensity_[m], intensity, m < 3 ? m : 3);
    last_intensity_[m] = intensity;
    if (changed & 8) e.symbol(m_class_[last_[15]].get(), p[15]);
    if (changed & 4) e.symbol(m_scan_angle_[(p[14] >> 6) & 1], fold(int32_t(p[16]) - int32_t(last_[16])));
    if (changed & 2) e.symbol(m_user_[last_[17]].get(), p[17]);
    if (changed & 1) ic_source_.encode(e, load<uint16_t>(last_ + 18), source);
    const int32_t dx = int32_t(uint32_t(load<int32_t>(p)) - uint32_t(load<int32_t>(last_)));
    ic_dx_.encode(e, x_median_[m].get(), dx, single);
    x_median_[m].add(dx);
    uint32_t k = ic_dx_.k();
    const int32_t dy = int32_t(uint32_t(load<int32_t>(p + 4)) - uint32_t(load<int32_t>(last_ + 4)));
    ic_dy_.encode(e, y_median_[m].get(), dy, single + (k < 20 ? k & ~1u : 20));
    y_median_[m].add(dy);
    k = (ic_dx_.k() + ic_dy_.k()) / 2;
    const int32_t z = load<int32_t>(p + 8);
    ic_z_.encode(e, last_height_[l], z, single + (k < 18 ? k & ~1u : 18));
    last_height_[l] = z;
    std::memcpy(last_, p, 20);
  }

 private:
  SymbolModel m_changed_{64};
  IntEncoder ic_intensity_{16, 4};
  SymbolModel m_scan_angle_[2] = {SymbolModel(256), SymbolModel(256)};
  IntEncoder ic_source_{16};
  std::array<LazyModel, 256> m_flags_ = lazy_models<256>(256), m_class_ = lazy_models<256>(256),
                             m_user_ = lazy_models<256>(256);
  IntEncoder ic_dx_{32, 2}, ic_dy_{32, 22}, ic_z_{32, 20};
  Median5 x_median_[16], y_median_[16];
  uint16_t last_intensity_[16] = {};
  int32_t last_height_[8] = {};
  uint8_t last_[20] = {};
};

class GpsTime11Writer final : public PointwiseWriter {
 public:
  void init(const uint8_t* item) override { g_.init(load<uint64_t>(item)); }
  void write(ArithEncoder& e, const uint8_t* item) override { g_.write(e, load<uint64_t>(item)); }

 private:
  GpsWriter g_{false};
};

// RGB (RGB12 v2, RGB14 and RGBNIR14 v3): the mirror of RgbModels::read in laz.cpp.
struct RgbWriterModels {
  SymbolModel used{128};
  SymbolModel diff[6] = {SymbolModel(256), SymbolModel(256), SymbolModel(256),
                         SymbolModel(256), SymbolModel(256), SymbolModel(256)};
  void write(ArithEncoder& e, const uint16_t* last, const uint16_t* c) {
    uint32_t sym = uint32_t((last[0] & 0xFF) != (c[0] & 0xFF)) | (uint32_t((last[0] & 0xFF00) != (c[0] & 0xFF00)) << 1) |
                   (uint32_t((last[1] & 0xFF) != (c[1] & 0xFF)) << 2) | (uint32_t((last[1] & 0xFF00) != (c[1] & 0xFF00)) << 3) |
                   (uint32_t((last[2] & 0xFF) != (c[2] & 0xFF)) << 4) | (uint32_t((last[2] & 0xFF00) != (c[2] & 0xFF00)) << 5);
    if (c[0] != c[1] || c[0] != c[2]) sym |= 1 << 6;
    e.symbol(used, sym);
    int32_t dl = 0, dh = 0;
    if (sym & 1) dl = int32_t(c[0] & 255) - int32_t(last[0] & 255), e.symbol(diff[0], fold(dl));
    if (sym & 2) dh = int32_t(c[0] >> 8) - int32_t(last[0] >> 8), e.symbol(diff[1], fold(dh));
    if (sym & 64) {
      if (sym & 4) e.symbol(diff[2], fold(int32_t(c[1] & 255) - clamp8(dl + (last[1] & 255))));
      if (sym & 16) {
        dl = (dl + int32_t(c[1] & 255) - int32_t(last[1] & 255)) / 2;
        e.symbol(diff[4], fold(int32_t(c[2] & 255) - clamp8(dl + (last[2] & 255))));
      }
      if (sym & 8) e.symbol(diff[3], fold(int32_t(c[1] >> 8) - clamp8(dh + (last[1] >> 8))));
      if (sym & 32) {
        dh = (dh + int32_t(c[1] >> 8) - int32_t(last[1] >> 8)) / 2;
        e.symbol(diff[5], fold(int32_t(c[2] >> 8) - clamp8(dh + (last[2] >> 8))));
      }
    }
  }
};

class Rgb12Writer final : public PointwiseWriter {
 public:
  void init(const uint8_t* item) override { std::memcpy(last_, item, 6); }
  void write(ArithEncoder& e, const uint8_t* item) override {
    uint16_t c[3];
    std::memcpy(c, item, 6);
    m_.write(e, last_, c);
    std::memcpy(last_, c, 6);
  }

 private:
  RgbWriterModels m_;
  uint16_t last_[3] = {};
};

class ByteWriter final : public PointwiseWriter {
 public:
  explicit ByteWriter(uint32_t n) : last_(n) {
    for (uint32_t i = 0; i < n; ++i) m_.emplace_back(256);
  }
  void init(const uint8_t* item) override { std::memcpy(last_.data(), item, last_.size()); }
  void write(ArithEncoder& e, const uint8_t* item) override {
    for (size_t i = 0; i < last_.size(); ++i) e.symbol(m_[i], fold(int32_t(item[i]) - int32_t(last_[i]))), last_[i] = item[i];
  }

 private:
  std::vector<SymbolModel> m_;
  std::vector<uint8_t> last_;
};

// WAVEPACKET13 v1 (formats 4 and 5): the writer's choice of offset case, as LASzip's encoder
// makes it -- the same offset, the last offset plus the last size, a difference that fits 32
// bits, or the offset raw.
class WavePacket13Writer final : public PointwiseWriter {
 public:
  void init(const uint8_t* item) override {
    std::memcpy(last_, item, 29);
    last_diff_ = 0;
    last_case_ = 0;
  }
  void write(ArithEncoder& e, const uint8_t* w) override {
    e.symbol(m_index_, w[0]);
    const uint64_t offset = load<uint64_t>(w + 1), last_offset = load<uint64_t>(last_ + 1);
    const uint32_t last_size = load<uint32_t>(last_ + 9);
    const int64_t diff = int64_t(offset - last_offset);
    uint32_t c = 3;
    if (fits32(diff)) c = diff == 0 ? 0 : int32_t(diff) == int32_t(last_size) ? 1 : 2;
    e.symbol(m_offset_case_[last_case_], c);
    if (c == 2) {
      ic_offset_diff_.encode(e, last_diff_, int32_t(diff));
      last_diff_ = int32_t(diff);
    } else if (c == 3) {
      e.u32(uint32_t(offset));
      e.u32(uint32_t(offset >> 32));
    }
    last_case_ = c;
    ic_size_.encode(e, int32_t(last_size), load<int32_t>(w + 9));
    ic_return_point_.encode(e, load<int32_t>(last_ + 13), load<int32_t>(w + 13));
    for (uint32_t k = 0; k < 3; ++k) ic_xyz_.encode(e, load<int32_t>(last_ + 17 + 4 * k), load<int32_t>(w + 17 + 4 * k), k);
    std::memcpy(last_, w, 29);
  }

 private:
  SymbolModel m_index_{256};
  SymbolModel m_offset_case_[4] = {SymbolModel(4), SymbolModel(4), SymbolModel(4), SymbolModel(4)};
  IntEncoder ic_offset_diff_{32}, ic_size_{32}, ic_return_point_{32}, ic_xyz_{32, 3};
  uint8_t last_[29] = {};
  int32_t last_diff_ = 0;
  uint32_t last_case_ = 0;
};

// ---- layered, version 3 --------------------------------------------------------------------

struct LayerOut {
  ArithEncoder e;
  bool changed = false;
  std::string bytes() { return changed ? e.done() : std::string(); }
};

struct LayeredWriter {
  virtual ~LayeredWriter() = default;
  virtual void init(const uint8_t* item, uint32_t& context) = 0;
  virtual void write(const uint8_t* item, uint32_t& context) = 0;
  virtual std::vector<std::string> layers() = 0;  // at the chunk's end
};

struct P14 {
  int32_t x, y, z;
  uint16_t intensity;
  uint8_t return_number, returns, class_flags, channel, scan_direction, edge, classification, user_data;
  int16_t scan_angle;
  uint16_t source;
  uint64_t gps;
  bool gps_changed;
  void from(const uint8_t* p) {
    x = load<int32_t>(p), y = load<int32_t>(p + 4), z = load<int32_t>(p + 8);
    intensity = load<uint16_t>(p + 12);
    return_number = p[14] & 15, returns = p[14] >> 4;
    class_flags = p[15] & 15, channel = (p[15] >> 4) & 3, scan_direction = (p[15] >> 6) & 1, edge = p[15] >> 7;
    classification = p[16], user_data = p[17];
    scan_angle = load<int16_t>(p + 18), source = load<uint16_t>(p + 20), gps = load<uint64_t>(p + 22);
    gps_changed = false;
  }
};

class Point14Writer final : public LayeredWriter {
 public:
  void init(const uint8_t* item, uint32_t& context) override {
    P14 p;
    p.from(item);
    for (auto& c : ctx_) c.reset();
    for (LayerOut& l : layer_) l = LayerOut{};
    current_ = p.channel;
    context = current_;
    start(current_, p);
  }
  void write(const uint8_t* item, uint32_t& context) override {
    P14 p;
    p.from(item);
    Ctx* c = ctx_[current_].get();
    P14* last = &c->last;
    const uint32_t lpr = (last->return_number == 1 ? 1 : 0) + (last->return_number >= last->returns ? 2 : 0) +
                         (last->gps_changed ? 4 : 0);
    const bool channel_changed = p.channel != current_;
    Ctx* nc = c;
    if (channel_changed) {
      if (!ctx_[p.channel]) start(p.channel, *last);
      nc = ctx_[p.channel].get();
    }
    P14* nl = &nc->last;
    const bool source_changed = p.source != nl->source, gps_changed = p.gps != nl->gps,
               angle_changed = p.scan_angle != nl->scan_angle;
    const uint32_t n = p.returns, r = p.return_number, last_n = nl->returns, last_r = nl->return_number;
    uint32_t changed = (uint32_t(channel_changed) << 6) | (uint32_t(source_changed) << 5) | (uint32_t(gps_changed) << 4) |
                       (uint32_t(angle_changed) << 3) | (uint32_t(n != last_n) << 2);
    if (r != last_r) changed |= r == (last_r + 1) % 16 ? 1 : r == (last_r + 15) % 16 ? 2 : 3;
    ArithEncoder& xy = layer_[0].e;
    layer_[0].changed = true;
    xy.symbol(c->m_changed[lpr], changed);
    if (channel_changed) {
      xy.symbol(c->m_channel, (p.channel + 4 - current_ - 1) % 4);
      current_ = p.channel;
      context = current_;
      c = nc;
      last = nl;
      last->channel = p.channel;
    }
    if (n != last_n) xy.symbol(c->m_returns[last_n].get(), n), last->returns = uint8_t(n);
    if ((changed & 3) == 3) {
      if (gps_changed) xy.symbol(c->m_return_number[last_r].get(), r);
      else xy.symbol(c->m_return_gps_same, (r + 16 - last_r - 2) % 16);
    }
    last->return_number = uint8_t(r);
    const uint32_t m = kReturnMap6[n][r], l = return_level8(n, r);
    const uint32_t cpr = (r == 1 ? 1 : 0) + (r >= n ? 2 : 0), single = n == 1, mg = (m << 1) | uint32_t(gps_changed);
    const int32_t dx = int32_t(uint32_t(p.x) - uint32_t(last->x));
    c->ic_dx.encode(xy, c->x_median[mg].get(), dx, single);
    c->x_median[mg].add(dx);
    last->x = p.x;
    uint32_t k = c->ic_dx.k();
    const int32_t dy = int32_t(uint32_t(p.y) - uint32_t(last->y));
    c->ic_dy.encode(xy, c->y_median[mg].get(), dy, single + (k < 20 ? k & ~1u : 20));
    c->y_median[mg].add(dy);
    last->y = p.y;
    k = (c->ic_dx.k() + c->ic_dy.k()) / 2;
    c->ic_z.encode(layer_[1].e, c->last_z[l], p.z, single + (k < 18 ? k & ~1u : 18));
    c->last_z[l] = p.z;
    layer_[1].changed |= p.z != last->z;
    last->z = p.z;
    const uint32_t ccc = ((last->classification & 0x1Fu) << 1) + (cpr == 3 ? 1 : 0);
    layer_[2].e.symbol(c->m_class[ccc].get(), p.classification);
    layer_[2].changed |= p.classification != last->classification;
    last->classification = p.classification;
    const uint32_t f = (uint32_t(last->edge) << 5) | (uint32_t(last->scan_direction) << 4) | last->class_flags;
    const uint32_t flags = (uint32_t(p.edge) << 5) | (uint32_t(p.scan_direction) << 4) | p.class_flags;
    layer_[3].e.symbol(c->m_flags[f].get(), flags);
    layer_[3].changed |= flags != f;
    last->edge = p.edge, last->scan_direction = p.scan_direction, last->class_flags = p.class_flags;
    const uint32_t slot = (cpr << 1) | uint32_t(gps_changed);
    c->ic_intensity.encode(layer_[4].e, c->last_intensity[slot], p.intensity, cpr);
    c->last_intensity[slot] = p.intensity;
    layer_[4].changed |= p.intensity != last->intensity;
    last->intensity = p.intensity;
    if (angle_changed) {
      c->ic_scan_angle.encode(layer_[5].e, last->scan_angle, p.scan_angle, gps_changed);
      layer_[5].changed = true;
      last->scan_angle = p.scan_angle;
    }
    layer_[6].e.symbol(c->m_user[last->user_data / 4].get(), p.user_data);
    layer_[6].changed |= p.user_data != last->user_data;
    last->user_data = p.user_data;
    if (source_changed) {
      c->ic_source.encode(layer_[7].e, last->source, p.source);
      layer_[7].changed = true;
      last->source = p.source;
    }
    if (gps_changed) {
      c->gps.write(layer_[8].e, p.gps);
      layer_[8].changed = true;
      last->gps = p.gps;
    }
    last->gps_changed = gps_changed;
  }
  std::vector<std::string> layers() override {
    std::vector<std::string> v;
    for (LayerOut& l : layer_) v.push_back(l.bytes());
    return v;
  }

 private:
  struct Ctx {
    P14 last{};
    uint16_t last_intensity[8] = {};
    Median5 x_median[12], y_median[12];
    int32_t last_z[8] = {};
    SymbolModel m_changed[8] = {SymbolModel(128), SymbolModel(128), SymbolModel(128), SymbolModel(128),
                                SymbolModel(128), SymbolModel(128), SymbolModel(128), SymbolModel(128)};
    SymbolModel m_channel{3};
    std::array<LazyModel, 16> m_returns = lazy_models<16>(16), m_return_number = lazy_models<16>(16);
    SymbolModel m_return_gps_same{13};
    IntEncoder ic_dx{32, 2}, ic_dy{32, 22}, ic_z{32, 20};
    std::array<LazyModel, 64> m_class = lazy_models<64>(256), m_flags = lazy_models<64>(64),
                              m_user = lazy_models<64>(256);
    IntEncoder ic_intensity{16, 4}, ic_scan_angle{16, 2}, ic_source{16};
    GpsWriter gps{true};
  };
  void start(uint32_t channel, const P14& seed) {
    auto c = std::make_unique<Ctx>();
    for (int i = 0; i < 8; ++i) c->last_z[i] = seed.z, c->last_intensity[i] = seed.intensity;
    c->gps.init(seed.gps);
    c->last = seed;
    c->last.gps_changed = false;
    ctx_[channel] = std::move(c);
  }
  LayerOut layer_[9];
  std::unique_ptr<Ctx> ctx_[4];
  uint32_t current_ = 0;
};

class Rgb14Writer final : public LayeredWriter {
 public:
  Rgb14Writer(bool nir, bool v4) : nir_(nir), v4_(v4) {}
  void init(const uint8_t* item, uint32_t& context) override {
    for (auto& c : ctx_) c.reset();
    rgb_ = LayerOut{}, nir_layer_ = LayerOut{};
    current_ = context;
    start(current_, item);
  }
  void write(const uint8_t* item, uint32_t& context) override {
    uint16_t* last = ctx_[current_]->last;
    if (current_ != context) {
      current_ = context;
      const bool seen = ctx_[current_] != nullptr;
      if (!seen) {
        uint8_t seed[8];
        std::memcpy(seed, last, 8);
        start(current_, seed);
      }
      if (!seen || v4_) last = ctx_[current_]->last;
    }
    Ctx& c = *ctx_[current_];
    uint16_t v[4] = {};
    std::memcpy(v, item, nir_ ? 8 : 6);
    c.rgb.write(rgb_.e, last, v);
    rgb_.changed |= std::memcmp(last, v, 6) != 0;
    std::memcpy(last, v, 6);
    if (nir_) {
      const uint32_t sym = uint32_t((last[3] & 0xFF) != (v[3] & 0xFF)) | (uint32_t((last[3] & 0xFF00) != (v[3] & 0xFF00)) << 1);
      nir_layer_.e.symbol(c.m_nir_used, sym);
      if (sym & 1) nir_layer_.e.symbol(c.m_nir[0], fold(int32_t(v[3] & 255) - int32_t(last[3] & 255)));
      if (sym & 2) nir_layer_.e.symbol(c.m_nir[1], fold(int32_t(v[3] >> 8) - int32_t(last[3] >> 8)));
      nir_layer_.changed |= sym != 0;
      last[3] = v[3];
    }
  }
  std::vector<std::string> layers() override {
    if (nir_) return {rgb_.bytes(), nir_layer_.bytes()};
    return {rgb_.bytes()};
  }

 private:
  struct Ctx {
    uint16_t last[4] = {};
    RgbWriterModels rgb;
    SymbolModel m_nir_used{4};
    SymbolModel m_nir[2] = {SymbolModel(256), SymbolModel(256)};
  };
  void start(uint32_t channel, const uint8_t* seed) {
    auto c = std::make_unique<Ctx>();
    std::memcpy(c->last, seed, nir_ ? 8 : 6);
    ctx_[channel] = std::move(c);
  }
  bool nir_, v4_;
  LayerOut rgb_, nir_layer_;
  std::unique_ptr<Ctx> ctx_[4];
  uint32_t current_ = 0;
};

// WAVEPACKET14: our decoder skips the layer (as LASzip's selective decompression does): a
// chunk whose wave packets all equal its first point's writes none (0 bytes: "unchanged"),
// any other the raw packets as a placeholder no other decoder would read.
class WavePacket14Writer final : public LayeredWriter {
 public:
  void init(const uint8_t* item, uint32_t&) override {
    std::memcpy(first_, item, 29);
    raw_.clear();
    changed_ = false;
  }
  void write(const uint8_t* item, uint32_t&) override {
    changed_ |= std::memcmp(item, first_, 29) != 0;
    raw_.append(reinterpret_cast<const char*>(item), 29);
  }
  std::vector<std::string> layers() override { return {changed_ ? raw_ : std::string()}; }

 private:
  uint8_t first_[29] = {};
  std::string raw_;
  bool changed_ = false;
};

class Byte14Writer final : public LayeredWriter {
 public:
  Byte14Writer(uint32_t n, bool v4) : n_(n), v4_(v4), layer_(n) {}
  void init(const uint8_t* item, uint32_t& context) override {
    for (auto& c : ctx_) c.reset();
    for (LayerOut& l : layer_) l = LayerOut{};
    current_ = context;
    start(current_, item);
  }
  void write(const uint8_t* item, uint32_t& context) override {
    uint8_t* last = ctx_[current_]->last.data();
    if (current_ != context) {
      current_ = context;
      const bool seen = ctx_[current_] != nullptr;
      if (!seen) start(current_, last);
      if (!seen || v4_) last = ctx_[current_]->last.data();
    }
    Ctx& c = *ctx_[current_];
    for (uint32_t i = 0; i < n_; ++i) {
      layer_[i].e.symbol(c.m[i], fold(int32_t(item[i]) - int32_t(last[i])));
      layer_[i].changed |= item[i] != last[i];
      last[i] = item[i];
    }
  }
  std::vector<std::string> layers() override {
    std::vector<std::string> v;
    for (LayerOut& l : layer_) v.push_back(l.bytes());
    return v;
  }

 private:
  struct Ctx {
    std::vector<uint8_t> last;
    std::vector<SymbolModel> m;
  };
  void start(uint32_t channel, const uint8_t* seed) {
    auto c = std::make_unique<Ctx>();
    c->last.assign(seed, seed + n_);
    for (uint32_t i = 0; i < n_; ++i) c->m.emplace_back(256);
    ctx_[channel] = std::move(c);
  }
  uint32_t n_;
  bool v4_;
  std::vector<LayerOut> layer_;
  std::unique_ptr<Ctx> ctx_[4];
  uint32_t current_ = 0;
};

struct Item {
  uint16_t type, size, version;
};

// One chunk of `n` records.
std::string write_chunk(const std::vector<Item>& items, const uint8_t* rec, uint32_t n, uint16_t len, bool layered) {
  std::string out(reinterpret_cast<const char*>(rec), len);
  std::vector<uint32_t> off;
  uint32_t o = 0;
  for (const Item& it : items) off.push_back(o), o += it.size;
  if (!layered) {
    std::vector<std::unique_ptr<PointwiseWriter>> w;
    for (const Item& it : items) {
      if (it.type == 6) w.push_back(std::make_unique<Point10Writer>());
      else if (it.type == 7) w.push_back(std::make_unique<GpsTime11Writer>());
      else if (it.type == 8) w.push_back(std::make_unique<Rgb12Writer>());
      else if (it.type == 9) w.push_back(std::make_unique<WavePacket13Writer>());
      else w.push_back(std::make_unique<ByteWriter>(it.size));
    }
    for (size_t i = 0; i < w.size(); ++i) w[i]->init(rec + off[i]);
    ArithEncoder e;
    for (uint32_t p = 1; p < n; ++p)
      for (size_t i = 0; i < w.size(); ++i) w[i]->write(e, rec + size_t(p) * len + off[i]);
    return out + e.done();
  }
  std::vector<std::unique_ptr<LayeredWriter>> w;
  for (const Item& it : items) {
    if (it.type == 10) w.push_back(std::make_unique<Point14Writer>());
    else if (it.type == 11) w.push_back(std::make_unique<Rgb14Writer>(false, it.version == 4));
    else if (it.type == 12) w.push_back(std::make_unique<Rgb14Writer>(true, it.version == 4));
    else if (it.type == 13) w.push_back(std::make_unique<WavePacket14Writer>());
    else w.push_back(std::make_unique<Byte14Writer>(it.size, it.version == 4));
  }
  uint32_t context = 0;
  for (size_t i = 0; i < w.size(); ++i) w[i]->init(rec + off[i], context);
  const bool v4 = items[0].version == 4;  // POINT14 v4: the context is the current channel on every point
  for (uint32_t p = 1; p < n; ++p) {
    if (!v4) context = 0;  // v3: set only on a change (LASzip, laz-perf and laz-rs agree)
    for (size_t i = 0; i < w.size(); ++i) w[i]->write(rec + size_t(p) * len + off[i], context);
  }
  append(out, n);
  std::string layers;
  for (auto& x : w)
    for (const std::string& l : x->layers()) append(out, uint32_t(l.size())), layers += l;
  return out + layers;
}

}  // namespace

std::string laz_from_las(const std::string& las, const LazWriteOptions& opt) {
  const auto* d = reinterpret_cast<const uint8_t*>(las.data());
  if (las.size() < 227 || las.compare(0, 4, "LASF") != 0) throw std::runtime_error("laz_from_las: not a LAS file");
  const int minor = d[25];
  const uint16_t header = load<uint16_t>(d + 94);
  const uint32_t point_offset = load<uint32_t>(d + 96), nvlr = load<uint32_t>(d + 100);
  const int format = d[104] & 0x3F;
  const uint16_t len = load<uint16_t>(d + 105);
  uint64_t points = load<uint32_t>(d + 107);
  uint64_t evlr_start = 0;
  uint32_t nevlr = 0;
  if (minor == 4) {
    if (load<uint64_t>(d + 247)) points = load<uint64_t>(d + 247);
    evlr_start = load<uint64_t>(d + 235), nevlr = load<uint32_t>(d + 243);
  }
  static const uint16_t base_size[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};
  if (format > 10) throw std::runtime_error("laz_from_las: format not written");
  const bool layered = opt.compressor ? opt.compressor == 3 : format >= 6;
  std::vector<Item> items;
  if (format < 6) {
    items.push_back({6, 20, 2});
    if (format == 1 || format >= 3) items.push_back({7, 8, 2});
    if (format == 2 || format == 3 || format == 5) items.push_back({8, 6, 2});
    if (format == 4 || format == 5) items.push_back({9, 29, 1});  // (LASzip has version 1 only)
    if (len > base_size[format]) items.push_back({0, uint16_t(len - base_size[format]), 2});
  } else {
    const uint16_t v = uint16_t(opt.layered_version);
    items.push_back({10, 30, v});
    if (format == 7) items.push_back({11, 6, v});
    if (format == 8 || format == 10) items.push_back({12, 8, v});
    if (format >= 9) items.push_back({13, 29, v});
    if (len > base_size[format]) items.push_back({14, uint16_t(len - base_size[format]), v});
  }
  const int compressor = opt.compressor ? opt.compressor : layered ? 3 : 2;
  const bool variable = opt.chunk_size == 0xFFFFFFFFu;

  // The VLR.
  std::string vlr(54, '\0');
  std::memcpy(vlr.data() + 2, "laszip encoded", 14);
  put<uint16_t>(vlr, 18, 22204);
  std::string payload;
  append<uint16_t>(payload, uint16_t(compressor));
  append<uint16_t>(payload, 0);
  append<uint8_t>(payload, 3), append<uint8_t>(payload, 4), append<uint16_t>(payload, 3);
  append<uint32_t>(payload, 0);
  append<uint32_t>(payload, compressor == 1 ? 0 : opt.chunk_size);
  append<int64_t>(payload, -1), append<int64_t>(payload, -1);
  append<uint16_t>(payload, uint16_t(items.size()));
  for (const Item& it : items) append(payload, it.type), append(payload, it.size), append(payload, it.version);
  put<uint16_t>(vlr, 20, uint16_t(payload.size()));
  std::memcpy(vlr.data() + 22, "streamline test writer", 22);
  vlr += payload;

  // Header and VLRs, the new VLR after the last one (COPC: its info VLR first of all).
  size_t vlr_end = header;
  for (uint32_t k = 0; k < nvlr; ++k) vlr_end += 54 + load<uint16_t>(d + vlr_end + 20);
  std::string copc_vlr;
  if (opt.copc) {
    if (minor != 4 || format < 6 || !variable) throw std::runtime_error("laz_from_las: COPC needs LAS 1.4, formats 6-8, variable chunks");
    copc_vlr.assign(54 + 160, '\0');
    std::memcpy(copc_vlr.data() + 2, "copc", 4);
    put<uint16_t>(copc_vlr, 18, 1);
    put<uint16_t>(copc_vlr, 20, 160);
    std::memcpy(copc_vlr.data() + 22, "copc info", 9);
  }
  std::string out = las.substr(0, header) + copc_vlr + las.substr(header, vlr_end - header) + vlr +
                    las.substr(vlr_end, point_offset - vlr_end);
  const uint32_t new_offset = uint32_t(out.size());
  put<uint32_t>(out, 96, new_offset);
  put<uint32_t>(out, 100, nvlr + 1 + (opt.copc ? 1 : 0));
  put<uint8_t>(out, 104, uint8_t(format | 0x80));

  // Chunks.
  std::vector<uint32_t> counts;
  if (compressor == 1) counts.push_back(uint32_t(points));
  else if (variable) counts = opt.chunk_points;
  else
    for (uint64_t done = 0; done < points; done += opt.chunk_size)
      counts.push_back(uint32_t(std::min<uint64_t>(opt.chunk_size, points - done)));
  const uint8_t* rec = d + point_offset;
  if (compressor != 1) out.append(8, '\0');
  std::vector<uint32_t> bytes;
  uint64_t first = 0;
  for (uint32_t n : counts) {
    const std::string c = write_chunk(items, rec + first * len, n, len, layered);
    bytes.push_back(uint32_t(c.size()));
    out += c;
    first += n;
  }
  if (first != points) throw std::runtime_error("laz_from_las: the chunks do not hold the points");
  if (compressor != 1) {
    const uint64_t table_at = out.size();
    append<uint32_t>(out, 0);
    append<uint32_t>(out, uint32_t(counts.size()));
    ArithEncoder e;
    IntEncoder ic(32, 2);
    for (size_t i = 0; i < counts.size(); ++i) {
      if (variable) ic.encode(e, int32_t(i ? counts[i - 1] : 0), int32_t(counts[i]), 0);
      ic.encode(e, int32_t(i ? bytes[i - 1] : 0), int32_t(bytes[i]), 1);
    }
    if (!counts.empty()) out += e.done();
    int64_t field = int64_t(table_at);
    if (opt.table == LazWriteOptions::Table::kNone) field = 0;
    if (opt.table == LazWriteOptions::Table::kAtEnd) field = -1;
    put<int64_t>(out, new_offset, field);
    if (opt.table == LazWriteOptions::Table::kAtEnd) append<int64_t>(out, int64_t(table_at));
  }
  std::string hierarchy;
  if (opt.copc) {  // one node per chunk: the root, then level-1 nodes
    uint64_t at = new_offset + 8;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int32_t level = i ? 1 : 0, k = int32_t(i ? i - 1 : 0);
      append<int32_t>(hierarchy, level), append<int32_t>(hierarchy, k & 1), append<int32_t>(hierarchy, (k >> 1) & 1),
          append<int32_t>(hierarchy, (k >> 2) & 1);
      append<uint64_t>(hierarchy, at), append<int32_t>(hierarchy, int32_t(bytes[i])), append<int32_t>(hierarchy, int32_t(counts[i]));
      at += bytes[i];
    }
  }
  if (minor == 4 && (nevlr > 0 || opt.copc)) {
    put<uint64_t>(out, 235, out.size());
    put<uint32_t>(out, 243, nevlr + (opt.copc ? 1 : 0));
    if (opt.copc) {
      std::string e(60, '\0');
      std::memcpy(e.data() + 2, "copc", 4);
      put<uint16_t>(e, 18, 1000);
      put<uint64_t>(e, 20, hierarchy.size());
      std::memcpy(e.data() + 28, "EPT hierarchy", 13);
      const uint64_t payload_at = out.size() + 60;
      out += e + hierarchy;
      // The info VLR: center and half size of the points' cube, spacing, the hierarchy page, GPS range.
      const size_t info = header + 54;
      double lo[3], hi[3];
      for (int a = 0; a < 3; ++a) hi[a] = load<double>(d + 179 + 16 * a), lo[a] = load<double>(d + 187 + 16 * a);
      double half = 0;
      for (int a = 0; a < 3; ++a) put<double>(out, info + 8 * a, (lo[a] + hi[a]) / 2), half = std::max(half, (hi[a] - lo[a]) / 2);
      put<double>(out, info + 24, half);
      put<double>(out, info + 32, half / 64);
      put<uint64_t>(out, info + 40, payload_at);
      put<uint64_t>(out, info + 48, hierarchy.size());
    }
    if (nevlr > 0) out += las.substr(evlr_start);
  }
  return out;
}

}  // namespace sl::test
