// `infer --map` on the command line: its refusals, the gate and the review layer, and apply-review. (The README's and docs/data.md's map commands
// run in DocsCommands.*, tests/docs/docs_test.cpp; what a refinement moves: tests/refine.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/atomic_file.h"
#include "formats/maps/vector_map.h"
#include "refine/lanelet_check.h"
#include "tests/apps/cli_util.h"
#include "tests/report/browser_util.h"
#include "tests/train/constant_model.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

TEST(CliMap, InferOnAMapRefusesAnOtherOutputFormatMixedOptionsAndSaysWhatCategoriesTheMapHas) {
  test::TempDir dir;
  const std::string data = dir.path("d");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 0 --val 1").code, 0);
  const std::string ckpt = dir.path("c.safetensors");
  test::write_constant_checkpoint(ckpt, {0, 0, 0});
  const std::string base = "infer --checkpoint " + q(ckpt) + " --cloud " + q(data + "/val/scene_0000.las");
  auto fmt = run_cli(dir, base + " --map " + q(data + "/map.osm") + " --out " + q(dir.path("r.geojson")));
  EXPECT_EQ(fmt.code, 1);
  EXPECT_NE(fmt.err.find(dir.path("r.geojson") + ": the refined map is written in the map's own format"), std::string::npos)
      << fmt.err;
  EXPECT_FALSE(fs::exists(dir.path("r.geojson")));
  auto both = run_cli(dir, base + " --map " + q(data + "/map.osm") + " --lines x.json --out " + q(dir.path("r.osm")));
  EXPECT_EQ(both.code, 2) << both.err;
  auto cats = run_cli(dir, base + " --categories curbstone --out " + q(dir.path("r.json")));
  EXPECT_EQ(cats.code, 2) << cats.err;
  auto two = run_cli(dir, base + " --cloud " + q(data + "/val/scene_0000.las") + " --out " + q(dir.path("r.json")));
  EXPECT_EQ(two.code, 2);
  EXPECT_NE(two.err.find("infer --lines takes one --cloud (several clouds go with --map)"), std::string::npos) << two.err;
  auto none = run_cli(dir, base + " --map " + q(data + "/map.osm") + " --categories fence --out " + q(dir.path("r.osm")));
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.err.find("no line of these categories in the map (it has: curbstone:high, line_thin:dashed, line_thin:solid)"),
            std::string::npos)
      << none.err;
  EXPECT_EQ(read_file(dir.path("r.osm")), read_file(data + "/map.osm"));
  // A map or map folder that is not there is named, whichever flag gave it.
  for (const std::string flag : {"--map", "--map-dir"}) {
    auto missing = run_cli(dir, "infer --checkpoint " + q(ckpt) + " " + flag + " " + q(dir.path("nope")) + " --out " +
                                    q(dir.path("o.osm")));
    EXPECT_EQ(missing.code, 1) << flag;
    EXPECT_NE(missing.err.find(dir.path("nope") + ": no such map file or map folder"), std::string::npos) << missing.err;
    EXPECT_FALSE(fs::exists(dir.path("o.osm")));
  }
}

