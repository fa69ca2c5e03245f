#include "graph/json_depth.h"

#include <gtest/gtest.h>

#include <string>

#include "graph/error.h"

namespace {

std::string nested(int levels, char open, char close) {
  return std::string(levels, open) + std::string(levels, close);
}

TEST(JsonDepth, CountsArraysAndObjectsUpToTheLimit) {
  EXPECT_EQ(sl::json_depth_exceeded_at(nested(256, '[', ']')), -1);
  EXPECT_EQ(sl::json_depth_exceeded_at(nested(257, '[', ']')), 256);
  EXPECT_EQ(sl::json_depth_exceeded_at("{\"a\":{\"b\":[1,[2]]}}", 3), 13);
  EXPECT_EQ(sl::json_depth_exceeded_at("{\"a\":{\"b\":[1,[2]]}}", 4), -1);
  // Depth is nesting, not the number of brackets: siblings do not add up.
  std::string siblings = "[";
  for (int i = 0; i < 1000; ++i) siblings += "[1],";
  siblings += "[]]";
  EXPECT_EQ(sl::json_depth_exceeded_at(siblings, 2), -1);
}

TEST(JsonDepth, IgnoresBracketsInStringsAndComments) {
  const std::string deep_in_string = "{\"s\": \"" + std::string(100000, '[') + "\\\"[[[\"}";
  EXPECT_EQ(sl::json_depth_exceeded_at(deep_in_string, 2), -1);
  const std::string in_comments = "// [[[[[[\n{ /* {{{{{{ */ \"a\": [1] }";
  EXPECT_EQ(sl::json_depth_exceeded_at(in_comments, 2), -1);
  EXPECT_EQ(sl::json_depth_exceeded_at(in_comments, 1), 30);
}

TEST(JsonDepth, NamesTheFileTheDepthAndTheByteAtAMillionLevels) {
  const std::string text = "{\"lines\": " + nested(1000000, '[', ']') + "}";
  try {
    sl::check_json_depth(text, "scene_0001.json");
    FAIL() << "no error";
  } catch (const sl::Error& e) {
    EXPECT_EQ(std::string(e.what()), "scene_0001.json: JSON nested deeper than 256 levels (byte 265)");
  }
  EXPECT_NO_THROW(sl::check_json_depth("{\"lines\": [[[1]]]}", "ok.json"));
}

}  // namespace
