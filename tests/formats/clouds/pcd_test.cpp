#include "formats/clouds/pcd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <limits>
#include <random>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"
#include "formats/clouds/lzf.h"
#include "formats/clouds/mapped_file.h"

using sl::PcdDataMode;
using sl::PcdReadOptions;
using sl::PointCloud;
using sl::test::TempDir;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::string header(const std::string& fields, const std::string& sizes, const std::string& types,
                   const std::string& counts, int64_t w, int64_t h, const std::string& data,
                   const std::string& version = "0.7") {
  std::string s = "# .PCD v" + version + "\nVERSION " + version + "\nFIELDS " + fields + "\nSIZE " + sizes +
                  "\nTYPE " + types + "\n";
  if (!counts.empty()) s += "COUNT " + counts + "\n";
  s += "WIDTH " + std::to_string(w) + "\nHEIGHT " + std::to_string(h) + "\n";
  if (version != ".5" && version != "0.5") s += "VIEWPOINT 0 0 0 1 0 0 0\n";
  s += "POINTS " + std::to_string(w * h) + "\nDATA " + data + "\n";
  return s;
}

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string compressed_body(const std::string& raw) {
  auto c = sl::lzf_compress(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  std::string s;
  put(s, uint32_t(c.size()));
  put(s, uint32_t(raw.size()));
  s.append(reinterpret_cast<const char*>(c.data()), c.size());
  return s;
}

// Parses from an exactly sized heap copy, so that ASan sees any read past the end.
PointCloud parse_exact(const std::string& bytes, const PcdReadOptions& opt = {}, int64_t* dropped = nullptr) {
  std::unique_ptr<char[]> buf(new char[bytes.size() + 1]);
  std::memcpy(buf.get(), bytes.data(), bytes.size());
  return sl::parse_pcd(buf.get(), bytes.size(), "mem.pcd", opt, dropped);
}

PcdReadOptions xyz() {
  PcdReadOptions o;
  o.fields = {"x", "y", "z"};
  return o;
}

void expect_error(const std::string& path, const std::string& reason, const PcdReadOptions& opt = xyz()) {
  try {
    sl::read_pcd(path, opt);
    FAIL() << "no error for " << path << ", expected '" << reason << "'";
  } catch (const sl::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  }
}

void expect_same_cloud(const PointCloud& a, const PointCloud& b) {
  ASSERT_EQ(a.fields, b.fields);
  ASSERT_EQ(a.columns.size(), b.columns.size());
  for (size_t f = 0; f < a.columns.size(); ++f) {
    ASSERT_EQ(a.columns[f].size(), b.columns[f].size()) << a.fields[f];
    for (size_t i = 0; i < a.columns[f].size(); ++i) {
      if (std::isnan(a.columns[f][i])) {
        EXPECT_TRUE(std::isnan(b.columns[f][i])) << a.fields[f] << "[" << i << "]";
      } else {
        ASSERT_EQ(a.columns[f][i], b.columns[f][i]) << a.fields[f] << "[" << i << "]";
      }
    }
  }
}

const PcdDataMode kModes[] = {PcdDataMode::Ascii, PcdDataMode::Binary, PcdDataMode::BinaryCompressed};

}  // namespace

// ---- round trips ---------------------------------------------------------------------------

TEST(PcdRoundTrip, RandomCloudsEveryModeAndSizeAreBitExact) {
  TempDir tmp;
  for (size_t n : {size_t(0), size_t(1), size_t(33), size_t(5000)}) {
    for (auto mode : kModes) {
      PointCloud c = sl::test::random_cloud(n, {"x", "y", "z", "intensity"}, uint32_t(n + 7));
      std::string p = tmp.path("c_" + std::to_string(n) + "_" + sl::pcd_data_mode_name(mode) + ".pcd");
      sl::write_pcd(p, c, mode);
      int64_t dropped = -1;
      PointCloud r = sl::read_pcd(p, {}, &dropped);
      SCOPED_TRACE(std::string(sl::pcd_data_mode_name(mode)) + " n=" + std::to_string(n));
      EXPECT_EQ(dropped, 0);
      expect_same_cloud(c, r);
    }
  }
}

