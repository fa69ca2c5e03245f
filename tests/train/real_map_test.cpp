// A real Lanelet2 map end to end: Lanelet2's own lanelet2_io/test/test_data/mapping_example.osm
// (JOSM, lat/lon only, deleted elements, shared nodes). Its license is unclear to us, so it is not in
// the repository: these tests run where SL_REAL_LANELET2_MAP names a copy (and
// SL_REAL_LANELET2_COUNTS a count of its elements made by another reader, e.g. Python's ElementTree),
// and skip, saying so, elsewhere. SL_REAL_LANELET2_OUT (a folder) keeps the written maps for
// osmium diff and xmllint (tests/formats/maps/fixtures/README.md records such a run).
//  - the lines per type:subtype, nodes and relations equal the independent count (deleted excluded);
//  - its GeoJSON export by osmium (SL_REAL_LANELET2_GEOJSON) reads the same lines per category;
//  - a zero refinement writes the file (and the export) back byte for byte;
//  - a constant sideways offset of the line_thin and line_thick ways over a synthetic cloud laid
//    under the map moves exactly those ways' nodes (by 0.1 m to each way's left) and no other;
//  - a model trained on generated data refines line_thin and curbstone: only their nodes move.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "formats/maps/map_lines.h"
#include "train/checkpoints.h"
#include "refine/refine_map.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/constant_model.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "ways by type:subtype (excluding action='delete'):" of the count file, as our categories name them
// ("curbstone:<no subtype>" is "curbstone"); untyped ways apart.
std::map<std::string, int64_t> counted_categories(const std::string& text, int64_t* untyped) {
  std::map<std::string, int64_t> out;
  std::istringstream in(text);
  std::string line;
  bool on = false;
  while (std::getline(in, line)) {
    if (line.rfind("ways by type:subtype (excluding action='delete')", 0) == 0) {
      on = true;
      continue;
    }
    if (!on) continue;
    if (line.rfind("  ", 0) != 0) break;
    const size_t colon = line.rfind(": ");
    std::string cat = line.substr(2, colon - 2);
    const int64_t n = std::stoll(line.substr(colon + 2));
    if (cat.rfind("<no type tag>", 0) == 0) {
      *untyped += n;
      continue;
    }
    const std::string none = ":<no subtype>";
    if (cat.size() > none.size() && cat.compare(cat.size() - none.size(), none.size(), none) == 0) cat.resize(cat.size() - none.size());
    out[cat] += n;
  }
  return out;
}

int64_t counted(const std::string& text, const std::string& key) {
  const size_t at = text.find("\n" + key + ": ");
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size() + 3));
}
int64_t counted_deleted(const std::string& text, const std::string& kind) {
  const size_t at = text.find("action='delete' counts:");
  const size_t k = text.find("  " + kind + ": ", at);
  return std::stoll(text.substr(k + kind.size() + 4));
}

// A flat cloud under the whole map (0.2 m grid, the map's box grown by 5 m), bright 0.08 m around the
// painted lines (line_thin, line_thick), a curb-like 0.12 m step beside curbstones, in the local frame
// of the box's 100 m grid origin.
PointCloud cloud_under(const VectorMap& m) {
  const MapSummary s = summarize(m);
  const double x0 = s.min[0] - 5, y0 = s.min[1] - 5, x1 = s.max[0] + 5, y1 = s.max[1] + 5;
  const Vec3d origin{std::floor(x0 / 100) * 100, std::floor(y0 / 100) * 100, 0};
  const double step = 0.2;
  const int nx = int((x1 - x0) / step) + 1, ny = int((y1 - y0) / step) + 1;
  std::vector<float> intensity(size_t(nx) * size_t(ny), 0.08f), lift(size_t(nx) * size_t(ny), 0.f);
  for (const MapLine& l : m.lines) {
    const bool paint = l.category.rfind("line_th", 0) == 0, curb = l.category.rfind("curbstone", 0) == 0;
    if (!paint && !curb) continue;
    for (size_t k = 0; k + 1 < l.points.size(); ++k) {
      const auto& a = l.points[k];
      const auto& b = l.points[k + 1];
      const double dx = b[0] - a[0], dy = b[1] - a[1], len2 = dx * dx + dy * dy;
      const int i0 = std::max(0, int((std::min(a[0], b[0]) - 0.5 - x0) / step)), i1 = std::min(nx - 1, int((std::max(a[0], b[0]) + 0.5 - x0) / step));
      const int j0 = std::max(0, int((std::min(a[1], b[1]) - 0.5 - y0) / step)), j1 = std::min(ny - 1, int((std::max(a[1], b[1]) + 0.5 - y0) / step));
      for (int i = i0; i <= i1; ++i)
        for (int j = j0; j <= j1; ++j) {
          const double px = x0 + i * step - a[0], py = y0 + j * step - a[1];
          const double t = len2 > 0 ? std::clamp((px * dx + py * dy) / len2, 0.0, 1.0) : 0.0;
          const double ex = px - t * dx, ey = py - t * dy, dist = std::hypot(ex, ey);
          const size_t c = size_t(i) * size_t(ny) + size_t(j);
          if (paint && dist < 0.08) intensity[c] = 0.65f;
          if (curb && dist < 0.5 && dx * ey - dy * ex > 0) lift[c] = 0.12f;  // raised on the left
        }
    }
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0, 0.02f);
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.resize(4);
  c.origin = origin;
  for (int i = 0; i < nx; ++i)
    for (int j = 0; j < ny; ++j) {
      const size_t k = size_t(i) * size_t(ny) + size_t(j);
      c.columns[0].push_back(float(x0 + i * step - origin[0]));
      c.columns[1].push_back(float(y0 + j * step - origin[1]));
      c.columns[2].push_back(lift[k] + 0.3f * noise(rng) * 0.1f);
      c.columns[3].push_back(std::clamp(intensity[k] + noise(rng), 0.f, 1.f));
    }
  return c;
}

