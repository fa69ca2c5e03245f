// The README's "Your own data" commands for maps, as a user runs them (gen-data --map, inspect, run
// the map pipeline with its evaluation, infer --map), with one epoch of a small model; what the
// refined maps hold; a zero refinement through the command line writes both formats back byte for
// byte; and the command line's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "graph/atomic_file.h"
#include "formats/clouds/formats.h"
#include "formats/maps/map_lines.h"
#include "tests/apps/cli_util.h"
#include "tests/train/constant_model.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

const std::string kMapPipeline = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_map.json";
const std::string kSmall = " --set epochs=1 --set train.eval.every_epochs=1 --set train.model.encoder=[16,32]"
                           " --set train.model.line_mlp=[16] --set train.model.regressor=[16] --set resample.points=128";

// The map's vertices that moved from `a` to `b` (same map, same vertex order).
std::set<size_t> moved(const VectorMap& a, const VectorMap& b) {
  EXPECT_EQ(a.vertices.size(), b.vertices.size());
  std::set<size_t> out;
  for (size_t v = 0; v < a.vertices.size() && v < b.vertices.size(); ++v)
    if (a.vertices[v].world != b.vertices[v].world) out.insert(v);
  return out;
}

// Every moved vertex lies on one of the clouds (whose world boxes are given).
void expect_on(const VectorMap& m, const std::set<size_t>& vs, const std::vector<BoxXY>& boxes, const std::string& what) {
  for (size_t v : vs) {
    bool on = false;
    for (const auto& b : boxes) on = on || b.contains(m.vertices[v].world[0], m.vertices[v].world[1]);
    EXPECT_TRUE(on) << what << ": vertex " << m.vertices[v].id << " moved off the clouds";
  }
}

BoxXY box_of(const std::string& cloud) { return cloud_box(read_cloud_file(cloud)); }

