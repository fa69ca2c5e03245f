// normalize_intensity and scale_intensity (geometry/intensity.h) and their stages (normalize_intensity,
// randomize_intensity): the fast normalisation equals its plain reference on random samples (ties included), a factor on every
// intensity cancels (exactly for a power of two, to float rounding for 0.4; rank also a gamma),
// repeated calls give the same bits, empty groups and the other columns stay, scale_intensity's
// draws follow the seed and stay in range, evaluation leaves it out, bad params are refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "geometry/intensity.h"
#include "geometry/rng.h"
#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "tests/graph/run_stage.h"
#include "train/eval_step.h"

namespace sl {
namespace {

constexpr IntensityNorm kBoth[] = {IntensityNorm::kQuantile, IntensityNorm::kRank};

// A sample with random x y z in [-2, 2] and intensities in [0, 1] (some repeated, to make ties),
// groups with random counts (some 0: their rows zeros, as group_points pads an empty window).
Sample random_sample(uint64_t seed, int64_t P, int64_t L, int64_t K) {
  Rng rng(seed);
  Sample s;
  s.seed = seed;
  Tensor c({P, 4});
  for (int64_t i = 0; i < P; ++i) {
    for (int j = 0; j < 3; ++j) c.data[(size_t)(i * 4 + j)] = (float)rng.uniform(-2, 2);
    c.data[(size_t)(i * 4 + 3)] = i > 0 && rng.uniform() < 0.2 ? c.data[(size_t)((i - 1) * 4 + 3)] : (float)rng.uniform();
  }
  Tensor local({L, K, 4}), count({L});
  for (int64_t l = 0; l < L; ++l) {
    count.data[(size_t)l] = (float)rng.below((uint64_t)K + 1);
    if (count.data[(size_t)l] == 0) continue;
    for (int64_t k = 0; k < K; ++k)
      for (int j = 0; j < 4; ++j)
        local.data[(size_t)((l * K + k) * 4 + j)] =
            j < 3 ? (float)rng.uniform(-1, 1) : rng.uniform() < 0.3 ? c.data[(size_t)(rng.below((uint64_t)P) * 4 + 3)] : (float)rng.uniform();
  }
  s.tensors["context"] = c;
  s.tensors["local"] = local;
  s.tensors["local_count"] = count;
  return s;
}

void normalize(Sample& s, IntensityNorm n, double q, bool reference = false) {
  (reference ? normalize_intensity_reference : normalize_intensity)(&s.tensors["context"], &s.tensors["local"],
                                                                    &s.tensors["local_count"], n, q);
}

// Every intensity of context and local times f (or mapped by fn).
template <class Fn>
Sample map_intensities(const Sample& s, Fn fn) {
  Sample o = s;
  for (const char* key : {"context", "local"})
    for (size_t i = 3; i < o.tensors[key].data.size(); i += 4) o.tensors[key].data[i] = fn(o.tensors[key].data[i]);
  return o;
}

TEST(NormalizeIntensity, EqualsThePlainReferenceOnRandomSamplesOfEverySizeBothMethods) {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    Rng r(seed + 1000);
    const int64_t P = 1 + (int64_t)r.below(300), L = 1 + (int64_t)r.below(8), K = 1 + (int64_t)r.below(16);
    const double q = seed % 7 == 0 ? 1.0 : seed % 11 == 0 ? 0.0 : r.uniform();
    for (IntensityNorm n : kBoth) {
      const Sample s = random_sample(seed, P, L, K);
      Sample fast = s, ref = s;
      normalize(fast, n, q);
      normalize(ref, n, q, true);
      for (const char* key : {"context", "local", "local_count"})
        ASSERT_EQ(fast.at(key).data, ref.at(key).data) << key << " seed " << seed << " method " << int(n);
      // The method did something, and only to intensities of non-empty groups.
      ASSERT_NE(fast.at("context").data, s.at("context").data) << seed;
      for (size_t i = 0; i < s.at("context").data.size(); ++i)
        if (i % 4 != 3) {
          ASSERT_EQ(fast.at("context").data[i], s.at("context").data[i]);
        }
      for (int64_t l = 0; l < L; ++l)
        for (int64_t k = 0; k < K; ++k)
          for (int j = 0; j < 4; ++j) {
            const size_t i = (size_t)((l * K + k) * 4 + j);
            if (j < 3 || s.at("local_count").data[(size_t)l] == 0) {
              ASSERT_EQ(fast.at("local").data[i], s.at("local").data[i]);
            }
          }
    }
  }
}

TEST(NormalizeIntensity, QuantileDividesByTheOrderStatisticAndRankGivesMidRanks) {
  // Written out: intensities 0.1 0.4 0.4 0.8 0.2 (P = 5); quantile 0.5 -> index floor(0.5 * 4) = 2
  // of 0.1 0.2 0.4 0.4 0.8: 0.4. Mid-ranks: 0.1 -> 0.5/5, 0.4 -> (2 + 1)/5, 0.8 -> 4.5/5, 0.2 -> 1.5/5.
  Tensor c({5, 4});
  const float v[5] = {0.1f, 0.4f, 0.4f, 0.8f, 0.2f};
  for (int i = 0; i < 5; ++i) c.data[(size_t)(i * 4 + 3)] = v[i];
  Tensor local({1, 2, 4});
  local.data[3] = 0.4f, local.data[7] = 0.3f;  // a group point between the context's values: rank 2/5
  Tensor q = c, ql = local;
  normalize_intensity(&q, &ql, nullptr, IntensityNorm::kQuantile, 0.5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(q.data[(size_t)(i * 4 + 3)], v[i] / 0.4f) << i;
  EXPECT_EQ(ql.data[7], 0.3f / 0.4f);
  Tensor r = c, rl = local;
  normalize_intensity(&r, &rl, nullptr, IntensityNorm::kRank, 0.5);
  const float want[5] = {0.1f, 0.6f, 0.6f, 0.9f, 0.3f};
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(r.data[(size_t)(i * 4 + 3)], want[i]) << i;
  EXPECT_FLOAT_EQ(rl.data[3], 0.6f);
  EXPECT_FLOAT_EQ(rl.data[7], 0.4f);
  // A quantile at 0 falls back to the maximum; all zeros stay zeros.
  Tensor z({4, 4});
  z.data[3] = 0.5f;
  normalize_intensity(&z, nullptr, nullptr, IntensityNorm::kQuantile, 0.5);
  EXPECT_EQ(z.data[3], 1.f);
  Tensor zeros({4, 4});
  normalize_intensity(&zeros, nullptr, nullptr, IntensityNorm::kQuantile, 0.5);
  EXPECT_EQ(zeros.data, std::vector<float>(16, 0.f));
}

TEST(NormalizeIntensity, AScaleFactorCancelsExactlyForPowersOfTwoToRoundingFor0_4AndRankAlsoAGamma) {
  for (uint64_t seed = 0; seed < 100; ++seed)
    for (IntensityNorm n : kBoth) {
      const Sample s = random_sample(seed, 200, 6, 12);
      Sample a = s;
      normalize(a, n, 0.95);
      for (float f : {0.5f, 0.25f, 4.f}) {
        Sample b = map_intensities(s, [f](float x) { return f * x; });
        normalize(b, n, 0.95);
        for (const char* key : {"context", "local"}) ASSERT_EQ(a.at(key).data, b.at(key).data) << key << " x" << f;
      }
      Sample b = map_intensities(s, [](float x) { return 0.4f * x; });
      normalize(b, n, 0.95);
      for (const char* key : {"context", "local"})
        for (size_t i = 0; i < a.at(key).data.size(); ++i)
          ASSERT_NEAR(a.at(key).data[i], b.at(key).data[i], 4e-7f * std::fabs(a.at(key).data[i]) + 1e-30f)
              << key << " " << i << " seed " << seed;
      if (n != IntensityNorm::kRank) continue;
      // An increasing curve (which keeps these floats' order) leaves the ranks as they were.
      Sample g = map_intensities(s, [](float x) { return 0.4f * std::sqrt(x); });
      normalize(g, n, 0.95);
      for (const char* key : {"context", "local"}) ASSERT_EQ(a.at(key).data, g.at(key).data) << key << " gamma";
    }
}

TEST(NormalizeIntensity, IsDeterministicAndRefusesBadShapesAndQuantiles) {
  const Sample s = random_sample(5, 300, 8, 16);
  for (IntensityNorm n : kBoth) {
    Sample a = s, b = s;
    normalize(a, n, 0.9), normalize(b, n, 0.9);
    EXPECT_EQ(a.at("context").data, b.at("context").data);
    EXPECT_EQ(a.at("local").data, b.at("local").data);
  }
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Tensor c3({10, 3}), c({10, 4}), bad_local({2, 3, 3}), local({2, 3, 4}), bad_count({3});
  EXPECT_NE(message([&] { normalize_intensity(&c3, nullptr, nullptr, IntensityNorm::kRank, 0.5); }).find("\"context\""), std::string::npos);
  EXPECT_NE(message([&] { normalize_intensity(&c, &bad_local, nullptr, IntensityNorm::kRank, 0.5); }).find("\"local\""), std::string::npos);
  EXPECT_NE(message([&] { normalize_intensity(&c, &local, &bad_count, IntensityNorm::kRank, 0.5); }).find("\"local_count\""), std::string::npos);
  EXPECT_NE(message([&] { normalize_intensity(&c, nullptr, nullptr, IntensityNorm::kQuantile, 1.5); }).find("quantile"), std::string::npos);
  c.data[7] = NAN;
  EXPECT_NE(message([&] { normalize_intensity(&c, nullptr, nullptr, IntensityNorm::kQuantile, 0.5); }).find("point 1"), std::string::npos);
}

TEST(ScaleIntensity, MapsEveryIntensityToScaleTimesItsPowerAndLeavesTheRest) {
  const Sample s = random_sample(9, 50, 4, 8);
  Sample a = s;
  scale_intensity(&a.tensors["context"], &a.tensors["local"], &a.tensors["local_count"], 0.4f, 1.5f);
  for (size_t i = 0; i < s.at("context").data.size(); ++i) {
    const float x = s.at("context").data[i];
    EXPECT_EQ(a.at("context").data[i], i % 4 == 3 ? 0.4f * std::pow(x, 1.5f) : x) << i;
  }
  for (size_t i = 0; i < s.at("local").data.size(); ++i) {
    const float x = s.at("local").data[i];
    const bool empty = s.at("local_count").data[i / (8 * 4)] == 0;
    EXPECT_EQ(a.at("local").data[i], i % 4 == 3 && !empty ? 0.4f * std::pow(x, 1.5f) : x) << i;
  }
}

// ---- the stages ----------------------------------------------------------------------------

const char* kPipeline = R"({"name":"i","seed":1,"device":"cpu","epochs":1,"stages":[
    {"id":"scan","type":"scan_dataset","params":{"root":"x"}},
    {"id":"read","type":"read_cloud"},
    {"id":"lines","type":"read_lines_json"},
    {"id":"split","type":"split_lines"},
    {"id":"perturb","type":"perturb_line"},
    {"id":"crop","type":"crop_polyline"},
    {"id":"resample","type":"resample"},
    {"id":"center","type":"center","params":{"rotate":true}},
    {"id":"vary","type":"randomize_intensity",%VARY%},
    {"id":"norm","type":"normalize_intensity",%NORM%},
    {"id":"batch","type":"batch","params":{"keys":["context","noisy_line","target_offset"]}},
    {"id":"h2d","type":"to_device"},
    {"id":"train","type":"train_step"}]})";