class RealLanelet2Map : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = env("SL_REAL_LANELET2_MAP");
    if (path_.empty() || !fs::exists(path_))
      GTEST_SKIP() << "SL_REAL_LANELET2_MAP does not name Lanelet2's mapping_example.osm (not in the repository)";
    out_ = env("SL_REAL_LANELET2_OUT");
  }
  void keep(const std::string& name, const std::string& bytes) {
    if (!out_.empty()) write_file_atomic(out_ + "/" + name, bytes);
  }
  std::string path_, out_;
};

TEST_F(RealLanelet2Map, LinesPerTypeNodesAndRelationsEqualAnIndependentCount) {
  const std::string counts_path = env("SL_REAL_LANELET2_COUNTS");
  if (counts_path.empty()) GTEST_SKIP() << "SL_REAL_LANELET2_COUNTS names no count file";
  const std::string counts = read_file(counts_path);
  const VectorMap m = read_vector_map(path_);
  const MapSummary s = summarize(m);
  int64_t untyped = 0;
  const auto want = counted_categories(counts, &untyped);
  ASSERT_GT(want.size(), 10u);
  std::map<std::string, int64_t> got;
  for (const auto& [cat, c] : s.categories) got[cat] = c.lines;
  EXPECT_EQ(got, want);
  EXPECT_EQ(m.counts.at("ways without type"), untyped);
  EXPECT_EQ(m.counts.at("nodes"), counted(counts, "nodes") - counted_deleted(counts, "nodes"));
  EXPECT_EQ(m.counts.at("ways"), counted(counts, "ways") - counted_deleted(counts, "ways"));
  EXPECT_EQ(m.counts.at("relations"), counted(counts, "relations") - counted_deleted(counts, "relations"));
  EXPECT_EQ(m.counts.at("deleted elements (action=delete)"), counted_deleted(counts, "total"));
}

// Zero: the same bytes; 0.1 m to the left of each piece: exactly the painted lines' vertices move.
void zero_and_constant(const std::string& path, const std::string& tag, const std::function<void(const std::string&, const std::string&)>& keep) {
  test::TempDir tmp;
  const auto shared = load_map_shared(path, {});
  const VectorMap& m = shared->map;
  const PointCloud cloud = cloud_under(m);
  test::write_constant_checkpoint(tmp.path("zero.safetensors"), {0, 0, 0});
  MapRefineOptions o;
  o.categories = {"line_thin", "line_thick"};
  MapRefineReport rep;
  const auto zero = refine_map(*TrainedModel::load(tmp.path("zero.safetensors")), *shared, cloud, {cloud_box(cloud)}, o, &rep);
  EXPECT_GT(rep.refined_pieces, 50) << tag;
  const std::string same = render_vector_map(m, zero);
  EXPECT_TRUE(same == m.source) << tag;
  keep("zero_" + tag, same);

  test::write_constant_checkpoint(tmp.path("left.safetensors"), {0, 0.1f, 0});
  const auto d = refine_map(*TrainedModel::load(tmp.path("left.safetensors")), *shared, cloud, {cloud_box(cloud)}, o, &rep);
  std::set<uint32_t> painted, other;
  for (const MapLine& l : m.lines) (category_matches(l.category, o.categories) ? painted : other).insert(l.vertex.begin(), l.vertex.end());
  int64_t shared_nodes = 0;
  for (size_t v = 0; v < d.size(); ++v) {
    const double move = std::hypot(d[v][0], d[v][1]);
    if (painted.count(uint32_t(v))) {
      EXPECT_GT(move, 0.0) << tag << " vertex " << m.vertices[v].id;
      EXPECT_LE(move, 0.1 + 1e-6) << tag << " vertex " << m.vertices[v].id;  // 0.1, or a mean of two directions
      shared_nodes += other.count(uint32_t(v));
    } else {
      EXPECT_EQ(move, 0.0) << tag << " vertex " << m.vertices[v].id << " is on no painted line";
    }
    EXPECT_EQ(d[v][2], 0.0);
  }
  EXPECT_EQ(rep.moved_vertices, int64_t(painted.size())) << tag;
  EXPECT_EQ(rep.shared_with_unrefined, shared_nodes) << tag;
  EXPECT_TRUE(rep.left.empty()) << tag << ": " << rep.left.front();
  MapWriteReport w;
  const std::string moved = render_vector_map(m, d, {}, &w);
  EXPECT_EQ(w.moved_vertices, int64_t(painted.size())) << tag;
  keep("left_" + tag, moved);
  // Read back: the moved vertices where they were sent (to what the file's digits keep: Lanelet2's
  // 11 decimals of a degree, about a micrometre; GeoJSON's shortest exact numbers).
  const VectorMap back = read_vector_map(tmp.write("left_" + tag, moved));
  ASSERT_EQ(back.vertices.size(), m.vertices.size());
  for (size_t v = 0; v < m.vertices.size(); ++v)
    for (int c = 0; c < 2; ++c) EXPECT_NEAR(back.vertices[v].world[c], m.vertices[v].world[c] + d[v][c], 2e-6) << tag;
}

