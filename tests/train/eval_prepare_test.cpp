// eval_step evaluates a checkpoint on samples prepared as its training prepared them: a preparing
// stage of the checkpoint's recorded pipeline (what infer replays) that the evaluation pipeline lacks
// -- a hand-written evaluation without the normalize_intensity the model trained with -- is refused
// by name; the shipped evaluation pipelines repeat their trainers' stages and run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "graph/spec.h"
#include "tests/apps/cli_util.h"
#include "tests/train/constant_model.h"
#include "train/eval_step.h"

namespace sl {
namespace {

using test::q;
using test::run_cli;

std::vector<std::string> types_of(const std::string& pipeline) {
  std::vector<std::string> t;
  for (const auto& s : load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/" + pipeline).stages) t.push_back(s.type);
  return t;
}

std::vector<std::string> missing(const std::string& train, const std::string& eval) {
  return missing_prepare_stages(load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/" + train), types_of(eval));
}

TEST(EvalPrepare, TheShippedEvalPipelinesRepeatTheirTrainersPreparingStages) {
  EXPECT_EQ(missing("line_refine_train.json", "line_refine_eval.json"), std::vector<std::string>{});
  EXPECT_EQ(missing("line_refine_train_local.json", "line_refine_eval_local.json"), std::vector<std::string>{});
  EXPECT_EQ(missing("line_refine_train_map.json", "line_refine_eval_map.json"), std::vector<std::string>{});
  // crop_tiles is crop_polyline on a tiled map: the map evaluation's crop_polyline makes the same "points".
  EXPECT_EQ(missing("line_refine_train_tiles.json", "line_refine_eval_map.json"), std::vector<std::string>{});
  EXPECT_EQ(missing("line_refine_train_edges.json", "line_refine_eval_edges.json"), std::vector<std::string>{});
  // The edges model normalizes intensities and reads each line's category; the local evaluation does neither.
  const auto edges = missing("line_refine_train_edges.json", "line_refine_eval_local.json");
  ASSERT_EQ(edges.size(), 2u);
  EXPECT_EQ(edges[0].rfind("{\"id\":\"intensity\",\"type\":\"normalize_intensity\",\"params\":{", 0), 0u) << edges[0];
  EXPECT_EQ(edges[1].rfind("{\"id\":\"category\",\"type\":\"category_input\",\"params\":{\"categories\":[\"road_border\",", 0), 0u)
      << edges[1];
}

std::vector<std::string> differ(const std::string& train, const std::string& eval, const std::vector<std::string>& sets = {}) {
  return differing_prepare_params(load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/" + train),
                                  load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/" + eval, sets));
}

// Present is not enough: a preparing stage of the same type with other settings (a quantile, a radius,
// the category list in another order) prepares other input; the shipped pairs agree in every param.
TEST(EvalPrepare, APreparingStageWithOtherSettingsIsNamedParamByParam) {
  EXPECT_EQ(differ("line_refine_train.json", "line_refine_eval.json"), std::vector<std::string>{});
  EXPECT_EQ(differ("line_refine_train_local.json", "line_refine_eval_local.json"), std::vector<std::string>{});
  EXPECT_EQ(differ("line_refine_train_map.json", "line_refine_eval_map.json"), std::vector<std::string>{});
  // crop_tiles against the map evaluation's crop_polyline (the same crop), on the params both have:
  // the tiled pipeline crops 2 m of its sweeps, the map kind 1 m; evaluated with the tiles' radius, they agree.
  const auto tiles = differ("line_refine_train_tiles.json", "line_refine_eval_map.json");
  ASSERT_EQ(tiles.size(), 1u);
  EXPECT_EQ(tiles[0], "crop_tiles 'crop': radius is 2.0 in training, 1.0 here (stage 'crop')");
  EXPECT_EQ(differ("line_refine_train_tiles.json", "line_refine_eval_map.json", {"crop.radius=2.0"}),
            std::vector<std::string>{});
  EXPECT_EQ(differ("line_refine_train_edges.json", "line_refine_eval_edges.json"), std::vector<std::string>{});
  const auto q = differ("line_refine_train_map.json", "line_refine_eval_map.json",
                        {"intensity.quantile=0.9", "perturb.lateral_sigma=0.5", "perturb.points=16"});
  ASSERT_EQ(q.size(), 2u);  // the perturbation's sigma is the evaluation's own; the line's points are not
  EXPECT_EQ(q[0], "perturb_line 'perturb': points is 32 in training, 16 here (stage 'perturb')");
  EXPECT_EQ(q[1], "normalize_intensity 'intensity': quantile is 0.95 in training, 0.9 here (stage 'intensity')");
  const auto swapped = differ("line_refine_train_edges.json", "line_refine_eval_edges.json",
                              {"category.categories=[\"curbstone:high\",\"road_border\",\"curbstone:low\",\"line_thin:solid\","
                               "\"line_thin:dashed\",\"line_thin:solid_solid\",\"line_thin:dashed_solid\",\"line_thin:solid_dashed\","
                               "\"line_thick:solid\",\"line_thick:dashed\",\"stop_line\"]"});
  ASSERT_EQ(swapped.size(), 1u);
  EXPECT_EQ(swapped[0].rfind("category_input 'category': categories is [\"road_border\",\"curbstone:high\",", 0), 0u)
      << swapped[0];
  EXPECT_NE(swapped[0].find(" in training, [\"curbstone:high\",\"road_border\","), std::string::npos) << swapped[0];
}

TEST(EvalPrepare, ACheckpointTrainedWithNormalizeIntensityIsRefusedByAnEvaluationWithoutIt) {
  test::TempDir dir;
  const std::string data = dir.path("d");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 0 --val 1").code, 0);
  const std::string ckpt = dir.path("c.safetensors");
  test::write_constant_checkpoint(ckpt, {0, 0, 0});  // records line_refine_train_map.json: normalize_intensity
  const std::string eval = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_eval_map.json";
  // (prepared as the checkpoint records it: constant_model.h's small sizes)
  const std::string sets = " --set scan.root=" + q(data + "/val") + " --set eval.model=" + q(ckpt) +
                           " --set resample.points=64 --set perturb.points=8";
  auto shipped = run_cli(dir, "run " + q(eval) + sets);
  ASSERT_EQ(shipped.code, 0) << shipped.err;
  EXPECT_NE((shipped.out + shipped.err).find(" lines, mse "), std::string::npos) << shipped.out << shipped.err;
  // The same evaluation without its normalize_intensity stage.
  std::string text = read_file(eval);
  const size_t at = text.find("    {\"id\": \"intensity\"");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  const std::string hand = dir.path("hand_eval.json");
  write_file_atomic(hand, text);
  auto r = run_cli(dir, "run " + q(hand) + sets);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find(ckpt + " was trained on samples prepared by stage(s) this pipeline lacks: {\"id\":\"intensity\","
                              "\"type\":\"normalize_intensity\""),
            std::string::npos)
      << r.err;
  EXPECT_EQ((r.out + r.err).find(" lines, mse "), std::string::npos) << "nothing scored: " << r.out;
  // With the stage but another quantile: refused, the param named with both values.
  auto other = run_cli(dir, "run " + q(eval) + sets + " --set intensity.quantile=0.9");
  EXPECT_NE(other.code, 0);
  EXPECT_NE(other.err.find(ckpt + " was trained on samples prepared with other settings than this pipeline's: "
                                  "normalize_intensity 'intensity': quantile is 0.95 in training, 0.9 here"),
            std::string::npos)
      << other.err;
  EXPECT_EQ((other.out + other.err).find(" lines, mse "), std::string::npos) << "nothing scored: " << other.out;
}

}  // namespace
}  // namespace sl
