// The CLI as a user runs it: the built binary (SL_CLI_PATH) in a shell, exit codes and output.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "device/device.h"
#include "graph/atomic_file.h"
#include "graph/spec.h"
#include "kernels/safetensors.h"
#include "report/eval_examples.h"
#include "train/checkpoints.h"
#include "formats/clouds/kitti.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"
#include "tests/apps/cli_util.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

using test::q;
using test::run_cli;

TEST(Cli, GenDataWritesTheScenesAndSaysWhatItWrote) {
  test::TempDir dir;
  const std::string root = dir.path("ds");
  auto r = run_cli(dir, "gen-data " + q(root) + " --seed 3 --train 2 --val 1");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* rel : {"train/scene_0000.pcd", "train/scene_0000.json", "train/scene_0001.pcd",
                          "train/scene_0001.json", "val/scene_0000.pcd", "val/scene_0000.json"})
    EXPECT_TRUE(fs::is_regular_file(root + "/" + rel)) << rel;
  EXPECT_FALSE(fs::exists(root + "/train/scene_0002.pcd"));
  EXPECT_FALSE(fs::exists(root + "/val/scene_0001.pcd"));
  // The printed totals are those of the files.
  int64_t points = 0, lines = 0;
  for (const char* rel : {"train/scene_0000", "train/scene_0001", "val/scene_0000"}) {
    points += (int64_t)read_pcd(root + "/" + rel + ".pcd", PcdReadOptions{}).size();
    lines += (int64_t)read_lines_json(root + "/" + rel + ".json").lines.size();
  }
  EXPECT_NE(r.out.find("wrote 3 scenes (" + std::to_string(points) + " points, " + std::to_string(lines) + " lines"),
            std::string::npos)
      << r.out;
}

// A new dataset format is a swapped reader and one line of the pipeline: the shipped training
// pipeline's KITTI twin, on gen-data --format bin, trains to the same weights and evaluation as
// the PCD pipeline on the same scenes (tiny model and data: a few seconds).
TEST(Cli, GenDataFormatBinThenTheKittiTwinTrainsExactlyLikeThePcdPipeline) {
  test::TempDir dir;
  const std::string root = dir.path("kitti");
  auto r = run_cli(dir, "gen-data " + q(root) + " --seed 5 --train 2 --val 1 --format bin");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(root + "/train/scene_0000.pcd"));
  const std::string bin = root + "/train/scene_0000.bin";
  ASSERT_TRUE(fs::is_regular_file(bin));
  ASSERT_TRUE(fs::is_regular_file(root + "/train/scene_0000.json"));
  // N x 4 float32, and the same cloud the PCD dataset of the same seed holds.
  const std::string pcd_root = dir.path("pcd");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(pcd_root) + " --seed 5 --train 2 --val 1").code, 0);
  const PointCloud from_pcd = read_pcd(pcd_root + "/train/scene_0000.pcd", PcdReadOptions{});
  ASSERT_EQ(fs::file_size(bin), from_pcd.size() * 16);
  const PointCloud from_bin = read_kitti_bin(bin);
  ASSERT_EQ(from_bin.size(), from_pcd.size());
  for (int c = 0; c < 4; ++c) EXPECT_TRUE(from_bin.columns[c] == from_pcd.columns[c]) << "column " << c;
  EXPECT_NE(r.out.find("wrote 3 scenes ("), std::string::npos) << r.out;

  // Both twins, the same settings: the swapped reader gives the same training, bit for bit.
  auto train = [&](const std::string& pipeline, const std::string& data, const std::string& ckpt) {
    return run_cli(dir, "run " + q(std::string(SL_SOURCE_DIR) + "/pipelines/" + pipeline) +
                            " --set scan.root=" + q(data + "/train") + " --set train.eval.root=" + q(data + "/val") +
                            " --set epochs=1 --set train.checkpoint.dir=" + q(ckpt) +
                            " --set 'train.model.encoder=[8,8,16]' --set 'train.model.line_mlp=[8,8]'"
                            " --set 'train.model.regressor=[16,8]' --set train.eval.every_epochs=1"
                            " --set resample.points=64 --set perturb.points=8 --set batch.size=8 -q");
  };
  r = train("line_refine_train_kitti.json", root, dir.path("ckpt_bin"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto p = train("line_refine_train.json", pcd_root, dir.path("ckpt_pcd"));
  ASSERT_EQ(p.code, 0) << p.out << p.err;
  const std::string from_bin_ckpt = latest_checkpoint(dir.path("ckpt_bin"));
  const std::string from_pcd_ckpt = latest_checkpoint(dir.path("ckpt_pcd"));
  ASSERT_FALSE(from_bin_ckpt.empty());
  ASSERT_FALSE(from_pcd_ckpt.empty());
  EXPECT_EQ(fs::path(from_bin_ckpt).filename(), fs::path(from_pcd_ckpt).filename()) << "the same number of steps";
  const StFile a = read_safetensors(from_bin_ckpt), b = read_safetensors(from_pcd_ckpt);
  EXPECT_NE(std::stoll(a.metadata.at("step")), 0);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) EXPECT_TRUE(t.bytes == b.tensors.at(name).bytes) << name;
  // ... and the same evaluation on the held-out scene.
  auto eval_line = [](const std::string& ckpt_dir) {
    std::ifstream f(ckpt_dir + "/metrics.jsonl");
    std::string line, last;
    while (std::getline(f, line))
      if (line.find("\"type\":\"eval\"") != std::string::npos) last = line;
    return last;
  };
  const std::string eb = eval_line(dir.path("ckpt_bin"));
  EXPECT_NE(eb.find("\"lines\":"), std::string::npos) << "no eval line";
  EXPECT_EQ(eb, eval_line(dir.path("ckpt_pcd")));

  // Every other row of the format table the same way: gen-data writes it, and the shipped
  // pipeline (read_cloud: each file's format from its extension) with only scan.format set
  // trains to the same weights.
  for (const std::string format : {"nuscenes", "ply"}) {
    const std::string data = dir.path(format);
    auto g = run_cli(dir, "gen-data " + q(data) + " --seed 5 --train 2 --val 1 --format " + format);
    ASSERT_EQ(g.code, 0) << g.err;
    EXPECT_NE(g.out.find("wrote 3 scenes ("), std::string::npos) << g.out;
    const std::string ckpt = dir.path("ckpt_" + format);
    auto t = run_cli(dir, "run " + q(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json") +
                              " --set scan.format=" + format + " --set scan.root=" +
                              q(data + "/train") + " --set train.eval.root=" + q(data + "/val") +
                              " --set epochs=1 --set train.checkpoint.dir=" + q(ckpt) +
                              " --set 'train.model.encoder=[8,8,16]' --set 'train.model.line_mlp=[8,8]'"
                              " --set 'train.model.regressor=[16,8]' --set train.eval.every_epochs=1"
                              " --set resample.points=64 --set perturb.points=8 --set batch.size=8 -q");
    ASSERT_EQ(t.code, 0) << format << t.out << t.err;
    const StFile c = read_safetensors(latest_checkpoint(ckpt));
    for (const auto& [name, tensor] : b.tensors) EXPECT_TRUE(tensor.bytes == c.tensors.at(name).bytes) << format << " " << name;
    EXPECT_EQ(eval_line(ckpt), eval_line(dir.path("ckpt_pcd"))) << format;
  }
}

TEST(Cli, GenDataWithABadNumberIsAUsageError) {
  test::TempDir dir;
  auto r = run_cli(dir, "gen-data " + q(dir.path("ds")) + " --train many");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir.path("ds")));
}

