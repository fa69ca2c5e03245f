// Replays every input kept in tests/fuzz/<target>/ (inputs that once crashed a fuzz target, see
// scripts/fuzz) through the same target body, fuzz/targets.h. In the sanitizer build (scripts/test
// runs it) an out-of-bounds read or UB in any of them fails the run; in every build a crash, an
// exception other than sl::Error, or a decoded result that breaks the target's invariants does.
// The named tests beside each fix (e.g. LinesJson.ZerosWithLargeExponents...) check the values.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>

#include "fuzz/targets.h"
#include "graph/atomic_file.h"

namespace fs = std::filesystem;

namespace {

const std::map<std::string, std::function<void(const uint8_t*, size_t)>> kTargets = {
    {"pcd", sl::fuzz::pcd},               {"inspect", sl::fuzz::inspect},           {"kitti", sl::fuzz::kitti},
    {"ply", sl::fuzz::ply},               {"las", sl::fuzz::las},                 {"laz", sl::fuzz::laz},
    {"lines_json", sl::fuzz::lines_json}, {"pipeline", sl::fuzz::pipeline},
    {"checkpoint", sl::fuzz::checkpoint}, {"samples", sl::fuzz::samples}, {"tile_metadata", sl::fuzz::tile_metadata}};

}  // namespace

TEST(FuzzRegression, EveryKeptCrashingInputNowFailsCleanlyOrDecodes) {
  const fs::path root = fs::path(SL_SOURCE_DIR) / "tests" / "fuzz";
  int replayed = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const std::string target = dir.path().filename().string();
    auto it = kTargets.find(target);
    ASSERT_NE(it, kTargets.end()) << "tests/fuzz/" << target << " names no fuzz target";
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string bytes = sl::read_file(f.path().string());
      SCOPED_TRACE(f.path().string());
      it->second(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  EXPECT_GE(replayed, 3);  // the findings kept so far at least: the folder must not go missing
}