TEST_F(RealLanelet2Map, ZeroAndConstantRefinementsOverACloudUnderTheMap) {
  zero_and_constant(path_, "map.osm", [&](const std::string& n, const std::string& b) { keep(n, b); });
}

// The same map as GeoJSON written by another tool (osmium export: lon/lat with 7 decimals, the
// relations as MultiPolygons, tagged nodes as Points), named by SL_REAL_LANELET2_GEOJSON.
TEST_F(RealLanelet2Map, ItsGeoJsonExportReadsTheSameLinesAndRefinesAlike) {
  const std::string geo = env("SL_REAL_LANELET2_GEOJSON");
  if (geo.empty()) GTEST_SKIP() << "SL_REAL_LANELET2_GEOJSON names no GeoJSON export of the map (osmium export MAP -o MAP.geojson)";
  const MapSummary a = summarize(read_vector_map(path_)), b = summarize(read_vector_map(geo));
  ASSERT_EQ(a.categories.size(), b.categories.size());
  for (const auto& [cat, c] : a.categories) {
    EXPECT_EQ(b.categories.at(cat).lines, c.lines) << cat;
    EXPECT_NEAR(b.categories.at(cat).length, c.length, 0.05) << cat;  // 7 decimals of a degree: about 1 cm per vertex
  }
  zero_and_constant(geo, "map.geojson", [&](const std::string& n, const std::string& bytes) { keep(n, bytes); });
}

TEST_F(RealLanelet2Map, AModelTrainedOnGeneratedDataRefinesOnlyTheChosenCategories) {
  test::TempDir tmp;
  GenConfig g = test::tiny_dataset(5, 4, 0);
  g.cloud_format = "las";
  g.map = "lanelet2";
  generate_dataset(tmp.path("gen"), g);
  RunOptions opt;
  opt.quiet = true;
  const RunResult r = run_pipeline(
      load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_map.json",
                    {"scan.root=" + tmp.path("gen/train"), "train.eval.root=null", "train.checkpoint.dir=" + tmp.path("run"),
                     "epochs=3", "train.model.encoder=[16,32]", "train.model.line_mlp=[16]", "train.model.regressor=[16]",
                     "resample.points=128", "batch.size=16"}),
      opt);
  ASSERT_TRUE(r.ok) << r.error;
  const auto shared = load_map_shared(path_, {});
  const VectorMap& m = shared->map;
  const PointCloud cloud = cloud_under(m);
  MapRefineOptions o;
  o.categories = {"line_thin", "curbstone"};
  MapRefineReport rep;
  const auto d = refine_map(*TrainedModel::load(latest_checkpoint(tmp.path("run"))), *shared, cloud, {cloud_box(cloud)}, o, &rep);
  std::set<uint32_t> chosen;
  for (const MapLine& l : m.lines)
    if (category_matches(l.category, o.categories)) chosen.insert(l.vertex.begin(), l.vertex.end());
  int64_t moved = 0;
  for (size_t v = 0; v < d.size(); ++v) {
    const bool moves = d[v] != Vec3d{0, 0, 0};
    moved += moves;
    if (moves) {
      EXPECT_TRUE(chosen.count(uint32_t(v))) << "node " << m.vertices[v].id << " is on no chosen line";
    }
  }
  EXPECT_GT(moved, int64_t(chosen.size()) / 2);
  EXPECT_EQ(rep.moved_vertices, moved);
  MapWriteReport w;
  const std::string text = render_vector_map(m, d, {}, &w);
  EXPECT_EQ(w.dropped_z, moved) << "the map stores no heights: every z move is dropped, and counted";
  keep("trained.osm", text);
  keep("trained_report.txt", to_text(rep, 1000));
}

}  // namespace
}  // namespace sl
