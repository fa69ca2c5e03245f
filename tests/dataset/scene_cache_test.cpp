#include <gtest/gtest.h>

#include "dataset/scene_cache.h"

namespace sl {
namespace {

std::shared_ptr<const PointCloud> cloud_of(size_t n, float v) {
  auto c = std::make_shared<PointCloud>();
  c->fields = {"x", "y", "z", "intensity"};
  c->columns.assign(4, std::vector<float>(n, v));
  return c;
}

TEST(SceneCache, NeverHoldsMoreThanItsBudgetAndEvictsLeastRecentlyUsed) {
  const size_t per = cloud_of(1000, 1)->bytes();  // 16000 bytes
  SceneCache cache(3 * per + 3 * 200);            // room for three entries with their overhead
  for (int i = 0; i < 3; ++i) cache.put("s" + std::to_string(i), cloud_of(1000, (float)i + 0.5f));
  EXPECT_NE(cache.get("s0"), nullptr);  // s0 is now the most recent; s1 the least
  cache.put("s3", cloud_of(1000, 3.5f));
  EXPECT_EQ(cache.get("s1"), nullptr);
  EXPECT_NE(cache.get("s0"), nullptr);
  EXPECT_NE(cache.get("s2"), nullptr);
  auto s3 = cache.get("s3");
  ASSERT_NE(s3, nullptr);
  EXPECT_EQ(s3->columns[0][999], 3.5f);
  EXPECT_LE(cache.bytes(), cache.budget());
  EXPECT_LE(cache.peak_bytes(), cache.budget());
  EXPECT_EQ(cache.hits(), 4);
  EXPECT_EQ(cache.misses(), 1);
}

TEST(SceneCache, ACloudLargerThanTheBudgetIsNotCachedAndZeroBudgetCachesNothing) {
  SceneCache small(1000);
  small.put("big", cloud_of(1000, 1));
  EXPECT_EQ(small.get("big"), nullptr);
  EXPECT_EQ(small.bytes(), 0u);
  SceneCache none(0);
  none.put("a", cloud_of(1, 1));
  EXPECT_EQ(none.get("a"), nullptr);
}

}  // namespace
}  // namespace sl