TEST(Cli, InspectMissingFileExits1AndNamesIt) {
  test::TempDir dir;
  const std::string missing = dir.path("no_such_scene.pcd");
  auto r = run_cli(dir, "inspect " + q(missing));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

TEST(Cli, InspectBadPcdExits1WithTheReason) {
  test::TempDir dir;
  const std::string bad = dir.write("bad.pcd", "VERSION 0.7\nFIELDS x y\nSIZE 4\n");
  auto r = run_cli(dir, "inspect " + q(bad));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad + ": "), std::string::npos) << r.err;
}

TEST(Cli, InspectJsonHasThePointCountAndRenderWritesAPng) {
  test::TempDir dir;
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.resize(4);
  for (int i = 0; i < 500; ++i) {
    c.columns[0].push_back(-20.f + 0.08f * (float)i);
    c.columns[1].push_back((float)(i % 25) - 12.f);
    c.columns[2].push_back(-1.8f);
    c.columns[3].push_back((float)(i % 10) / 10.f);
  }
  const std::string pcd = dir.path("scene_0000.pcd");
  write_pcd(pcd, c, PcdDataMode::Binary);
  LinesFile lf;
  lf.frame = "scene_0000";
  lf.lines.push_back({0, "lane_marking", {{-10.f, 0.f, -1.8f}, {10.f, 0.f, -1.8f}}});
  lf.lines.push_back({1, "curb", {{-10.f, 5.f, -1.7f}, {10.f, 6.f, -1.7f}}});
  write_lines_json(dir.path("scene_0000.json"), lf);

  auto r = run_cli(dir, "inspect --json " + q(pcd));
  ASSERT_EQ(r.code, 0) << r.err;
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.out;
  ASSERT_TRUE(d.HasMember("points")) << r.out;
  EXPECT_EQ(d["points"].GetInt64(), 500);

  const std::string png = dir.path("top.png");
  r = run_cli(dir, "inspect " + q(pcd) + " --render " + q(png) + " --meters 60 --size 256");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string bytes = read_file(png);
  ASSERT_GT(bytes.size(), 8u + 25u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // IHDR: width and height, big-endian, at bytes 16..23.
  auto be32 = [&](size_t o) {
    return (uint32_t)(uint8_t)bytes[o] << 24 | (uint32_t)(uint8_t)bytes[o + 1] << 16 |
           (uint32_t)(uint8_t)bytes[o + 2] << 8 | (uint32_t)(uint8_t)bytes[o + 3];
  };
  EXPECT_EQ(be32(16), 256u);
  EXPECT_EQ(be32(20), 256u);
  // The sibling lines file was used (the default) and said so.
  EXPECT_NE(r.err.find("2 lines from " + dir.path("scene_0000.json")), std::string::npos) << r.err;

  // A lines file that does not exist, given explicitly: exit 1 naming it, no PNG.
  const std::string png2 = dir.path("top2.png");
  r = run_cli(dir, "inspect " + q(pcd) + " --render " + q(png2) + " --lines " + q(dir.path("gone.json")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(dir.path("gone.json")), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(png2));
}

TEST(Cli, ValidateBadPipelineExits2WithTheJsonPointer) {
  test::TempDir dir;
  const std::string p = dir.write("bad.json", R"({"name":"x","stages":[
    {"id":"scan","type":"scan_dataset","params":{"root":"d"}},
    {"id":"resample","type":"resample","params":{"points":-3}},
    {"id":"sink","type":"null_sink"}]})");
  auto r = run_cli(dir, "validate " + q(p));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/stages/1/params/points"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(p), std::string::npos) << r.err;
}

TEST(Cli, StagesJsonParsesAndListsTheSampleCacheStages) {
  test::TempDir dir;
  auto r = run_cli(dir, "stages --json");
  ASSERT_EQ(r.code, 0) << r.err;
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.out.substr(0, 200);
  ASSERT_TRUE(d.IsArray() || d.IsObject());
  EXPECT_NE(r.out.find("\"write_samples\""), std::string::npos);
  EXPECT_NE(r.out.find("\"read_samples\""), std::string::npos);
}

