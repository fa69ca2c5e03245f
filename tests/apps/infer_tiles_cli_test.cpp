// `infer --map MAP --tiles DIR` (refine/refine_map_tiles.h) as a user runs it on a tiled map from
// gen-data --tile-size: a model whose refinement is zero writes the map back byte for byte; a constant
// refinement of the curbs moves exactly the curb vertices over the tiles, each by that offset; under
// `mpirun -np 2` the written map is byte for byte the one a single process writes (a model with
// random weights, so every vertex's move depends on its crop), and so is a run with a cache of one
// tile; the command line's refusals; one loaded checkpoint serves every tile group and pass after its
// file is gone.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <set>

#include "graph/atomic_file.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "formats/maps/map_lines.h"
#include "formats/tiles/tile_set.h"
#include "refine/confidence.h"
#include "refine/passes.h"
#include "refine/refine_map_tiles.h"
#include "tests/apps/cli_util.h"
#include "tests/train/constant_model.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;

#ifdef SL_MPIEXEC
constexpr const char* kMpiexec = SL_MPIEXEC;
#else
constexpr const char* kMpiexec = "";
#endif

// The small model of write_constant_checkpoint with its initial (random, seeded) weights: its
// refinement of a piece depends on the points of the piece's crop.
void write_random_checkpoint(const std::string& path) {
  const PipelineSpec spec = load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_map.json",
                                          {"train.model.encoder=[8,16]", "train.model.line_mlp=[8]", "train.model.regressor=[8]",
                                           "resample.points=64", "perturb.points=8"});
  LineRefiner model(model_config_from(spec.params(spec.stage("train").index).get_object("model")), 11);
  save_checkpoint(path, model, nullptr, {{"pipeline", spec.resolved_json(false)}});
}

// A tiled map dataset shared by the tests of this file.
class InferTiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = (fs::temp_directory_path() / ("sl_infer_tiles_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    fs::create_directories(root_);
    data_ = root_ + "/map";
    const auto g = sh("gen-data " + q(data_) + " --map lanelet2 --tile-size 20 --train 2 --val 1 --seed 5");
    ASSERT_EQ(g.code, 0) << g.err;
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }
  // `streamline <args>`, its output captured in the suite's folder.
  static test::Ran sh(const std::string& args) {
    const std::string out = root_ + "/stdout.txt", err = root_ + "/stderr.txt";
    const int st = std::system((q(SL_CLI_PATH) + " " + args + " >" + q(out) + " 2>" + q(err)).c_str());
    test::Ran r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }
  void SetUp() override { ASSERT_FALSE(data_.empty()); }

  static std::string infer(const std::string& ckpt, const std::string& out, const std::string& extra = "") {
    return "infer --checkpoint " + q(ckpt) + " --map " + q(data_ + "/lanelet2_map.osm") + " --tiles " +
           q(data_ + "/train/pointcloud_map") + " --out " + q(out) + extra;
  }

  static inline std::string root_, data_;
};

TEST_F(InferTiles, ZeroRefinementWritesTheMapBackByteForByte) {
  const std::string zero = root_ + "/zero.safetensors", out = root_ + "/zero.osm";
  test::write_constant_checkpoint(zero, {0, 0, 0});
  const auto r = sh(infer(zero, out));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(out), read_file(data_ + "/lanelet2_map.osm"));
  EXPECT_NE(r.err.find("(0 vertices written moved)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tile bounds from metadata"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(root_)) EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  // Nothing over the tiles of the wanted categories (a category the map lacks): the same bytes.
  const auto none = sh(infer(zero, root_ + "/fence.osm", " --categories fence"));
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(read_file(root_ + "/fence.osm"), read_file(data_ + "/lanelet2_map.osm"));
  EXPECT_NE(none.err.find("no line of these categories in the map"), std::string::npos) << none.err;
}

