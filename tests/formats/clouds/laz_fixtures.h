// The LAZ fixtures of tests/formats/clouds/fixtures/laz: synthetic LAS files (synth_las.h)
// compressed by the test writer (laz_writer.h). The folder's make.sh writes them from this table
// and checks them with laz-perf and copc.js; the tests rebuild each LAS twin from the same row.
#pragma once
#include <string>
#include <vector>

#include "tests/formats/clouds/laz_writer.h"
#include "tests/formats/clouds/synth_las.h"

namespace sl::test {

struct LazFixture {
  std::string name;  // <name>.laz
  SynthLasOptions las;
  LazWriteOptions laz;
};

inline const std::vector<LazFixture>& laz_fixtures() {
  static const std::vector<LazFixture> v = [] {
    LazWriteOptions chunks;
    chunks.chunk_size = 500;
    LazWriteOptions copc;
    copc.chunk_size = 0xFFFFFFFFu;
    copc.chunk_points = {300, 700, 1, 499};
    copc.copc = true;
    return std::vector<LazFixture>{
        {"synth_f0", {2, 0, 0, 1500, 21, false}, chunks},
        {"synth_f1_extra3", {2, 1, 3, 1500, 22, false}, chunks},
        {"synth_f3", {3, 3, 0, 1500, 23, false}, chunks},
        {"synth_f6_evlr", {4, 6, 0, 1500, 24, true}, chunks},
        {"synth_f7_extra5", {4, 7, 5, 1500, 25, false}, chunks},
        {"synth_f8.copc", {4, 8, 0, 1500, 26, false}, copc},
    };
  }();
  return v;
}

}  // namespace sl::test
