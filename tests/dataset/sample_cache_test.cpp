// Sample cache: write_samples / read_samples stages and the SampleCacheWriter / SampleCache
// functions under them.
// The end-to-end test runs the real reader and geometry stages on a generated dataset.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "kernels/safetensors.h"
#include "graph/batch.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"
#include "dataset/sample_cache.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

const std::vector<std::string> kKeys{"context", "noisy_line", "target_offset"};

// What the test sinks saw, in order.
struct Seen {
  std::mutex mu;
  std::vector<std::map<std::string, Tensor>> samples;
  std::vector<std::pair<int64_t, int64_t>> prov;  // scene_index, line_index
  std::vector<uint64_t> seeds;
  std::vector<int64_t> epochs;
  void reset() {
    samples.clear();
    prov.clear();
    seeds.clear();
    epochs.clear();
  }
};
Seen& seen() {
  static Seen s;
  return s;
}

// Records every sample's tensors (copies) in order.
class CollectSamples : public Stage {
 public:
  explicit CollectSamples(const Params&) {}
  void process(Item in, const Position&, Emitter&, RunContext&) override {
    const auto& s = std::get<std::shared_ptr<Sample>>(in);
    std::lock_guard<std::mutex> l(seen().mu);
    std::map<std::string, Tensor> t;
    for (const auto& k : kKeys) t[k] = s->at(k);
    seen().samples.push_back(std::move(t));
    seen().prov.push_back({s->scene_index, s->line_index});
    seen().seeds.push_back(s->seed);
    seen().epochs.push_back(s->epoch);
  }
};

// Splits batches back into per-sample tensors, in order.
class CollectBatches : public Stage {
 public:
  explicit CollectBatches(const Params&) {}
  void process(Item in, const Position&, Emitter&, RunContext&) override {
    const auto& b = std::get<std::shared_ptr<Batch>>(in);
    std::lock_guard<std::mutex> l(seen().mu);
    for (int64_t i = 0; i < b->size; ++i) {
      std::map<std::string, Tensor> t;
      for (const auto& k : kKeys) {
        const BatchTensor& bt = b->tensor(k);
        Tensor x(std::vector<int64_t>(bt.shape.begin() + 1, bt.shape.end()));
        std::memcpy(x.data.data(), b->host(k) + i * bt.per_sample, (size_t)bt.per_sample * sizeof(float));
        t[k] = std::move(x);
      }
      seen().samples.push_back(std::move(t));
      seen().prov.push_back({b->scene_index[(size_t)i], b->line_index[(size_t)i]});
    }
  }
};

// n samples with values that say where they come from; sample `bad_at` gets a context with
// one point fewer.
class SampleSource : public SourceStage {
 public:
  explicit SampleSource(const Params& p) : n_(p.get_int("n")), bad_at_(p.get_int("bad_at")) {}
  int64_t epoch_size() override { return n_; }
  Item make(int64_t epoch, int64_t index, RunContext& ctx) override {
    auto s = std::make_shared<Sample>();
    s->scene_index = index / 2;
    s->line_index = index % 2;
    s->epoch = epoch;
    s->seed = sample_seed(ctx.seed, epoch, s->scene_index, s->line_index);
    Tensor c({index == bad_at_ ? 4 : 5, 4}), nl({3, 3}), to({3, 3});
    for (size_t i = 0; i < c.data.size(); ++i) c.data[i] = (float)index + 0.001f * (float)i;
    for (size_t i = 0; i < nl.data.size(); ++i) nl.data[i] = -(float)index - 0.01f * (float)i, to.data[i] = 0.5f * (float)i;
    s->tensors = {{"context", c}, {"noisy_line", nl}, {"target_offset", to}, {"extra", Tensor({1})}};
    return s;
  }

 private:
  int64_t n_, bad_at_;
};

void register_sample_test_stages() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = StageRegistry::instance();
    {
      StageSchema s{"test_samples_collect", "records samples", "test", Kind::Sample, Kind::None};
      s.serial_only = true;
      s.requires_keys = kKeys;
      s.factory = [](const Params& p) { return std::make_unique<CollectSamples>(p); };
      r.add(s);
    }
    {
      StageSchema s{"test_samples_collect_batches", "records batches", "test", Kind::Batch, Kind::None};
      s.serial_only = true;
      s.factory = [](const Params& p) { return std::make_unique<CollectBatches>(p); };
      r.add(s);
    }
    {
      StageSchema s{"test_samples_source", "n handmade samples", "test", Kind::None, Kind::Sample};
      s.produces_keys = {"context", "noisy_line", "target_offset", "extra"};
      s.params = {p_pos_int("n", 6, "samples"), p_int("bad_at", -1, "sample with a different context shape")};
      s.factory = [](const Params& p) { return std::make_unique<SampleSource>(p); };
      r.add(s);
    }
  });
}

