// LAS (formats/clouds/las.h) against the ASPRS specification: files built here byte by byte (not by
// our writer) for every version 1.0-1.4 and every point format 0-10 -- random extra bytes,
// VLRs, EVLRs, header padding, junk in every field but X Y Z and intensity, the 1.4 64-bit count
// with a legacy count of 0 -- decoded by parse_las and by a plain reference decoder written from
// the specification's byte offsets; our writer's files read by that reference; every malformed
// header an error naming the byte; LAZ markers without a LASzip stream errors too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "apps/inspect.h"
#include "formats/clouds/las.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

template <class T>
void put(std::string& s, size_t off, T v) {
  std::memcpy(s.data() + off, &v, sizeof v);
}
template <class T>
T get(const std::string& s, size_t off) {
  T v;
  std::memcpy(&v, s.data() + off, sizeof v);
  return v;
}

// ---- an independent builder and a plain reference decoder, from the specification's tables ----

constexpr uint16_t kSize[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};

struct Build {
  int minor = 2, fmt = 0;
  uint16_t extra = 0, pad = 0;
  int vlrs = 0, evlrs = 0;
  bool legacy_zero = false;   // 1.4: legacy count 0 (required for formats 6-10)
  bool only_legacy = false;   // 1.4: the 64-bit count left 0, the legacy one filled
  std::array<double, 3> scale{0.01, 0.01, 0.01}, offset{0, 0, 0};
  std::vector<std::array<int32_t, 3>> xyz;
  std::vector<uint16_t> intensity;
};

std::string build(const Build& b, std::mt19937& rng) {
  const size_t header = (b.minor <= 2 ? 227 : b.minor == 3 ? 235 : 375) + size_t(b.pad);
  std::vector<std::string> vlr_payload;
  size_t vlr_bytes = 0;
  for (int k = 0; k < b.vlrs; ++k) {
    vlr_payload.push_back(std::string(rng() % 300, char(rng())));
    vlr_bytes += 54 + vlr_payload.back().size();
  }
  const size_t gap = b.minor == 0 ? 2 : rng() % 3;  // 1.0: the 0xCCDD signature; later, stray bytes
  const size_t points_at = header + vlr_bytes + gap, rec = kSize[b.fmt] + size_t(b.extra), n = b.xyz.size();
  std::string s(points_at + n * rec, '\0');
  for (char& c : s) c = char(rng());  // every byte not set below is junk a reader must not use
  std::memcpy(s.data(), "LASF", 4);
  put<uint8_t>(s, 24, 1);
  put<uint8_t>(s, 25, uint8_t(b.minor));
  put<uint16_t>(s, 94, uint16_t(header));
  put<uint32_t>(s, 96, uint32_t(points_at));
  put<uint32_t>(s, 100, uint32_t(b.vlrs));
  put<uint8_t>(s, 104, uint8_t(b.fmt));
  put<uint16_t>(s, 105, uint16_t(rec));
  put<uint32_t>(s, 107, b.minor == 4 && b.legacy_zero ? 0u : uint32_t(n));
  for (int a = 0; a < 3; ++a) {
    put<double>(s, 131 + 8 * size_t(a), b.scale[size_t(a)]);
    put<double>(s, 155 + 8 * size_t(a), b.offset[size_t(a)]);
  }
  size_t pos = header;
  for (int k = 0; k < b.vlrs; ++k) {
    std::memcpy(s.data() + pos + 2, "junk-user\0\0\0\0\0\0\0", 16);  // never "laszip encoded" or "copc"
    put<uint16_t>(s, pos + 20, uint16_t(vlr_payload[size_t(k)].size()));
    pos += 54 + vlr_payload[size_t(k)].size();
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t r = points_at + i * rec;
    for (int a = 0; a < 3; ++a) put<int32_t>(s, r + 4 * size_t(a), b.xyz[i][size_t(a)]);
    put<uint16_t>(s, r + 12, b.intensity[i]);
  }
  if (b.minor == 4) {
    std::string ev;
    for (int k = 0; k < b.evlrs; ++k) {
      std::string e(60 + rng() % 500, char(rng()));
      std::memcpy(e.data() + 2, "junk-evlr\0\0\0\0\0\0\0", 16);
      put<uint64_t>(e, 20, uint64_t(e.size() - 60));
      ev += e;
    }
    put<uint64_t>(s, 227, 0);
    put<uint64_t>(s, 235, b.evlrs ? uint64_t(s.size()) : 0);
    put<uint32_t>(s, 243, uint32_t(b.evlrs));
    put<uint64_t>(s, 247, b.only_legacy ? 0 : uint64_t(n));
    s += ev;
  }
  return s;
}