// The confidence gate end to end: a model that moves every line 0.25 m to its left (one view: its
// spread is 0, so sigma is the calibration's b). With sigma 0.05 m the shift is beyond 2 sigma and
// the lines move; with sigma 0.2 m it is not, and the map comes back byte for byte; a calibration
// beside the checkpoint made for another checkpoint is not used; the review layer lists what moved.
TEST(CliMap, InferGatesEachMoveByItsCalibratedSigmaAndWritesAReviewLayer) {
  test::TempDir dir;
  const std::string data = dir.path("d");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 0 --val 1").code, 0);
  fs::create_directories(dir.path("run"));
  const std::string ckpt = dir.path("run/c.safetensors");
  test::write_constant_checkpoint(ckpt, {0, 0.25f, 0});
  auto calibration = [&](const std::string& path, double b, const std::string& for_ckpt) {
    write_file_atomic(path, "{\"format\": \"streamline calibration 1\", \"checkpoint\": \"" + for_ckpt +
                                "\", \"fits\": {\"\": {\"across\": {\"a\": 1, \"b\": " + std::to_string(b) +
                                "}, \"vertical\": {\"a\": 1, \"b\": 0.01}}}}");
  };
  calibration(dir.path("small.json"), 0.05, "c.safetensors");
  calibration(dir.path("large.json"), 0.2, "c.safetensors");
  const std::string base = "infer --checkpoint " + q(ckpt) + " --cloud " + q(data + "/val/scene_0000.las") + " --map " +
                           q(data + "/map.osm") + " --passes 1 --unsettled 1";
  auto moved = run_cli(dir, base + " --calibration " + q(dir.path("small.json")) + " --out " + q(dir.path("r1.osm")));
  ASSERT_EQ(moved.code, 0) << moved.err;
  EXPECT_NE(moved.err.find("confidence: " + dir.path("small.json")), std::string::npos) << moved.err;
  EXPECT_NE(moved.err.find("left as right"), std::string::npos) << moved.err;
  EXPECT_NE(read_file(dir.path("r1.osm")), read_file(data + "/map.osm"));
  const std::string layer = read_file(dir.path("r1.review.geojson"));
  EXPECT_NE(layer.find("\"streamline:state\": \"refined\""), std::string::npos);
  EXPECT_NE(layer.find("\"streamline:state\": \"given\""), std::string::npos);
  EXPECT_EQ(layer.find("fixme"), std::string::npos) << "nothing is flagged at sigma 0.05";
  // What made it: the command, the checkpoint's file and step, its training pipeline, our version.
  EXPECT_NE(layer.find("\"streamline:made_by\": \"streamline infer --map "), std::string::npos) << layer.substr(0, 400);
  EXPECT_NE(layer.find("; the model: "), std::string::npos) << layer.substr(0, 400);
  EXPECT_NE(layer.find(".safetensors of pipeline '"), std::string::npos) << layer.substr(0, 400);
  EXPECT_NE(layer.find("', streamline " SL_VERSION), std::string::npos) << layer.substr(0, 400);
  auto kept = run_cli(dir, base + " --calibration " + q(dir.path("large.json")) + " --flag-sigma 0.5 --out " +
                              q(dir.path("r2.osm")));
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_EQ(read_file(dir.path("r2.osm")), read_file(data + "/map.osm")) << "0.25 m is within 2 sigma of 0.2 m";
  EXPECT_EQ(read_file(dir.path("r2.review.geojson")).find("\"Feature\""), std::string::npos) << "no changed line";
  // A sigma above --flag-sigma (default 0.05 m) flags every refined vertex, and the review layer says so.
  auto flagged = run_cli(dir, base + " --calibration " + q(dir.path("large.json")) + " --review " +
                                  q(dir.path("f.geojson")) + " --out " + q(dir.path("r3.osm")));
  ASSERT_EQ(flagged.code, 0) << flagged.err;
  EXPECT_NE(read_file(dir.path("f.geojson")).find("too uncertain to trust"), std::string::npos);
  // Beside the checkpoint: used when it is that checkpoint's, ignored (and said) when it is another's.
  calibration(dir.path("run/calibration.json"), 0.2, "c.safetensors");
  auto beside = run_cli(dir, base + " --out " + q(dir.path("r4.osm")));
  ASSERT_EQ(beside.code, 0) << beside.err;
  EXPECT_NE(beside.err.find("confidence: " + dir.path("run/calibration.json")), std::string::npos) << beside.err;
  EXPECT_EQ(read_file(dir.path("r4.osm")), read_file(data + "/map.osm"));
  calibration(dir.path("run/calibration.json"), 0.2, "step_00000100.safetensors");
  auto other = run_cli(dir, base + " --out " + q(dir.path("r5.osm")));
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_NE(other.err.find("calibrates step_00000100.safetensors, not c.safetensors"), std::string::npos) << other.err;
  EXPECT_NE(read_file(dir.path("r5.osm")), read_file(data + "/map.osm")) << "ungated: every vertex moves";
  // A bad calibration is refused by name before anything is written.
  write_file_atomic(dir.path("bad.json"), "{\"format\": 1}");
  auto bad = run_cli(dir, base + " --calibration " + q(dir.path("bad.json")) + " --out " + q(dir.path("r6.osm")));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find(dir.path("bad.json") + ": not a streamline calibration"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir.path("r6.osm")));
  EXPECT_FALSE(fs::exists(dir.path("r6.review.geojson")));
  EXPECT_FALSE(fs::exists(dir.path("r6.review.html")));
}

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// review.html beside the review layer: the counts infer printed, a dot per changed vertex on the map of
// the refined lines, close-ups of the largest and least certain changes over their points -- and a
// headless Chromium parses it as written (the same SVG elements) and draws it: the refined lines' blue,
// the given lines' grey, the points and a sure change's green on the page.
TEST(CliMap, InferWritesAReviewPageThatABrowserDraws) {
  test::TempDir dir;
  const std::string data = dir.path("d");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 0 --val 1").code, 0);
  const std::string ckpt = dir.path("c.safetensors");
  test::write_constant_checkpoint(ckpt, {0, 0.25f, 0});
  write_file_atomic(dir.path("cal.json"), "{\"format\": \"streamline calibration 1\", \"checkpoint\": \"c.safetensors\", "
                                          "\"fits\": {\"\": {\"across\": {\"a\": 1, \"b\": 0.01}, \"vertical\": {\"a\": 1, \"b\": 0.01}}}}");
  auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(data + "/val/scene_0000.las") + " --map " +
                            q(data + "/map.osm") + " --passes 1 --unsettled 1 --calibration " + q(dir.path("cal.json")) +
                            " --out " + q(dir.path("r.osm")));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = dir.path("r.review.html");
  EXPECT_NE(r.err.find("its page: " + page), std::string::npos) << r.err;
  const std::string html = read_file(page);
  // The counts: the same "moved" total infer printed per category.
  const VectorMap given = read_vector_map(data + "/map.osm"), refined = read_vector_map(dir.path("r.osm"));
  int64_t moved = 0;
  for (size_t v = 0; v < given.vertices.size(); ++v) moved += given.vertices[v].world != refined.vertices[v].world;
  ASSERT_GT(moved, 0);
  const size_t all = html.find("<tr><th>all</th><th>");
  ASSERT_NE(all, std::string::npos);
  EXPECT_EQ(html.substr(all + 20, html.find('<', all + 20) - all - 20), std::to_string(moved));
  EXPECT_EQ(count_of(html, "<circle class=\"change\""), size_t(moved)) << "one dot per moved vertex";
  EXPECT_GE(count_of(html, "class=\"closeup\""), 2u);
  EXPECT_EQ(count_of(html, "(none given)"), 0u) << "close-ups are drawn over the cloud's points";
  EXPECT_NE(html.find("Gated: a vertex moved only where its shift was beyond 2.0 sigma"), std::string::npos);
  EXPECT_NE(html.find("href=\"r.review.geojson\""), std::string::npos);

  const std::string chromium = test::find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs Debian's chromium)";
  const int W = 1000, H = 1800;
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --user-data-dir=" +
                            q(dir.path("profile")) + " ";
  const std::string png = dir.path("shot.png"), dom = dir.path("dom.html");
  ASSERT_EQ(std::system((chromium + flags + "--window-size=" + std::to_string(W) + "," + std::to_string(H) + " --screenshot=" +
                         q(png) + " " + q("file://" + page) + " >" + q(dir.path("log.txt")) + " 2>&1")
                            .c_str()),
            0)
      << read_file(dir.path("log.txt"));
  ASSERT_EQ(std::system((chromium + flags + "--dump-dom " + q("file://" + page) + " >" + q(dom) + " 2>" + q(dir.path("log2.txt"))).c_str()), 0)
      << read_file(dir.path("log2.txt"));
  const std::string d = read_file(dom);
  EXPECT_EQ(count_of(d, "<svg"), count_of(html, "<svg"));
  EXPECT_EQ(count_of(d, "<circle class=\"change\""), size_t(moved));
  EXPECT_EQ(count_of(d, "<polyline"), count_of(html, "<polyline"));

  const test::RgbImage img = test::read_png_rgb(png);
  ASSERT_TRUE(img.error.empty()) << img.error;
  const std::vector<uint8_t>& px = img.px;
  size_t blue = 0, green = 0, grey = 0;
  for (size_t i = 0; i + 2 < px.size(); i += 3) {
    const int R = px[i], G = px[i + 1], B = px[i + 2];
    blue += std::abs(R - 0x1f) < 16 && std::abs(G - 0x5f) < 16 && std::abs(B - 0xa8) < 16;
    green += std::abs(R - 0x1a) < 30 && std::abs(G - 0x98) < 30 && std::abs(B - 0x50) < 30;
    grey += R == G && G == B && R > 40 && R < 220;
  }
  EXPECT_GT(blue, 500u) << "the refined lines";
  EXPECT_GT(green, 20u) << "sure changes (sigma 0.01 m of a 0.05 m scale)";
  EXPECT_GT(grey, 2000u) << "the given lines and the points";
}