RunResult run_text(const std::string& text, int threads = 2) {
  register_sample_test_stages();
  seen().reset();
  PipelineSpec spec = parse_pipeline(text, "samples_test.json");
  RunOptions opt;
  opt.threads = threads;
  opt.quiet = true;
  return run_pipeline(spec, opt);
}

bool bytes_equal(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

std::string geometry_chain(const std::string& root, const std::string& sink) {
  return R"({"name":"cache","seed":11,"in_flight":3,"stages":[
    {"id":"scan","type":"scan_dataset","params":{"root":")" + root + R"(","shuffle":false}},
    {"id":"read","type":"read_pcd","threads":2},
    {"id":"lines","type":"read_lines_json","threads":2},
    {"id":"split","type":"split_lines","threads":2},
    {"id":"perturb","type":"perturb_line","threads":2,"params":{"points":8}},
    {"id":"crop","type":"crop_polyline","threads":2,"params":{"radius":2.0,"min_points":8}},
    {"id":"resample","type":"resample","threads":2,"params":{"points":64}},
    {"id":"center","type":"center","threads":2},
    )" + sink + "]}";
}

// The shipped chain on a tiny generated dataset: the cache holds exactly the samples the chain
// makes (same values, same order), and read_samples -> batch gives them back byte for byte.
TEST(SampleCache, GeneratedScenesRoundTripThroughWriteSamplesAndReadSamplesInOrder) {
  test::TempDir dir;
  GenConfig cfg;
  cfg.kind = "sweep", cfg.train_scenes = 2, cfg.val_scenes = 0, cfg.rings = 16, cfg.azimuth_step_deg = 0.8f;
  generate_dataset(dir.path("data"), cfg);
  const std::string root = dir.path("data") + "/train", cache = dir.path("cache.safetensors");

  // 1. The samples the chain makes, recorded directly.
  auto r = run_text(geometry_chain(root, R"({"id":"sink","type":"test_samples_collect"})"));
  ASSERT_TRUE(r.ok) << r.error;
  const auto expected = seen().samples;
  const auto expected_prov = seen().prov;
  ASSERT_GE(expected.size(), 6u);  // 2 scenes x 4-8 lines, minus lines with too few points
  EXPECT_EQ(expected[0].at("context").shape, (std::vector<int64_t>{64, 4}));
  EXPECT_EQ(expected[0].at("noisy_line").shape, (std::vector<int64_t>{8, 3}));
  std::set<int64_t> scenes;
  for (auto& [s, l] : expected_prov) scenes.insert(s);
  EXPECT_EQ(scenes, (std::set<int64_t>{0, 1}));

  // 2. The same chain into write_samples.
  r = run_text(geometry_chain(root, R"({"id":"write","type":"write_samples","params":{"path":")" + cache + R"("}})"));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.summaries.size(), 1u);
  EXPECT_NE(r.summaries[0].find("wrote " + std::to_string(expected.size()) + " samples"), std::string::npos) << r.summaries[0];

  const StFile f = read_safetensors(cache);
  const int64_t N = (int64_t)expected.size();
  EXPECT_EQ(f.tensors.at("context").shape, (std::vector<int64_t>{N, 64, 4}));
  EXPECT_EQ(f.tensors.at("noisy_line").shape, (std::vector<int64_t>{N, 8, 3}));
  EXPECT_EQ(f.tensors.at("target_offset").shape, (std::vector<int64_t>{N, 8, 3}));
  EXPECT_EQ(f.tensors.at("scene_index").dtype, "I32");
  EXPECT_EQ(f.tensors.at("line_index").shape, (std::vector<int64_t>{N}));
  EXPECT_EQ(f.tensors.size(), 5u);  // only the keys asked for, plus provenance
  EXPECT_EQ(f.metadata.at("count"), std::to_string(N));
  EXPECT_EQ(f.metadata.at("seed"), "11");
  EXPECT_EQ(f.metadata.at("format"), kSampleCacheFormat);
  EXPECT_NE(f.metadata.at("pipeline").find("\"write_samples\""), std::string::npos);
  for (int64_t i = 0; i < N; ++i) {
    for (const auto& k : kKeys) {
      const Tensor& e = expected[(size_t)i].at(k);
      const size_t bytes = e.data.size() * sizeof(float);
      ASSERT_EQ(std::memcmp(f.tensors.at(k).bytes.data() + (size_t)i * bytes, e.data.data(), bytes), 0)
          << "sample " << i << " key " << k;
    }
    int32_t s, l;
    std::memcpy(&s, f.tensors.at("scene_index").bytes.data() + 4 * i, 4);
    std::memcpy(&l, f.tensors.at("line_index").bytes.data() + 4 * i, 4);
    EXPECT_EQ(s, expected_prov[(size_t)i].first);
    EXPECT_EQ(l, expected_prov[(size_t)i].second);
  }

  // 3. Read back through read_samples -> batch (a partial last batch kept).
  r = run_text(R"({"name":"back","seed":11,"stages":[
    {"id":"read","type":"read_samples","params":{"path":")" + cache + R"("}},
    {"id":"batch","type":"batch","params":{"size":4,"slots":2,"drop_last":false,
      "keys":["context","noisy_line","target_offset"]}},
    {"id":"sink","type":"test_samples_collect_batches"}]})");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(seen().samples.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    for (const auto& k : kKeys) EXPECT_TRUE(bytes_equal(seen().samples[i].at(k), expected[i].at(k))) << i << " " << k;
    EXPECT_EQ(seen().prov[i], expected_prov[i]) << i;
  }
}