struct Ref {
  int minor = 0, fmt = 0;
  std::array<double, 3> scale{}, offset{};
  std::vector<std::array<int32_t, 3>> xyz;
  std::vector<uint16_t> intensity;
};

// The specification's reading, nothing more: the count (1.4: the 64-bit one, the legacy one when
// it is 0), the offset to the points, the record length; X Y Z at 0, 4, 8, intensity at 12.
Ref ref_decode(const std::string& s) {
  Ref r;
  r.minor = get<uint8_t>(s, 25);
  r.fmt = get<uint8_t>(s, 104);
  const uint32_t at = get<uint32_t>(s, 96);
  const uint16_t len = get<uint16_t>(s, 105);
  uint64_t n = get<uint32_t>(s, 107);
  if (r.minor == 4 && get<uint64_t>(s, 247) != 0) n = get<uint64_t>(s, 247);
  for (int a = 0; a < 3; ++a) {
    r.scale[size_t(a)] = get<double>(s, 131 + 8 * size_t(a));
    r.offset[size_t(a)] = get<double>(s, 155 + 8 * size_t(a));
  }
  for (uint64_t i = 0; i < n; ++i) {
    const size_t p = at + size_t(i) * len;
    r.xyz.push_back({get<int32_t>(s, p), get<int32_t>(s, p + 4), get<int32_t>(s, p + 8)});
    r.intensity.push_back(get<uint16_t>(s, p + 12));
  }
  return r;
}

// The origin the auto rule gives these integers (formats/clouds/origin.h), computed the plain way.
std::array<double, 3> expected_auto_origin(const Ref& r) {
  std::array<double, 3> lo, hi;
  for (int a = 0; a < 3; ++a) {
    lo[size_t(a)] = INFINITY, hi[size_t(a)] = -INFINITY;
    for (const auto& p : r.xyz) {
      const double w = double(p[size_t(a)]) * r.scale[size_t(a)] + r.offset[size_t(a)];
      lo[size_t(a)] = std::min(lo[size_t(a)], w), hi[size_t(a)] = std::max(hi[size_t(a)], w);
    }
  }
  if (r.xyz.empty()) return r.offset;
  bool near = true;
  for (int a = 0; a < 3; ++a)
    near = near && std::fabs(lo[size_t(a)] - r.offset[size_t(a)]) <= 2048 && std::fabs(hi[size_t(a)] - r.offset[size_t(a)]) <= 2048;
  if (near) return r.offset;
  return {std::floor(lo[0] / 100) * 100, std::floor(lo[1] / 100) * 100, std::floor(lo[2] / 100) * 100};
}

void expect_decoded_as_reference(const PointCloud& c, const Ref& r, const std::string& what) {
  ASSERT_EQ(c.size(), r.xyz.size()) << what;
  const std::array<double, 3> o = c.origin;
  for (size_t i = 0; i < r.xyz.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      const double world = double(r.xyz[i][size_t(a)]) * r.scale[size_t(a)] + r.offset[size_t(a)];
      const float want = float(double(r.xyz[i][size_t(a)]) * r.scale[size_t(a)] + (r.offset[size_t(a)] - o[size_t(a)]));
      ASSERT_EQ(c.columns[size_t(a)][i], want) << what << " point " << i << " axis " << a;
      // And that is the world coordinate minus the origin, to float32's rounding of it.
      ASSERT_LE(std::fabs(double(want) + o[size_t(a)] - world),
                std::fabs(world - o[size_t(a)]) * 1e-7 + std::fabs(world) * 1e-15 + 1e-9)
          << what;
    }
    ASSERT_EQ(c.columns[3][i], float(r.intensity[i]) / 65535.f) << what;
  }
}

bool format_fits(int minor, int fmt) { return fmt <= 1 || (fmt <= 3 && minor >= 2) || (fmt <= 5 && minor >= 3) || minor == 4; }