TEST(Cli, UnknownSubcommandIsAUsageError) {
  test::TempDir dir;
  EXPECT_EQ(run_cli(dir, "no-such-command").code, 2);
}

}  // namespace
}  // namespace sl

namespace sl {
namespace {

// Ctrl-C during training: the source stops, the in-flight work drains, the trainer finishes its
// step and writes a checkpoint, the process exits 130; `resume=auto` then continues from it.
// SL_TEST_DEVICE=cuda runs all three runs on the GPU (scripts/gpu-session), which must end
// byte-identical just as the CPU's do.
TEST(Cli, SigintDuringTrainingCheckpointsAndExits130) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), runs = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  std::vector<std::string> sets = {
      "scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + runs,
      "train.checkpoint.every_steps=0", "train.log.every_steps=1", "train.log.progress=lines", "epochs=100000",
      "train.model.encoder=[16,32,64]", "train.model.line_mlp=[16,32]", "train.model.regressor=[32,16]",
      "resample.points=128", "batch.size=8"};
  bool on_device = false;
  if (const char* device = std::getenv("SL_TEST_DEVICE"); device && *device) {
    std::string why;
    if (std::string(device).rfind("cuda", 0) == 0 && cuda_device_count(&why) == 0)
      GTEST_SKIP() << "SL_TEST_DEVICE=" << device << " but no CUDA device: " << why;
    sets.push_back(std::string("device=") + device);
    on_device = true;
  }
  const std::string pipeline = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(dir.path("train.out").c_str(), "w", stdout);
    std::freopen(dir.path("train.err").c_str(), "w", stderr);
    std::vector<std::string> args = {SL_CLI_PATH, "run", pipeline};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(SL_CLI_PATH, argv.data());
    _exit(127);
  }
  // Wait for evidence that training runs (a logged step), not for a fixed time.
  const std::string metrics = runs + "/metrics.jsonl";
  bool training = false;
  for (int i = 0; i < 1200 && !training; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    training = fs::exists(metrics) && read_file(metrics).find("\"type\":\"train\"") != std::string::npos;
  }
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(training) << read_file(dir.path("train.err"));
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130) << read_file(dir.path("train.err"));
  EXPECT_NE(read_file(dir.path("train.err")).find("interrupted"), std::string::npos);
  std::string ckpt;
  for (const auto& e : fs::directory_iterator(runs))
    if (e.path().extension() == ".safetensors") ckpt = e.path().string();
  ASSERT_FALSE(ckpt.empty()) << "no checkpoint after Ctrl-C";
  // No temporary file left behind.
  for (const auto& e : fs::directory_iterator(runs)) EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos);

  // Resume trains the rest of the interrupted epoch and one more, from exactly where it stopped:
  // it ends on the same step with the same weights as an uninterrupted run of that many epochs.
  // (One more: a stop after an epoch's last batch but before its end marker leaves nothing of
  // that epoch to train.)
  const StFile at_stop = read_safetensors(ckpt);
  const int64_t stop_step = std::stoll(at_stop.metadata.at("step"));
  const int64_t stop_epoch = std::stoll(at_stop.metadata.at("position.epoch"));
  ASSERT_GT(stop_step, 0);
  const std::string epochs = "epochs=" + std::to_string(stop_epoch + 2);
  auto args_with = [&](const std::string& run_dir) {
    std::string a = "run " + q(pipeline);
    for (auto s : sets) {
      if (s.rfind("epochs=", 0) == 0) s = epochs;
      if (s.rfind("train.checkpoint.dir=", 0) == 0) s = "train.checkpoint.dir=" + run_dir;
      a += " --set " + q(s);
    }
    return a;
  };
  auto r = run_cli(dir, args_with(runs) + " --set train.resume=auto");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("resumed from " + ckpt + " at step " + std::to_string(stop_step)), std::string::npos) << r.err;
  const std::string resumed_ckpt = latest_checkpoint(runs);
  const StFile resumed = read_safetensors(resumed_ckpt);
  const int64_t end_step = std::stoll(resumed.metadata.at("step"));
  EXPECT_EQ(resumed.metadata.at("position.epoch"), std::to_string(stop_epoch + 2));
  EXPECT_EQ(resumed.metadata.at("position.index"), "0");
  // The steps after the stop are logged once each, in order.
  std::vector<int64_t> logged;
  {
    std::istringstream in(read_file(metrics));
    for (std::string line; std::getline(in, line);) {
      rapidjson::Document d;
      d.Parse(line.c_str());
      if (!d.HasParseError() && d.IsObject() && d.HasMember("type") && std::string(d["type"].GetString()) == "train")
        logged.push_back(d["step"].GetInt64());
    }
  }
  ASSERT_FALSE(logged.empty());
  EXPECT_EQ(logged.back(), end_step) << "the run's last step was not logged";
  if (!on_device) {
    const auto first_after = std::find(logged.begin(), logged.end(), stop_step + 1);
    ASSERT_NE(first_after, logged.end()) << "no step after the stop was logged; stopped at step " << stop_step
                                         << ", ended at " << end_step << "\n" << read_file(metrics) << r.err;
    for (auto it = first_after; it != logged.end(); ++it) EXPECT_EQ(*it, stop_step + 1 + (it - first_after));
  } else {
    // A GPU logs each read of the loss as it lands (the mean over the steps since the one
    // before; the trainer never waits for one): after the stop, increasing, none twice.
    const auto first_after = std::upper_bound(logged.begin(), logged.end(), stop_step);
    ASSERT_NE(first_after, logged.end()) << "no step after the stop was logged\n" << read_file(metrics) << r.err;
    for (auto it = first_after + 1; it != logged.end(); ++it) EXPECT_GT(*it, *(it - 1));
  }

  const std::string straight_dir = dir.path("straight");
  auto s = run_cli(dir, args_with(straight_dir));
  ASSERT_EQ(s.code, 0) << s.err;
  const StFile straight = read_safetensors(latest_checkpoint(straight_dir));
  EXPECT_EQ(straight.metadata.at("step"), std::to_string(end_step)) << "the resumed run trained a different number of steps";
  EXPECT_GT(end_step, stop_step);
  ASSERT_EQ(straight.tensors.size(), resumed.tensors.size());
  for (const auto& [name, t] : straight.tensors) {
    ASSERT_EQ(resumed.tensors.count(name), 1u) << name;
    EXPECT_TRUE(t.bytes == resumed.tensors.at(name).bytes) << name << " differs from the uninterrupted run";
  }

  // Resuming the finished run again trains nothing, says so, and leaves the checkpoint's step.
  auto again = run_cli(dir, args_with(runs) + " --set train.resume=auto");
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE((again.out + again.err).find("resume: nothing left to train: " + resumed_ckpt + " (step " +
                                         std::to_string(end_step) + ") already completed this run's " +
                                         std::to_string(stop_epoch + 2) + " epoch(s)"),
            std::string::npos)
      << again.out << again.err;
  EXPECT_EQ(r.out.find("nothing left to train"), std::string::npos) << r.out;
  EXPECT_EQ(read_safetensors(latest_checkpoint(runs)).metadata.at("step"), std::to_string(end_step));
}

}  // namespace
}  // namespace sl

