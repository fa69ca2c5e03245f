#include "kernels/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "graph/atomic_file.h"
#include "graph/error.h"

namespace sl {
namespace {

std::string tmp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sl_kernels_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A file with the given JSON header (no padding) and data bytes.
std::string raw_file(const std::string& name, const std::string& header, const std::string& data,
                     int64_t declared = -1) {
  const uint64_t n = declared < 0 ? header.size() : uint64_t(declared);
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  bytes += header + data;
  const std::string p = tmp_path(name);
  write_file_atomic(p, bytes);
  return p;
}

void expect_error(const std::string& path, const std::string& reason) {
  try {
    read_safetensors(path);
    ADD_FAILURE() << "no error for " << path;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  }
}

TEST(Safetensors, RoundTripAllDtypesMetadataAndByteIdenticalRewrite) {
  const std::vector<float> f = {1.5f, -2.f, 3.25f, 0.f, 7.f, -1e-3f};
  const std::vector<double> d = {3.141592653589793};
  const std::vector<int32_t> i32 = {-1, 2, 2147483647};
  const std::vector<int64_t> i64 = {int64_t(1) << 40, -5};
  StFile s;
  s.tensors["w"] = st_view_f32(f.data(), {2, 3, 1});
  s.tensors["pi"] = {"F64", {}, {reinterpret_cast<const char*>(d.data()), 8}};
  s.tensors["idx"] = {"I32", {3}, {reinterpret_cast<const char*>(i32.data()), 12}};
  s.tensors["big"] = {"I64", {2}, {reinterpret_cast<const char*>(i64.data()), 16}};
  s.tensors["empty"] = {"F32", {0, 4}, {}};
  s.metadata = {{"step", "12"}, {"pipeline", "{\"a\": [1, 2]}\n\"quoted\""}};
  const std::string p = tmp_path("rt.safetensors");
  write_safetensors(p, s);
  const StFile r = read_safetensors(p);
  ASSERT_EQ(r.tensors.size(), 5u);
  EXPECT_EQ(r.metadata, s.metadata);
  for (const auto& [name, t] : s.tensors) {
    const StTensor& u = r.tensors.at(name);
    EXPECT_EQ(u.dtype, t.dtype) << name;
    EXPECT_EQ(u.shape, t.shape) << name;
    EXPECT_EQ(u.bytes, t.bytes) << name;
  }
  // header is space-padded to a multiple of 8 and data follows it aligned
  const std::string bytes = read_file(p);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  // rewrite of what was read gives the same bytes
  const std::string p2 = tmp_path("rt2.safetensors");
  write_safetensors(p2, r);
  EXPECT_EQ(read_file(p2), bytes);
}

TEST(Safetensors, AcceptsHandWrittenFileWithTrailingSpaces) {
  const float v[2] = {1.f, 2.f};
  const std::string p = raw_file("hand.safetensors",
                                 R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   )",
                                 std::string(reinterpret_cast<const char*>(v), 8));
  const StFile r = read_safetensors(p);
  float got[2];
  std::memcpy(got, r.tensors.at("x").bytes.data(), 8);
  EXPECT_EQ(got[0], 1.f);
  EXPECT_EQ(got[1], 2.f);
}

TEST(Safetensors, RejectsEachCorruptionWithPathAndReason) {
  const std::string ok8(8, '\x01');
  const std::string good = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  {
    const std::string p = tmp_path("short.safetensors");
    write_file_atomic(p, "abc");
    expect_error(p, "shorter than the 8-byte header size");
  }
  expect_error(raw_file("beyond.safetensors", good, ok8, 1000), "beyond the end of the file");
  expect_error(raw_file("badjson.safetensors", R"({"x":{"dtype":"F32",)", ok8), "bad JSON header");
  expect_error(raw_file("notobj.safetensors", "[1,2]", ""), "not an object");
  expect_error(raw_file("dtype.safetensors",
                        R"({"x":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", ok8),
               "unsupported dtype 'BF16'");
  expect_error(raw_file("noshape.safetensors", R"({"x":{"dtype":"F32","data_offsets":[0,8]}})", ok8),
               "tensor 'x' has no shape");
  expect_error(raw_file("truncated.safetensors", good, ok8.substr(0, 5)), "truncated file?");
  expect_error(raw_file("mismatch.safetensors",
                        R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", ok8),
               "has 8 bytes but dtype F32 x shape needs 12");
  expect_error(raw_file("overlap.safetensors",
                        R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        ok8),
               "overlap");
  expect_error(raw_file("hole.safetensors",
                        R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", ok8),
               "hole");
  expect_error(raw_file("trailing.safetensors", good, ok8 + "xx"), "trailing bytes");
  expect_error(raw_file("reversed.safetensors",
                        R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", ok8),
               "begin > end");
  expect_error(raw_file("meta.safetensors",
                        R"({"__metadata__":{"step":3},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                        ok8),
               "__metadata__.step is not a string");
  expect_error(tmp_path("does_not_exist.safetensors"), "does_not_exist");
}

// 10^5 / 10^6 levels in the header overflowed the stack of the recursive parser; the byte named
// is the file's (8 + the offset in the header).
TEST(Safetensors, HeaderNestedTenToTheFiveAndSixLevelsIsAnErrorNamingTheByte) {
  for (int levels : {100000, 1000000}) {
    std::string nest;
    for (int i = 0; i < levels; ++i) nest += "{\"a\":";
    expect_error(raw_file("deep.safetensors", nest + "1" + std::string((size_t)levels, '}'), ""),
                 "JSON header nested deeper than 256 levels (byte " + std::to_string(8 + 5 * 256) + ")");
  }
}

TEST(Safetensors, WriterRejectsSizeShapeMismatchAndUnknownDtype) {
  const float v[3] = {1, 2, 3};
  StFile s;
  s.tensors["x"] = {"F32", {2}, {reinterpret_cast<const char*>(v), 12}};
  const std::string p = tmp_path("bad_write.safetensors");
  EXPECT_THROW(write_safetensors(p, s), Error);
  s.tensors["x"] = {"Q4", {3}, {reinterpret_cast<const char*>(v), 12}};
  EXPECT_THROW(write_safetensors(p, s), Error);
  EXPECT_FALSE(std::filesystem::exists(p));
}

}  // namespace
}  // namespace sl
