// PLY and nuScenes readers and the cloud-format table: what real files hold (every scalar type,
// other elements, intensity under its usual names, NaN points), and every malformed file gives
// an error naming the file, the byte and the reason -- a huge count refused before allocating.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/kitti.h"
#include "formats/clouds/ply.h"

using sl::test::TempDir;

namespace sl {
namespace {

std::string error_of(const std::string& path) {
  try {
    read_ply(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const TempDir& tmp, const std::string& name, const std::string& bytes, const std::string& reason) {
  const std::string path = tmp.write(name, bytes);
  const std::string e = error_of(path);
  ASSERT_FALSE(e.empty()) << "no error for " << name;
  EXPECT_NE(e.find(path), std::string::npos) << e;
  EXPECT_NE(e.find(reason), std::string::npos) << name << ": " << e;
}

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

TEST(Ply, BinaryWithEveryScalarTypeAFaceElementAndScalarIntensityReadsExactly) {
  TempDir tmp;
  // Two vertices whose properties use one type each; a face element before and after them.
  std::string s =
      "ply\nformat binary_little_endian 1.0\ncomment made by hand\nelement material 1\nproperty uchar r\n"
      "element vertex 2\nproperty double x\nproperty float y\nproperty int16 z\nproperty uchar red\n"
      "property uint scalar_intensity\nproperty int8 flag\nelement face 1\nproperty list uchar int vertex_indices\n"
      "end_header\n";
  put<uint8_t>(s, 9);  // material
  put<double>(s, 1.25), put<float>(s, -2.5f), put<int16_t>(s, -7), put<uint8_t>(s, 200), put<uint32_t>(s, 40000),
      put<int8_t>(s, -1);
  put<double>(s, -3e5), put<float>(s, 0.125f), put<int16_t>(s, 32767), put<uint8_t>(s, 0), put<uint32_t>(s, 7),
      put<int8_t>(s, 1);
  put<uint8_t>(s, 3), put<int32_t>(s, 0), put<int32_t>(s, 1), put<int32_t>(s, 0);  // the face
  const PointCloud c = read_ply(tmp.write("types.ply", s));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.columns[0], (std::vector<float>{1.25f, -3e5f}));
  EXPECT_EQ(c.columns[1], (std::vector<float>{-2.5f, 0.125f}));
  EXPECT_EQ(c.columns[2], (std::vector<float>{-7.f, 32767.f}));
  EXPECT_EQ(c.columns[3], (std::vector<float>{40000.f, 7.f}));
  const PlyInfo info = parse_ply_header(s.data(), s.size(), "types.ply");
  EXPECT_TRUE(info.binary);
  EXPECT_EQ(info.vertices, 2);
  EXPECT_EQ(info.intensity, "scalar_intensity");
}

TEST(Ply, AsciiWithCrlfExtraElementsNoIntensityAndNanPoints) {
  TempDir tmp;
  const std::string s =
      "ply\r\nformat ascii 1.0\r\nelement camera 2\r\nproperty float f\r\nelement vertex 4\r\nproperty float z\r\n"
      "property float y\r\nproperty float x\r\nelement face 1\r\nproperty list uchar int vertex_indices\r\n"
      "end_header\r\n0.5\r\n1\r\n3 2 1\r\nnan 0 0\r\n  -1e2\t4.5 6 \r\n1 inf 2\r\n3 0 1 2\r\n";
  int64_t dropped = -1;
  const PointCloud c = read_ply(tmp.write("a.ply", s), true, &dropped);
  EXPECT_EQ(dropped, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.columns[0], (std::vector<float>{1.f, 6.f}));     // x is the third property
  EXPECT_EQ(c.columns[2], (std::vector<float>{3.f, -100.f}));  // z the first
  EXPECT_EQ(c.columns[3], (std::vector<float>{0.f, 0.f}));     // no intensity: 0
  EXPECT_EQ(read_ply(tmp.path("a.ply"), false).size(), 4u) << "kept when drop_nan is off";
}

TEST(Ply, AsciiWhoseLastLineHasNoNewlineReads) {
  TempDir tmp;
  const PointCloud c = read_ply(tmp.write("nonl.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
                                                      "property float y\nproperty float z\nend_header\n1 2 3"));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.columns[2], (std::vector<float>{3.f}));
}

TEST(Ply, WriteThenReadRoundTripsAsciiAndBinaryExactly) {
  TempDir tmp;
  const PointCloud cloud = test::random_cloud(500, {"x", "y", "z", "intensity"}, 3);
  for (const bool binary : {false, true}) {
    const std::string path = tmp.path(binary ? "b.ply" : "a.ply");
    write_ply(path, cloud, binary);
    const PointCloud back = read_ply(path);
    EXPECT_EQ(back.columns, cloud.columns) << (binary ? "binary" : "ascii");
  }
}

TEST(Ply, MalformedFilesNameTheFileTheByteAndTheReason) {
  TempDir tmp;
  const std::string head = "ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\n"
                           "property float y\nproperty float z\nend_header\n";
  expect_error(tmp, "empty.ply", "", "empty file");
  expect_error(tmp, "magic.ply", "plz\nformat ascii 1.0\n", "not a PLY file");
  expect_error(tmp, "noend.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n", "no end_header");
  expect_error(tmp, "be.ply", "ply\nformat binary_big_endian 1.0\nend_header\n", "binary_big_endian PLY is not supported");
  expect_error(tmp, "fmt.ply", "ply\nformat utf8 1.0\nend_header\n", "unknown PLY format 'utf8'");
  expect_error(tmp, "ver.ply", "ply\nformat ascii 2.0\nend_header\n", "unsupported PLY version '2.0'");
  expect_error(tmp, "nofmt.ply", "ply\nelement vertex 0\nproperty float x\nend_header\n", "no format line");
  expect_error(tmp, "novert.ply", "ply\nformat ascii 1.0\nelement face 0\nend_header\n", "no vertex element");
  expect_error(tmp, "noz.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n",
               "lacks an x, y or z");
  expect_error(tmp, "type.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float128 x\nend_header\n",
               "unknown property type 'float128'");
  expect_error(tmp, "count.ply", "ply\nformat ascii 1.0\nelement vertex -3\nend_header\n", "not a non-negative integer");
  expect_error(tmp, "dup.ply", "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float x\nend_header\n",
               "two properties named 'x'");
  expect_error(tmp, "list.ply",
               "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
               "property list uchar float n\nend_header\n",
               "list property 'n'");
  expect_error(tmp, "line.ply", "ply\nformat ascii 1.0\nbogus line\nend_header\n", "unknown header line 'bogus line'");
  // One endless header line is refused at the limit, not split into millions of tokens.
  expect_error(tmp, "long.ply", "ply\ncomment " + std::string(3 << 20, 'a') + " \nend_header\n",
               "byte 4: the header is longer than 1 MiB");
  // Bodies: short, and counts the file cannot hold -- refused before allocating.
  std::string short_body = head;
  for (float v : {1.f, 2.f, 3.f, 4.f}) put(short_body, v);
  expect_error(tmp, "short.ply", short_body, "byte " + std::to_string(head.size()) + ": 2 vertices need at least 12 bytes");
  expect_error(tmp, "huge.ply",
               "ply\nformat binary_little_endian 1.0\nelement vertex 18446744073709551615\nproperty double x\n"
               "property double y\nproperty double z\nend_header\n0123",
               "18446744073709551615 vertices need at least 24 bytes each");
  expect_error(tmp, "hugeascii.ply",
               "ply\nformat ascii 1.0\nelement vertex 100000000\nproperty float x\nproperty float y\nproperty float z\n"
               "end_header\n1 2 3\n",
               "100000000 vertices need at least 6 bytes each");
  expect_error(tmp, "hugeface.ply",
               "ply\nformat binary_little_endian 1.0\nelement face 4000000000\nproperty list uint int i\n"
               "element vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n\x05\0\0\0",
               "runs past the end of the file");
  expect_error(tmp, "nan.ply",
               "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
               "end_header\n1 2 three\n",
               "vertex 0: 'three' is not a number");
  expect_error(tmp, "few.ply",
               "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
               "end_header\n1 2 3\n4 5\n\n\n\n",
               "vertex 1 has 2 values, its element declares 3");
  expect_error(tmp, "many.ply",
               "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
               "end_header\n1 2 3 4\n",
               "more than the 3 values");
  expect_error(tmp, "trunc.ply",
               "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
               "end_header\n1 2 3\n4 5 6 7 8 9 10 11 12 13\n",
               "vertex 1 has");
}

TEST(NuScenes, FiveFloatRecordsReadAsXyzIntensityAndTheSizeIsChecked) {
  TempDir tmp;
  std::string s;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& r : std::vector<std::array<float, 5>>{{1, 2, 3, 0.5f, 7}, {nan, 0, 0, 1, 1}, {-4, 5, -6, 0.25f, 31}})
    s.append(reinterpret_cast<const char*>(r.data()), 20);
  int64_t dropped = 0;
  const PointCloud c = read_nuscenes_bin(tmp.write("s.pcd.bin", s), true, &dropped);
  EXPECT_EQ(dropped, 1);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.columns[0], (std::vector<float>{1, -4}));
  EXPECT_EQ(c.columns[3], (std::vector<float>{0.5f, 0.25f}));
  try {
    read_nuscenes_bin(tmp.write("odd.pcd.bin", std::string(32, '\1')));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size 32 bytes is not a multiple of 20"), std::string::npos) << e.what();
  }
  // written by write_nuscenes_bin: ring 0, the rest exact
  const PointCloud cloud = test::random_cloud(100, {"x", "y", "z", "intensity"}, 8);
  write_nuscenes_bin(tmp.path("w.pcd.bin"), cloud);
  EXPECT_EQ(read_nuscenes_bin(tmp.path("w.pcd.bin")).columns, cloud.columns);
}