namespace sl {
namespace {

const std::string kTrainPipeline = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";

TEST(Cli, ValidatePrintIsTheResolvedPipelineAndDotIsItsGraph) {
  test::TempDir dir;
  const std::string dot = dir.path("g.dot");
  auto r = run_cli(dir, "validate " + q(kTrainPipeline) + " --print --dot " + q(dot));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(": ok (11 stages: scan -> read -> lines -> split -> perturb -> crop -> resample -> center -> "
                       "batch -> h2d -> train)"),
            std::string::npos)
      << r.err;
  // --print: every default written out, and it is itself a pipeline that validates the same.
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.out;
  const auto& crop = d["stages"][5];
  EXPECT_EQ(std::string(crop["id"].GetString()), "crop");
  EXPECT_EQ(crop["params"]["min_points"].GetInt(), 32);  // not in the file: a default
  EXPECT_TRUE(crop["params"].HasMember("z_min"));
  EXPECT_EQ(crop["params"]["radius"].GetDouble(), 2.0);  // from the file
  EXPECT_EQ(parse_pipeline(r.out, "printed.json").stages.size(), 11u);
  // --dot: a node per stage, an edge per connection with its message kind.
  const std::string g = read_file(dot);
  EXPECT_EQ(g.rfind("digraph \"line_refine_train\" {", 0), 0u) << g;
  for (const char* id : {"scan", "read", "lines", "split", "perturb", "crop", "resample", "center", "batch", "h2d", "train"})
    EXPECT_NE(g.find(std::string("\"") + id + "\" [label=\"" + id + "\\n"), std::string::npos) << id;
  EXPECT_NE(g.find("\"scan\" -> \"read\" [label=\"SceneRef\"]"), std::string::npos) << g;
  EXPECT_NE(g.find("\"h2d\" -> \"train\" [label=\"DeviceBatch\"]"), std::string::npos) << g;
}

TEST(Cli, RunOnABadPipelineExits2WithTheJsonPointerAndRunsNothing) {
  test::TempDir dir;
  const std::string runs = dir.path("runs");
  auto r = run_cli(dir, "run " + q(kTrainPipeline) + " --set crop.radius=-1 --set train.checkpoint.dir=" + q(runs));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(kTrainPipeline + ": /stages/5/params/radius"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(runs));
}

// doctor: versions, and what device "auto" picks with the reason; without a GPU, a pipeline that
// asks for "cuda" is a usage error with the same reason.
TEST(Cli, DoctorNamesVersionsAndTheDeviceAutoReasonAndCudaWithoutAGpuIsRefused) {
  test::TempDir dir;
  auto d = run_cli(dir, "doctor");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out.rfind(std::string("streamline ") + SL_VERSION + "\n", 0), 0u) << d.out;
  for (const char* line : {"CPU cores (hardware threads): ", "oneTBB: ", "RapidJSON: ", "OpenBLAS: ", "CUDA devices: "})
    EXPECT_NE(d.out.find(std::string("\n  ") + line), std::string::npos) << line << "\n" << d.out;
#ifdef SL_WITH_CUDA
  // cuBLAS is not linked: a process maps it only when a CUDA backend starts (~145 MiB resident).
  EXPECT_NE(d.out.find(" (headers); not loaded: it loads when a CUDA backend starts\n"), std::string::npos) << d.out;
#endif
  const std::string pick = "device \"auto\" resolves to: ";
  const size_t at = d.out.find(pick);
  ASSERT_NE(at, std::string::npos) << d.out;
  if (d.out.compare(at + pick.size(), 4, "cuda") == 0) GTEST_SKIP() << "a GPU answers here: the CPU fallback is not testable";
  const std::string cpu = "cpu (device auto: running on the CPU because ";
  EXPECT_EQ(d.out.compare(at + pick.size(), cpu.size(), cpu), 0) << d.out;
  const size_t because = d.out.find("because ", at) + 8;
  const std::string reason = d.out.substr(because, d.out.find(')', because) - because);
  ASSERT_FALSE(reason.empty());
  auto r = run_cli(dir, "run " + q(kTrainPipeline) + " --set device=cuda");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(kTrainPipeline + ": /device: device \"cuda\" requested, but " + reason), std::string::npos)
      << r.err << "\nreason: " << reason;
}