// The review layer applied back: the map maker accepts one refined line (its id turned into text, as
// JOSM keeps tags) and rejects another; apply-review keeps the refined moves on the accepted line only
// and writes every other vertex as given. Every line pending: rejected (the default) gives the map back
// byte for byte, accepted gives the refined map byte for byte. A decision it does not know, or a line
// the map does not have, is refused by name with nothing written.
TEST(CliMap, ApplyReviewKeepsTheMovesOfTheAcceptedLinesOnly) {
  test::TempDir dir;
  const std::string data = dir.path("d");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 0 --val 1").code, 0);
  const std::string ckpt = dir.path("c.safetensors");
  test::write_constant_checkpoint(ckpt, {0, 0.25f, 0.125f});
  const std::string given = data + "/map.osm", refined = dir.path("r.osm"), layer = dir.path("r.review.geojson");
  auto inf = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(data + "/val/scene_0000.las") + " --map " +
                              q(given) + " --passes 1 --no-gate --out " + q(refined));
  ASSERT_EQ(inf.code, 0) << inf.err;
  ASSERT_TRUE(fs::exists(layer));
  const std::string apply = "apply-review --map " + q(given) + " --refined " + q(refined) + " --review ";

  // Untouched layer: every line pending.
  auto none = run_cli(dir, apply + q(layer) + " --out " + q(dir.path("none.osm")));
  ASSERT_EQ(none.code, 0) << none.err;
  // The map's frame and why (read alone: Autoware's MGRS default), as infer and inspect say it.
  EXPECT_NE(none.err.find("applied the review " + layer + " to " + given + " (MGRS square "), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("; chosen by: "), std::string::npos) << none.err;
  EXPECT_EQ(read_file(dir.path("none.osm")), read_file(given));
  auto all = run_cli(dir, apply + q(layer) + " --pending accept --out " + q(dir.path("all.osm")));
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_EQ(read_file(dir.path("all.osm")), read_file(refined));

  // One line accepted, one rejected.
  rapidjson::Document doc;
  const std::string text = read_file(layer);
  doc.Parse(text.c_str(), text.size());
  ASSERT_FALSE(doc.HasParseError());
  std::vector<rapidjson::Value*> lines;
  for (auto& f : doc["features"].GetArray())
    if (std::string(f["properties"]["streamline:state"].GetString()) == "refined") lines.push_back(&f["properties"]);
  ASSERT_GE(lines.size(), 3u) << "the test needs three refined lines";
  auto& al = doc.GetAllocator();
  const int64_t accepted_id = (*lines[0])["id"].GetInt64(), rejected_id = (*lines[1])["id"].GetInt64();
  (*lines[0])["streamline:review"].SetString("accepted", al);
  (*lines[0])["id"].SetString(std::to_string(accepted_id).c_str(), al);
  (*lines[1])["streamline:review"].SetString("rejected", al);
  auto write_layer = [&](const std::string& path) {
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    doc.Accept(w);
    write_file_atomic(path, sb.GetString());
  };
  write_layer(dir.path("edited.geojson"));
  auto one = run_cli(dir, apply + q(dir.path("edited.geojson")) + " --out " + q(dir.path("one.osm")));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find("1 accepted, 1 rejected, " + std::to_string(lines.size() - 2) + " pending"), std::string::npos) << one.err;
  const VectorMap g = read_vector_map(given), r = read_vector_map(refined), o = read_vector_map(dir.path("one.osm"));
  std::set<uint32_t> on_accepted, on_rejected;
  for (const auto& l : g.lines) {
    if (l.id == accepted_id) on_accepted.insert(l.vertex.begin(), l.vertex.end());
    if (l.id == rejected_id) on_rejected.insert(l.vertex.begin(), l.vertex.end());
  }
  ASSERT_EQ(o.vertices.size(), g.vertices.size());
  int64_t kept = 0;
  for (uint32_t v = 0; v < g.vertices.size(); ++v) {
    const bool keep = on_accepted.count(v) && !on_rejected.count(v);
    const Vec3d& want = keep ? r.vertices[v].world : g.vertices[v].world;
    kept += keep && r.vertices[v].world != g.vertices[v].world;
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(o.vertices[v].world[c], want[c], 1e-6) << "vertex " << v;
  }
  EXPECT_GT(kept, 0) << "the accepted line moved";

  // Refusals: an unknown decision, a line of another map; nothing written.
  (*lines[2])["streamline:review"].SetString("maybe", al);
  write_layer(dir.path("maybe.geojson"));
  auto maybe = run_cli(dir, apply + q(dir.path("maybe.geojson")) + " --out " + q(dir.path("x.osm")));
  EXPECT_EQ(maybe.code, 1);
  EXPECT_NE(maybe.err.find(dir.path("maybe.geojson") + ": feature "), std::string::npos) << maybe.err;
  EXPECT_NE(maybe.err.find("\"streamline:review\" is \"maybe\""), std::string::npos) << maybe.err;
  (*lines[2])["streamline:review"].SetString("pending", al);
  (*lines[2])["id"].SetInt64(987654321);
  write_layer(dir.path("other.geojson"));
  auto other = run_cli(dir, apply + q(dir.path("other.geojson")) + " --out " + q(dir.path("x.osm")));
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.err.find("line id 987654321 part 0 is not in " + given), std::string::npos) << other.err;
  auto not_json = run_cli(dir, apply + q(given) + " --out " + q(dir.path("x.osm")));
  EXPECT_EQ(not_json.code, 1);
  EXPECT_NE(not_json.err.find(given + ": not JSON"), std::string::npos) << not_json.err;
  EXPECT_FALSE(fs::exists(dir.path("x.osm")));
}

