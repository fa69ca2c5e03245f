// gen-data's Lanelet2 map and its refinement as libosmium reads them: the nodes, ways (references,
// type/subtype tags) and lanelet relations our reader saw; after a refinement of the curbs only, the
// same elements and tags, and only the curbs' nodes (and no other) at new positions.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "data/gen.h"
#include "formats/maps/projection.h"
#include "graph/atomic_file.h"
#include "formats/clouds/formats.h"
#include "refine/refine_map.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/formats/maps/osmium_map.h"
#include "tests/train/constant_model.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

TEST(GenMapOsmium, LibosmiumReadsTheMapAndTheRefinedMapWithOnlyTheCurbNodesMoved) {
  test::TempDir tmp;
  GenConfig g = test::tiny_dataset(31, 1, 1);
  g.cloud_format = "las";
  g.map = "lanelet2";
  g.crs.epsg = 32632;  // as gen-data declares it: the map in lat/lon (without a CRS it is in local tags, lat="")
  g.crs.wkt = projected_crs_wkt(32632, "test").wkt;
  generate_dataset(tmp.path("ds"), g);
  const std::string text = read_file(tmp.path("ds/map.osm"));
  const test::OsmiumMap o = test::read_with_osmium(text);
  const auto shared = load_map_shared(tmp.path("ds/map.osm"), map_read_options(tmp.path("ds"), g));  // in the LAS files' CRS
  const VectorMap& m = shared->map;
  EXPECT_EQ(int64_t(o.nodes.size()), m.counts.at("nodes"));
  EXPECT_EQ(int64_t(o.ways.size()), int64_t(m.lines.size()));
  EXPECT_EQ(int64_t(o.relations.size()), m.counts.at("relations"));
  for (const MapLine& l : m.lines) {
    const auto& w = o.ways.at(l.id);
    ASSERT_EQ(w.refs.size(), l.vertex.size());
    for (size_t j = 0; j < w.refs.size(); ++j) EXPECT_EQ(w.refs[j], m.vertices[l.vertex[j]].id);
    EXPECT_EQ(w.tags.at("type") + ":" + w.tags.at("subtype"), l.category);
  }
  for (const auto& [id, r] : o.relations) {
    ASSERT_EQ(r.size(), 6u);
    EXPECT_EQ(r[0].rfind("way ", 0), 0u) << r[0];
    EXPECT_NE(r[0].find(" left"), std::string::npos);
    EXPECT_NE(r[1].find(" right"), std::string::npos);
    EXPECT_EQ(r[2], "type=lanelet");
  }

  // The curbs of the validation scene, moved 0.1 m sideways and 0.05 m up by a constant model.
  const std::string ckpt = tmp.path("c.safetensors");
  test::write_constant_checkpoint(ckpt, {0, 0.1f, 0.05f});
  const PointCloud cloud = read_cloud_file(tmp.path("ds/val/scene_0000.las"));
  MapRefineOptions opt;
  opt.categories = {"curbstone"};
  MapRefineReport rep;
  const auto d = refine_map(*TrainedModel::load(ckpt), *shared, cloud, {cloud_box(cloud)}, opt, &rep);
  EXPECT_EQ(rep.categories.size(), 1u);
  EXPECT_GT(rep.moved_vertices, 20);
  write_vector_map(tmp.path("refined.osm"), m, d);
  const test::OsmiumMap b = test::read_with_osmium(read_file(tmp.path("refined.osm")));
  EXPECT_EQ(b.relations, o.relations);
  ASSERT_EQ(b.ways.size(), o.ways.size());
  for (const auto& [id, w] : o.ways) {
    EXPECT_EQ(b.ways.at(id).refs, w.refs);
    EXPECT_EQ(b.ways.at(id).tags, w.tags);
  }
  std::set<int64_t> curb_nodes;
  for (const MapLine& l : m.lines)
    if (l.category.rfind("curbstone", 0) == 0)
      for (uint32_t v : l.vertex) curb_nodes.insert(m.vertices[v].id);
  int moved = 0;
  ASSERT_EQ(b.nodes.size(), o.nodes.size());
  for (const auto& [id, n] : o.nodes) {
    const auto& nb = b.nodes.at(id);
    if (nb.lat == n.lat && nb.lon == n.lon && nb.tags == n.tags) continue;
    ++moved;
    EXPECT_TRUE(curb_nodes.count(id)) << "node " << id << " is no curb's";
    EXPECT_NEAR(std::stod(nb.tags.at("ele")), std::stod(n.tags.at("ele")) + 0.05, 1e-6);
  }
  EXPECT_EQ(moved, rep.moved_vertices);
}

}  // namespace
}  // namespace sl
