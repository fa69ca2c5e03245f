#include <gtest/gtest.h>

#include "graph/message.h"

TEST(Message, SampleSeedDependsOnEveryId) {
  auto s = sl::sample_seed(42, 0, 1, 2);
  EXPECT_EQ(s, sl::sample_seed(42, 0, 1, 2));
  EXPECT_NE(s, sl::sample_seed(43, 0, 1, 2));
  EXPECT_NE(s, sl::sample_seed(42, 1, 1, 2));
  EXPECT_NE(s, sl::sample_seed(42, 0, 2, 2));
  EXPECT_NE(s, sl::sample_seed(42, 0, 1, 3));
}