// A taper refined with both bounds moved 12 cm down (valid); the map maker accepts the left bound and
// rejects the right: the left bound alone would cross the right one, so apply-review undoes the moves
// of lanelet 300's bounds, keeps the accepted move of a lane far away, and names the lanelet it kept.
TEST(CliMap, ApplyReviewUndoesTheAcceptedMovesThatWouldBreakALanelet) {
  test::TempDir dir;
  struct Node {
    int id;
    double x, y;
  };
  auto osm = [](const std::vector<Node>& nodes) {
    std::string s = "<?xml version='1.0'?>\n<osm version='0.6'>\n";
    for (const Node& n : nodes)
      s += "  <node id='" + std::to_string(n.id) + "' lat='' lon=''><tag k='local_x' v='" + std::to_string(n.x) +
           "'/><tag k='local_y' v='" + std::to_string(n.y) + "'/><tag k='ele' v='0'/></node>\n";
    s += "  <way id='100'><nd ref='1'/><nd ref='2'/><nd ref='3'/><nd ref='4'/><tag k='type' v='line_thin'/></way>\n"
         "  <way id='101'><nd ref='11'/><nd ref='12'/><nd ref='13'/><nd ref='4'/><tag k='type' v='road_border'/></way>\n"
         "  <way id='200'><nd ref='21'/><nd ref='22'/><tag k='type' v='line_thin'/></way>\n"
         "  <way id='201'><nd ref='31'/><nd ref='32'/><tag k='type' v='road_border'/></way>\n"
         "  <relation id='300'><member type='way' ref='100' role='left'/><member type='way' ref='101' role='right'/>"
         "<tag k='type' v='lanelet'/></relation>\n"
         "  <relation id='301'><member type='way' ref='200' role='left'/><member type='way' ref='201' role='right'/>"
         "<tag k='type' v='lanelet'/></relation>\n</osm>\n";
    return s;
  };
  // The taper: the bounds meet at node 4. The far lane: 3.5 m wide at y = 20.
  std::vector<Node> nodes = {{1, 0, 1},   {2, 5, 0.5},   {3, 9.5, 0.05},   {4, 10, 0},    {11, 0, -1},
                             {12, 5, -0.5}, {13, 9.5, -0.05}, {21, 0, 21.75}, {22, 10, 21.75}, {31, 0, 18.25},
                             {32, 10, 18.25}};
  const std::string given = dir.path("given.osm"), refined = dir.path("refined.osm"), layer = dir.path("layer.geojson");
  write_file_atomic(given, osm(nodes));
  for (Node& n : nodes) {
    if (n.id == 3 || n.id == 13) n.y -= 0.12;
    if (n.id == 21) n.y += 0.05;
  }
  write_file_atomic(refined, osm(nodes));
  auto line = [](int id, const std::string& review) {
    return "{\"type\":\"Feature\",\"geometry\":null,\"properties\":{\"streamline:state\":\"refined\",\"id\":" +
           std::to_string(id) + ",\"part\":0,\"streamline:review\":\"" + review + "\"}}";
  };
  write_file_atomic(layer, "{\"type\":\"FeatureCollection\",\"features\":[" + line(100, "accepted") + "," +
                               line(101, "rejected") + "," + line(200, "accepted") + "]}");
  auto r = run_cli(dir, "apply-review --map " + q(given) + " --refined " + q(refined) + " --review " + q(layer) +
                            " --out " + q(dir.path("out.osm")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("lanelets: 2 with a moved bound, 1 kept valid by undoing the moves of their bounds"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("lanelet 300: its left bound (way 100"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("lanelet 301"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("moved vertices: 1 kept, 2 put back as given"), std::string::npos) << r.err;
  const VectorMap g = read_vector_map(given), o = read_vector_map(dir.path("out.osm"));
  ASSERT_EQ(o.vertices.size(), g.vertices.size());
  for (uint32_t v = 0; v < g.vertices.size(); ++v) {
    const double dy = g.vertices[v].id == 21 ? 0.05 : 0.0;
    EXPECT_NEAR(o.vertices[v].world[0], g.vertices[v].world[0], 1e-6) << "node " << g.vertices[v].id;
    EXPECT_NEAR(o.vertices[v].world[1], g.vertices[v].world[1] + dy, 1e-6) << "node " << g.vertices[v].id;
  }
  for (const MapLanelet& ll : o.lanelets) {
    std::vector<Vec3d> pos;
    for (const auto& v : o.vertices) pos.push_back(v.world);
    EXPECT_EQ(lanelet_problem(o, ll, pos), "") << "lanelet " << ll.id;
  }
}

}  // namespace
}  // namespace sl
