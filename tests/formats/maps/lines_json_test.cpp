#include "formats/maps/lines_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"

using sl::test::TempDir;

namespace {

void expect_error(const std::string& path, const std::string& reason, int64_t max_points = 100000) {
  try {
    sl::read_lines_json(path, {}, max_points);
    FAIL() << "no error for " << path << ", expected " << reason;
  } catch (const sl::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path + ": "), std::string::npos) << m;
    EXPECT_NE(m.find(reason), std::string::npos) << m;
  }
}

const char* kGood = R"({"frame": "scene_0001", "extra": true, "lines": [
  {"id": 0, "category": "lane_marking", "points": [[1.5, 2, 3], [4, 5, -6.25]]},
  {"id": 7, "category": "curb", "points": [[0, 0, 0], [1, 1, 1], [2, 2, 1e-3]]}]})";

}  // namespace

TEST(LinesJson, ReadsFrameLinesAndPoints) {
  TempDir tmp;
  auto f = sl::read_lines_json(tmp.write("s.json", kGood));
  EXPECT_EQ(f.frame, "scene_0001");
  ASSERT_EQ(f.lines.size(), 2u);
  EXPECT_EQ(f.lines[0].id, 0);
  EXPECT_EQ(f.lines[0].category, "lane_marking");
  ASSERT_EQ(f.lines[0].points.size(), 2u);
  EXPECT_EQ(f.lines[0].points[1], (std::array<float, 3>{4, 5, -6.25f}));
  EXPECT_EQ(f.lines[1].id, 7);
  EXPECT_EQ(f.lines[1].points[2][2], 1e-3f);
}

TEST(LinesJson, CategoryFilterKeepsOnlyListedCategories) {
  TempDir tmp;
  auto f = sl::read_lines_json(tmp.write("s.json", kGood), {"curb", "wire"});
  ASSERT_EQ(f.lines.size(), 1u);
  EXPECT_EQ(f.lines[0].id, 7);
  EXPECT_EQ(sl::read_lines_json(tmp.path("s.json"), {"wire"}).lines.size(), 0u);
}

TEST(LinesJson, WriteThenReadIsBitExactForRandomFloats) {
  TempDir tmp;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1000.f, 1000.f);
  sl::LinesFile f;
  f.frame = "scene \"q\"\\\n";
  for (int l = 0; l < 5; ++l) {
    sl::Polyline pl;
    pl.id = l * 10 - 3;
    pl.category = l % 2 ? "curb" : "lane_marking";
    for (int i = 0; i < 50; ++i) pl.points.push_back({u(rng), u(rng) * 1e-6f, u(rng) * 1e20f});
    f.lines.push_back(pl);
  }
  std::string p = tmp.path("w.json");
  sl::write_lines_json(p, f);
  auto r = sl::read_lines_json(p);
  EXPECT_EQ(r.frame, f.frame);
  ASSERT_EQ(r.lines.size(), f.lines.size());
  for (size_t l = 0; l < f.lines.size(); ++l) {
    EXPECT_EQ(r.lines[l].id, f.lines[l].id);
    EXPECT_EQ(r.lines[l].category, f.lines[l].category);
    EXPECT_EQ(r.lines[l].points, f.lines[l].points);
  }
}