TEST(Las, EveryVersionAndPointFormatDecodesAsTheReferenceOnRandomFiles) {
  std::mt19937 rng(2301);
  int files = 0;
  for (int minor = 0; minor <= 4; ++minor)
    for (int fmt = 0; fmt <= 10; ++fmt) {
      if (!format_fits(minor, fmt)) continue;
      for (int trial = 0; trial < 6; ++trial) {
        Build b;
        b.minor = minor, b.fmt = fmt;
        b.extra = uint16_t(trial % 3 == 0 ? 0 : rng() % 9);
        b.pad = uint16_t(trial == 5 ? rng() % 40 : 0);
        b.vlrs = int(rng() % 4);
        b.evlrs = minor == 4 ? int(rng() % 3) : 0;
        b.legacy_zero = minor == 4 && (fmt >= 6 || trial % 2 == 1);
        b.only_legacy = minor == 4 && fmt < 6 && trial == 4;
        if (b.only_legacy) b.legacy_zero = false;
        // Near UTM with millimetre steps, or anywhere in the int32 range with odd scales.
        const bool utm = trial % 2 == 0;
        std::uniform_real_distribution<double> sc(1e-4, 0.1);
        for (int a = 0; a < 3; ++a) {
          b.scale[size_t(a)] = utm ? 0.001 : sc(rng) * ((rng() % 5 == 0) ? -1 : 1);
          b.offset[size_t(a)] = utm ? (a == 0 ? 500000.0 : a == 1 ? 5400000.0 : 0.0) + double(rng() % 3) * 100
                                    : std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
        }
        const size_t n = rng() % 200;
        for (size_t i = 0; i < n; ++i) {
          std::array<int32_t, 3> p;
          for (int32_t& v : p)
            v = utm ? int32_t(rng() % 4000000) - 2000000 : int32_t(rng());
          b.xyz.push_back(p);
          b.intensity.push_back(uint16_t(rng()));
        }
        const std::string bytes = build(b, rng);
        const std::string what = "1." + std::to_string(minor) + " format " + std::to_string(fmt) + " trial " + std::to_string(trial);
        const Ref r = ref_decode(bytes);
        ASSERT_EQ(r.xyz.size(), n) << what;
        const LasHeader h = parse_las_header(bytes.data(), bytes.size(), "t.las");
        EXPECT_EQ(h.points, n) << what;
        EXPECT_EQ(h.point_format, fmt) << what;
        EXPECT_EQ(int(h.vlrs.size()), b.vlrs) << what;
        EXPECT_EQ(int(h.evlrs.size()), b.evlrs) << what;
        PointCloud c = parse_las(bytes.data(), bytes.size(), "t.las", {});
        EXPECT_EQ(c.origin, expected_auto_origin(r)) << what;
        expect_decoded_as_reference(c, r, what + " (auto origin)");
        c = parse_las(bytes.data(), bytes.size(), "t.las", {true, OriginPolicy::at({123.25, -5e6, 7})});
        EXPECT_EQ(c.origin, (Vec3d{123.25, -5e6, 7})) << what;
        expect_decoded_as_reference(c, r, what + " (fixed origin)");
        ++files;
      }
    }
  EXPECT_EQ(files, 6 * (2 + 2 + 4 + 6 + 11));
}

// The auto origin of LAS: the offset when every point lies within 2048 m of it; a file whose
// offset is 0 while its points are at 5.4e6 m gets the points' grid origin instead.
TEST(Las, TheOffsetIsTheOriginOnlyWhenThePointsAreNearIt) {
  std::mt19937 rng(7);
  for (const auto& [scale, offset, xyz, want] : std::vector<std::tuple<double, Vec3d, std::array<int32_t, 3>, Vec3d>>{
           {0.001, {500000, 5400000, 0}, {2048000, -2048000, 100000}, {500000, 5400000, 0}},  // at the reach: the offset
           {0.001, {500000, 5400000, 0}, {2048001, 0, 0}, {502000, 5400000, 0}},              // one step past it
           {0.01, {0, 0, 0}, {50012300, 540004500, 1200}, {500100, 5400000, 0}},              // offset 0, data in UTM
       }) {
    Build b;
    b.minor = 2, b.scale = {scale, scale, scale}, b.offset = offset;
    b.xyz = {xyz};
    b.intensity = {1};
    const std::string s = build(b, rng);
    EXPECT_EQ(parse_las(s.data(), s.size(), "t.las", {}).origin, want);
  }
}

