// A LAZ dataset trains and infers like its LAS twin, through the CLI as a user runs it: the same
// points decoded, so the same samples, the same trained weights and the same refined lines.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kernels/safetensors.h"
#include "train/checkpoints.h"
#include "tests/apps/cli_util.h"
#include "tests/formats/clouds/laz_writer.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

const std::string kTrainPipeline = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";

// Every .las of `from` as a .laz in `to` (chunks of 20,000 points: several a file, decoded on all
// threads), every other file copied.
void laz_twin(const fs::path& from, const fs::path& to) {
  for (const auto& split : {"train", "val"}) {
    fs::create_directories(to / split);
    for (const auto& e : fs::directory_iterator(from / split)) {
      const fs::path p = e.path();
      if (p.extension() == ".las") {
        test::LazWriteOptions opt;
        opt.chunk_size = 20000;
        const std::string laz = test::laz_from_las(read_file(p.string()), opt);
        write_file_atomic((to / split / p.stem()).string() + ".laz", laz);
      } else {
        fs::copy_file(p, to / split / p.filename());
      }
    }
  }
}

TEST(CliLaz, ALazDatasetTrainsAndInfersLikeItsLasTwin) {
  test::TempDir dir;
  const std::string las = dir.path("las"), laz = dir.path("laz");
  auto g = run_cli(dir, "gen-data " + q(las) + " --kind sweep --format las --offset 500000,5400000,0 --train 2 --val 1");
  ASSERT_EQ(g.code, 0) << g.err;
  laz_twin(las, laz);
  ASSERT_TRUE(fs::exists(laz + "/val/scene_0000.laz"));
  ASSERT_LT(fs::file_size(laz + "/val/scene_0000.laz"), fs::file_size(las + "/val/scene_0000.las"));

  auto train = [&](const std::string& root, const std::string& format, const std::string& runs) {
    return run_cli(dir, "run " + q(kTrainPipeline) + " --set scan.root=" + q(root + "/train") + " --set scan.format=" +
                            format + " --set train.eval.root=" + q(root + "/val") + " --set train.checkpoint.dir=" +
                            q(runs) + " --set epochs=1 --set train.model.encoder=[16,32] --set train.model.line_mlp=[16]" +
                            " --set train.model.regressor=[16] --set resample.points=128 --set batch.size=16");
  };
  const std::string runs_las = dir.path("runs_las"), runs_laz = dir.path("runs_laz");
  auto a = train(las, "las", runs_las);
  ASSERT_EQ(a.code, 0) << a.err;
  auto b = train(laz, "laz", runs_laz);
  ASSERT_EQ(b.code, 0) << b.err;
  // The held-out evaluation says the same numbers.
  const size_t ea = a.out.find("eval after epoch 1"), eb = b.out.find("eval after epoch 1");
  ASSERT_NE(ea, std::string::npos) << a.out;
  ASSERT_NE(eb, std::string::npos) << b.out;
  EXPECT_EQ(a.out.substr(ea, a.out.find('\n', ea) - ea), b.out.substr(eb, b.out.find('\n', eb) - eb));
  // The same weights and Adam state, tensor for tensor (the metadata names the folders, which differ).
  const std::string ckpt_a = latest_checkpoint(runs_las), ckpt_b = latest_checkpoint(runs_laz);
  ASSERT_FALSE(ckpt_a.empty());
  ASSERT_EQ(fs::path(ckpt_a).filename(), fs::path(ckpt_b).filename());
  const StFile fa = read_safetensors(ckpt_a), fb = read_safetensors(ckpt_b);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (const auto& [name, t] : fa.tensors) {
    ASSERT_TRUE(fb.tensors.count(name)) << name;
    EXPECT_EQ(t.shape, fb.tensors.at(name).shape) << name;
    EXPECT_TRUE(t.bytes == fb.tensors.at(name).bytes) << name;
  }
  // One model refines a validation scene's lines to the same bytes from either file.
  const std::string out_las = dir.path("refined_las.json"), out_laz = dir.path("refined_laz.json");
  auto ia = run_cli(dir, "infer --checkpoint " + q(runs_las) + " --cloud " + q(las + "/val/scene_0000.las") + " --lines " +
                             q(las + "/val/scene_0000.json") + " --out " + q(out_las));
  ASSERT_EQ(ia.code, 0) << ia.err;
  auto ib = run_cli(dir, "infer --checkpoint " + q(runs_las) + " --cloud " + q(laz + "/val/scene_0000.laz") + " --lines " +
                             q(laz + "/val/scene_0000.json") + " --out " + q(out_laz));
  ASSERT_EQ(ib.code, 0) << ib.err;
  EXPECT_EQ(read_file(out_las), read_file(out_laz));
  // inspect reads the same points from both.
  auto sa = run_cli(dir, "inspect " + q(las + "/val/scene_0000.las"));
  auto sb = run_cli(dir, "inspect " + q(laz + "/val/scene_0000.laz"));
  ASSERT_EQ(sa.code, 0) << sa.err;
  ASSERT_EQ(sb.code, 0) << sb.err;
  for (const char* row : {"\n  x ", "\n  y ", "\n  z ", "\n  intensity "}) {
    const size_t ra = sa.out.find(row), rb = sb.out.find(row);
    ASSERT_NE(ra, std::string::npos) << sa.out;
    ASSERT_NE(rb, std::string::npos) << sb.out;
    EXPECT_EQ(sa.out.substr(ra, sa.out.find('\n', ra + 1) - ra), sb.out.substr(rb, sb.out.find('\n', rb + 1) - rb));
  }
}

}  // namespace
}  // namespace sl