TEST(LinesJson, WriteRefusesNonFiniteCoordinates) {
  TempDir tmp;
  sl::LinesFile f{"s", {{0, "curb", {{0, 0, 0}, {1, std::numeric_limits<float>::quiet_NaN(), 0}}}}};
  std::string p = tmp.path("n.json");
  try {
    sl::write_lines_json(p, f);
    FAIL();
  } catch (const sl::Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 0 point 1: non-finite"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(p));
}

TEST(LinesJsonBad, NonFiniteOrNonNumericCoordinateGivesJsonPointer) {
  TempDir tmp;
  expect_error(tmp.write("a.json", R"({"frame": "f", "lines": [{"id": 0, "category": "c", "points": [[0,0,0], [1,1,"nan"]]}]})"),
               "/lines/0/points/1/2: expected a finite number, found a string");
  expect_error(tmp.write("b.json", R"({"frame": "f", "lines": [{"id": 0, "category": "c", "points": [[0,null,0], [1,1,1]]}]})"),
               "/lines/0/points/0/1: expected a finite number, found null");
  expect_error(tmp.write("c.json", R"({"frame": "f", "lines": [{"id": 0, "category": "c", "points": [[0,0,0], [1e39,1,1]]}]})"),
               "/lines/0/points/1/0: expected a finite number, found a number out of float range");
  // JSON has no NaN literal: RapidJSON rejects it as a parse error, with its position.
  expect_error(tmp.write("d.json", "{\"frame\": \"f\",\n \"lines\": [{\"id\": 0, \"category\": \"c\", \"points\": [[NaN,0,0],[1,1,1]]}]}"),
               "JSON parse error at line 2:");
}

TEST(LinesJsonBad, BadLineFailsTheWholeFileEvenWhenFilteredOut) {
  TempDir tmp;
  std::string p = tmp.write("a.json", R"({"frame": "f", "lines": [
      {"id": 0, "category": "keep", "points": [[0,0,0], [1,1,1]]},
      {"id": 1, "category": "other", "points": [[0,0,0]]}]})");
  try {
    sl::read_lines_json(p, {"keep"});
    FAIL();
  } catch (const sl::Error& e) {
    EXPECT_NE(std::string(e.what()).find(p + ": /lines/1/points: a line needs at least 2 points, found 1"), std::string::npos)
        << e.what();
  }
}

TEST(LinesJsonBad, LineWithOnePointOrTooManyPoints) {
  TempDir tmp;
  expect_error(tmp.write("one.json", R"({"frame": "f", "lines": [{"id": 0, "category": "c", "points": [[0,0,0]]}]})"),
               "/lines/0/points: a line needs at least 2 points, found 1");
  std::string big = R"({"frame": "f", "lines": [{"id": 0, "category": "c", "points": [)";
  for (int i = 0; i < 1000000; ++i) big += i ? ",[1,2,3]" : "[1,2,3]";
  big += "]}]}";
  std::string p = tmp.write("big.json", big);
  expect_error(p, "/lines/0/points: 1000000 points exceed the limit of 100000 per line");
  EXPECT_EQ(sl::read_lines_json(p, {}, 1000000).lines[0].points.size(), 1000000u);
}

TEST(LinesJsonBad, NotAnObjectMissingKeysAndWrongTypes) {
  TempDir tmp;
  expect_error(tmp.write("arr.json", "[1, 2]"), "/: expected an object, found an array");
  expect_error(tmp.write("nf.json", R"({"lines": []})"), "/: missing key \"frame\"");
  expect_error(tmp.write("nl.json", R"({"frame": "f"})"), "/: missing key \"lines\"");
  expect_error(tmp.write("fl.json", R"({"frame": 3, "lines": []})"), "/frame: expected a string, found a number");
  expect_error(tmp.write("ll.json", R"({"frame": "f", "lines": {}})"), "/lines: expected an array, found an object");
  expect_error(tmp.write("le.json", R"({"frame": "f", "lines": [5]})"), "/lines/0: expected an object, found a number");
  expect_error(tmp.write("id.json", R"({"frame": "f", "lines": [{"id": 1.5, "category": "c", "points": []}]})"),
               "/lines/0/id: expected an integer, found a number");
  expect_error(tmp.write("ca.json", R"({"frame": "f", "lines": [{"id": 1, "points": []}]})"),
               "/lines/0: missing key \"category\"");
  expect_error(tmp.write("pt.json", R"({"frame": "f", "lines": [{"id": 1, "category": "c", "points": [[1,2],[1,2,3]]}]})"),
               "/lines/0/points/0: expected [x, y, z], found 2 values");
}

TEST(LinesJsonBad, ParseErrorGivesLineAndColumn) {
  TempDir tmp;
  expect_error(tmp.write("p.json", "{\"frame\": \"f\",\n  \"lines\": [}\n"), "JSON parse error at line 2:13:");
  expect_error(tmp.write("e.json", ""), "JSON parse error at line 1:1: The document is empty.");
  expect_error(tmp.path("missing.json"), "no such file");
}

// ---- numbers (fuzz finding: RapidJSON 1.1.0's full-precision parse returned garbage) ---------