TEST(CliMap, ReadmeYourOwnDataMapCommandsRun) {
  test::TempDir dir;
  const std::string data = dir.path("mapdata"), runs = dir.path("runs_map"), refined = dir.path("refined.osm");
  // streamline gen-data /tmp/mapdata --format las --map lanelet2 --train 8 --val 2
  auto g = run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 8 --val 2");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("map: 116 lines (curbstone:high 40, line_thin:dashed 30, line_thin:solid 46), 3538 vertices (58 shared by "
                       "two lines) in " + data + "/map.osm, UTM zone 32N (EPSG:32632)"),
            std::string::npos)
      << g.out;
  EXPECT_FALSE(fs::exists(data + "/train/scene_0000.json"));
  // streamline inspect /tmp/mapdata/map.osm; streamline inspect /tmp/mapdata/train/scene_0000.las
  auto i = run_cli(dir, "inspect " + q(data + "/map.osm"));
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("world frame: UTM zone 32N (EPSG:32632)"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("line_thin:dashed"), std::string::npos) << i.out;
  auto l = run_cli(dir, "inspect " + q(data + "/train/scene_0000.las"));
  ASSERT_EQ(l.code, 0) << l.err;
  EXPECT_NE(l.out.find("origin: [499900, 5399900, -100]"), std::string::npos) << l.out;
  // streamline run pipelines/line_refine_train_map.json --set scan.root=... --set train.eval.root=... --set train.checkpoint.dir=...
  auto t = run_cli(dir, "run " + q(kMapPipeline) + " --set scan.root=" + q(data + "/train") + " --set train.eval.root=" +
                            q(data + "/val") + " --set train.checkpoint.dir=" + q(runs) + kSmall);
  ASSERT_EQ(t.code, 0) << t.err;
  // The evaluation replayed the pipeline on the validation folder: its clouds found ../map.osm too.
  const size_t e = t.out.find("eval after epoch 1 (step ");
  ASSERT_NE(e, std::string::npos) << t.out;
  const size_t n_at = t.out.find("): ", e) + 3;
  EXPECT_GT(std::stoi(t.out.substr(n_at)), 50) << t.out.substr(e, 120);
  EXPECT_NE(t.out.find("lines: 92 map line part(s) on 8 of 8 scene(s), from " + data + "/map.osm (UTM zone 32N (EPSG:32632))"),
            std::string::npos)
      << t.err;
  // streamline infer --checkpoint runs/map --cloud val/scene_0000.las --cloud val/scene_0001.las --map map.osm --out refined.osm
  const std::string c0 = data + "/val/scene_0000.las", c1 = data + "/val/scene_0001.las";
  auto r = run_cli(dir, "infer --checkpoint " + q(runs) + " --cloud " + q(c0) + " --cloud " + q(c1) + " --map " +
                            q(data + "/map.osm") + " --out " + q(refined));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("categories: line_thin, curbstone (the checkpoint's; --categories to choose)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("24 part(s) of lines on the clouds"), std::string::npos) << r.err;
  const VectorMap before = read_vector_map(data + "/map.osm"), after = read_vector_map(refined);
  ASSERT_EQ(after.lines.size(), before.lines.size());
  EXPECT_EQ(after.counts, before.counts);
  const auto m = moved(before, after);
  EXPECT_GT(m.size(), 300u) << "the 24 ways on the two validation clouds";
  expect_on(before, m, {box_of(c0), box_of(c1)}, "lanelet2");
  EXPECT_NE(r.err.find(std::to_string(m.size()) + " vertices written moved"), std::string::npos) << r.err;
  for (const auto& e2 : fs::directory_iterator(dir.path("")))
    EXPECT_EQ(e2.path().string().find(".tmp"), std::string::npos) << "no temp file left: " << e2.path();

  // Only the curbs, on one cloud.
  auto curbs = run_cli(dir, "infer --checkpoint " + q(runs) + " --cloud " + q(c0) + " --map " + q(data + "/map.osm") +
                                " --categories curbstone --out " + q(dir.path("curbs.osm")));
  ASSERT_EQ(curbs.code, 0) << curbs.err;
  const VectorMap curbs_map = read_vector_map(dir.path("curbs.osm"));
  const auto mc = moved(before, curbs_map);
  EXPECT_GT(mc.size(), 50u);
  std::set<uint32_t> curb_vertices;
  for (const auto& line : before.lines)
    if (line.category == "curbstone:high") curb_vertices.insert(line.vertex.begin(), line.vertex.end());
  for (size_t v : mc) EXPECT_TRUE(curb_vertices.count(uint32_t(v))) << "vertex " << before.vertices[v].id;
  expect_on(before, mc, {box_of(c0)}, "curbs");

  // GeoJSON and PCD: streamline gen-data /tmp/geodata --format pcd --map geojson ...; run ... --set lines.map=../map.geojson; infer
  const std::string geo = dir.path("geodata"), runs_geo = dir.path("runs_geo"), refined_geo = dir.path("refined.geojson");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(geo) + " --format pcd --map geojson --train 8 --val 2").code, 0);
  auto tg = run_cli(dir, "run " + q(kMapPipeline) + " --set scan.root=" + q(geo + "/train") + " --set scan.format=pcd" +
                             " --set lines.map=../map.geojson --set train.eval.root=" + q(geo + "/val") +
                             " --set train.checkpoint.dir=" + q(runs_geo) + kSmall);
  ASSERT_EQ(tg.code, 0) << tg.err;
  EXPECT_NE(tg.out.find("eval after epoch 1"), std::string::npos) << tg.out;
  auto rg = run_cli(dir, "infer --checkpoint " + q(runs_geo) + " --cloud " + q(geo + "/val/scene_0000.pcd") + " --map " +
                             q(geo + "/map.geojson") + " --out " + q(refined_geo));
  ASSERT_EQ(rg.code, 0) << rg.err;
  const VectorMap gb = read_vector_map(geo + "/map.geojson"), ga = read_vector_map(refined_geo);
  ASSERT_EQ(ga.lines.size(), gb.lines.size());
  const auto mg = moved(gb, ga);
  EXPECT_GT(mg.size(), 100u);
  expect_on(gb, mg, {box_of(geo + "/val/scene_0000.pcd")}, "geojson");

  // A model whose refinement is zero writes both maps back byte for byte.
  const std::string zero = dir.path("zero.safetensors");
  test::write_constant_checkpoint(zero, {0, 0, 0});
  for (const auto& [map, cloud] : {std::pair<std::string, std::string>{data + "/map.osm", c0}, {geo + "/map.geojson", geo + "/val/scene_0000.pcd"}}) {
    const std::string out = dir.path("zero" + fs::path(map).extension().string());
    auto z = run_cli(dir, "infer --checkpoint " + q(zero) + " --cloud " + q(cloud) + " --map " + q(map) + " --out " + q(out));
    ASSERT_EQ(z.code, 0) << z.err;
    EXPECT_EQ(read_file(out), read_file(map)) << map;
    EXPECT_NE(z.err.find("(0 vertices written moved)"), std::string::npos) << z.err;
  }
}

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
}

}  // namespace
}  // namespace sl