TEST(CloudFormats, TheLongestExtensionDecidesAndEveryRowRoundTripsThroughItsWriter) {
  EXPECT_EQ(format_of_path("a/scene.pcd.bin")->name, "nuscenes");
  EXPECT_EQ(format_of_path("a/scene.bin")->name, "bin");
  EXPECT_EQ(format_of_path("a/scene.pcd")->name, "pcd");
  EXPECT_EQ(format_of_path("a/scene.ply")->name, "ply");
  EXPECT_EQ(format_of_path("a/scene.json"), nullptr);
  EXPECT_EQ(cloud_stem("a/scene_0001.pcd.bin", cloud_format("nuscenes", "t")), "scene_0001");
  try {
    cloud_format("e57", "here");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("here: unknown cloud format 'e57' (known: bin, las, laz, nuscenes, pcd, ply)"),
              std::string::npos)
        << e.what();
  }
  TempDir tmp;
  const PointCloud cloud = test::random_cloud(300, {"x", "y", "z", "intensity"}, 9);
  for (const CloudFormat* f : cloud_formats()) {
    if (!f->write || f->name == "las") continue;  // LAS: quantised; its round trip is tests/formats/clouds/las_test.cpp
    const std::string path = tmp.path("c" + f->extension);
    f->write(path, cloud);
    EXPECT_EQ(f->count(path), 300) << f->name;
    EXPECT_EQ(read_cloud_file(path, DecodeOptions{true, OriginPolicy::stored()}).columns, cloud.columns) << f->name;
  }
  // A new row: a name or an extension already taken is refused.
  CloudFormat again = *format_of_path("x.ply");
  again.name = "ply2";
  EXPECT_THROW(add_cloud_format(again), Error);
}

}  // namespace
}  // namespace sl
