// Synthetic LAS files whose points look like airborne LiDAR (pulses with several returns, GPS
// time per pulse, interleaved flight lines, scanner channels, colours, extra bytes), so that a
// LAZ writer and decoder meet every path of the LASzip items. Tests only.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace sl::test {

struct SynthLasOptions {
  int version_minor = 2;  // 2, 3 or 4
  int format = 0;         // 0-10
  uint16_t extra_bytes = 0;
  uint64_t points = 1000;
  uint64_t seed = 1;
  bool evlr = false;      // 1.4: an EVLR after the points
};

inline std::string synth_las(const SynthLasOptions& o) {
  static const uint16_t base_size[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};
  uint64_t s = o.seed * 0x9E3779B97F4A7C15ull + 12345;
  auto rnd = [&s]() {
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  auto uni = [&](uint64_t n) { return n ? rnd() % n : 0; };
  const uint16_t header = o.version_minor == 4 ? 375 : o.version_minor == 3 ? 235 : 227;
  const uint16_t len = uint16_t(base_size[o.format] + o.extra_bytes);
  const std::string vlr_payload = "synthetic";
  const uint32_t point_offset = header + 54 + uint32_t(vlr_payload.size());
  std::string f(point_offset + o.points * len, '\0');
  auto put = [&f](size_t at, auto v) { std::memcpy(f.data() + at, &v, sizeof v); };
  std::memcpy(f.data(), "LASF", 4);
  f[24] = 1, f[25] = char(o.version_minor);
  std::memcpy(f.data() + 26, "streamline test", 15);
  std::memcpy(f.data() + 58, "synth_las", 9);
  if (o.format >= 6) put(6, uint16_t(0x10));
  put(94, header);
  put(96, point_offset);
  put(100, uint32_t(1));
  put(104, uint8_t(o.format));
  put(105, len);
  if (o.format < 6) put(107, uint32_t(o.points));
  const double scale = 0.01, offset[3] = {512000, 5403000, 0};
  for (int a = 0; a < 3; ++a) put(131 + 8 * a, scale), put(155 + 8 * a, offset[a]);
  // a VLR
  std::memcpy(f.data() + header + 2, "streamline", 10);
  put(header + 18, uint16_t(7));
  put(header + 20, uint16_t(vlr_payload.size()));
  std::memcpy(f.data() + header + 54, vlr_payload.data(), vlr_payload.size());

  // Two flight lines interleaved (GPS times 10^5 s apart), scanner channels, pulses of 1-5
  // returns (up to 15 in 1.4), a colour that drifts.
  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  double t[2] = {350000.125, 450000.5};
  int line = 0, channel = 0;
  int32_t x = 1000, y = 2000, ground = 1500;
  uint16_t rgb[4] = {30000, 32000, 28000, 20000};
  uint8_t cls = 2, user = 0;
  int32_t scan = 0;
  uint64_t i = 0, pulse = 0;
  // Wave packets (formats 4, 5, 9, 10): descriptor, waveform offset, size, return point,
  // direction. A pulse's returns share its waveform; the next pulse's mostly follows it, now and
  // then after a gap or far away (more than 4 GiB on), and its size changes now and then.
  uint64_t wave_offset = 4096;
  uint32_t wave_size = 128;
  float direction[3] = {0.01f, -0.02f, -1.f};
  auto wave_packet = [&](uint8_t* w, uint32_t r) {
    if (r == 1 && i > 0) {
      const uint64_t kind = uni(40);
      wave_offset += kind == 0 ? (uint64_t(1) << 33) + uni(1000) : kind < 4 ? wave_size + uni(100000) : wave_size;
      if (uni(30) == 0) wave_size = uint32_t(64 * (1 + uni(8)));
      // Now and then x(t) changes sign and nothing else: its int32 bits differ from the last by
      // exactly 2^31, a corrector LASzip codes as k = 32 with nothing after it.
      if (uni(25) == 0) direction[0] = -direction[0];
      else for (float& d : direction) d += float(int(uni(11)) - 5) * 1e-3f;
    }
    const float where[4] = {float(uni(1000)) / 10.f, direction[0], direction[1], direction[2]};
    w[0] = uint8_t(1 + (i / 100) % 3);
    std::memcpy(w + 1, &wave_offset, 8);
    std::memcpy(w + 9, &wave_size, 4);
    std::memcpy(w + 13, where, 16);
  };
  while (i < o.points) {
    if (pulse % 400 == 399) line ^= 1, x += int32_t(uni(5000)) - 2500, y += 3000;
    if (o.format >= 6 && pulse % 37 == 0) channel = int(uni(4));
    if (pulse % 977 == 976) t[line] += 1e6 * double(1 + uni(3));  // a jump: a new GPS sequence
    t[line] += 1e-5 * double(1 + uni(3));
    ++pulse;
    scan = int32_t((pulse % 200) * 10 - 1000);
    x += 25 + int32_t(uni(7)) - 3;
    y += int32_t(uni(5)) - 2;
    ground += int32_t(uni(21)) - 10;
    const uint32_t max_returns = o.format >= 6 ? 15 : 5;
    uint32_t n = uni(10) < 6 ? 1 : 1 + uint32_t(uni(max_returns));
    if (o.format < 6 && n > 7) n = 7;
    const bool dup = uni(50) == 0;  // a duplicated point
    for (uint32_t r = 1; r <= n && i < o.points; ++r, ++i) {
      uint8_t* p = reinterpret_cast<uint8_t*>(f.data()) + point_offset + i * len;
      const int32_t X = x + int32_t(uni(3)), Y = y, Z = ground + int32_t((n - r) * 300 + uni(50));
      const int32_t xyz[3] = {X, Y, Z};
      for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], xyz[a]), hi[a] = std::max(hi[a], xyz[a]);
      std::memcpy(p, xyz, 12);
      const uint16_t intensity = uint16_t(uni(4) == 0 ? uni(65536) : 20000 + 3000 * r + uni(500));
      std::memcpy(p + 12, &intensity, 2);
      if (uni(20) == 0) cls = uint8_t(uni(o.format >= 6 ? 64 : 32));
      else if (r == n) cls = 2;
      else if (uni(3) == 0) cls = 5;
      if (uni(30) == 0) user = uint8_t(uni(256));
      const uint16_t source = uint16_t(100 + line);
      const uint8_t dir = (pulse / 200) & 1, edge = (pulse % 200) == 0;
      if (o.format < 6) {
        p[14] = uint8_t(r | (n << 3) | (dir << 6) | (edge << 7));
        p[15] = uint8_t(cls | (uni(40) == 0 ? 0x20 << uni(3) : 0));
        p[16] = uint8_t(int8_t(scan / 40));
        p[17] = user;
        std::memcpy(p + 18, &source, 2);
        size_t at = 20;
        if (o.format == 1 || o.format >= 3) std::memcpy(p + at, &t[line], 8), at += 8;
        if (o.format == 2 || o.format == 3 || o.format == 5) {
          for (int c = 0; c < 3; ++c) rgb[c] = uint16_t(rgb[c] + uni(257) - 128);
          if (uni(10) == 0) rgb[1] = rgb[2] = rgb[0];
          std::memcpy(p + at, rgb, 6);
        }
      } else {
        p[14] = uint8_t(r | (n << 4));
        p[15] = uint8_t((uni(40) == 0 ? uni(16) : 0) | (channel << 4) | (dir << 6) | (edge << 7));
        p[16] = cls;
        p[17] = user;
        const int16_t angle = int16_t(scan * 5);
        std::memcpy(p + 18, &angle, 2);
        std::memcpy(p + 20, &source, 2);
        std::memcpy(p + 22, &t[line], 8);
        if (o.format == 7 || o.format == 8 || o.format == 10) {
          for (int c = 0; c < 4; ++c) rgb[c] = uint16_t(rgb[c] + uni(257) - 128);
          if (uni(10) == 0) rgb[1] = rgb[2] = rgb[0];
          std::memcpy(p + 30, rgb, o.format == 7 ? 6 : 8);
        }
        if (o.format >= 9) wave_packet(p + (o.format == 9 ? 30 : 38), r);
      }
      if (o.format == 4 || o.format == 5) wave_packet(p + (o.format == 4 ? 28 : 34), r);
      for (uint16_t e = 0; e < o.extra_bytes; ++e)
        p[base_size[o.format] + e] = uint8_t(e == 0 ? i : e == 1 ? 7 : uni(4) == 0 ? uni(256) : p[base_size[o.format] + e - len]);
      if (dup && i + 1 < o.points) {
        std::memcpy(p + len, p, len);
        ++i;
      }
    }
  }
  for (int a = 0; a < 3; ++a)
    put(179 + 16 * a, hi[a] * scale + offset[a]), put(187 + 16 * a, lo[a] * scale + offset[a]);
  if (o.version_minor == 4) {
    put(247, uint64_t(o.points));
    if (o.evlr) {
      put(235, uint64_t(f.size()));
      put(243, uint32_t(1));
      std::string e(60, '\0');
      std::memcpy(e.data() + 2, "streamline", 10);
      uint16_t id = 8;
      std::memcpy(e.data() + 18, &id, 2);
      const std::string body = "an extended VLR after the points";
      uint64_t n = body.size();
      std::memcpy(e.data() + 20, &n, 8);
      f += e + body;
    }
  }
  return f;
}

}  // namespace sl::test