// Our writer, every version and format, read by the reference decoder: the integers are the
// world coordinates quantised at the scale from the offset, the header's counts and bounds are
// the spec's, and our reader gives back world coordinates within half a step.
TEST(Las, OurWriterIsReadByTheReferenceForEveryVersionAndFormat) {
  test::TempDir tmp;
  PointCloud c = test::random_cloud(150, {"x", "y", "z", "intensity"}, 11);
  for (auto& v : c.columns[3]) v = std::fabs(v) / 100.f;
  c.origin = {500000, 5400000, 50};
  std::mt19937 rng(3);
  for (int minor = 0; minor <= 4; ++minor)
    for (int fmt = 0; fmt <= 10; ++fmt) {
      if (!format_fits(minor, fmt)) continue;
      LasWriteOptions o;
      o.version_minor = minor, o.point_format = fmt;
      o.extra_bytes = uint16_t(fmt % 3);
      o.header_padding = uint16_t(minor == 3 ? 5 : 0);
      o.vlrs = {{"user", 7, std::string(33, 'v'), "a vlr"}};
      if (minor == 4) o.evlrs = {{"user", 8, std::string(70000, 'e'), "an evlr longer than a VLR can be"}};
      o.legacy_count = fmt != 2;
      const std::string what = "1." + std::to_string(minor) + " format " + std::to_string(fmt);
      const std::string s = las_bytes("w.las", c, o);
      const Ref r = ref_decode(s);
      ASSERT_EQ(r.xyz.size(), c.size()) << what;
      EXPECT_EQ(get<uint16_t>(s, 94), (minor <= 2 ? 227 : minor == 3 ? 235 : 375) + o.header_padding) << what;
      EXPECT_EQ(get<uint16_t>(s, 105), kSize[fmt] + o.extra_bytes) << what;
      // Legacy count: always before 1.4; in 1.4 only for formats 0-5 when asked, else 0.
      EXPECT_EQ(get<uint32_t>(s, 107), minor < 4 || (fmt < 6 && o.legacy_count) ? uint32_t(c.size()) : 0u) << what;
      if (minor == 4) {
        EXPECT_EQ(get<uint64_t>(s, 247), c.size()) << what;
        EXPECT_EQ(get<uint32_t>(s, 243), 1u) << what;
        EXPECT_EQ(get<uint64_t>(s, 235), get<uint32_t>(s, 96) + c.size() * get<uint16_t>(s, 105)) << what;
      }
      if (minor == 0) {
        EXPECT_EQ(get<uint16_t>(s, get<uint32_t>(s, 96) - 2), 0xCCDD) << what;
      }
      double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
      for (size_t i = 0; i < c.size(); ++i) {
        for (int a = 0; a < 3; ++a) {
          const double w = double(c.columns[size_t(a)][i]) + c.origin[size_t(a)];
          const double q = std::nearbyint((w - r.offset[size_t(a)]) / 0.001);
          ASSERT_EQ(r.xyz[i][size_t(a)], int32_t(q)) << what;
          const double back = double(r.xyz[i][size_t(a)]) * 0.001 + r.offset[size_t(a)];
          lo[a] = std::min(lo[a], back), hi[a] = std::max(hi[a], back);
        }
        EXPECT_EQ(r.intensity[i], uint16_t(std::lround(c.columns[3][i] * 65535.f))) << what;
      }
      for (int a = 0; a < 3; ++a) {
        EXPECT_EQ(get<double>(s, 187 + 16 * size_t(a)), lo[a]) << what << " min axis " << a;
        EXPECT_EQ(get<double>(s, 179 + 16 * size_t(a)), hi[a]) << what << " max axis " << a;
      }
      const std::string path = tmp.path("w.las");
      write_las(path, c, o);
      const PointCloud back = read_las(path, {});
      ASSERT_EQ(back.size(), c.size());
      for (size_t i = 0; i < c.size(); ++i)
        for (int a = 0; a < 3; ++a)
          ASSERT_NEAR(double(back.columns[size_t(a)][i]) + back.origin[size_t(a)],
                      double(c.columns[size_t(a)][i]) + c.origin[size_t(a)], 0.0005 + 1e-5)
              << what;
    }
}