// infer from the command line: a run folder stands for its latest checkpoint, the lines file
// defaults to <stem>.json beside the cloud, every line comes back with its id and category, a
// KITTI .bin of the same points gives the same lines; a folder without a checkpoint is an error.
TEST(Cli, InferFromARunFolderRefinesEveryLineOfTheDefaultLinesFileAlsoFromAKittiCopy) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), runs = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  std::string args = "run " + q(kTrainPipeline);
  for (const std::string& s : std::vector<std::string>{"scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + runs,
                              "epochs=1", "train.model.encoder=[16,32]", "train.model.line_mlp=[16]",
                              "train.model.regressor=[16]", "resample.points=128", "batch.size=8"})
    args += " --set " + q(s);
  auto t = run_cli(dir, args);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.err.find("device auto: running on the CPU because"), std::string::npos) << t.err;
  const std::string latest = latest_checkpoint(runs);
  ASSERT_FALSE(latest.empty());

  const std::string cloud = root + "/val/scene_0000.pcd", out = dir.path("refined.json");
  auto r = run_cli(dir, "infer --checkpoint " + q(runs) + " --cloud " + q(cloud) + " --out " + q(out));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("of " + root + "/val/scene_0000.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("with " + latest + " -> " + out), std::string::npos) << r.err;
  const LinesFile given = read_lines_json(root + "/val/scene_0000.json"), refined = read_lines_json(out);
  ASSERT_EQ(refined.lines.size(), given.lines.size());
  ASSERT_GT(given.lines.size(), 0u);
  for (size_t i = 0; i < given.lines.size(); ++i) {
    EXPECT_EQ(refined.lines[i].id, given.lines[i].id);
    EXPECT_EQ(refined.lines[i].category, given.lines[i].category);
    EXPECT_GE(refined.lines[i].points.size(), 2u);
  }

  // The same scene as a KITTI .bin (same points, its lines beside it) refines to the same lines.
  const std::string kitti_dir = dir.path("kitti");
  fs::create_directories(kitti_dir);
  write_kitti_bin(kitti_dir + "/scene_0000.bin", read_pcd(cloud, PcdReadOptions{}));
  fs::copy_file(root + "/val/scene_0000.json", kitti_dir + "/scene_0000.json");
  const std::string out_bin = dir.path("refined_bin.json");
  auto k = run_cli(dir, "infer --checkpoint " + q(runs) + " --cloud " + q(kitti_dir + "/scene_0000.bin") + " --out " +
                            q(out_bin));
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_EQ(read_file(out_bin), read_file(out));

  const std::string empty = dir.path("empty");
  fs::create_directories(empty);
  auto e = run_cli(dir, "infer --checkpoint " + q(empty) + " --cloud " + q(cloud) + " --out " + q(dir.path("x.json")));
  EXPECT_EQ(e.code, 1);
  EXPECT_NE(e.err.find(empty + ": no step_*.safetensors checkpoint in this folder"), std::string::npos) << e.err;
  EXPECT_FALSE(fs::exists(dir.path("x.json")));
}

// World coordinates through infer: the same scenes generated near the origin and moved into UTM
// (a float64 PCD, and LAS near and in UTM), refined with one checkpoint: the UTM output is the
// near output plus the shift, to 1 mm, written in world coordinates (doubles) by every run. Sweeps:
// with a 5 cm map's density some point lies within float rounding of a crop's edge in one frame and
// not the other, and the resampled context differs.
TEST(Cli, InferInUtmWritesWorldCoordinatesEqualToTheLocalRunPlusTheShift) {
  test::TempDir dir;
  const std::string runs = dir.path("run");
  for (const auto& [name, extra] : std::vector<std::pair<std::string, std::string>>{
           {"near", ""}, {"utm", " --offset 500000,5400000,0"}, {"near_las", " --format las"},
           {"utm_las", " --format las --offset 500000,5400000,0"}}) {
    auto g = run_cli(dir, "gen-data " + q(dir.path(name)) + " --kind sweep --seed 4 --train 2 --val 1" + extra);
    ASSERT_EQ(g.code, 0) << g.err;
  }
  std::string args = "run " + q(kTrainPipeline);
  for (const std::string& s : std::vector<std::string>{"scan.root=" + dir.path("near/train"), "train.eval.root=null",
                                                       "train.checkpoint.dir=" + runs, "epochs=1", "train.model.encoder=[16,32]",
                                                       "train.model.line_mlp=[16]", "train.model.regressor=[16]",
                                                       "resample.points=128", "batch.size=8"})
    args += " --set " + q(s);
  auto t = run_cli(dir, args);
  ASSERT_EQ(t.code, 0) << t.err;
  auto refine = [&](const std::string& cloud, const std::string& out) {
    auto r = run_cli(dir, "infer --checkpoint " + q(runs) + " --cloud " + q(cloud) + " --out " + q(out));
    EXPECT_EQ(r.code, 0) << r.err;
    return r.err;
  };
  const std::string err = refine(dir.path("utm/val/scene_0000.pcd"), dir.path("utm.json"));
  EXPECT_NE(err.find("(local frame: origin [499900, 5399900, -100])"), std::string::npos) << err;
  refine(dir.path("near/val/scene_0000.pcd"), dir.path("near.json"));
  refine(dir.path("near_las/val/scene_0000.las"), dir.path("near_las.json"));
  refine(dir.path("utm_las/val/scene_0000.las"), dir.path("utm_las.json"));
  // Read as world coordinates (in double: a local frame at the shift keeps every digit).
  const std::array<double, 3> shift{500000, 5400000, 0};
  auto world = [](const std::string& path, const std::array<double, 3>& o) { return read_lines_json(path, {}, 100000, o); };
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{{"near.json", "utm.json"},
                                                                             {"near_las.json", "utm_las.json"}}) {
    const LinesFile n = world(dir.path(a), {0, 0, 0}), u = world(dir.path(b), shift);
    ASSERT_EQ(n.lines.size(), u.lines.size()) << b;
    ASSERT_GT(n.lines.size(), 2u);
    float worst = 0;
    for (size_t l = 0; l < n.lines.size(); ++l) {
      ASSERT_EQ(n.lines[l].points.size(), u.lines[l].points.size()) << b;
      EXPECT_EQ(n.lines[l].id, u.lines[l].id);
      for (size_t i = 0; i < n.lines[l].points.size(); ++i)
        for (int k = 0; k < 3; ++k) worst = std::max(worst, std::fabs(n.lines[l].points[i][k] - u.lines[l].points[i][k]));
    }
    EXPECT_LE(worst, 1e-3f) << a << " vs " << b;
  }
  // The UTM output is in UTM: its first x is an easting, written with every digit of a double.
  const std::string text = read_file(dir.path("utm.json"));
  EXPECT_NE(text.find("[[5000"), std::string::npos) << text.substr(0, 200);
  EXPECT_NE(text.find(", 54000"), std::string::npos) << text.substr(0, 200);
}

