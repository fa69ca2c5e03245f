// One Autoware map folder, named once, end to end as a user runs it (the built binary): gen-data's
// tiled map with its lanelet2_map.osm copied into the training split's folder (Autoware's layout:
// lanelet2_map.osm, pointcloud_map/, pointcloud_map_metadata.yaml), the shipped tiled-map training
// pipeline with `map_tiles.map_dir` in place of `root` and `map` (evaluating on the validation tiles
// over the folder's map), one epoch of a tiny model with its calibration, then `infer --map-dir` on the
// same folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "graph/atomic_file.h"
#include "tests/apps/cli_util.h"
#include "tests/apps/map_dir_pipeline.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

TEST(MapDirTrainingCli, ATrainingPipelineTakesTheMapFolderAsOneParamAndInferRefinesTheSameFolder) {
  test::TempDir dir;
  const std::string data = dir.path("d"), mf = data + "/train";
  auto g = run_cli(dir, "gen-data " + q(data) + " --kind sweep --map lanelet2 --tile-size 20 --train 2 --val 1");
  ASSERT_EQ(g.code, 0) << g.err;
  fs::copy_file(data + "/lanelet2_map.osm", mf + "/lanelet2_map.osm");
  // The shipped pipeline, its map stage given the folder alone.
  const std::string pipeline = test::tiles_pipeline_on_map_dir(mf);
  ASSERT_FALSE(pipeline.empty()) << "the shipped pipeline's map_tiles params changed";
  const std::string file = dir.write("train_map_dir.json", pipeline);
  const std::string runs = dir.path("runs");
  auto t = run_cli(dir, "run " + q(file) + " --set train.eval.root=" + q(data + "/val/pointcloud_map") +
                            " --set train.checkpoint.dir=" + q(runs) + " --set epochs=1 --set train.model.encoder=[16,32]" +
                            " --set train.model.line_mlp=[16] --set train.model.regressor=[16] --set resample.points=128" +
                            " --set batch.size=16 --set train.model.views=4");
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string said = t.out + t.err;
  EXPECT_NE(said.find("tiles: "), std::string::npos) << said;
  EXPECT_NE(said.find(" line piece(s) of " + mf + "/lanelet2_map.osm ("), std::string::npos) << said;
  EXPECT_NE(said.find("map_projector_info.yaml"), std::string::npos) << "the frame's reason: " << said;
  EXPECT_NE(said.find(") over "), std::string::npos) << said;
  EXPECT_NE(said.find("eval after epoch 1"), std::string::npos) << said;
  // Its calibration, from the folder's map over the validation tiles (apps/run_calibration.h).
  EXPECT_NE(t.out.find("calibration: " + runs + "/calibration.json for step_"), std::string::npos) << said;
  EXPECT_NE(t.out.find("vertices of the true map " + mf + "/lanelet2_map.osm on the even clouds of " + data +
                       "/val/pointcloud_map"),
            std::string::npos)
      << said;
  // infer --map-dir on the same folder: the same layout out, the refined map in it.
  const std::string out = dir.path("refined");
  auto r = run_cli(dir, "infer --checkpoint " + q(runs) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("map folder " + mf + ": lanelet2_map.osm, no map_projector_info.yaml, the tiles of " + mf +
                       "/pointcloud_map"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_regular_file(out + "/lanelet2_map.osm"));
  EXPECT_EQ(read_file(out + "/pointcloud_map_metadata.yaml"), read_file(mf + "/pointcloud_map_metadata.yaml"));
  EXPECT_TRUE(fs::is_directory(out + "/pointcloud_map"));
}

}  // namespace
}  // namespace sl