namespace {

// The plain reference: glibc's strtod is correctly rounded; the reader must give the float of
// that double for every number the JSON grammar allows.
float reference_float(const std::string& number) { return static_cast<float>(std::strtod(number.c_str(), nullptr)); }

std::vector<std::array<float, 3>> read_points(const TempDir& tmp, const std::string& a, const std::string& b,
                                              const std::string& c) {
  const std::string text = R"({"frame": "f", "lines": [{"id": 1, "category": "c", "points": [[)" + a + ", " + b +
                           ", " + c + "], [1, 2, 3]]}]}";
  return sl::read_lines_json(tmp.write("n.json", text)).lines.at(0).points;
}

}  // namespace

TEST(LinesJson, ZerosWithLargeExponentsAndTwentyDigitNumbersReadAsTheirValue) {
  // Each of these came back as garbage (e.g. 0.000e100 -> 5e294, 1.84467440737095516159 ->
  // -1e-199) before; tests/fuzz/lines_json/ holds the fuzzer's inputs.
  TempDir tmp;
  const std::vector<std::string> numbers = {"0e60",
                                            "-0e60",
                                            "0.000e100",
                                            "0.0000000000000000000000000",
                                            "1.84467440737095516159",
                                            "18446744073709551615.9",
                                            "0.0000000000000184467440737095516159",
                                            "123456789012345678901234567890e-25",
                                            "1e-400",
                                            "3.40282346638528859811704183484516925e38",
                                            "0.1000000000000000055511151231257827021181583404541015625"};
  for (size_t i = 0; i < numbers.size(); i += 3) {  // three per point, wrapping around
    const std::string a = numbers[i % numbers.size()], b = numbers[(i + 1) % numbers.size()],
                      c = numbers[(i + 2) % numbers.size()];
    auto pts = read_points(tmp, a, b, c);
    EXPECT_EQ(pts[0][0], reference_float(a)) << a;
    EXPECT_EQ(pts[0][1], reference_float(b)) << b;
    EXPECT_EQ(pts[0][2], reference_float(c)) << c;
  }
  EXPECT_EQ(reference_float("1.84467440737095516159"), 1.8446744f);  // the reference itself is sane
}

TEST(LinesJson, RandomLongDecimalsWithRandomExponentsMatchStrtod) {
  // Up to 28 significant digits, leading/trailing zeros, exponents -60..+28 (all within float
  // range): the float must be the one strtod's correctly rounded double gives.
  TempDir tmp;
  std::mt19937 rng(11);
  auto digits = [&](int n, bool nonzero_first) {
    std::string s;
    for (int i = 0; i < n; ++i) s += char('0' + (i == 0 && nonzero_first ? 1 + rng() % 9 : rng() % 10));
    return s;
  };
  for (int round = 0; round < 300; ++round) {
    std::string num[3];
    for (auto& n : num) {
      n = (rng() % 2 ? "-" : "");
      n += rng() % 4 == 0 ? std::string("0") : digits(1 + int(rng() % 8), true);
      if (rng() % 2) n += "." + std::string(rng() % 25, '0') + digits(1 + int(rng() % 20), false);
      if (rng() % 2) n += "e" + std::to_string(int(rng() % 89) - 60);
    }
    auto pts = read_points(tmp, num[0], num[1], num[2]);
    for (int k = 0; k < 3; ++k) {
      const float want = reference_float(num[k]);
      EXPECT_EQ(pts[0][k], want) << num[k];
    }
  }
}

TEST(LinesJsonBad, IdsBeyondInt64AndNumbersBeyondFloatOrDouble) {
  TempDir tmp;
  auto f = sl::read_lines_json(tmp.write(
      "max.json", R"({"frame": "f", "lines": [{"id": 9223372036854775807, "category": "c", "points": [[0,0,0],[1,1,1]]}]})"));
  EXPECT_EQ(f.lines.at(0).id, INT64_MAX);
  expect_error(tmp.write("u64.json",
                         R"({"frame": "f", "lines": [{"id": 18446744073709551615, "category": "c", "points": []}]})"),
               "/lines/0/id: expected an integer, found a number");
  expect_error(tmp.write("f.json", R"({"frame": "f", "lines": [{"id": 1, "category": "c", "points": [[1.8e308, 0, 0], [1, 2, 3]]}]})"),
               "/lines/0/points/0/0: expected a finite number, found a number out of float range");
  expect_error(tmp.write("d.json", R"({"frame": "f", "lines": [{"id": 1, "category": "c", "points": [[1e400, 0, 0], [1, 2, 3]]}]})"),
               "JSON parse error at line 1:");
}