// LAS scenes in UTM (gen-data --offset), inspected, trained on and refined: inspect reports world
// coordinates around a local origin, the run's evaluation examples and infer's lines come back in
// UTM on the annotated lines. One epoch of a small model. (The commands as docs/data.md shows them
// run in DocsCommands.*.)
TEST(Cli, LasInUtmTrainsInLocalFramesAndWritesWorldCoordinates) {
  test::TempDir dir;
  const std::string utm = dir.path("utm"), runs = dir.path("runs_utm"), refined = dir.path("refined.json");
  auto g = run_cli(dir, "gen-data " + q(utm) + " --format las --offset 500000,5400000,0 --train 8 --val 2");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("train: 8 scenes"), std::string::npos) << g.out;
  auto i = run_cli(dir, "inspect " + q(utm + "/train/scene_0000.las"));
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("version: 1.4"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("origin: [499900, 5399900, -100] (x, y, z below: world coordinates)"), std::string::npos) << i.out;
  // The first statistic of each coordinate row: its minimum, in UTM.
  auto min_of = [](const std::string& out, const std::string& axis) {
    const size_t at = out.find("\n  " + axis + " ");
    return at == std::string::npos ? 0.0 : std::stod(out.substr(at + 4 + axis.size()));
  };
  EXPECT_NEAR(min_of(i.out, "x"), 500000, 100) << i.out;
  EXPECT_NEAR(min_of(i.out, "y"), 5400000, 100) << i.out;
  auto j = run_cli(dir, "inspect " + q(utm + "/train/scene_0000.json"));
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("lane_marking: "), std::string::npos) << j.out;
  EXPECT_NEAR(min_of(j.out, "y"), 5400000, 100) << j.out;
  auto t = run_cli(dir, "run " + q(kTrainPipeline) + " --set scan.root=" + q(utm + "/train") + " --set scan.format=las" +
                            " --set train.eval.root=" + q(utm + "/val") + " --set train.checkpoint.dir=" + q(runs) +
                            " --set epochs=1 --set train.eval.every_epochs=1 --set train.model.encoder=[16,32]" +
                            " --set train.model.line_mlp=[16] --set train.model.regressor=[16] --set resample.points=128");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("eval after epoch 1"), std::string::npos) << t.out;
  // The run's evaluation examples carry their lines in world coordinates too.
  const std::string ex = read_file(runs + "/eval_examples.json");
  const size_t w = ex.find("\"world\":{\"noisy\":[");
  ASSERT_NE(w, std::string::npos) << ex.substr(0, 300);
  const double easting = std::stod(ex.substr(w + 18, 24));
  EXPECT_GT(easting, 499800);
  EXPECT_LT(easting, 500200);
  // Each example's true line, in world coordinates, lies on the annotated line of its scene (the
  // validation scenes are read in file order; the line index is the line's place in its file).
  const report::EvalExamples examples = report::parse_eval_examples(ex, "eval_examples.json");
  ASSERT_FALSE(examples.lines.empty());
  for (const auto& e : examples.lines) {
    char name[32];
    std::snprintf(name, sizeof name, "/val/scene_%04d.json", e.scene);
    const LinesFile world_lines = read_lines_json(utm + name, {}, 100000, {500000, 5400000, 0});
    ASSERT_LT(size_t(e.line), world_lines.lines.size());
    const auto& poly = world_lines.lines[size_t(e.line)].points;
    ASSERT_EQ(e.truth_world.size(), e.truth.size());
    for (size_t k = 0; k + 2 < e.truth_world.size(); k += 3) {
      const double p[3] = {e.truth_world[k] - 500000, e.truth_world[k + 1] - 5400000, e.truth_world[k + 2]};
      double best = 1e9;
      for (size_t v = 0; v + 1 < poly.size(); ++v) {  // distance to each segment
        double d[3], q[3], t = 0, dd = 0;
        for (int c = 0; c < 3; ++c) d[c] = double(poly[v + 1][c]) - poly[v][c], dd += d[c] * d[c];
        for (int c = 0; c < 3; ++c) t += (p[c] - poly[v][c]) * d[c];
        t = dd > 0 ? std::clamp(t / dd, 0.0, 1.0) : 0.0;
        double dist = 0;
        for (int c = 0; c < 3; ++c) q[c] = poly[v][c] + t * d[c], dist += (p[c] - q[c]) * (p[c] - q[c]);
        best = std::min(best, std::sqrt(dist));
      }
      EXPECT_LT(best, 0.01) << "example of scene " << e.scene << " line " << e.line << " point " << k / 3;
    }
  }
  auto r = run_cli(dir, "infer --checkpoint " + q(runs) + " --cloud " + q(utm + "/val/scene_0000.las") + " --out " + q(refined));
  ASSERT_EQ(r.code, 0) << r.err;
  const LinesFile lf = read_lines_json(refined, {}, 100000, {500000, 5400000, 0});
  ASSERT_GT(lf.lines.size(), 2u);
  for (const auto& l : lf.lines)
    for (const auto& p : l.points) {
      EXPECT_LT(std::fabs(p[0]), 200.f);  // within the scene around (500000, 5400000)
      EXPECT_LT(std::fabs(p[1]), 200.f);
    }
}

