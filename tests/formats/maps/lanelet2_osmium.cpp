// An independent reader as the oracle: libosmium (Debian's libosmium2-dev, the OSM library behind
// osmium-tool) reads the same Lanelet2 files and the files our write-back produces. It must see
// the ways, node references, tags and relations our reader saw, and in a written map the same
// elements and tags with only the moved nodes' positions changed. Built when libosmium is found.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "graph/atomic_file.h"
#include "formats/maps/lanelet2.h"
#include "tests/formats/maps/map_test_util.h"
#include "tests/formats/maps/osmium_map.h"

namespace sl {
namespace {

using test::OsmiumMap;
using test::read_with_osmium;

MapReadOptions mgrs() {
  MapReadOptions o;
  o.projection.kind = "mgrs";
  return o;
}

TEST(Lanelet2Osmium, LibosmiumSeesTheWaysNodesAndTagsOurReaderSaw) {
  ProjectionSpec s;
  s.kind = "mgrs";
  const Projection frame = Projection::make(s, std::array<double, 2>{49.0, 8.42}, "test");
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const test::SynthOsm syn = test::synthetic_lanelet2(seed, frame);
    const VectorMap m = parse_lanelet2(syn.text, "synthetic.osm", mgrs());
    const OsmiumMap o = read_with_osmium(syn.text);
    EXPECT_EQ(int64_t(o.nodes.size()), m.counts.at("nodes"));
    EXPECT_EQ(int64_t(o.relations.size()), m.counts.at("relations"));
    for (const MapLine& l : m.lines) {
      const auto& w = o.ways.at(l.id);
      ASSERT_EQ(w.refs.size(), l.vertex.size());
      for (size_t j = 0; j < w.refs.size(); ++j) EXPECT_EQ(w.refs[j], m.vertices[l.vertex[j]].id);
      const std::string cat = w.tags.at("type") + (w.tags.count("subtype") ? ":" + w.tags.at("subtype") : "");
      EXPECT_EQ(cat, l.category);
    }
    for (size_t v = 0; v < m.vertices.size(); ++v) {
      const auto& n = o.nodes.at(m.vertices[v].id);
      const VertexSource& src = m.vertex_source[v];
      EXPECT_NEAR(n.lat, src.lat, 6e-8);  // osmium keeps 1e-7 degree
      EXPECT_NEAR(n.lon, src.lon, 6e-8);
      if (src.has_local) {
        EXPECT_EQ(std::stod(n.tags.at("local_x")), src.local_x);
      }
      if (src.has_ele) {
        EXPECT_EQ(std::stod(n.tags.at("ele")), src.ele);
      }
    }
  }
}

TEST(Lanelet2Osmium, AWrittenRefinedMapHasTheSameElementsAndTagsOnlyMovedPositions) {
  ProjectionSpec s;
  s.kind = "mgrs";
  const Projection frame = Projection::make(s, std::array<double, 2>{49.0, 8.42}, "test");
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const test::SynthOsm syn = test::synthetic_lanelet2(seed, frame);
    const VectorMap m = parse_lanelet2(syn.text, "synthetic.osm", mgrs());
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-0.4, 0.4);
    MapEdit edit(m);
    for (size_t l = 0; l < m.lines.size(); ++l) {
      if (!category_matches(m.lines[l].category, {"line_thin", "road_border"})) continue;
      std::vector<Vec3d> d(m.lines[l].vertex.size());
      for (auto& q : d) q = {u(rng), u(rng), 0.1 * u(rng)};
      edit.propose(l, d);
    }
    const auto disp = edit.displacements();
    const std::string out = render_vector_map(m, disp);
    const OsmiumMap a = read_with_osmium(syn.text), b = read_with_osmium(out);
    EXPECT_EQ(a.relations, b.relations);
    ASSERT_EQ(a.ways.size(), b.ways.size());
    for (const auto& [id, w] : a.ways) {
      EXPECT_EQ(b.ways.at(id).refs, w.refs);
      EXPECT_EQ(b.ways.at(id).tags, w.tags);
    }
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    std::map<int64_t, size_t> vertex_of;
    for (size_t v = 0; v < m.vertices.size(); ++v) vertex_of[m.vertices[v].id] = v;
    const VectorMap back = parse_lanelet2(out, "out.osm", mgrs());
    int moved = 0;
    for (const auto& [id, n] : a.nodes) {
      const auto& nb = b.nodes.at(id);
      auto it = vertex_of.find(id);
      const bool moves = it != vertex_of.end() && (disp[it->second][0] != 0 || disp[it->second][1] != 0);
      if (!moves) {
        EXPECT_EQ(nb.lat, n.lat);
        EXPECT_EQ(nb.lon, n.lon);
        if (it == vertex_of.end() || disp[it->second][2] == 0) {
          EXPECT_EQ(nb.tags, n.tags);
        }
        continue;
      }
      ++moved;
      const VertexSource& src = back.vertex_source[it->second];
      EXPECT_NEAR(nb.lat, src.lat, 6e-8);
      EXPECT_NEAR(nb.lon, src.lon, 6e-8);
      // the tags other than the coordinates' are the same
      auto ta = n.tags, tb = nb.tags;
      for (const char* k : {"local_x", "local_y", "ele"}) ta.erase(k), tb.erase(k);
      EXPECT_EQ(ta, tb);
    }
    EXPECT_GT(moved, 0);
  }
}

// Why the reader is not libosmium (README, "Changes to the original design"): Autoware's own map
// files have no version attribute on <osm>, which libosmium refuses; ours and Lanelet2's read them.
TEST(Lanelet2Osmium, LibosmiumRefusesAutowaresOwnMapWhichWeRead) {
  const std::string text = read_file(std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/autoware_mgrs_test_map.osm");
  EXPECT_THROW(read_with_osmium(text), std::exception);
  EXPECT_EQ(parse_lanelet2(text, "autoware.osm").lines.size(), 2u);
}

}  // namespace
}  // namespace sl