// A cloud of more than 8 MiB of binary data: the reader releases the mapping's pages behind it
// while decoding (MappedFile::release), which must not change a value; with NaNs dropped too,
// and for the mapping on its own (bytes still readable after their pages are released).
TEST(PcdRoundTrip, LargeBinaryCloudsReadWhileReleasingTheFilePagesAreBitExact) {
  TempDir tmp;
  const size_t n = 700000;  // x 16 bytes: 11 MB
  PointCloud c = sl::test::random_cloud(n, {"x", "y", "z", "intensity"}, 99);
  for (size_t i = 0; i < n; i += 9973) c.columns[1][i] = kNaN;
  for (auto mode : {PcdDataMode::Binary, PcdDataMode::BinaryCompressed}) {
    const std::string p = tmp.path(std::string("big_") + sl::pcd_data_mode_name(mode) + ".pcd");
    sl::write_pcd(p, c, mode);
    PcdReadOptions keep;
    keep.drop_nan = false;
    expect_same_cloud(c, sl::read_pcd(p, keep));
    int64_t dropped = 0;
    const PointCloud r = sl::read_pcd(p, {}, &dropped);
    EXPECT_EQ(dropped, (int64_t)((n + 9972) / 9973));
    ASSERT_EQ(r.size(), n - (size_t)dropped);
    size_t j = 0;
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(c.columns[1][i])) continue;
      for (size_t f = 0; f < 4; ++f) ASSERT_EQ(r.columns[f][j], c.columns[f][i]) << i;
      ++j;
    }
  }
  const std::string p = tmp.path("big_binary.pcd");
  const std::string bytes = sl::read_file(p);
  sl::MappedFile f(p);
  f.release(f.size() / 2);
  f.release(f.size() / 3);  // behind the last release: nothing to do
  ASSERT_EQ(f.size(), bytes.size());
  EXPECT_EQ(std::memcmp(f.data(), bytes.data(), bytes.size()), 0);
}

// A file up to MappedFile::kReadMax is read into a buffer, a larger one mapped: both give the
// file's bytes (random, so an off-by-one or a short read shows), release is harmless on both, an
// empty file is null, and a small PCD decodes alike through either (the tile sizes of a map).
TEST(MappedFile, SmallFilesAreReadLargeOnesMappedWithTheSameBytes) {
  TempDir tmp;
  std::mt19937 rng(7);
  for (size_t size : {size_t(1), size_t(4095), sl::MappedFile::kReadMax - 1, sl::MappedFile::kReadMax,
                      sl::MappedFile::kReadMax + 1, sl::MappedFile::kReadMax + 4096 * 3 + 5}) {
    std::string bytes(size, '\0');
    for (auto& ch : bytes) ch = (char)(rng() & 0xff);
    const std::string p = tmp.path("f_" + std::to_string(size));
    sl::write_file_atomic(p, bytes);
    sl::MappedFile f(p);
    ASSERT_EQ(f.size(), size);
    ASSERT_NE(f.data(), nullptr);
    EXPECT_EQ(std::memcmp(f.data(), bytes.data(), size), 0) << size;
    f.release(size / 2);
    f.release_range(0, size);
    EXPECT_EQ(std::memcmp(f.data() + size - 1, bytes.data() + size - 1, 1), 0) << size;
  }
  const std::string empty = tmp.path("empty");
  sl::write_file_atomic(empty, "");
  sl::MappedFile e(empty);
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.data(), nullptr);
  // One cloud written small (read) and large (mapped): the same values.
  for (size_t n : {size_t(9000), size_t(90000)}) {  // 144 KB and 1.4 MB of binary PCD
    PointCloud c = sl::test::random_cloud(n, {"x", "y", "z", "intensity"}, 3 + (int)n);
    const std::string pcd = tmp.path("c_" + std::to_string(n) + ".pcd");
    sl::write_pcd(pcd, c, PcdDataMode::Binary);
    EXPECT_EQ(std::filesystem::file_size(pcd) > sl::MappedFile::kReadMax, n == 90000);
    PcdReadOptions keep;
    keep.drop_nan = false;
    expect_same_cloud(c, sl::read_pcd(pcd, keep));
  }
}

TEST(PcdRoundTrip, NanAndInfSurviveEveryModeWhenNotDropped) {
  TempDir tmp;
  PointCloud c = sl::test::random_cloud(6, {"x", "y", "z", "intensity"}, 3);
  c.columns[0][1] = kNaN;
  c.columns[2][3] = -kInf;
  c.columns[3][4] = kInf;  // intensity is not checked: the point stays
  for (auto mode : kModes) {
    std::string p = tmp.path(std::string("nan_") + sl::pcd_data_mode_name(mode) + ".pcd");
    sl::write_pcd(p, c, mode);
    PcdReadOptions keep;
    keep.drop_nan = false;
    expect_same_cloud(c, sl::read_pcd(p, keep));
    int64_t dropped = 0;
    PointCloud r = sl::read_pcd(p, {}, &dropped);
    EXPECT_EQ(dropped, 2);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r.columns[0][1], c.columns[0][2]);  // compaction keeps order
    EXPECT_EQ(r.columns[3][2], kInf);  // old point 4
  }
}