TEST(SampleCache, WriteSamplesStoresHandmadeSamplesExactlyAndOnlyTheChosenKeys) {
  test::TempDir dir;
  const std::string cache = dir.path("c.safetensors");
  auto r = run_text(R"({"name":"w","seed":3,"stages":[{"id":"src","type":"test_samples_source","params":{"n":5}},
    {"id":"write","type":"write_samples","params":{"path":")" + cache + R"(","keys":["context","extra"]}}]})");
  ASSERT_TRUE(r.ok) << r.error;
  const StFile f = read_safetensors(cache);
  EXPECT_EQ(f.tensors.count("noisy_line"), 0u);
  EXPECT_EQ(f.tensors.at("extra").shape, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(f.metadata.at("keys"), "context,extra");
  const auto& c = f.tensors.at("context");
  ASSERT_EQ(c.shape, (std::vector<int64_t>{5, 5, 4}));
  for (int64_t i = 0; i < 5; ++i) {
    float v[20];
    std::memcpy(v, c.bytes.data() + i * sizeof v, sizeof v);
    for (int k = 0; k < 20; ++k) ASSERT_EQ(v[k], (float)i + 0.001f * (float)k) << i << " " << k;
    int32_t s, l;
    std::memcpy(&s, f.tensors.at("scene_index").bytes.data() + 4 * i, 4);
    std::memcpy(&l, f.tensors.at("line_index").bytes.data() + 4 * i, 4);
    EXPECT_EQ(s, i / 2);
    EXPECT_EQ(l, i % 2);
  }
}

TEST(SampleCache, WriteSamplesFailsOnAShapeMismatchNamingTheSampleAndWritesNothing) {
  test::TempDir dir;
  const std::string cache = dir.path("c.safetensors");
  auto r = run_text(R"({"name":"w","stages":[{"id":"src","type":"test_samples_source","params":{"n":6,"bad_at":3}},
    {"id":"write","type":"write_samples","params":{"path":")" + cache + R"("}}]})");
  ASSERT_FALSE(r.ok);
  // Sample 3 is scene 1 line 1.
  EXPECT_NE(r.error.find("scene #1 line 1"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("'context' has shape [4,4]"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("[5,4]"), std::string::npos) << r.error;
  EXPECT_FALSE(std::filesystem::exists(cache));
}

TEST(SampleCache, WriteSamplesKeyThatNoStageProducesIsAValidationError) {
  register_sample_test_stages();
  try {
    parse_pipeline(R"({"stages":[{"id":"src","type":"test_samples_source"},
      {"id":"write","type":"write_samples","params":{"path":"x.safetensors","keys":["context","frame"]}}]})",
                   "p.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'frame'"), std::string::npos) << e.what();
  }
}

