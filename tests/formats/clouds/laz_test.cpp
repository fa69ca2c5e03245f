// LAZ and COPC (formats/clouds/laz.h through the LAS reader): the fixtures of
// tests/formats/clouds/fixtures/laz -- point formats 0, 1, 3, 6, 7 and 8, LAS 1.2 to 1.4, extra
// bytes, an EVLR, fixed and variable chunks, a COPC file -- decode record for record to their LAS
// twins (laz-perf and copc.js, not ours, checked the same when make.sh wrote them); the test
// writer's other layouts (no chunk table, a table at the end, one point-wise stream, LASzip's
// scanner-channel contexts) and random data round-trip; chunks decode alike on any number of
// threads; bad input is an sl::Error naming the file, the chunk and the byte.
#include <gtest/gtest.h>

#include <tbb/global_control.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "apps/inspect.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/las.h"
#include "formats/clouds/laz.h"
#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/formats/clouds/laz_fixtures.h"

namespace sl {
namespace {

const std::string kDir = std::string(SL_SOURCE_DIR) + "/tests/formats/clouds/fixtures/laz/";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
template <class T>
T get(const std::string& s, size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof v);
  return v;
}
template <class T>
void put(std::string& s, size_t at, T v) {
  std::memcpy(s.data() + at, &v, sizeof v);
}

// A LAS file's point records.
std::string records_of(const std::string& las) {
  const LasHeader h = parse_las_header(las.data(), las.size(), "twin.las");
  return las.substr(h.point_offset, h.points * h.record_length);
}

// A LAZ file's LASzip VLR, found and checked as the reader does.
LazInfo info_of(const std::string& laz, const std::string& path = "x.laz") {
  const LasHeader h = parse_las_header(laz.data(), laz.size(), path);
  uint64_t pos = h.header_size;
  LazInfo info;
  for (uint32_t k = 0; k < h.vlr_count; ++k) {
    const uint16_t len = get<uint16_t>(laz, pos + 20);
    if (std::string(laz.data() + pos + 2, strnlen(laz.data() + pos + 2, 16)) == kLazVlrUser &&
        get<uint16_t>(laz, pos + 18) == kLazVlrRecord) {
      info = parse_laz_vlr(laz.data() + pos + 54, len, path, pos + 54);
      check_laz_items(info, h.point_format, h.record_length, path, pos + 54);
    }
    pos += 54 + len;
  }
  return info;
}

// A LAZ file's records as decode_laz gives them.
std::string decode_records(const std::string& laz, const std::string& path = "x.laz") {
  const LasHeader h = parse_las_header(laz.data(), laz.size(), path);
  const LazInfo info = info_of(laz, path);
  const uint64_t end = h.version_minor == 4 && h.evlr_count ? h.evlr_start : laz.size();
  std::string out;
  decode_laz(laz.data(), laz.size(), info, h.point_offset, h.points, h.record_length, end, path,
             [&](uint64_t first, uint64_t n, const uint8_t* r) {
               EXPECT_EQ(first * h.record_length, out.size());
               out.append(reinterpret_cast<const char*>(r), n * h.record_length);
             });
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Every column value equal, and the same origin.
void expect_same_cloud(const PointCloud& a, const PointCloud& b, const std::string& what) {
  ASSERT_EQ(a.fields, b.fields) << what;
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(a.origin, b.origin) << what;
  for (size_t k = 0; k < a.columns.size(); ++k) {
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a.columns[k][i] != b.columns[k][i];
    EXPECT_EQ(differ, 0u) << what << ": column " << a.fields[k];
  }
}

TEST(Laz, FixturesDecodeRecordForRecordToTheirLasTwins) {
  for (const test::LazFixture& f : test::laz_fixtures()) {
    const std::string laz = slurp(kDir + f.name + ".laz");
    ASSERT_FALSE(laz.empty()) << f.name;
    const std::string twin = test::synth_las(f.las);
    const std::string want = records_of(twin), got = decode_records(laz, f.name);
    ASSERT_EQ(got.size(), want.size()) << f.name;
    EXPECT_TRUE(got == want) << f.name << ": the decoded records differ from the LAS twin's";
  }
}

TEST(Laz, FixturesReadLikeTheirLasTwinsWithTheHeadersCountAndBounds) {
  test::TempDir tmp;
  for (const test::LazFixture& f : test::laz_fixtures()) {
    const std::string path = kDir + f.name + ".laz";
    const CloudFormat* fmt = format_of_path(path);
    ASSERT_NE(fmt, nullptr);
    EXPECT_EQ(fmt->name, "laz");
    const std::string twin = tmp.write(f.name + ".las", test::synth_las(f.las));
    const LasHeader h = parse_las_header(slurp(path).data(), slurp(path).size(), path);
    EXPECT_TRUE(h.laz);
    EXPECT_EQ(h.copc, f.laz.copc) << f.name;
    EXPECT_EQ(fmt->count(path), int64_t(f.las.points)) << f.name;
    DecodeInfo info;
    const PointCloud c = read_cloud_file(path, {}, &info);
    EXPECT_EQ(c.size(), f.las.points) << f.name;
    EXPECT_EQ(info.dropped, 0) << f.name;
    expect_same_cloud(c, read_cloud_file(twin), f.name);
    // The synthetic header's bounds are the points' extent: the decoded world bounds equal them
    // to float32's rounding of world - origin.
    for (size_t a = 0; a < 3; ++a) {
      float lo = INFINITY, hi = -INFINITY;
      for (float v : c.columns[a]) lo = std::min(lo, v), hi = std::max(hi, v);
      EXPECT_EQ(lo, float(h.min[a] - c.origin[a])) << f.name << " axis " << a;
      EXPECT_EQ(hi, float(h.max[a] - c.origin[a])) << f.name << " axis " << a;
    }
  }
}

// The writer's layouts that laz-perf does not read (as LASzip does: no chunk table, walked chunk
// by chunk; the table's offset in the last 8 bytes; one point-wise stream) and layered items
// version 4 (LASzip 3.4's scanner-channel contexts), over formats, chunk sizes and seeds.
TEST(Laz, EveryLayoutAndChunkSizeRoundTripsRandomPoints) {
  using Table = test::LazWriteOptions::Table;
  int cases = 0;
  for (int format : {0, 1, 2, 3, 4, 5, 6, 7, 8})
    for (int layout = 0; layout < 6; ++layout) {
      test::SynthLasOptions s;
      s.version_minor = format >= 6 ? 4 : format >= 4 ? 3 : 2;
      s.format = format;
      s.extra_bytes = uint16_t(layout % 3);
      s.points = layout == 2 ? 60 : 700 + 97 * uint64_t(layout);  // (chunks of 1 point: each sets up every model)
      s.seed = uint64_t(100 * format + layout);
      test::LazWriteOptions o;
      o.chunk_size = layout == 2 ? 1 : layout == 3 ? 7 : 250;
      if (layout == 0) o.table = Table::kNone;
      if (layout == 1) o.table = Table::kAtEnd;
      if (layout == 4 && format < 6) o.compressor = 1;
      if (layout == 4 && format >= 6) o.layered_version = 4;
      if (layout == 5) o.chunk_size = 0xFFFFFFFFu, o.chunk_points = {1, uint32_t(s.points - 301), 300};
      const std::string las = test::synth_las(s);
      const std::string what = "format " + std::to_string(format) + " layout " + std::to_string(layout);
      EXPECT_TRUE(decode_records(test::laz_from_las(las, o)) == records_of(las)) << what;
      ++cases;
    }
  EXPECT_EQ(cases, 54);
}

// Formats 9 and 10: the wave packet layer is skipped (as LASzip's selective decompression
// skips a layer): every other byte decodes exactly, each record's 29 wave packet bytes are its
// chunk's first point's.
TEST(Laz, WavePacketLayersOfFormats9And10AreSkippedAndTheRestDecodesExactly) {
  test::TempDir tmp;
  for (int format : {9, 10}) {
    test::SynthLasOptions s{4, format, 2, 1200, uint64_t(60 + format), false};
    test::LazWriteOptions o;
    o.chunk_size = 500;
    const std::string las = test::synth_las(s);
    const std::string want = records_of(las), got = decode_records(test::laz_from_las(las, o));
    const size_t len = want.size() / 1200, wave = format == 9 ? 30 : 38;
    ASSERT_EQ(got.size(), want.size());
    size_t differ = 0;
    for (size_t i = 0; i < 1200; ++i) {
      const size_t r = i * len, first = (i / 500 * 500) * len;
      differ += got.compare(r, wave, want, r, wave) != 0;                          // before the packet
      differ += got.compare(r + wave, 29, want, first + wave, 29) != 0;            // the chunk's first packet
      differ += got.compare(r + wave + 29, len - wave - 29, want, r + wave + 29, len - wave - 29) != 0;  // extra bytes
    }
    EXPECT_EQ(differ, 0u) << "format " << format;
    EXPECT_NE(want.compare(len + wave, 29, want, wave, 29), 0) << "the packets vary: the layer was not empty";
    const std::string path = tmp.write("f.laz", test::laz_from_las(las, o));
    expect_same_cloud(read_cloud_file(path), read_cloud_file(tmp.write("f.las", las)), "format " + std::to_string(format));
  }
}

// Formats 4 and 5 keep their wave packets inside the point-wise stream (WAVEPACKET13, version 1
// only): they decode byte for byte (with GPS time, and format 5's colour), every offset case met
// (the same waveform, the next one, a gap, one more than 4 GiB on) and the k = 32 corrector, and
// read as their LAS twin. A version 2 is refused by name.
TEST(Laz, WavePacketsOfFormats4And5DecodeExactly) {
  test::TempDir tmp;
  for (int format : {4, 5}) {
    test::SynthLasOptions s{3, format, 1, 3000, uint64_t(40 + format), false};
    const std::string las = test::synth_las(s);
    const std::string want = records_of(las);
    const size_t len = want.size() / 3000, wave = format == 4 ? 28 : 34;
    int cases[4] = {};
    for (size_t i = 1; i < 3000; ++i) {
      uint64_t a, b;
      uint32_t size;
      std::memcpy(&a, want.data() + (i - 1) * len + wave + 1, 8);
      std::memcpy(&size, want.data() + (i - 1) * len + wave + 9, 4);
      std::memcpy(&b, want.data() + i * len + wave + 1, 8);
      const int64_t d = int64_t(b - a);
      ++cases[d == 0 ? 0 : d == int64_t(size) ? 1 : d == int64_t(int32_t(d)) ? 2 : 3];
    }
    for (int c = 0; c < 4; ++c) EXPECT_GT(cases[c], 5) << "format " << format << " offset case " << c;
    // x(t) of a packet whose bits differ from the last one's by the sign alone: a 32-bit
    // corrector of -2^31, the one LASzip codes as k = 32.
    int sign_flips = 0;
    for (size_t i = 1; i < 3000; ++i) {
      uint32_t a, b;
      std::memcpy(&a, want.data() + (i - 1) * len + wave + 17, 4);
      std::memcpy(&b, want.data() + i * len + wave + 17, 4);
      sign_flips += (a ^ b) == 0x80000000u;
    }
    EXPECT_GT(sign_flips, 5) << "format " << format;
    test::LazWriteOptions o;
    o.chunk_size = 1000;
    const std::string laz = test::laz_from_las(las, o);
    EXPECT_TRUE(decode_records(laz) == want) << "format " << format;
    expect_same_cloud(read_cloud_file(tmp.write("f.laz", laz)), read_cloud_file(tmp.write("f.las", las)),
                      "format " + std::to_string(format));
  }
  LazInfo point_wise;
  point_wise.compressor = 2;
  point_wise.chunk_size = 50000;
  point_wise.items = {{kLazPoint10, 20, 2}, {kLazGpsTime11, 8, 2}, {kLazWavePacket13, 29, 2}};
  const std::string e = error_of([&] { check_laz_items(point_wise, 4, 57, "f4.laz", 300); });
  EXPECT_NE(e.find("f4.laz: byte 350: the LASzip VLR ('laszip encoded' 22204): WAVEPACKET13 version 2 is unknown (LASzip "
                   "codes wave packets of point formats 4 and 5 with version 1 only)"),
            std::string::npos)
      << e;
}

TEST(Laz, ChunksDecodeTheSameOnOneThreadAndOnAll) {
  test::TempDir tmp;
  test::SynthLasOptions s{4, 7, 2, 60000, 77, false};
  test::LazWriteOptions o;
  o.chunk_size = 1000;
  const std::string path = tmp.write("many.laz", test::laz_from_las(test::synth_las(s), o));
  PointCloud one;
  {
    tbb::global_control serial(tbb::global_control::max_allowed_parallelism, 1);
    one = read_cloud_file(path);
  }
  expect_same_cloud(read_cloud_file(path), one, "60 chunks");
  expect_same_cloud(one, read_cloud_file(tmp.write("many.las", test::synth_las(s))), "the LAS twin");
}

// A chunked file (500-point chunks) to break: where its chunks and their streams start.
struct Broken {
  std::string laz;
  uint32_t point_offset;
  uint16_t record_length;
  uint64_t table;
};
Broken broken(const std::string& name) {
  Broken b;
  b.laz = slurp(kDir + name + ".laz");
  b.point_offset = get<uint32_t>(b.laz, 96);
  b.record_length = get<uint16_t>(b.laz, 105);
  b.table = get<uint64_t>(b.laz, b.point_offset);
  return b;
}
std::string read_error(const test::TempDir& tmp, const std::string& bytes) {
  const std::string path = tmp.write("bad.laz", bytes);
  return error_of([&] { read_cloud_file(path); });
}

TEST(Laz, BadInputIsAnErrorNamingTheFileTheChunkAndTheByte) {
  test::TempDir tmp;
  const std::string bad = tmp.path("bad.laz");
  auto expect = [&](const std::string& err, const std::string& want) {
    EXPECT_EQ(err.rfind(bad + ": ", 0), 0u) << err;
    EXPECT_NE(err.find(want), std::string::npos) << err << "\n  wanted: " << want;
  };

  // A corrupt stream: chunk 1's arithmetic code starts after its raw first point; four 0xFF
  // bytes there are a value no encoder writes.
  {
    Broken b = broken("synth_f0");
    const LazChunks cs = laz_chunks(b.laz.data(), b.laz.size(), info_of(b.laz), b.point_offset, 1500, b.record_length,
                                    b.laz.size(), "x");
    ASSERT_EQ(cs.chunks.size(), 3u);
    const uint64_t stream = cs.chunks[1].start + b.record_length;
    std::string s = b.laz;
    std::memset(s.data() + stream, 0xFF, 4);
    expect(read_error(tmp, s), "chunk 1: byte " + std::to_string(stream + 4) + ": corrupt compressed data in the chunk");
    // Flipped bits in the middle of chunk 2: an error or other points, never a crash or a hang.
    s = b.laz;
    for (uint64_t i = cs.chunks[2].start + 40; i < cs.chunks[2].end - 8; i += 7) s[i] = char(s[i] ^ 0x5A);
    const std::string e = read_error(tmp, s);
    if (e != "no error") expect(e, "chunk 2: byte ");
  }
  // A truncated chunk: without a chunk table the chunks are walked, and the cut one runs out.
  {
    Broken b = broken("synth_f1_extra3");
    std::string s = b.laz.substr(0, b.table - 2000);
    put<int64_t>(s, b.point_offset, 0);  // no table: walk
    expect(read_error(tmp, s), "chunk 2: byte " + std::to_string(s.size()) + ": the compressed data ends early");
  }
  // The chunk table outside the file, or before the chunks.
  {
    Broken b = broken("synth_f3");
    std::string s = b.laz;
    put<int64_t>(s, b.point_offset, int64_t(s.size() + 100));
    expect(read_error(tmp, s), "byte " + std::to_string(b.point_offset) + ": the chunk table's offset " +
                                   std::to_string(s.size() + 100) + " lies outside the file (" + std::to_string(s.size()) +
                                   " bytes)");
    put<int64_t>(s, b.point_offset, 100);
    expect(read_error(tmp, s), "lies before the chunks");
    // A table cut short: fixed-size chunks are walked instead (as LASzip does), variable ones
    // (COPC) cannot be.
    s = b.laz.substr(0, b.table + 9);
    EXPECT_TRUE(decode_records(s) == records_of(test::synth_las(test::laz_fixtures()[2].las)));
    Broken c = broken("synth_f8.copc");
    std::string cut = c.laz.substr(0, c.table + 9);
    put<uint32_t>(cut, 243, 0);  // (its hierarchy EVLR went with the cut)
    expect(read_error(tmp, cut), "byte " + std::to_string(c.table + 9) +
                                                             ": the compressed data ends early: the decoder needs more than the 1 bytes of the chunk table");
  }
  // Counts that do not fit: more points than the chunks (fixed size) could hold in the bytes
  // left; more than a COPC file's chunk table holds.
  {
    Broken b = broken("synth_f0");
    std::string s = b.laz;
    put<uint32_t>(s, 107, 2000000000u);
    expect(read_error(tmp, s), "chunk 3: byte " + std::to_string(b.table) + ": 1999998500 points in chunks of 500 need");
    Broken c = broken("synth_f8.copc");
    s = c.laz;
    put<uint64_t>(s, 247, 1600);
    expect(read_error(tmp, s), "the chunk table's 4 chunks hold 1500 points, fewer than the 1600 the header declares");
  }
  // An item list that does not match the point format or the record length.
  {
    Broken b = broken("synth_f3");  // LAS 1.3 format 3: POINT10, GPSTIME11, RGB12
    std::string s = b.laz;
    put<uint8_t>(s, 104, uint8_t(0x80 | 2));  // format 2: POINT10, RGB12
    expect(read_error(tmp, s), "byte ");
    expect(read_error(tmp, s), "the LASzip VLR ('laszip encoded' 22204): item 2 does not match: point format 2");
    s = b.laz;
    put<uint16_t>(s, 105, 36);
    expect(read_error(tmp, s), "the items add up to 34 bytes, not the record length");
  }
  // No VLR for the compression bit.
  {
    Broken b = broken("synth_f0");
    std::string s = b.laz;
    put<uint32_t>(s, 100, 1);  // only the first VLR (the synthetic one) is walked
    expect(read_error(tmp, s), "byte 104: the point format byte 128 marks the points as LASzip-compressed, but the file has no LASzip VLR");
  }
}

// Inspect: the header's facts, the LASzip facts and statistics equal the LAS twin's.
TEST(Laz, InspectShowsTheLaszipVlrAndTheSameStatisticsAsTheTwin) {
  test::TempDir tmp;
  const test::LazFixture& f = test::laz_fixtures().back();  // the COPC file
  const InspectReport r = inspect_file(kDir + f.name + ".laz");
  const InspectReport t = inspect_file(tmp.write("twin.las", test::synth_las(f.las)));
  EXPECT_EQ(r.format, "laz");
  EXPECT_EQ(r.points, int64_t(f.las.points));
  EXPECT_TRUE(r.warning.empty()) << r.warning;
  ASSERT_EQ(r.fields.size(), t.fields.size());
  for (size_t k = 0; k < r.fields.size(); ++k) {
    EXPECT_EQ(r.fields[k].min, t.fields[k].min) << k;
    EXPECT_EQ(r.fields[k].max, t.fields[k].max) << k;
  }
  const std::string text = to_text(r);
  for (const char* want : {"COPC", "layered chunked", "variable", "4 chunks", "POINT14 v3", "RGBNIR14 v3"})
    EXPECT_NE(text.find(want), std::string::npos) << text << "\n  wanted: " << want;
}

}  // namespace
}  // namespace sl