TEST(PcdRoundTrip, FieldsComeOutInRequestedOrderWithDefaultsForMissing) {
  TempDir tmp;
  PointCloud c = sl::test::random_cloud(10, {"x", "y", "z", "intensity"}, 5);
  std::string p = tmp.path("c.pcd");
  sl::write_pcd(p, c, PcdDataMode::Binary);
  PcdReadOptions opt;
  opt.fields = {"intensity", "ring", "x"};
  opt.missing_default = -1.5f;
  PointCloud r = sl::read_pcd(p, opt);
  ASSERT_EQ(r.fields, opt.fields);
  EXPECT_EQ(r.columns[0], c.columns[3]);
  EXPECT_EQ(r.columns[1], std::vector<float>(10, -1.5f));
  EXPECT_EQ(r.columns[2], c.columns[0]);
}

// ---- layouts -------------------------------------------------------------------------------

TEST(PcdRead, Version05HeaderWithoutViewpointOrCount) {
  std::string s = header("x y z", "4 4 4", "F F F", "", 2, 1, "ascii", ".5") + "1 2 3\n4 5 6\n";
  PcdReadOptions opt;
  opt.fields = {"x", "y", "z"};
  PointCloud r = parse_exact(s, opt);
  EXPECT_EQ(r.columns[0], (std::vector<float>{1, 4}));
  EXPECT_EQ(r.columns[2], (std::vector<float>{3, 6}));
  auto h = sl::parse_pcd_header(s.data(), s.size(), "mem.pcd");
  EXPECT_EQ(h.version, ".5");
  EXPECT_EQ(h.viewpoint, "");
  EXPECT_EQ(h.counts, (std::vector<int>{1, 1, 1}));
}

TEST(PcdRead, OrganizedCloudWithNanDropsInvalidPointsInEveryMode) {
  // 3 x 2 organized cloud, points 1 and 4 invalid (NaN x, Inf z).
  const float pts[6][4] = {{1, 2, 3, 10}, {kNaN, kNaN, kNaN, 11}, {4, 5, 6, 12},
                           {7, 8, 9, 13}, {1, 1, kInf, 14},     {2, 2, 2, 15}};
  std::string bin, asc, cols;
  for (auto& p : pts) {
    for (float v : p) put(bin, v);
    for (int k = 0; k < 4; ++k) {
      if (k) asc += ' ';
      asc += std::isnan(p[k]) ? std::string("nan") : std::isinf(p[k]) ? std::string("inf") : std::to_string(p[k]);
    }
    asc += "\n";
  }
  for (int k = 0; k < 4; ++k)
    for (auto& p : pts) put(cols, p[k]);
  const std::string files[3] = {header("x y z intensity", "4 4 4 4", "F F F F", "1 1 1 1", 3, 2, "ascii") + asc,
                                header("x y z intensity", "4 4 4 4", "F F F F", "1 1 1 1", 3, 2, "binary") + bin,
                                header("x y z intensity", "4 4 4 4", "F F F F", "1 1 1 1", 3, 2, "binary_compressed") +
                                    compressed_body(cols)};
  for (const auto& f : files) {
    int64_t dropped = 0;
    PointCloud r = parse_exact(f, {}, &dropped);
    EXPECT_EQ(dropped, 2);
    EXPECT_EQ(r.columns[0], (std::vector<float>{1, 4, 7, 2}));
    EXPECT_EQ(r.columns[3], (std::vector<float>{10, 12, 13, 15}));
    PcdReadOptions keep;
    keep.drop_nan = false;
    EXPECT_EQ(parse_exact(f, keep).size(), 6u);
  }
}

TEST(PcdRead, NanCheckUsesFileXyzEvenWhenNotRequested) {
  std::string s = header("x y z intensity", "4 4 4 4", "F F F F", "", 2, 1, "ascii") + "nan 0 0 5\n1 2 3 6\n";
  PcdReadOptions opt;
  opt.fields = {"intensity"};
  int64_t dropped = 0;
  PointCloud r = parse_exact(s, opt, &dropped);
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(r.columns[0], (std::vector<float>{6}));
}