// A cache written by hand (as another tool would): read_samples gives file order without
// shuffle, and with shuffle a seeded permutation that differs per epoch and repeats per seed.
StFile handmade_cache(int n, std::vector<float>* ctx, std::vector<float>* nl, std::vector<int32_t>* si,
                      std::vector<int32_t>* li) {
  ctx->resize((size_t)n * 2 * 4);
  nl->resize((size_t)n * 3 * 3);
  for (size_t i = 0; i < ctx->size(); ++i) (*ctx)[i] = 0.25f * (float)i;
  for (size_t i = 0; i < nl->size(); ++i) (*nl)[i] = -1.0f / (1.0f + (float)i);
  si->resize((size_t)n);
  li->resize((size_t)n);
  for (int i = 0; i < n; ++i) (*si)[(size_t)i] = 100 + i, (*li)[(size_t)i] = i % 3;
  StFile f;
  f.tensors["context"] = st_view_f32(ctx->data(), {n, 2, 4});
  f.tensors["noisy_line"] = st_view_f32(nl->data(), {n, 3, 3});
  f.tensors["target_offset"] = st_view_f32(nl->data(), {n, 3, 3});
  f.tensors["scene_index"] = {"I32", {n}, std::string_view((const char*)si->data(), si->size() * 4)};
  f.tensors["line_index"] = {"I32", {n}, std::string_view((const char*)li->data(), li->size() * 4)};
  return f;
}

std::string read_back(const std::string& cache, bool shuffle, int epochs, uint64_t seed) {
  return R"({"name":"r","seed":)" + std::to_string(seed) + R"(,"epochs":)" + std::to_string(epochs) +
         R"(,"stages":[{"id":"read","type":"read_samples","params":{"path":")" + cache + R"(","shuffle":)" +
         (shuffle ? "true" : "false") + R"(}},{"id":"sink","type":"test_samples_collect"}]})";
}

