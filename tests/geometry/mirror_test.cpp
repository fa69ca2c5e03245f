// mirror_sample (geometry/mirror.h) and the mirror_line stage: each of the four mirror images
// maps every key as written out plainly here, twice is the identity, a key it does not know or a
// shape that does not fit is refused with the sample untouched, the images are the views
// model.views averages at inference (so training and inference mirror alike), the stage draws
// each image about a quarter of the time from the sample's seed, and evaluation leaves it out.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "geometry/mirror.h"
#include "geometry/rng.h"
#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "tests/graph/run_stage.h"
#include "kernels/model_views.h"
#include "train/eval_step.h"

namespace sl {
namespace {

constexpr int64_t P = 40, L = 9, K = 6, M = 5;

Tensor random_tensor(std::vector<int64_t> shape, Rng& rng) {
  Tensor t(std::move(shape));
  for (float& v : t.data) v = (float)rng.uniform(-2, 2);
  return t;
}

// A sample in its line's frame: the noisy line runs along +x (y equal at both ends).
Sample random_sample(uint64_t seed) {
  Rng rng(seed);
  Sample s;
  s.seed = seed;
  s.tensors["context"] = random_tensor({P, 4}, rng);
  s.tensors["noisy_line"] = random_tensor({L, 3}, rng);
  for (int64_t l = 0; l < L; ++l) s.tensors["noisy_line"].data[(size_t)l * 3] = -4.f + (float)l + (float)rng.uniform(-0.2, 0.2);
  s.tensors["noisy_line"].data[(size_t)(L - 1) * 3 + 1] = s.tensors["noisy_line"].data[1];
  s.tensors["true_line"] = random_tensor({M, 3}, rng);
  s.tensors["target_offset"] = random_tensor({L, 3}, rng);
  s.tensors["local"] = random_tensor({L, K, 4}, rng);
  Tensor n({L});
  for (int64_t l = 0; l < L; ++l) n.data[(size_t)l] = (float)(1 + l % K);
  s.tensors["local_count"] = n;
  s.tensors["frame"] = random_tensor({5}, rng);
  return s;
}

// The image written out: across is y -> -y; reverse (the line drawn the other way) a half turn,
// x -> -x and y -> -y, with the line-ordered keys' first axis reversed.
void expect_image(const Sample& a, const Sample& b, bool across, bool reverse) {
  const float sx = reverse ? -1.f : 1.f, sy = across != reverse ? -1.f : 1.f;
  auto check = [&](const char* key, int64_t rows, int64_t row, bool ordered) {
    const Tensor& x = a.at(key);
    const Tensor& y = b.at(key);
    ASSERT_EQ(x.shape, y.shape) << key;
    const int64_t per = x.numel() / rows;  // floats per first-axis entry
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < per; ++j) {
        const int64_t from = (ordered && reverse ? rows - 1 - r : r) * per + j, col = j % row;
        const float f = row < 2 ? 1.f : col == 0 ? sx : col == 1 ? sy : 1.f;
        ASSERT_EQ(y.data[(size_t)(r * per + j)], f * x.data[(size_t)from]) << key << " row " << r << " float " << j;
      }
  };
  check("context", P, 4, false);
  check("noisy_line", L, 3, true);
  check("true_line", M, 3, true);
  check("target_offset", L, 3, true);
  check("local", L, 4, true);
  check("local_count", L, 1, true);
  EXPECT_EQ(a.at("frame").data, b.at("frame").data);
}

TEST(Mirror, EachImageMapsEveryKeyAndTwiceIsTheIdentity) {
  for (int v = 0; v < 4; ++v) {
    const bool across = v & 1, reverse = v & 2;
    const Sample s = random_sample(30 + (uint64_t)v);
    Sample m = s;
    mirror_sample(m, across, reverse);
    expect_image(s, m, across, reverse);
    mirror_sample(m, across, reverse);
    for (const auto& [key, t] : s.tensors) EXPECT_EQ(m.at(key).data, t.data) << key << " view " << v;
  }
  // Refused, the sample untouched: a shape that does not fit, a key it cannot mirror.
  for (int c = 0; c < 4; ++c) {
    Sample bad = random_sample(1);
    if (c == 0) bad.tensors["target_offset"] = Tensor({L + 1, 3});  // not noisy_line's L
    if (c == 1) bad.tensors["local"] = Tensor({L, K, 3});
    if (c == 2) bad.tensors["noisy_line"] = Tensor({3 * L});           // a flat line
    if (c == 3) bad.tensors["normals"] = Tensor({P, 3});               // unknown
    const Sample before = bad;
    try {
      mirror_sample(bad, true, true);
      FAIL() << "case " << c << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c == 3 ? "\"normals\", which mirror_line does not know how to mirror" : "mirror: \""),
                std::string::npos)
          << e.what();
    }
    for (const auto& [key, t] : before.tensors) EXPECT_EQ(bad.at(key).data, t.data) << "case " << c << " changed " << key;
  }
}