std::string error_of(const std::string& bytes) {
  try {
    parse_las(bytes.data(), bytes.size(), "bad.las", {});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Every malformed header: an error naming the file, the byte and the reason -- and a count the
// file cannot hold refused before anything is allocated for it.
TEST(Las, EveryMalformedHeaderIsAnErrorNamingTheByteAndTheReason) {
  std::mt19937 rng(5);
  Build b;
  b.minor = 4, b.fmt = 6, b.vlrs = 1, b.evlrs = 1;
  b.xyz = {{1, 2, 3}, {4, 5, 6}};
  b.intensity = {7, 8};
  const std::string good = build(b, rng);
  ASSERT_EQ(error_of(good), "no error");
  const uint32_t at = get<uint32_t>(good, 96);
  auto with = [&](auto f) {
    std::string s = good;
    f(s);
    return error_of(s);
  };
  struct Case {
    std::string error, want;
  };
  const std::vector<Case> cases = {
      {error_of("LAS"), "bad.las: byte 0: not a LAS file"},
      {error_of("LASF" + std::string(100, '\0')), "bad.las: byte 104: truncated header: a LAS header has at least 227 bytes"},
      {with([](std::string& s) { s[0] = 'X'; }), "bad.las: byte 0: not a LAS file (it does not start with \"LASF\")"},
      {with([](std::string& s) { put<uint8_t>(s, 25, 5); }), "bad.las: byte 24: unsupported LAS version 1.5"},
      {with([](std::string& s) { put<uint8_t>(s, 24, 2); }), "bad.las: byte 24: unsupported LAS version 2.4"},
      {with([](std::string& s) { put<uint16_t>(s, 94, 374); }),
       "bad.las: byte 94: header size 374 is smaller than the 375 bytes of a LAS 1.4 header"},
      {with([](std::string& s) { put<uint16_t>(s, 94, 60000); }), "bad.las: byte 94: header size 60000 runs past the end"},
      {with([](std::string& s) { put<uint32_t>(s, 96, 300); }), "bad.las: byte 96: offset to point data 300 lies inside the header"},
      {with([](std::string& s) { put<uint32_t>(s, 96, 1u << 30); }), "bad.las: byte 96: offset to point data 1073741824 is past the end"},
      {with([](std::string& s) { put<uint32_t>(s, 100, 1000000); }), "bad.las: byte "},
      {with([&](std::string& s) { put<uint16_t>(s, 375 + 18, 9), put<uint16_t>(s, 375 + 20, 60000); }),
       "bad.las: byte 395: VLR 1 of 1 ('junk-user' 9): its 60000 bytes run past the offset to point data"},
      {with([](std::string& s) { put<uint8_t>(s, 104, 11); }), "bad.las: byte 104: unknown point data record format 11 (0 to 10 are defined)"},
      {with([](std::string& s) { put<uint16_t>(s, 105, 29); }), "bad.las: byte 105: point record length 29 is shorter than the 30 bytes of point format 6"},
      {with([](std::string& s) { put<uint64_t>(s, 247, uint64_t(1) << 40); }),
       "bad.las: byte " + std::to_string(at) + ": the header declares 1099511627776 points of 30 bytes, but the file has"},
      {with([](std::string& s) { put<uint64_t>(s, 235, 400); }), "bad.las: byte 235: start of the first EVLR 400 lies before the end of the point data"},
      {with([](std::string& s) { put<uint64_t>(s, 235, uint64_t(1) << 40); }), "bad.las: byte 235: start of the first EVLR 1099511627776 is past the end"},
      {with([](std::string& s) { put<uint32_t>(s, 243, 2); }), "EVLR 2 of 2: its 60-byte header runs past the end of the file"},
      {with([](std::string& s) { put<uint64_t>(s, get<uint64_t>(s, 235) + 20, uint64_t(1) << 50); }), "EVLR 1 of 1 ('junk-evlr' "},
      {with([](std::string& s) { put<double>(s, 139, 0.0); }), "bad.las: byte 139: y scale factor 0 is not a finite non-zero number"},
      {with([](std::string& s) { put<double>(s, 147, NAN); }), "bad.las: byte 147: z scale factor"},
      {with([](std::string& s) { put<double>(s, 155, INFINITY); }), "bad.las: byte 155: x offset is not a finite number"},
  };
  for (const Case& k : cases) EXPECT_NE(k.error.find(k.want), std::string::npos) << k.error << "\n  wanted: " << k.want;
  // The truncated file is refused from the header's count, whatever the count.
  std::string cut = good.substr(0, at + 30);  // one of two points
  put<uint32_t>(cut, 243, 0);                 // no EVLRs to trip over first
  EXPECT_NE(error_of(cut).find("declares 2 points of 30 bytes, but the file has 30 bytes from the point data on"), std::string::npos)
      << error_of(cut);
}

// LAZ markers (bit 7 of the point format, or the laszip VLR) without a LASzip stream behind
// them: clear errors naming the byte; the header is still read (count); .laz is a row of the
// table. (Decoding: tests/formats/clouds/laz_test.cpp.)
TEST(Las, LazMarkersWithoutALaszipStreamAreClearErrorsAndTheHeaderIsStillRead) {
  test::TempDir tmp;
  std::mt19937 rng(9);
  Build b;
  b.minor = 2, b.fmt = 3;
  b.xyz = {{1, 2, 3}};
  b.intensity = {1};
  std::string laz = build(b, rng);
  put<uint8_t>(laz, 104, uint8_t(0x80 | 3));
  put<uint32_t>(laz, 107, 1000000);  // compressed: the points are not where a LAS would have them
  const std::string e = error_of(laz);
  EXPECT_NE(e.find("bad.las: byte 104: the point format byte 131 marks the points as LASzip-compressed, but the file has no LASzip VLR"),
            std::string::npos)
      << e;
  const LasHeader h = parse_las_header(laz.data(), laz.size(), "x.laz");
  EXPECT_TRUE(h.laz);
  EXPECT_EQ(h.points, 1000000u);
  EXPECT_EQ(h.point_format, 3);

  // A laszip VLR whose payload is not LASzip's (here: zeros), and a COPC info VLR with no
  // LASzip VLR: errors naming the VLR's byte, or the format byte.
  for (const auto& [user, id, want] : std::vector<std::tuple<std::string, uint16_t, std::string>>{
           {"laszip encoded", 22204, ": the LASzip VLR ('laszip encoded' 22204): "},
           {"copc", 1, "bad.las: byte 104: the point format byte 134 marks the points as LASzip-compressed"}}) {
    Build v = b;
    v.minor = 4, v.fmt = 6, v.vlrs = 1;
    std::string s = build(v, rng);
    std::memset(s.data() + 375 + 2, 0, 16);
    std::memcpy(s.data() + 375 + 2, user.data(), user.size());
    put<uint16_t>(s, 375 + 18, id);
    if (user == "copc") put<uint8_t>(s, 104, uint8_t(0x80 | 6));
    const std::string err = error_of(s);
    EXPECT_NE(err.find(want), std::string::npos) << err << "\n  wanted: " << want;
  }

  const std::string path = tmp.write("scan.laz", laz);
  ASSERT_NE(format_of_path(path), nullptr);
  EXPECT_EQ(format_of_path(path)->name, "laz");
  EXPECT_EQ(format_of_path(path)->count(path), 1000000);
  EXPECT_THROW(read_cloud_file(path), Error);
  EXPECT_THROW(inspect_file(path), Error);
}

// The LAS row: the format table's writer and reader, a generated scene in UTM, and inspect's
// header (the values the file holds) with world statistics equal to the header's bounds.
TEST(Las, TheFormatRowRoundTripsAndInspectShowsTheHeaderAndWorldBounds) {
  test::TempDir tmp;
  PointCloud c = test::random_cloud(500, {"x", "y", "z", "intensity"}, 21);
  for (auto& v : c.columns[3]) v = std::fabs(v) / 100.f;
  c.origin = {500000, 5400000, 0};
  const std::string path = tmp.path("s.las");
  const CloudFormat* f = format_of_path(path);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->name, "las");
  f->write(path, c);
  EXPECT_EQ(f->count(path), 500);
  const PointCloud back = read_cloud_file(path);
  EXPECT_EQ(back.origin, (Vec3d{499900, 5399900, -100}));  // the writer's offset: the grid origin
  const InspectReport r = inspect_file(path);
  EXPECT_EQ(r.points, 500);
  std::map<std::string, std::string> hdr(r.header.begin(), r.header.end());
  EXPECT_EQ(hdr["version"], "1.4");
  EXPECT_EQ(hdr["point format"], "6");
  EXPECT_EQ(hdr["offset"], "[499900, 5399900, -100]");
  const LasHeader h = [&] {
    const std::string s = read_file(path);
    return parse_las_header(s.data(), s.size(), path);
  }();
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(r.fields[size_t(a)].min, h.min[size_t(a)], 1e-5) << a;
    EXPECT_NEAR(r.fields[size_t(a)].max, h.max[size_t(a)], 1e-5) << a;
  }
}

}  // namespace
}  // namespace sl