TEST(SampleCache, ReadSamplesGivesFileOrderOrASeededShufflePerEpoch) {
  test::TempDir dir;
  const int n = 12;
  std::vector<float> ctx, nl;
  std::vector<int32_t> si, li;
  const std::string cache = dir.path("h.safetensors");
  write_safetensors(cache, handmade_cache(n, &ctx, &nl, &si, &li));

  auto r = run_text(read_back(cache, false, 1, 5));
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(seen().samples.size(), (size_t)n);
  for (int i = 0; i < n; ++i) {
    const auto& s = seen().samples[(size_t)i];
    EXPECT_EQ(s.at("context").shape, (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(std::memcmp(s.at("context").data.data(), ctx.data() + i * 8, 8 * sizeof(float)), 0) << i;
    EXPECT_EQ(std::memcmp(s.at("noisy_line").data.data(), nl.data() + i * 9, 9 * sizeof(float)), 0) << i;
    EXPECT_EQ(seen().prov[(size_t)i], (std::pair<int64_t, int64_t>{100 + i, i % 3}));
    EXPECT_EQ(seen().seeds[(size_t)i], sample_seed(5, 0, 100 + i, i % 3));
  }

  auto order_of = [&](int epochs, uint64_t seed) {
    auto rr = run_text(read_back(cache, true, epochs, seed));
    EXPECT_TRUE(rr.ok) << rr.error;
    std::vector<int64_t> order;
    for (size_t i = 0; i < seen().prov.size(); ++i) {
      order.push_back(seen().prov[i].first - 100);
      // The tensors travel with their provenance.
      EXPECT_EQ(seen().samples[i].at("context").data[0], ctx[(size_t)order.back() * 8]);
    }
    return order;
  };
  const auto a = order_of(2, 5), b = order_of(2, 5), c = order_of(2, 6);
  ASSERT_EQ(a.size(), 2u * n);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const std::vector<int64_t> e0(a.begin(), a.begin() + n), e1(a.begin() + n, a.end());
  EXPECT_NE(e0, e1);
  std::vector<int64_t> identity(n);
  for (int i = 0; i < n; ++i) identity[(size_t)i] = i;
  EXPECT_NE(e0, identity);
  for (auto e : {e0, e1}) {
    std::sort(e.begin(), e.end());
    EXPECT_EQ(e, identity);  // a permutation: every sample once per epoch
  }
}

// Every bad cache is an error naming the file and saying what is wrong, both from
// SampleCache::open and from a pipeline whose read_samples points at it.
TEST(SampleCache, BadCacheFilesAreErrorsNamingTheFile) {
  test::TempDir dir;
  std::vector<float> ctx, nl;
  std::vector<int32_t> si, li;
  struct Case {
    std::string name, expect;
    std::function<void(StFile&)> mutate;
  };
  std::vector<float> wrong_n(5 * 3 * 3);
  std::vector<double> f64(8 * 2 * 4);
  const std::vector<Case> cases = {
      {"missing_tensor", "tensor 'noisy_line' is missing", [](StFile& f) { f.tensors.erase("noisy_line"); }},
      {"missing_provenance", "tensor 'scene_index' is missing", [](StFile& f) { f.tensors.erase("scene_index"); }},
      {"wrong_dtype", "tensor 'context' has dtype F64, expected F32",
       [&](StFile& f) {
         f.tensors["context"] = {"F64", {8, 2, 4}, std::string_view((const char*)f64.data(), f64.size() * 8)};
       }},
      {"provenance_dtype", "tensor 'line_index' has dtype F32, expected I32",
       [&](StFile& f) { f.tensors["line_index"] = st_view_f32(ctx.data(), {8}); }},
      {"n_mismatch", "tensor 'target_offset' has shape [5,3,3] but scene_index says N = 8",
       [&](StFile& f) { f.tensors["target_offset"] = st_view_f32(wrong_n.data(), {5, 3, 3}); }},
      {"rank_one", "tensor 'context' has shape [8]",
       [&](StFile& f) { f.tensors["context"] = st_view_f32(ctx.data(), {8}); }},
  };
  for (const auto& c : cases) {
    StFile f = handmade_cache(8, &ctx, &nl, &si, &li);
    c.mutate(f);
    const std::string path = dir.path(c.name + ".safetensors");
    write_safetensors(path, f);
    try {
      SampleCache::open(path, kKeys);
      ADD_FAILURE() << c.name << ": no error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << c.name << ": " << m;
      EXPECT_NE(m.find(c.expect), std::string::npos) << c.name << ": " << m;
    }
  }
  // Truncated: the container check catches it.
  write_safetensors(dir.path("full.safetensors"), handmade_cache(8, &ctx, &nl, &si, &li));
  std::string bytes = read_file(dir.path("full.safetensors"));
  const std::string trunc = dir.write("truncated.safetensors", bytes.substr(0, bytes.size() - 20));
  try {
    run_text(read_back(trunc, false, 1, 1));
    ADD_FAILURE() << "truncated: no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(trunc + ": ", 0), 0u) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
  // Missing file.
  try {
    run_text(read_back(dir.path("nope.safetensors"), false, 1, 1));
    ADD_FAILURE() << "missing: no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path("nope.safetensors")), std::string::npos) << e.what();
  }
}

// A cache whose JSON header nests 10^5 / 10^6 levels (the parser recursed once per level: SIGSEGV)
// fails the read_samples run with the file, the depth and the byte.
TEST(SampleCache, CacheWhoseHeaderNestsTenToTheFiveAndSixLevelsFailsTheRunNamingIt) {
  test::TempDir dir;
  for (int levels : {100000, 1000000}) {
    const std::string header = "{\"context\": " + std::string((size_t)levels, '[') + std::string((size_t)levels, ']') + "}";
    std::string bytes(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(bytes.data(), &n, 8);
    const std::string cache = dir.write("deep.safetensors", bytes + header);
    try {
      run_text(read_back(cache, false, 1, 1));
      ADD_FAILURE() << levels << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(cache + ": JSON header nested deeper than 256 levels (byte 275)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(SampleCache, WriterRejectsAMissingKeyNamingTheSample) {
  SampleCacheWriter w({"context", "noisy_line"});
  Sample s;
  s.scene_index = 4, s.line_index = 2, s.epoch = 1;
  s.tensors["context"] = Tensor({2, 4});
  try {
    w.add(s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scene #4 line 2 (epoch 1): sample has no tensor 'noisy_line'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(w.size(), 0);
  EXPECT_THROW(w.write("/tmp/never_written.safetensors", {}), Error);  // nothing to write
}

}  // namespace
}  // namespace sl