TEST(PcdRead, CountGreaterThanOneOffsetsInEveryMode) {
  // normal has COUNT 3 and sits before x: x must come from after it, not from normal[0].
  std::string bin, cols_n, cols_x, cols_i, asc;
  for (int i = 0; i < 4; ++i) {
    float n3[3] = {100.f + i, 200.f + i, 300.f + i}, x = 1.f + i, in = 50.f + i;
    for (float v : n3) put(bin, v);
    put(bin, x);
    put(bin, in);
    for (float v : n3) put(cols_n, v);
    put(cols_x, x);
    put(cols_i, in);
    asc += std::to_string(n3[0]) + " " + std::to_string(n3[1]) + " " + std::to_string(n3[2]) + " " +
           std::to_string(x) + " " + std::to_string(in) + "\n";
  }
  const std::string h = "normal x intensity";
  const std::string files[3] = {header(h, "4 4 4", "F F F", "3 1 1", 4, 1, "binary") + bin,
                                header(h, "4 4 4", "F F F", "3 1 1", 4, 1, "binary_compressed") +
                                    compressed_body(cols_n + cols_x + cols_i),
                                header(h, "4 4 4", "F F F", "3 1 1", 4, 1, "ascii") + asc};
  PcdReadOptions opt;
  opt.fields = {"x", "normal", "normal[2]", "intensity"};
  opt.drop_nan = false;
  for (const auto& f : files) {
    PointCloud r = parse_exact(f, opt);
    EXPECT_EQ(r.columns[0], (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(r.columns[1], (std::vector<float>{100, 101, 102, 103}));
    EXPECT_EQ(r.columns[2], (std::vector<float>{300, 301, 302, 303}));
    EXPECT_EQ(r.columns[3], (std::vector<float>{50, 51, 52, 53}));
  }
}

// Binary records of random layouts (float32 fields, 2-byte and 8-byte fields between them,
// COUNT > 1), random requests of 1-5 columns (some twice), random point counts: every column
// equals a plain per-point read of the record (the decoder moves interleaved float32 columns four
// records at a time when they share a 16-byte window, and copies per column otherwise).
TEST(PcdRead, BinaryColumnsOfRandomLayoutsEqualAPlainPerPointRead) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    struct F {
      std::string name;
      int size;
      char type;
      int count;
    };
    std::vector<F> fields;
    const int nf = 1 + int(rng() % 6);
    for (int f = 0; f < nf; ++f) {
      const int kind = int(rng() % 6);  // mostly float32
      F fd{"f" + std::to_string(f), 4, 'F', 1};
      if (kind == 4) fd.size = 2, fd.type = 'U';
      if (kind == 5) fd.size = 8, fd.type = 'F';
      if (rng() % 5 == 0) fd.count = 1 + int(rng() % 3);
      fields.push_back(fd);
    }
    std::string names, sizes, types, counts;
    size_t rec = 0;
    std::vector<size_t> off;
    for (auto& f : fields) {
      names += f.name + " ", sizes += std::to_string(f.size) + " ", types += std::string(1, f.type) + " ",
          counts += std::to_string(f.count) + " ";
      off.push_back(rec);
      rec += size_t(f.size * f.count);
    }
    const int64_t n = int64_t(rng() % 70);
    std::string body(size_t(n) * rec, '\0');
    for (auto& c : body) c = char(rng());
    // The requested columns: float32 elements mostly (a field name is its element 0).
    PcdReadOptions opt;
    opt.fields.clear();
    opt.drop_nan = false;
    std::vector<std::pair<size_t, size_t>> want;  // (byte offset in the record, field index)
    const int nreq = 1 + int(rng() % 5);
    for (int r = 0; r < nreq; ++r) {
      const size_t f = rng() % fields.size();
      const int e = int(rng() % fields[f].count);
      opt.fields.push_back(e == 0 ? fields[f].name : fields[f].name + "[" + std::to_string(e) + "]");
      want.push_back({off[f] + size_t(e * fields[f].size), f});
    }
    const PointCloud c = parse_exact(header(names, sizes, types, counts, n, 1, "binary") + body, opt);
    ASSERT_EQ(c.columns.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(c.columns[k].size(), size_t(n));
      const F& f = fields[want[k].second];
      for (int64_t i = 0; i < n; ++i) {
        const char* at = body.data() + size_t(i) * rec + want[k].first;
        float expect;
        if (f.type == 'U') {
          uint16_t v;
          std::memcpy(&v, at, 2);
          expect = float(v);
        } else if (f.size == 8) {
          double v;
          std::memcpy(&v, at, 8);
          expect = float(v);
        } else {
          std::memcpy(&expect, at, 4);
        }
        // Bit patterns: the random bytes include NaNs, which must move unchanged.
        uint32_t a, b;
        std::memcpy(&a, &c.columns[k][size_t(i)], 4);
        std::memcpy(&b, &expect, 4);
        if (f.type == 'F' && f.size == 4) {
          ASSERT_EQ(a, b) << "trial " << trial << " column " << k << " point " << i;
        } else if (!std::isnan(expect)) {
          ASSERT_EQ(c.columns[k][size_t(i)], expect) << "trial " << trial;
        }
      }
    }
  }
}