// --threads caps every stage's threads (the table shows what each could use) and --trace writes
// a Chrome trace holding a span per stage execution and one per trainer step.
TEST(Cli, RunWithThreadsAndTraceCapsStageThreadsAndTracesTheTrainerSteps) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), runs = dir.path("run"), trace = dir.path("trace.json");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  std::string args = "run " + q(kTrainPipeline) + " --threads 1 --trace " + q(trace);
  for (const std::string& s : std::vector<std::string>{
           "scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + runs, "epochs=1",
           "train.model.encoder=[16,32]", "train.model.line_mlp=[16]", "train.model.regressor=[16]",
           "resample.points=128", "batch.size=8"})
    args += " --set " + q(s);
  auto r = run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("trace written to " + trace), std::string::npos) << r.err;
  // "read" and "crop" ask for "auto" threads: with --threads 1 the table says 1.
  for (const std::string id : {"read", "crop"}) {
    const size_t row = r.err.find("\n  " + id + " ");
    ASSERT_NE(row, std::string::npos) << r.err;
    std::istringstream cols(r.err.substr(row + 1, r.err.find('\n', row + 1) - row - 1));
    std::string name, type;
    int threads = 0;
    cols >> name >> type >> threads;
    EXPECT_EQ(threads, 1) << id;
  }
  const int64_t steps = std::stoll(read_safetensors(latest_checkpoint(runs)).metadata.at("step"));
  ASSERT_GT(steps, 0);
  rapidjson::Document d;
  const std::string text = read_file(trace);
  d.Parse(text.c_str());
  ASSERT_FALSE(d.HasParseError());
  std::map<std::string, int64_t> spans;
  for (const auto& e : d["traceEvents"].GetArray())
    if (std::string(e["ph"].GetString()) == "X") spans[e["name"].GetString()]++;
  EXPECT_EQ(spans["train.step"], steps);
  for (const char* id : {"scan", "read", "lines", "split", "perturb", "crop", "resample", "center", "batch"})
    EXPECT_GT(spans[id], 0) << id;
}

// SIGTERM (what `kill`, systemd and job schedulers send) stops a run like Ctrl-C: the in-flight
// work drains, the trainer checkpoints, the process exits 130 with no temporary file left.
TEST(Cli, SigtermDuringTrainingCheckpointsAndExits130LikeCtrlC) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), runs = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  std::vector<std::string> args = {SL_CLI_PATH, "run", kTrainPipeline};
  for (const std::string& s : std::vector<std::string>{
           "scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + runs,
           "train.checkpoint.every_steps=0", "train.log.every_steps=1", "train.log.progress=lines", "epochs=100000",
           "train.model.encoder=[16,32]", "train.model.line_mlp=[16]", "train.model.regressor=[16]",
           "resample.points=128", "batch.size=8"})
    args.insert(args.end(), {"--set", s});
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(dir.path("train.out").c_str(), "w", stdout);
    std::freopen(dir.path("train.err").c_str(), "w", stderr);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(SL_CLI_PATH, argv.data());
    _exit(127);
  }
  const std::string metrics = runs + "/metrics.jsonl";
  bool training = false;
  for (int i = 0; i < 1200 && !training; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    training = fs::exists(metrics) && read_file(metrics).find("\"type\":\"train\"") != std::string::npos;
  }
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(training) << read_file(dir.path("train.err"));
  ASSERT_TRUE(WIFEXITED(st)) << "ended by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  EXPECT_EQ(WEXITSTATUS(st), 130) << read_file(dir.path("train.err"));
  EXPECT_NE(read_file(dir.path("train.err")).find("interrupted: stopped the source, drained the stages"),
            std::string::npos);
  const std::string ckpt = latest_checkpoint(runs);
  ASSERT_FALSE(ckpt.empty()) << "no checkpoint after SIGTERM";
  EXPECT_GT(std::stoll(read_safetensors(ckpt).metadata.at("step")), 0);
  for (const auto& e : fs::directory_iterator(runs)) EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos);
}

