// `infer --map` on the command line: its refusals. (The README's and docs/data.md's map commands
// run in DocsCommands.*, tests/docs/docs_test.cpp; what a refinement moves: tests/refine.)
#include <gtest/gtest.h>

#include <filesystem>

#include "graph/atomic_file.h"
#include "tests/apps/cli_util.h"
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
}

}  // namespace
}  // namespace sl