TEST(PcdRead, IntegerAndDoubleTypesU8U16I32F64I8U32I64ConvertToFloat) {
  std::string bin, asc;
  const int n = 3;
  for (int i = 0; i < n; ++i) {
    put(bin, uint8_t(250 + i));
    put(bin, uint16_t(60000 + i));
    put(bin, int32_t(-100000 - i));
    put(bin, double(0.125 * (i + 1)));
    put(bin, int8_t(-100 - i));
    put(bin, uint32_t(4000000000u + i));
    put(bin, int64_t(-5) - i);
    asc += std::to_string(250 + i) + " " + std::to_string(60000 + i) + " " + std::to_string(-100000 - i) + " " +
           std::to_string(0.125 * (i + 1)) + " " + std::to_string(-100 - i) + " " + std::to_string(4000000000u + i) +
           " " + std::to_string(-5 - i) + "\n";
  }
  const std::string f = "a b c d e f g", sz = "1 2 4 8 1 4 8", ty = "U U I F I U I";
  PcdReadOptions opt;
  opt.fields = {"a", "b", "c", "d", "e", "f", "g"};
  for (const auto& s : {header(f, sz, ty, "", n, 1, "binary") + bin, header(f, sz, ty, "", n, 1, "ascii") + asc}) {
    PointCloud r = parse_exact(s, opt);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(r.columns[0][i], float(250 + i));
      EXPECT_EQ(r.columns[1][i], float(60000 + i));
      EXPECT_EQ(r.columns[2][i], float(-100000 - i));
      EXPECT_EQ(r.columns[3][i], float(0.125 * (i + 1)));
      EXPECT_EQ(r.columns[4][i], float(-100 - i));
      EXPECT_EQ(r.columns[5][i], float(4000000000u + i));
      EXPECT_EQ(r.columns[6][i], float(-5 - i));
    }
  }
}

TEST(PcdRead, CrlfLineEndsAndCommentsInHeaderAndData) {
  std::string s =
      "# a comment\r\nVERSION .7\r\n# another\r\nFIELDS x y z\r\nSIZE 4 4 4\r\nTYPE F F F\r\nCOUNT 1 1 1\r\n"
      "WIDTH 2\r\nHEIGHT 1\r\nVIEWPOINT 0 0 0 1 0 0 0\r\nPOINTS 2\r\nDATA ascii\r\n1.5 -2 +3e2\r\n\r\nNaN INF -inf\r\n";
  PcdReadOptions opt;
  opt.fields = {"x", "y", "z"};
  opt.drop_nan = false;
  PointCloud r = parse_exact(s, opt);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r.columns[0][0], 1.5f);
  EXPECT_EQ(r.columns[1][0], -2.f);
  EXPECT_EQ(r.columns[2][0], 300.f);
  EXPECT_TRUE(std::isnan(r.columns[0][1]));
  EXPECT_EQ(r.columns[1][1], kInf);
  EXPECT_EQ(r.columns[2][1], -kInf);
}