// A second Ctrl-C quits at once, the usual way (killed by SIGINT), while the first one's shutdown
// still runs; what is on disk stays whole. The first Ctrl-C says so at once (the handler writes
// it), which is what the test waits for; the shutdown it interrupts trains the batches in flight
// with the full-size model, over a second here.
TEST(Cli, ASecondCtrlCQuitsAtOnceAndLeavesNoHalfWrittenCheckpoint) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), runs = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 3 --val 1").code, 0);
  std::vector<std::string> args = {SL_CLI_PATH, "run", kTrainPipeline};
  for (const std::string& s : std::vector<std::string>{
           "scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + runs,
           "train.checkpoint.every_steps=1", "train.log.every_steps=1", "train.log.progress=lines", "epochs=100000",
           "batch.size=32", "batch.drop_last=false"})
    args.insert(args.end(), {"--set", s});
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(dir.path("train.out").c_str(), "w", stdout);
    std::freopen(dir.path("train.err").c_str(), "w", stderr);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(SL_CLI_PATH, argv.data());
    _exit(127);
  }
  auto err_has = [&](const char* text) {
    return fs::exists(dir.path("train.err")) && read_file(dir.path("train.err")).find(text) != std::string::npos;
  };
  bool training = false;
  for (int i = 0; i < 6000 && !training; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    training = err_has(" step 2 ");
  }
  kill(pid, SIGINT);
  bool heard = false;
  for (int i = 0; i < 2000 && !heard; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    heard = err_has("Ctrl-C again quits at once");
  }
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(training) << read_file(dir.path("train.err"));
  EXPECT_TRUE(heard) << read_file(dir.path("train.err"));
  ASSERT_TRUE(WIFSIGNALED(st)) << "exited " << (WIFEXITED(st) ? WEXITSTATUS(st) : -1)
                               << ": the first Ctrl-C's shutdown ended before the second\n"
                               << read_file(dir.path("train.err"));
  EXPECT_EQ(WTERMSIG(st), SIGINT);
  EXPECT_EQ(read_file(dir.path("train.err")).find("interrupted: stopped the source"), std::string::npos)
      << "the run finished its shutdown";
  // Every checkpoint under its final name is whole (the one being written, if any, had a temporary name).
  int whole = 0;
  for (const auto& e : fs::directory_iterator(runs))
    if (e.path().extension() == ".safetensors" && e.path().string().find(".tmp.") == std::string::npos) {
      EXPECT_NO_THROW(read_safetensors(e.path().string())) << e.path();
      ++whole;
    }
  EXPECT_GE(whole, 1);
}

// checkpoint.keep keeps the newest K step files; train.resume=<a file> continues from that one
// (not the latest) and reaches the same weights; train.init=<a file> starts from its weights
// (with lr 1e-30 they come out unchanged, where a fresh start does not).
TEST(Cli, CheckpointKeepResumeFromAGivenFileAndInitFromWeights) {
  test::TempDir dir;
  const std::string root = dir.path("ds");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 1").code, 0);
  auto run = [&](const std::string& run_dir, std::vector<std::string> extra) {
    std::string args = "run " + q(kTrainPipeline);
    std::vector<std::string> sets = {"scan.root=" + root + "/train", "train.eval.root=null", "train.checkpoint.dir=" + run_dir,
                                     "epochs=2", "train.model.encoder=[16,32]", "train.model.line_mlp=[16]",
                                     "train.model.regressor=[16]", "resample.points=128", "batch.size=8"};
    sets.insert(sets.end(), extra.begin(), extra.end());
    for (const auto& s : sets) args += " --set " + q(s);
    return run_cli(dir, args);
  };
  auto steps_in = [](const std::string& d) {
    std::vector<int64_t> steps;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().extension() == ".safetensors") steps.push_back(std::stoll(e.path().stem().string().substr(5)));
    std::sort(steps.begin(), steps.end());
    return steps;
  };
  const std::string r1 = dir.path("r1");
  auto a = run(r1, {"train.checkpoint.every_steps=5", "train.checkpoint.keep=2"});
  ASSERT_EQ(a.code, 0) << a.err;
  const std::string last = latest_checkpoint(r1);
  const int64_t n = std::stoll(read_safetensors(last).metadata.at("step"));
  ASSERT_GT(n, 10);
  const int64_t prev = n % 5 == 0 ? n - 5 : n / 5 * 5;  // the newest every-5 save before the final one
  EXPECT_EQ(steps_in(r1), (std::vector<int64_t>{prev, n}));

  // resume=<file>: the older checkpoint, not the latest; it trains the rest to the same weights.
  char name[64];
  std::snprintf(name, sizeof name, "/step_%08lld.safetensors", (long long)prev);
  const std::string r2 = dir.path("r2");
  fs::create_directories(r2);
  fs::copy_file(r1 + name, r2 + name);
  fs::copy_file(last, r2 + "/step_99999999.safetensors");  // a newer file that resume=<file> must ignore
  auto b = run(r2, {"train.resume=" + r2 + name});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("resumed from " + r2 + name + " at step " + std::to_string(prev)), std::string::npos) << b.err;
  std::snprintf(name, sizeof name, "/step_%08lld.safetensors", (long long)n);
  const StFile resumed = read_safetensors(r2 + name), straight = read_safetensors(last);
  for (const auto& [k, t] : straight.tensors) EXPECT_TRUE(t.bytes == resumed.tensors.at(k).bytes) << k;

  // init=<file>: weights from the file, Adam fresh; lr 1e-30 leaves them as they were.
  auto c = run(dir.path("r3"), {"train.init=" + last, "train.optimizer.lr=1e-30", "epochs=1"});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("initialised weights from " + last), std::string::npos) << c.err;
  auto d = run(dir.path("r4"), {"train.optimizer.lr=1e-30", "epochs=1"});
  ASSERT_EQ(d.code, 0) << d.err;
  const StFile inited = read_safetensors(latest_checkpoint(dir.path("r3"))),
               fresh = read_safetensors(latest_checkpoint(dir.path("r4")));
  int same_as_init = 0, same_as_fresh = 0, weights = 0;
  for (const auto& [k, t] : straight.tensors) {
    if (k.rfind("adam.", 0) == 0) continue;
    ++weights;
    same_as_init += t.bytes == inited.tensors.at(k).bytes;
    same_as_fresh += t.bytes == fresh.tensors.at(k).bytes;
  }
  EXPECT_EQ(same_as_init, weights);
  EXPECT_EQ(same_as_fresh, 0);
  EXPECT_EQ(inited.metadata.at("adam.step"), fresh.metadata.at("adam.step"));  // Adam started fresh
}

}  // namespace
}  // namespace sl