std::string pipeline(const std::string& vary = R"("params":{"scale":[0.3,3],"gamma":[0.5,2]})",
                     const std::string& norm = R"("params":{"method":"rank"})") {
  std::string p = kPipeline;
  p.replace(p.find("%VARY%"), 6, vary);
  p.replace(p.find("%NORM%"), 6, norm);
  return p;
}

using test::run_stage;

std::unique_ptr<Stage> make(const PipelineSpec& spec, const std::string& id) {
  const StageSpec& st = spec.stage(id);
  return st.schema->factory(spec.params(st.index));
}

TEST(ScaleIntensityStage, DrawsScaleAndGammaLogUniformlyInRangeFromTheSeedTheSameForContextAndLocal) {
  const StageSchema* schema = StageRegistry::instance().find("randomize_intensity");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->infer, InferRole::Augment);
  const PipelineSpec spec = parse_pipeline(pipeline(R"("params":{"scale":[0.3,3]})"), "intensity.json");
  const auto stage = make(spec, "vary");
  // Each sample: one intensity 1 in context (shows the scale: 1^gamma = 1) and its others mapped by
  // that scale alone (gamma [1, 1]); the same seed, the same factor; the log of the factor about
  // uniform over [log 0.3, log 3] (mean at its middle, each half about as often).
  double sum_log = 0;
  int low = 0;
  const int n = 400;
  std::vector<float> first;
  for (uint64_t seed = 0; seed < (uint64_t)n; ++seed) {
    Sample s = random_sample(seed, 20, 3, 4);
    s.tensors["context"].data[3] = 1.f;
    const auto a = run_stage(*stage, s), b = run_stage(*stage, s);
    ASSERT_EQ(a->at("context").data, b->at("context").data) << "the same seed, the same draw";
    ASSERT_EQ(a->at("local").data, b->at("local").data);
    const float f = a->at("context").data[3];
    ASSERT_GE(f, 0.3f * (1 - 1e-6f));
    ASSERT_LE(f, 3.f * (1 + 1e-6f));
    for (size_t i = 3; i < s.at("context").data.size(); i += 4) ASSERT_EQ(a->at("context").data[i], f * s.at("context").data[i]);
    for (size_t i = 3; i < s.at("local").data.size(); i += 4)
      if (s.at("local_count").data[i / 16] > 0) {
        ASSERT_EQ(a->at("local").data[i], f * s.at("local").data[i]);
      }
    sum_log += std::log(f);
    low += f < 1.f;
    if (seed < 2) first.push_back(f);
  }
  EXPECT_NEAR(sum_log / n, 0.0, 0.15);  // the middle of [log 0.3, log 3] is 0; sd of the mean ~0.066
  EXPECT_GT(low, n / 2 - 50);
  EXPECT_LT(low, n / 2 + 50);
  EXPECT_NE(first[0], first[1]) << "another seed, another draw";
  // [1, 1] for both: the sample unchanged.
  const PipelineSpec same = parse_pipeline(pipeline(R"("params":{"scale":[1,1]})"), "intensity.json");
  const Sample s = random_sample(3, 20, 3, 4);
  EXPECT_EQ(run_stage(*make(same, "vary"), s)->at("context").data, s.at("context").data);
}