TEST(PcdRead, PaddingFieldsInBinaryAndLeftOutOfCompressedAndAscii) {
  // x y z _ intensity: "_" is 4 bytes of padding in binary, absent from compressed data.
  std::string bin, cx, cy, cz, ci, asc;
  for (int i = 0; i < 3; ++i) {
    float p[4] = {1.f + i, 2.f + i, 3.f + i, 9.f + i};
    put(bin, p[0]);
    put(bin, p[1]);
    put(bin, p[2]);
    put(bin, 12345.f);  // padding garbage
    put(bin, p[3]);
    put(cx, p[0]);
    put(cy, p[1]);
    put(cz, p[2]);
    put(ci, p[3]);
    asc += std::to_string(p[0]) + " " + std::to_string(p[1]) + " " + std::to_string(p[2]) + " " + std::to_string(p[3]) + "\n";
  }
  const std::string f = "x y z _ intensity", sz = "4 4 4 4 4", ty = "F F F U F", ct = "1 1 1 1 1";
  for (const auto& s : {header(f, sz, ty, ct, 3, 1, "binary") + bin,
                        header(f, sz, ty, ct, 3, 1, "binary_compressed") + compressed_body(cx + cy + cz + ci),
                        header(f, sz, ty, ct, 3, 1, "ascii") + asc}) {
    PointCloud r = parse_exact(s);
    EXPECT_EQ(r.columns[0], (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(r.columns[2], (std::vector<float>{3, 4, 5}));
    EXPECT_EQ(r.columns[3], (std::vector<float>{9, 10, 11}));
  }
}

// ---- bad input: each case names the file and the reason ------------------------------------

TEST(PcdBad, EmptyFile) {
  TempDir tmp;
  expect_error(tmp.write("empty.pcd", ""), "empty file");
}

TEST(PcdBad, Directory) {
  TempDir tmp;
  std::filesystem::create_directory(tmp.path("dir.pcd"));
  expect_error(tmp.path("dir.pcd"), "is a directory");
}

TEST(PcdBad, MissingFile) {
  TempDir tmp;
  expect_error(tmp.path("nope.pcd"), "no such file");
}

TEST(PcdBad, NotAPcdFile) {
  TempDir tmp;
  expect_error(tmp.write("g.pcd", std::string("\x89PNG\r\n\x1a\n....", 12)), "unknown header key");
}

TEST(PcdBad, HeaderWithoutDataLine) {
  TempDir tmp;
  std::string h = header("x y z", "4 4 4", "F F F", "", 1, 1, "binary");
  expect_error(tmp.write("t.pcd", h.substr(0, h.find("DATA"))), "no DATA line");
}

// A 20 MB FIELDS line was split into ten million names (900 MB) before the mismatch with SIZE was
// found; a header over 1 MiB is refused first, in every form: one long line, many short ones.
TEST(PcdBad, HeaderLongerThanOneMebibyteIsRefusedBeforeItsLinesAreSplit) {
  TempDir d;
  std::string wide = "VERSION 0.7\nFIELDS";
  for (int i = 0; i < 600000; ++i) wide += " x";
  wide += "\nSIZE 4\nTYPE F\nWIDTH 1\nPOINTS 1\nDATA ascii\n1\n";
  expect_error(d.write("wide.pcd", wide), "the header is longer than 1 MiB without a DATA line");
  std::string comments = "VERSION 0.7\n";
  while (comments.size() <= (1u << 20)) comments += "# a comment line\n";
  comments += "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nPOINTS 1\nDATA ascii\n1 2 3\n";
  expect_error(d.write("comments.pcd", comments), "the header is longer than 1 MiB without a DATA line");
  // Just under the limit, a header reads.
  std::string ok = "VERSION 0.7\n";
  while (ok.size() < (1u << 20) - 200) ok += "# a comment line\n";
  ok += "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nPOINTS 1\nDATA ascii\n1 2 3\n";
  EXPECT_EQ(sl::read_pcd(d.write("ok.pcd", ok), xyz()).size(), 1u);
}

TEST(PcdBad, TruncatedBinaryDataGivesOffsetAndSizes) {
  TempDir tmp;
  std::string h = header("x y z", "4 4 4", "F F F", "", 10, 1, "binary");
  std::string p = tmp.write("t.pcd", h + std::string(12 * 10 - 1, '\1'));
  expect_error(p, "data shorter than declared: 10 points x 12 bytes need 120 bytes, the file has 119");
  expect_error(p, "byte " + std::to_string(h.size()));
}

TEST(PcdBad, TruncatedAsciiData) {
  TempDir tmp;
  PcdReadOptions opt;
  opt.fields = {"x"};
  expect_error(tmp.write("a.pcd", header("x", "4", "F", "", 3, 1, "ascii") + "1.000\n2.000\n"),
               "data shorter than declared: found 2 of 3 points", opt);
  const std::string h2 = header("x y", "4 4", "F F", "", 2, 1, "ascii");
  expect_error(tmp.write("b.pcd", h2 + "1.00 2.00\n3.00\n"),
               "line 12, byte " + std::to_string(h2.size() + 14) + ": expected 2 values on the line, found 1", opt);
}

TEST(PcdBad, AsciiValueThatIsNotANumber) {
  TempDir tmp;
  PcdReadOptions opt;
  opt.fields = {"x", "y"};
  expect_error(tmp.write("a.pcd", header("x y", "4 4", "F F", "", 2, 1, "ascii") + "1 2\n3 4x\n"),
               "line 12, byte 120", opt);
  expect_error(tmp.path("a.pcd"), "'4x' is not a number", opt);
}

TEST(PcdBad, PointsNotWidthTimesHeight) {
  TempDir tmp;
  std::string s = header("x y z", "4 4 4", "F F F", "", 4, 2, "binary");
  s.replace(s.find("POINTS 8"), 8, "POINTS 7");
  expect_error(tmp.write("p.pcd", s + std::string(96, '\1')), "POINTS 7 != WIDTH * HEIGHT = 4 x 2");
}

TEST(PcdBad, SizeTypeCountListsOfDifferentLengthFromFields) {
  TempDir tmp;
  expect_error(tmp.write("s.pcd", header("x y z", "4 4", "F F F", "", 1, 1, "binary") + std::string(12, '\1')),
               "SIZE has 2 entries but FIELDS has 3");
  expect_error(tmp.write("t.pcd", header("x y z", "4 4 4", "F F F F", "", 1, 1, "binary") + std::string(12, '\1')),
               "TYPE has 4 entries but FIELDS has 3");
  expect_error(tmp.write("c.pcd", header("x y z", "4 4 4", "F F F", "1 1", 1, 1, "binary") + std::string(12, '\1')),
               "COUNT has 2 entries but FIELDS has 3");
}

TEST(PcdBad, UnknownTypeAndInvalidSizeForType) {
  TempDir tmp;
  expect_error(tmp.write("t.pcd", header("x y z", "4 4 4", "F F Q", "", 1, 1, "binary")), "unknown TYPE 'Q'");
  expect_error(tmp.write("s.pcd", header("x y z", "4 4 2", "F F F", "", 1, 1, "binary")),
               "invalid SIZE 2 for TYPE F of field 'z'");
  expect_error(tmp.write("u.pcd", header("x y z", "4 4 3", "F F U", "", 1, 1, "binary")),
               "invalid SIZE 3 for TYPE U");
  expect_error(tmp.write("z.pcd", header("x y z", "4 4 16", "F F F", "", 1, 1, "binary")), "invalid SIZE '16'");
}

TEST(PcdBad, NegativeDimensions) {
  TempDir tmp;
  std::string s = header("x y z", "4 4 4", "F F F", "", 1, 1, "binary");
  s.replace(s.find("WIDTH 1"), 7, "WIDTH -5");
  expect_error(tmp.write("n.pcd", s), "WIDTH '-5' is not a non-negative integer");
}

TEST(PcdBad, HugeDimensionsAreRejectedBeforeAnyAllocation) {
  TempDir tmp;
  // 10^15 points in a file of a few bytes: must fail on the size check, not in the allocator.
  for (const char* mode : {"binary", "ascii", "binary_compressed"}) {
    PcdReadOptions opt = xyz();
    opt.max_points = std::numeric_limits<int64_t>::max();
    std::string p = tmp.write(std::string("h_") + mode + ".pcd",
                              header("x y z", "4 4 4", "F F F", "", 1000000000000000, 1, mode) + std::string(16, '\1'));
    try {
      sl::read_pcd(p, opt);
      ADD_FAILURE() << "no error for " << mode;
    } catch (const sl::Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(p), std::string::npos) << m;
      EXPECT_TRUE(m.find("data shorter than declared") != std::string::npos ||
                  m.find("more than binary_compressed can hold") != std::string::npos)
          << m;
    }
  }
  std::string o = header("x", "4", "F", "", 4611686018427387904, 1, "binary");
  o.replace(o.find("HEIGHT 1"), 8, "HEIGHT 4");
  expect_error(tmp.write("o.pcd", o), "WIDTH * HEIGHT overflows");
}

TEST(PcdBad, CompressedFileOfOnlyPaddingFields) {
  TempDir tmp;
  PcdReadOptions opt;
  opt.fields = {};
  expect_error(tmp.write("pad.pcd", header("_", "4", "F", "", 2, 1, "binary_compressed") + std::string(8, '\0')),
               "only padding fields", opt);
}

TEST(PcdBad, MaxPointsLimit) {
  TempDir tmp;
  PcdReadOptions opt;
  opt.fields = {"x"};
  opt.max_points = 2;
  expect_error(tmp.write("m.pcd", header("x", "4", "F", "", 3, 1, "binary") + std::string(12, '\1')),
               "POINTS 3 exceeds the limit of 2", opt);
}

TEST(PcdBad, MissingRequestedField) {
  TempDir tmp;
  expect_error(tmp.write("f.pcd", header("x y z", "4 4 4", "F F F", "", 1, 1, "binary") + std::string(12, '\1')),
               "requested field 'intensity' is not in the file (fields: x y z)", PcdReadOptions{});
}

TEST(PcdBad, CompressedSizesThatLie) {
  TempDir tmp;
  PcdReadOptions opt;
  opt.fields = {"x"};
  opt.drop_nan = false;  // the bytes below are arbitrary floats, some NaN
  std::string raw(4 * 100, '\0');
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = char(i * 13);
  const std::string h = header("x", "4", "F", "", 100, 1, "binary_compressed");
  std::string good = compressed_body(raw);
  ASSERT_EQ(sl::read_pcd(tmp.write("ok.pcd", h + good), opt).size(), 100u);

  std::string s = good;
  uint32_t big = 1 << 20;
  std::memcpy(s.data(), &big, 4);
  expect_error(tmp.write("c1.pcd", h + s), "compressed size 1048576 exceeds the", opt);

  s = good;
  uint32_t wrong = 396;
  std::memcpy(s.data() + 4, &wrong, 4);
  expect_error(tmp.write("c2.pcd", h + s), "uncompressed size 396 does not match the header: 100 points x 4 bytes = 400", opt);
  expect_error(tmp.path("c2.pcd"), "byte " + std::to_string(h.size() + 4), opt);

  // Compressed stream one token short: decompresses to fewer bytes than declared.
  auto c = sl::lzf_compress(reinterpret_cast<const uint8_t*>(raw.data()), raw.size() - 8);
  s.clear();
  put(s, uint32_t(c.size()));
  put(s, uint32_t(raw.size()));
  s.append(reinterpret_cast<const char*>(c.data()), c.size());
  expect_error(tmp.write("c3.pcd", h + s), "LZF data decompressed to 392 bytes, the header says 400", opt);

  expect_error(tmp.write("c4.pcd", h + good.substr(0, 5)), "truncated: binary_compressed data needs an 8-byte size prefix", opt);
  expect_error(tmp.write("c5.pcd", h + good.substr(0, good.size() - 3)), "exceeds the", opt);

  // A tiny stream cannot decompress to 400 bytes: rejected before allocating.
  s.clear();
  put(s, uint32_t(2));
  put(s, uint32_t(400));
  s += "\x01\x02";
  expect_error(tmp.write("c6.pcd", h + s), "compressed size 2 cannot decompress to the declared 400 bytes", opt);
}

TEST(PcdBad, EveryTruncationAndByteFlipOfValidFilesFailsCleanly) {
  // Each truncation of a valid file, in each mode, either parses or throws sl::Error; ASan
  // builds check that no byte outside the exactly sized buffer is read.
  TempDir tmp;
  PointCloud c = sl::test::random_cloud(40, {"x", "y", "z", "intensity"}, 11);
  std::mt19937 rng(5);
  for (auto mode : kModes) {
    std::string p = tmp.path("v.pcd");
    sl::write_pcd(p, c, mode);
    std::string bytes = sl::read_file(p);
    int errors = 0;
    for (size_t len = 0; len < bytes.size(); ++len) {
      try {
        parse_exact(bytes.substr(0, len));
      } catch (const sl::Error& e) {
        ++errors;
        EXPECT_NE(std::string(e.what()).find("mem.pcd"), std::string::npos);
      }
    }
    // Cutting ascii inside the last line can leave a valid, shorter number; binary never.
    size_t last_line = bytes.size() - 1 - bytes.rfind('\n', bytes.size() - 2);
    if (mode == PcdDataMode::Ascii)
      EXPECT_GE(errors, int(bytes.size() - last_line - 1));
    else
      EXPECT_EQ(errors, int(bytes.size())) << "every strict truncation must be an error, mode "
                                           << sl::pcd_data_mode_name(mode);
    for (int t = 0; t < 300; ++t) {
      std::string b = bytes;
      b[rng() % b.size()] = char(rng());
      try {
        parse_exact(b);
      } catch (const sl::Error&) {
      }
    }
  }
}
