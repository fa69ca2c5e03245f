// scan_dataset: which files it pairs, the order it yields them in (sorted, or a seeded
// permutation per epoch), limit and format, and the errors for a missing or empty folder.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <set>

#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "tests/formats/clouds/io_test_util.h"

namespace {

struct Scan {
  rapidjson::Document params;
  std::unique_ptr<sl::Stage> stage;
  sl::RunContext ctx;
  sl::SourceStage& src() { return dynamic_cast<sl::SourceStage&>(*stage); }
  std::vector<std::string> epoch(int64_t e) {
    std::vector<std::string> names;
    for (int64_t i = 0; i < src().epoch_size(); ++i)
      names.push_back(std::get<std::shared_ptr<const sl::SceneRef>>(src().make(e, i, ctx))->name);
    return names;
  }
};

std::unique_ptr<Scan> scan(const std::string& root, bool shuffle, int64_t limit = 0, const std::string& format = "pcd",
                           uint64_t seed = 42) {
  auto s = std::make_unique<Scan>();
  const std::string json = R"({"root": ")" + root + R"(", "format": ")" + format + R"(", "shuffle": )" +
                           (shuffle ? "true" : "false") + R"(, "limit": )" + std::to_string(limit) + "}";
  s->params.Parse(json.c_str());
  s->stage = sl::StageRegistry::instance().get("scan_dataset").factory(sl::Params(&s->params, "scan"));
  s->ctx.seed = seed;
  s->stage->start(s->ctx);
  return s;
}

}  // namespace

TEST(Scan, PairsEachCloudWithItsStemJsonInSortedOrderAndIgnoresOtherFiles) {
  sl::test::TempDir tmp;
  for (const char* f : {"c.pcd", "a.pcd", "b.pcd", "b.json", "a.json", "notes.txt", "x.bin", "x.json", "d.pcd.bak"})
    tmp.write(f, "");
  auto s = scan(tmp.path(""), false);
  ASSERT_EQ(s->src().epoch_size(), 3);
  EXPECT_EQ(s->epoch(0), (std::vector<std::string>{"a", "b", "c"}));
  for (int64_t i = 0; i < 3; ++i) {
    auto ref = std::get<std::shared_ptr<const sl::SceneRef>>(s->src().make(0, i, s->ctx));
    EXPECT_EQ(ref->scene_index, i);
    EXPECT_EQ(ref->cloud_path, tmp.path(ref->name + ".pcd"));
    // Paired by name even when the JSON is missing (c): read_lines_json then names that file.
    EXPECT_EQ(ref->lines_path, tmp.path(ref->name + ".json"));
  }
  auto bins = scan(tmp.path(""), false, 0, "bin");
  EXPECT_EQ(bins->epoch(0), (std::vector<std::string>{"x"}));
  EXPECT_EQ(scan(tmp.path(""), false, 2)->epoch(0), (std::vector<std::string>{"a", "b"}));
}

TEST(Scan, ShuffleIsASeededPermutationPerEpochTheSameForTheSameSeed) {
  sl::test::TempDir tmp;
  std::vector<std::string> sorted;
  for (int i = 0; i < 12; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "s%02d", i);
    tmp.write(std::string(name) + ".pcd", "");
    sorted.push_back(name);
  }
  auto a = scan(tmp.path(""), true), b = scan(tmp.path(""), true), other = scan(tmp.path(""), true, 0, "pcd", 43);
  std::set<std::vector<std::string>> orders;
  for (int64_t e = 0; e < 4; ++e) {
    auto order = a->epoch(e);
    EXPECT_EQ(order, b->epoch(e)) << "epoch " << e;  // same seed, same order
    auto copy = order;
    std::sort(copy.begin(), copy.end());
    EXPECT_EQ(copy, sorted) << "epoch " << e << " is not a permutation";
    EXPECT_NE(order, sorted) << "epoch " << e << " was not shuffled";
    EXPECT_NE(order, other->epoch(e)) << "another seed gave the same order in epoch " << e;
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 4u);  // a new order every epoch
  // Asking for an earlier epoch again gives its order again (the order is a function of it).
  EXPECT_EQ(a->epoch(1), b->epoch(1));
}

TEST(Scan, MissingOrEmptyFolderIsAnErrorNamingIt) {
  sl::test::TempDir tmp;
  auto error_of = [](const std::string& root, const std::string& format = "pcd") {
    try {
      scan(root, false, 0, format);
    } catch (const sl::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(tmp.path("nope")), "scan/root: dataset folder '" + tmp.path("nope") + "' does not exist");
  tmp.write("a.bin", "");
  // Clouds of other formats in the folder are named, with the scan.format that reads them.
  EXPECT_EQ(error_of(tmp.path("")),
            "scan/root: no .pcd files in '" + tmp.path("") + "' (it has 1 .bin file(s): scan.format bin)");
  EXPECT_EQ(error_of(tmp.path("a.bin")), "scan/root: '" + tmp.path("a.bin") + "' is not a folder");
  tmp.write("b.laz", "");
  tmp.write("c.laz", "");
  EXPECT_EQ(error_of(tmp.path("")), "scan/root: no .pcd files in '" + tmp.path("") +
                                        "' (it has 1 .bin file(s): scan.format bin, 2 .laz file(s): scan.format laz)");
  // A LAZ dataset is scanned like the others (its points are decoded when a scene is read).
  EXPECT_EQ(error_of(tmp.path(""), "laz"), "");
}
