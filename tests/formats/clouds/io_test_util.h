// Helpers shared by the io tests: a per-test temporary directory and file writers.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "graph/message.h"

namespace sl::test {

// temp_directory_path()/sl_test_<pid>_<suite>_<test>, removed at destruction.
class TempDir {
 public:
  TempDir() {
    auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("sl_test_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

 private:
  std::filesystem::path dir_;
};

// `{"lines": [[[...]]]}` nested `levels` deep: what overflowed the stack of RapidJSON's recursive
// parser at 10^5 levels (200 KB) on a worker thread.
inline std::string deep_json(int levels) {
  return "{\"lines\": " + std::string((size_t)levels, '[') + std::string((size_t)levels, ']') + "}";
}

// n points with fields, values in [-100, 100) and never exactly zero.
inline PointCloud random_cloud(size_t n, std::vector<std::string> fields, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  PointCloud c;
  c.fields = std::move(fields);
  c.columns.resize(c.fields.size());
  for (auto& col : c.columns) {
    col.resize(n);
    for (auto& v : col) {
      do v = u(rng);
      while (v == 0.f);
    }
  }
  return c;
}

}  // namespace sl::test