// The model's prediction on a mirrored sample, mapped back, is forward_views' view: the mean of
// the four equals model.views = 4 on the sample as it is.
TEST(Mirror, TheImagesAreTheViewsTheModelAveragesAtInference) {
  ModelConfig cfg;
  cfg.encoder = {8, 16};
  cfg.line_mlp = {8};
  cfg.regressor = {16};
  cfg.local = {8, 12}, cfg.local_k = (int)K, cfg.local_window = 1;
  LineRefiner model(cfg, 7);
  const Sample s = random_sample(77);
  std::vector<float> want(L * 3);
  forward_views(model, 4, s.at("context").data.data(), s.at("noisy_line").data.data(), 1, (int)P, (int)L, want.data(),
                s.at("local").data.data());
  std::vector<double> mean(L * 3, 0.0);
  for (int v = 0; v < 4; ++v) {
    Sample m = s;
    mirror_sample(m, v & 1, v & 2);
    std::vector<float> p(L * 3);
    model.forward(m.at("context").data.data(), m.at("noisy_line").data.data(), 1, (int)P, (int)L, p.data(),
                  m.at("local").data.data());
    const float sx = (v & 2) ? -1.f : 1.f, sy = ((v & 1) != 0) != ((v & 2) != 0) ? -1.f : 1.f;
    for (int64_t l = 0; l < L; ++l) {
      const int64_t to = (v & 2) ? L - 1 - l : l;
      mean[(size_t)to * 3] += sx * p[(size_t)l * 3] / 4.0;
      mean[(size_t)to * 3 + 1] += sy * p[(size_t)l * 3 + 1] / 4.0;
      mean[(size_t)to * 3 + 2] += p[(size_t)l * 3 + 2] / 4.0;
    }
  }
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(want[i], mean[i], 1e-6) << i;
}

const char* kPipeline = R"({"name":"m","seed":1,"device":"cpu","epochs":1,"stages":[
    {"id":"scan","type":"scan_dataset","params":{"root":"x"}},
    {"id":"read","type":"read_cloud"},
    {"id":"lines","type":"read_lines_json"},
    {"id":"split","type":"split_lines"},
    {"id":"perturb","type":"perturb_line"},
    {"id":"crop","type":"crop_polyline"},
    {"id":"resample","type":"resample"},
    {"id":"center","type":"center","params":{"rotate":true}},
    {"id":"mirror","type":"mirror_line"},
    {"id":"batch","type":"batch","params":{"keys":["context","noisy_line","target_offset"]}},
    {"id":"h2d","type":"to_device"},
    {"id":"train","type":"train_step"}]})";

using test::run_stage;

TEST(MirrorLineStage, DrawsEachImageAboutAQuarterOfTheTimeFromTheSeed) {
  const StageSchema* schema = StageRegistry::instance().find("mirror_line");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->infer, InferRole::Augment);
  const PipelineSpec spec = parse_pipeline(kPipeline, "mirror.json");
  const StageSpec& st = spec.stage("mirror");
  auto stage = st.schema->factory(spec.params(st.index));
  int seen[4] = {};
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Sample s = random_sample(seed);
    const auto a = run_stage(*stage, s);
    const auto b = run_stage(*stage, s);
    EXPECT_EQ(a->at("context").data, b->at("context").data) << "the same seed, the same image";
    const bool reverse = a->at("context").data[0] != s.at("context").data[0];
    const bool across = (a->at("context").data[1] != s.at("context").data[1]) != reverse;
    expect_image(s, *a, across, reverse);
    ++seen[int(across) + 2 * int(reverse)];
  }
  for (int v = 0; v < 4; ++v) EXPECT_TRUE(seen[v] > 60 && seen[v] < 140) << "image " << v << ": " << seen[v] << " of 400";


  // A closed line (its ends at one place: center's frame falls back to its first segment) is
  // mirrored like any other; a key it cannot mirror is an error naming the sample.
  Sample closed = random_sample(3);
  float* nl = closed.tensors["noisy_line"].data.data();
  nl[(L - 1) * 3] = nl[0], nl[(L - 1) * 3 + 1] = nl[1];
  const auto c = run_stage(*stage, closed);
  const bool c_reverse = c->at("context").data[0] != closed.at("context").data[0];
  expect_image(closed, *c, (c->at("context").data[1] != closed.at("context").data[1]) != c_reverse, c_reverse);
  Sample odd = random_sample(4);
  odd.tensors["normals"] = Tensor({P, 3});
  odd.line_index = 17;
  try {
    run_stage(*stage, odd);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 17"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"normals\""), std::string::npos) << e.what();
  }
}

TEST(MirrorLineStage, EvaluationLeavesItOut) {
  // (make_eval_pipeline takes the resolved pipeline, every default written out, as a run records it)
  const std::string eval =
      make_eval_pipeline(parse_pipeline(kPipeline, "mirror.json").resolved_json(false), "val", "train", "live:x");
  EXPECT_EQ(eval.find("mirror_line"), std::string::npos) << eval;
  EXPECT_NE(eval.find("\"center\""), std::string::npos) << eval;
}

}  // namespace
}  // namespace sl