TEST_F(InferTiles, ConstantCurbRefinementMovesExactlyTheCurbsOverTheTiles) {
  const std::string ckpt = root_ + "/up.safetensors", out = root_ + "/curbs.osm";
  test::write_constant_checkpoint(ckpt, {0, 0, 0.25f});  // every refined vertex rises by 0.25 m a pass
  // Two passes (a constant model never stops moving): each refines the map the first one raised.
  const auto r = sh(infer(ckpt, out, " --categories curbstone --passes 2"));
  ASSERT_EQ(r.code, 0) << r.err;
  const VectorMap before = read_vector_map(data_ + "/lanelet2_map.osm"), after = read_vector_map(out);
  ASSERT_EQ(before.vertices.size(), after.vertices.size());
  const TileSet tiles = scan_tiles(data_ + "/train/pointcloud_map", "", "test");
  const BoxXY region = tiles.extent();
  std::set<uint32_t> curb;  // the curbs' vertices over the train tiles (the val region's stay)
  for (const auto& line : before.lines)
    if (line.category == "curbstone:high")
      for (uint32_t v : line.vertex)
        if (region.contains(before.vertices[v].world[0], before.vertices[v].world[1])) curb.insert(v);
  ASSERT_GT(curb.size(), 100u);
  size_t moved = 0;
  for (size_t v = 0; v < before.vertices.size(); ++v) {
    const auto& a = before.vertices[v].world;
    const auto& b = after.vertices[v].world;
    if (!curb.count(uint32_t(v))) {
      EXPECT_EQ(a, b) << "vertex " << before.vertices[v].id << " is not a curb's over the tiles";
      continue;
    }
    // x, y stay; ele rises by 0.25 a pass (written as the shortest text of the double). A piece the
    // crop drops (too few points near it) leaves its vertices where they are: the report counts it.
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[1], b[1]);
    if (b[2] == a[2]) continue;
    EXPECT_NEAR(b[2] - a[2], 0.5, 1e-6) << "vertex " << before.vertices[v].id;
    ++moved;
  }
  EXPECT_GT(moved, curb.size() * 9 / 10) << "of " << curb.size();
  EXPECT_NE(r.err.find("  pass 2: " + std::to_string(moved) + " vertices moved, mean 0.2500 m, max 0.2500 m"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("stopped at the pass limit 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(moved) + " vertices written moved"), std::string::npos) << r.err;
  // Its review page: a dot per moved vertex, close-ups drawn over the points of the tiles around them.
  const std::string html = read_file(root_ + "/curbs.review.html");
  size_t dots = 0;
  for (size_t at = html.find("<circle class=\"change\""); at != std::string::npos; at = html.find("<circle class=\"change\"", at + 1)) ++dots;
  EXPECT_EQ(dots, moved);
  const size_t drawn = html.find(" points drawn");
  ASSERT_NE(drawn, std::string::npos);
  const size_t from = html.rfind("; ", drawn) + 2;
  EXPECT_GT(std::stoll(html.substr(from, drawn - from)), 100) << html.substr(from, 40);
}

// The numbers of a category's row of evaluate-map's first (which = 0: fixed point) or second (1:
// perturbed) table: vertices, then mean and p95 per column.
std::vector<double> check_row(const std::string& text, int which, const std::string& category) {
  size_t at = text.find(which == 0 ? "The true map refined" : "The perturbed map refined");
  if (at == std::string::npos) return {};
  at = text.find("\n  " + category + " ", at);
  if (at == std::string::npos) return {};
  std::istringstream row(text.substr(at + 3 + category.size(), text.find('\n', at + 1) - at - 3 - category.size()));
  std::vector<double> v;
  for (double x; row >> x;) v.push_back(x);
  return v;
}

// evaluate-map with models whose moves are known: a constant rise of 0.25 m a pass moves the true
// curbs 0.25 m off after one pass and 0.5 m after two (the fixed point is the harm done); a zero
// model leaves both maps as they are and stops after one pass.
TEST_F(InferTiles, EvaluateMapMeasuresTheFixedPointAndThePerturbedMapPassByPass) {
  const std::string up = root_ + "/up_eval.safetensors", zero = root_ + "/zero_eval.safetensors";
  test::write_constant_checkpoint(up, {0, 0, 0.25f});
  test::write_constant_checkpoint(zero, {0, 0, 0});
  auto evaluate = [&](const std::string& ckpt) {
    return sh("evaluate-map --checkpoint " + q(ckpt) + " --truth " + q(data_ + "/lanelet2_map.osm") + " --tiles " +
              q(data_ + "/train/pointcloud_map") + " --categories curbstone --passes 2 --pass-tolerance 0");
  };
  const auto r = evaluate(up);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<double> fixed = check_row(r.out, 0, "curbstone:high");
  ASSERT_EQ(fixed.size(), 5u) << r.out;  // vertices, pass 1 mean p95, pass 2 mean p95
  EXPECT_GT(fixed[0], 100);
  EXPECT_GT(fixed[1], 0.25 * 0.9) << r.out;  // nearly every vertex rose 0.25 (a dropped piece's stay)
  EXPECT_LE(fixed[1], 0.25 + 1e-3) << r.out;
  EXPECT_NEAR(fixed[2], 0.25, 1e-3) << r.out;
  EXPECT_GT(fixed[3], 0.5 * 0.9) << r.out;
  EXPECT_NEAR(fixed[4], 0.5, 1e-3) << r.out;
  const std::vector<double> perturbed = check_row(r.out, 1, "curbstone:high");
  ASSERT_EQ(perturbed.size(), 7u) << r.out;  // vertices, input, pass 1, pass 2
  EXPECT_GT(perturbed[1], 0.1) << r.out;
  EXPECT_NE(r.out.find("stopped at the pass limit 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("line_thin"), std::string::npos) << "only the chosen category is measured\n" << r.out;
  // The same rise each pass has not shrunk: with --pass-shrink 0.5 the second pass's rise is dropped
  // (every curb stretch held at 0.25 m); the default 1 keeps it (above).
  const auto held = sh("evaluate-map --checkpoint " + q(up) + " --truth " + q(data_ + "/lanelet2_map.osm") +
                       " --tiles " + q(data_ + "/train/pointcloud_map") +
                       " --categories curbstone --passes 2 --pass-tolerance 0 --pass-shrink 0.5");
  ASSERT_EQ(held.code, 0) << held.err;
  const std::vector<double> fixed_held = check_row(held.out, 0, "curbstone:high");
  ASSERT_EQ(fixed_held.size(), 5u) << held.out;
  EXPECT_NEAR(fixed_held[2], 0.25, 1e-3) << held.out;
  EXPECT_NEAR(fixed_held[3], fixed_held[1], 1e-9) << held.out;
  EXPECT_NE(held.out.find("held (their stretch's moves did not shrink: left where pass 1 put them)"), std::string::npos)
      << held.out;

  const auto z = evaluate(zero);
  ASSERT_EQ(z.code, 0) << z.err;
  const std::vector<double> still = check_row(z.out, 0, "curbstone:high"), as_given = check_row(z.out, 1, "curbstone:high");
  ASSERT_EQ(still.size(), 3u) << z.out;  // one pass: the moves stopped
  EXPECT_EQ(still[1], 0.0);
  EXPECT_EQ(still[2], 0.0);
  ASSERT_EQ(as_given.size(), 5u) << z.out;
  EXPECT_EQ(as_given[3], as_given[1]) << "a model that moves nothing leaves the perturbed map's error\n" << z.out;
  EXPECT_NE(z.out.find("the moves stopped after pass 1 (they averaged 0.0000 m, at most 0 m)"), std::string::npos)
      << z.out;
  // Neither clouds nor tiles: a usage error.
  const auto none = sh("evaluate-map --checkpoint " + q(zero) + " --truth " + q(data_ + "/lanelet2_map.osm"));
  EXPECT_EQ(none.code, 2) << none.err;
  // The calibration written: per tenth of the spread by default (knots) where there are enough
  // vertices, the (a, b) model on request; another model name is a usage error.
  auto calibrate = [&](const std::string& model, const std::string& out) {
    return sh("evaluate-map --checkpoint " + q(up) + " --truth " + q(data_ + "/lanelet2_map.osm") + " --tiles " +
              q(data_ + "/train/pointcloud_map") + " --categories curbstone --passes 1 --calibration-out " + q(out) +
              (model.empty() ? std::string() : " --calibration-model " + model));
  };
  const std::string binned = root_ + "/binned.json", linear = root_ + "/linear.json";
  ASSERT_EQ(calibrate("", binned).code, 0);
  ASSERT_EQ(calibrate("linear", linear).code, 0);
  // 110 vertices to fit on: fewer than ten tenths of 20, so the (a, b) model either way, and said
  // (the knots themselves: tests/refine/confidence_test.cpp)
  EXPECT_EQ(read_file(binned).find("\"knots\""), std::string::npos) << read_file(binned);
  EXPECT_NE(read_file(binned).find("for 110 vertices"), std::string::npos) << read_file(binned);
  EXPECT_NE(read_file(binned).find("(too few vertices for tenths of 20)"), std::string::npos) << read_file(binned);
  EXPECT_EQ(read_file(linear).find("\"knots\""), std::string::npos) << read_file(linear);
  EXPECT_EQ(read_file(linear).find("too few"), std::string::npos) << read_file(linear);
  EXPECT_NO_THROW(read_calibration(binned));
  EXPECT_NO_THROW(read_calibration(linear));
  EXPECT_EQ(calibrate("isotonic", root_ + "/x.json").code, 2);
  // What the calibration is fitted and judged on, as CSV: a row per vertex the first pass reached,
  // its split the parity of its tile; 110 on the even tiles as the fit says.
  const std::string csv = root_ + "/samples.csv";
  const auto dumped = sh("evaluate-map --checkpoint " + q(up) + " --truth " + q(data_ + "/lanelet2_map.osm") + " --tiles " +
                         q(data_ + "/train/pointcloud_map") + " --categories curbstone --passes 1 --samples-out " + q(csv));
  ASSERT_EQ(dumped.code, 0) << dumped.err;
  std::istringstream rows(read_file(csv));
  std::string row;
  ASSERT_TRUE(std::getline(rows, row));
  EXPECT_EQ(row, "category,split,tile,vertex,spread_across_m,spread_vertical_m,error_across_m,error_vertical_m");
  int64_t n[2] = {0, 0};
  while (std::getline(rows, row)) {
    std::vector<std::string> f;
    std::istringstream cells(row);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    ASSERT_EQ(f.size(), 8u) << row;
    EXPECT_EQ(f[0], "curbstone:high") << row;
    EXPECT_EQ(std::stoi(f[1]), std::stoi(f[2]) % 2) << row;
    EXPECT_GE(std::stoll(f[3]), 0) << row;
    EXPECT_NEAR(std::stod(f[7]), 0.25, 1e-3) << "the constant model lifts every vertex 0.25 m: " << row;
    n[std::stoi(f[1])]++;
  }
  EXPECT_EQ(n[0], 110);
  EXPECT_GT(n[1], 0);
  EXPECT_EQ(sh("evaluate-map --checkpoint " + q(up) + " --truth " + q(data_ + "/lanelet2_map.osm") + " --tiles " +
               q(data_ + "/train/pointcloud_map") + " --no-gate --samples-out " + q(root_ + "/none.csv"))
                .code,
            2);
  EXPECT_FALSE(fs::exists(root_ + "/none.csv"));
}

// A map refined over tiles reads its checkpoint once (refine/trained_model.h): the file may go (a
// training run beside it keeps only its last checkpoints) and every tile group of every pass still
// refines; one model used over and over gives what a fresh load of the same file gives each time.
TEST_F(InferTiles, OneLoadedModelServesEveryTileGroupAndPassAfterItsFileIsGone) {
  const std::string gone = root_ + "/gone.safetensors", kept = root_ + "/kept.safetensors";
  write_random_checkpoint(gone);
  fs::copy_file(gone, kept, fs::copy_options::overwrite_existing);
  const std::shared_ptr<const TrainedModel> model = TrainedModel::load(gone);
  ASSERT_TRUE(fs::remove(gone));
  EXPECT_NE(model->provenance().find("gone.safetensors"), std::string::npos) << model->provenance();
  EXPECT_EQ(model->categories(), (std::vector<std::string>{"line_thin", "curbstone"}));

  const TileSet tiles = scan_tiles(data_ + "/train/pointcloud_map", "", "--tiles");
  const auto map = load_map_shared(data_ + "/lanelet2_map.osm", {});
  TiledRefineOptions o;
  o.map.categories = model->categories();
  o.cache_bytes = 1;  // one tile at a time: every group decodes its own
  PassOptions passes;
  passes.passes = 3;
  passes.tolerance = 0;
  std::vector<PassReport> reports;
  int64_t groups = 0;
  const auto once = [&](const TrainedModel& m) {
    return [&](const SharedMap& at, int, MapRefineReport* rep) {
      TiledRefineReport r;
      std::vector<Vec3d> d = refine_map_tiles(m, at, tiles, o, nullptr, &r);
      groups = std::max(groups, r.groups);
      if (rep) *rep = std::move(r.map);
      return d;
    };
  };
  const std::vector<Vec3d> d = refine_in_passes(*map, passes, once(*model), &reports);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_GT(groups, 1) << "the test needs a map over several home tiles";
  EXPECT_GT(reports[0].moved_vertices, 0);
  // Each pass with a fresh load of the same bytes.
  std::vector<Vec3d> fresh_total;
  {
    std::vector<PassReport> fresh_reports;
    RefinePass fresh = [&](const SharedMap& at, int pass, MapRefineReport* rep) {
      return once(*TrainedModel::load(kept))(at, pass, rep);
    };
    fresh_total = refine_in_passes(*map, passes, fresh, &fresh_reports);
  }
  ASSERT_EQ(fresh_total.size(), d.size());
  for (size_t v = 0; v < d.size(); ++v)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(d[v][c], fresh_total[v][c]) << "vertex " << v;
}

TEST_F(InferTiles, OneTileCacheGivesTheSameMapAndRefusals) {
  const std::string ckpt = root_ + "/random.safetensors";
  write_random_checkpoint(ckpt);
  const auto a = sh(infer(ckpt, root_ + "/a.osm"));
  ASSERT_EQ(a.code, 0) << a.err;
  const auto b = sh(infer(ckpt, root_ + "/b.osm", " --cache-mb 0"));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(read_file(root_ + "/a.osm"), read_file(root_ + "/b.osm"));
  EXPECT_NE(read_file(root_ + "/a.osm"), read_file(data_ + "/lanelet2_map.osm"));
  EXPECT_NE(a.err.find("crop reach 1 m"), std::string::npos) << a.err;  // the map pipeline's crop radius

  const auto fmt = sh(infer(ckpt, root_ + "/r.geojson"));
  EXPECT_EQ(fmt.code, 1);
  EXPECT_NE(fmt.err.find("the refined map is written in the map's own format"), std::string::npos) << fmt.err;
  const auto both = sh(infer(ckpt, root_ + "/r.osm", " --cloud " + q(data_ + "/train/pointcloud_map/x.pcd")));
  EXPECT_EQ(both.code, 2) << both.err;
  const auto no_map = sh("infer --checkpoint " + q(ckpt) + " --tiles " + q(data_ + "/train/pointcloud_map") + " --out " +
                         q(root_ + "/r.osm"));
  EXPECT_EQ(no_map.code, 2) << no_map.err;
  const auto none = sh("infer --checkpoint " + q(ckpt) + " --out " + q(root_ + "/r.json"));
  EXPECT_EQ(none.code, 2) << none.err;
  const auto bad = sh(infer(ckpt, root_ + "/r.osm", " --tiles-format las"));
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("no las tiles"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(root_ + "/r.osm"));
}

TEST_F(InferTiles, DistTwoRanksWriteTheMapOneProcessWrites) {
  if (!*kMpiexec) GTEST_SKIP() << "this build has no MPI: no mpirun runs";
  if (!fs::exists(kMpiexec)) GTEST_SKIP() << kMpiexec << " is not installed";
  const std::string ckpt = root_ + "/random2.safetensors";
  write_random_checkpoint(ckpt);
  const auto one = sh(infer(ckpt, root_ + "/one.osm"));
  ASSERT_EQ(one.code, 0) << one.err;
  const std::string cmd = "cd " + q(root_) + " && " + kMpiexec + " --allow-run-as-root --oversubscribe -np 2 " + q(SL_CLI_PATH) +
                          " " + infer(ckpt, root_ + "/two.osm") + " >" + q(root_ + "/two.out") + " 2>" + q(root_ + "/two.err");
  const int st = std::system(cmd.c_str());
  ASSERT_EQ(st, 0) << read_file(root_ + "/two.err");
  EXPECT_EQ(read_file(root_ + "/one.osm"), read_file(root_ + "/two.osm"));
  EXPECT_NE(read_file(root_ + "/one.osm"), read_file(data_ + "/lanelet2_map.osm"));
  EXPECT_NE(read_file(root_ + "/two.err").find("MPI, 2 ranks"), std::string::npos) << read_file(root_ + "/two.err");
}

}  // namespace
}  // namespace sl
