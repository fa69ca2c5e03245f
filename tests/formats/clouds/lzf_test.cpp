// LZF (formats/clouds/lzf.h): round trips, and malformed streams refused without an out-of-bounds
// access.
#include "formats/clouds/lzf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/error.h"

TEST(Lzf, RoundTripOfRandomRepetitiveAndEmptyInputs) {
  std::mt19937 rng(1);
  for (size_t n : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(100), size_t(70000)}) {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<uint8_t> in(n);
      for (size_t i = 0; i < n; ++i)
        in[i] = kind == 0 ? uint8_t(rng()) : kind == 1 ? uint8_t(i % 7) : uint8_t((i / 300) & 1);
      auto c = sl::lzf_compress(in.data(), n);
      if (kind > 0 && n >= 100) {
        EXPECT_LT(c.size(), n / 2) << "repetitive data must compress";
      }
      std::vector<uint8_t> out(n + 1);
      size_t got = sl::lzf_decompress(c.data(), c.size(), out.data(), n, "t");
      ASSERT_EQ(got, n);
      out.resize(n);
      EXPECT_EQ(out, in);
    }
  }
}

TEST(Lzf, MalformedStreamsThrowWithoutOutOfBoundsAccess) {
  uint8_t out[16];
  auto throws = [&](std::vector<uint8_t> in, size_t cap, const char* why) {
    std::unique_ptr<uint8_t[]> exact(new uint8_t[in.size()]);
    std::memcpy(exact.get(), in.data(), in.size());
    try {
      sl::lzf_decompress(exact.get(), in.size(), out, cap, "f.pcd", 100);
      ADD_FAILURE() << "expected: " << why;
    } catch (const sl::Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("f.pcd: byte 10"), std::string::npos) << e.what();
    }
  };
  throws({5, 'a', 'b'}, 16, "literal run past the end of the input");
  throws({31, 1, 2, 3}, 16, "literal run past the end of the input");
  throws({3, 1, 2, 3, 4}, 2, "output larger than the declared");
  throws({0, 'a', 0x20, 5}, 16, "back-reference before the start");
  throws({0, 'a', 0xe0}, 16, "back-reference length past the end");
  throws({0, 'a', 0x20}, 16, "back-reference distance past the end");
  throws({0, 'a', 0xe0, 200, 0}, 16, "output larger than the declared");
  // Random streams: any result is fine as long as nothing is touched out of bounds.
  std::mt19937 rng(7);
  for (int t = 0; t < 2000; ++t) {
    std::vector<uint8_t> in(1 + rng() % 40);
    for (auto& b : in) b = uint8_t(rng());
    std::unique_ptr<uint8_t[]> exact(new uint8_t[in.size()]);
    std::memcpy(exact.get(), in.data(), in.size());
    std::unique_ptr<uint8_t[]> o(new uint8_t[64]);
    try {
      size_t got = sl::lzf_decompress(exact.get(), in.size(), o.get(), 64, "r");
      EXPECT_LE(got, 64u);
    } catch (const sl::Error&) {
    }
  }
}
