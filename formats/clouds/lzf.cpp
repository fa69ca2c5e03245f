#include "formats/clouds/lzf.h"

#include <algorithm>
#include <cstring>

#include "graph/error.h"

namespace sl {

size_t lzf_decompress(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_cap,
                      const std::string& where, size_t in_base_offset) {
  size_t ip = 0, op = 0;
  auto bad = [&](size_t at, const std::string& why) {
    throw Error(where + ": byte " + std::to_string(in_base_offset + at) + ": corrupt LZF data: " + why);
  };
  while (ip < in_size) {
    const size_t token_at = ip;
    unsigned ctrl = in[ip++];
    if (ctrl < 32) {  // literal run of ctrl + 1 bytes
      size_t len = ctrl + 1;
      if (len > in_size - ip) bad(token_at, "literal run past the end of the input");
      if (len > out_cap - op) bad(token_at, "output larger than the declared uncompressed size");
      std::memcpy(out + op, in + ip, len);
      ip += len;
      op += len;
    } else {  // back reference: length in the top 3 bits (7 = extended), 13-bit distance
      size_t len = ctrl >> 5;
      if (len == 7) {
        if (ip >= in_size) bad(token_at, "back-reference length past the end of the input");
        len += in[ip++];
      }
      if (ip >= in_size) bad(token_at, "back-reference distance past the end of the input");
      size_t dist = (size_t(ctrl & 0x1f) << 8) + in[ip++] + 1;
      len += 2;
      if (dist > op) bad(token_at, "back-reference before the start of the output");
      if (len > out_cap - op) bad(token_at, "output larger than the declared uncompressed size");
      const uint8_t* ref = out + op - dist;
      if (dist >= len) {
        std::memcpy(out + op, ref, len);
      } else {  // overlapping: repeats a short pattern, byte by byte on purpose
        for (size_t i = 0; i < len; ++i) out[op + i] = ref[i];
      }
      op += len;
    }
  }
  return op;
}

std::vector<uint8_t> lzf_compress(const uint8_t* in, size_t n) {
  // Greedy LZF with a hash of the next 3 bytes. Worst case output: one control byte per 32
  // literals, so n + n/32 + 1 bytes always suffice.
  constexpr int kHashLog = 14;
  constexpr size_t kMaxDist = 1 << 13, kMaxLen = 264;
  std::vector<uint8_t> out;
  out.resize(n + n / 32 + 16);
  std::vector<int64_t> table(size_t(1) << kHashLog, -1);
  size_t op = 0, ip = 0, lit_start = 0;
  auto flush_literals = [&](size_t upto) {
    while (lit_start < upto) {
      size_t run = std::min<size_t>(32, upto - lit_start);
      out[op++] = uint8_t(run - 1);
      std::memcpy(&out[op], in + lit_start, run);
      op += run;
      lit_start += run;
    }
  };
  auto hash3 = [&](size_t p) {
    uint32_t v = uint32_t(in[p]) << 16 | uint32_t(in[p + 1]) << 8 | in[p + 2];
    return (v * 2654435761u) >> (32 - kHashLog);
  };
  while (ip + 3 <= n) {
    uint32_t hv = hash3(ip);
    int64_t ref = table[hv];
    table[hv] = (int64_t)ip;
    if (ref >= 0 && ip - (size_t)ref <= kMaxDist && std::memcmp(in + ref, in + ip, 3) == 0) {
      size_t max_len = std::min(kMaxLen, n - ip);
      size_t len = 3;
      while (len < max_len && in[ref + len] == in[ip + len]) ++len;
      flush_literals(ip);
      size_t dist = ip - (size_t)ref - 1;
      size_t l = len - 2;
      if (l < 7) {
        out[op++] = uint8_t((l << 5) | (dist >> 8));
      } else {
        out[op++] = uint8_t((7 << 5) | (dist >> 8));
        out[op++] = uint8_t(l - 7);
      }
      out[op++] = uint8_t(dist & 0xff);
      ip += len;
      lit_start = ip;
    } else {
      ++ip;
    }
  }
  flush_literals(n);
  out.resize(op);
  return out;
}

}  // namespace sl