TEST(NormalizeIntensityStage, RunsTheFunctionAndStaysInEvaluationWhereTheAugmentationGoes) {
  const StageSchema* schema = StageRegistry::instance().find("normalize_intensity");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->infer, InferRole::Prepare);
  const PipelineSpec spec = parse_pipeline(pipeline(), "intensity.json");
  const Sample s = random_sample(4, 100, 5, 8);
  Sample want = s;
  normalize(want, IntensityNorm::kRank, 0.95);
  const auto got = run_stage(*make(spec, "norm"), s);
  EXPECT_EQ(got->at("context").data, want.at("context").data);
  EXPECT_EQ(got->at("local").data, want.at("local").data);
  const std::string eval = make_eval_pipeline(spec.resolved_json(false), "val", "train", "live:x");
  EXPECT_EQ(eval.find("randomize_intensity"), std::string::npos) << eval;
  EXPECT_NE(eval.find("normalize_intensity"), std::string::npos) << eval;
}

TEST(IntensityStages, RefuseBadParamsNamingThem) {
  auto refusal = [](const std::string& json, const std::string& id) {
    try {
      const PipelineSpec spec = parse_pipeline(json, "intensity.json");
      make(spec, id);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const char* vary : {R"("params":{"scale":[0,2]})", R"("params":{"scale":[2,1]})", R"("params":{"scale":[1]})"})
    EXPECT_NE(refusal(pipeline(vary), "vary").find("/scale"), std::string::npos) << vary;
  EXPECT_NE(refusal(pipeline(R"("params":{"gamma":[-1,2]})"), "vary").find("/gamma"), std::string::npos);
  EXPECT_NE(refusal(pipeline(R"("params":{"scale":[1,1]})", R"("params":{"quantile":1.5})"), "norm").find("quantile"),
            std::string::npos);
  EXPECT_NE(refusal(pipeline(R"("params":{"scale":[1,1]})", R"("params":{"method":"median"})"), "norm").find("method"),
            std::string::npos);
  EXPECT_NE(refusal(pipeline(R"("params":{"scale":[1,1]})", R"("params":{"quantil":0.9})"), "norm").find("did you mean"),
            std::string::npos);
}

}  // namespace
}  // namespace sl
