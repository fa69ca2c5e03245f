#include "formats/clouds/pcd.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <limits>
#include <memory>
#include <string_view>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/memory.h"
#include "graph/parallel.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/lzf.h"
#include "formats/clouds/mapped_file.h"

namespace sl {

static_assert(std::endian::native == std::endian::little, "PCD binary data is little-endian");

namespace {

// Element counts above this are rejected: they only appear in corrupt headers, and bounding
// them keeps every size computation far from overflow.
constexpr int64_t kMaxCount = int64_t(1) << 24;
constexpr size_t kMaxHeaderBytes = size_t(1) << 20;

std::string at_byte(size_t off) { return "byte " + std::to_string(off) + ": "; }

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (is_space(s[i]) || s[i] == '\r')) ++i;
    size_t j = i;
    while (j < s.size() && !is_space(s[j]) && s[j] != '\r') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool parse_i64(std::string_view t, int64_t& v) {
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

// Numeric type of one stored element.
enum class Num : uint8_t { I8, U8, I16, U16, I32, U32, I64, U64, F32, F64 };

bool num_of(char type, int size, Num& n) {
  switch (type) {
    case 'I':
      if (size == 1) return n = Num::I8, true;
      if (size == 2) return n = Num::I16, true;
      if (size == 4) return n = Num::I32, true;
      if (size == 8) return n = Num::I64, true;
      return false;
    case 'U':
      if (size == 1) return n = Num::U8, true;
      if (size == 2) return n = Num::U16, true;
      if (size == 4) return n = Num::U32, true;
      if (size == 8) return n = Num::U64, true;
      return false;
    case 'F':
      if (size == 4) return n = Num::F32, true;
      if (size == 8) return n = Num::F64, true;
      return false;
  }
  return false;
}

// A double as a float without undefined behaviour: beyond float's range it is +-inf.
inline float to_float_sat(double v) {
  if (v > double(std::numeric_limits<float>::max())) return std::numeric_limits<float>::infinity();
  if (v < -double(std::numeric_limits<float>::max())) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

// out[i] = float(element at src + i * stride), for n elements of type T; with `origin`,
// float(double(element) - origin): the subtraction in double, for coordinates stored wider
// than float32 (formats/clouds/origin.h).
template <class T>
void copy_strided(const char* src, size_t stride, size_t n, float* out, double origin) {
  if (stride == sizeof(T) && std::is_same_v<T, float> && origin == 0) {
    std::memcpy(out, src, n * sizeof(float));
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * stride, sizeof(T));
    if constexpr (std::is_same_v<T, double>) out[i] = to_float_sat(v - origin);
    else if (origin == 0) out[i] = static_cast<float>(v);
    else out[i] = to_float_sat(static_cast<double>(v) - origin);
  }
}

void copy_strided(Num t, const char* src, size_t stride, size_t n, float* out, double origin) {
  switch (t) {
    case Num::I8: return copy_strided<int8_t>(src, stride, n, out, origin);
    case Num::U8: return copy_strided<uint8_t>(src, stride, n, out, origin);
    case Num::I16: return copy_strided<int16_t>(src, stride, n, out, origin);
    case Num::U16: return copy_strided<uint16_t>(src, stride, n, out, origin);
    case Num::I32: return copy_strided<int32_t>(src, stride, n, out, origin);
    case Num::U32: return copy_strided<uint32_t>(src, stride, n, out, origin);
    case Num::I64: return copy_strided<int64_t>(src, stride, n, out, origin);
    case Num::U64: return copy_strided<uint64_t>(src, stride, n, out, origin);
    case Num::F32: return copy_strided<float>(src, stride, n, out, origin);
    case Num::F64: return copy_strided<double>(src, stride, n, out, origin);
  }
}

// One stored element as a double (exact for every type but 64-bit integers beyond 2^53).
double load_double(Num t, const char* p) {
  auto get = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  };
  switch (t) {
    case Num::I8: return get(int8_t{});
    case Num::U8: return get(uint8_t{});
    case Num::I16: return get(int16_t{});
    case Num::U16: return get(uint16_t{});
    case Num::I32: return get(int32_t{});
    case Num::U32: return get(uint32_t{});
    case Num::I64: return get(int64_t{});
    case Num::U64: return get(uint64_t{});
    case Num::F32: return get(float{});
    case Num::F64: return get(double{});
  }
  return 0;
}

// Types whose values float32 cannot hold exactly: coordinates stored in them are moved to the
// origin in double before they become float32.
bool wider_than_float(Num t) {
  return t == Num::F64 || t == Num::I32 || t == Num::U32 || t == Num::I64 || t == Num::U64;
}

// One column to decode: which stored element, and where its floats go.
struct Target {
  int field = 0;   // index into the header's field lists
  int elem = 0;    // element within a COUNT > 1 field
  Num num = Num::F32;
  float* out = nullptr;
  double origin = 0;         // subtracted in double (a coordinate stored wider than float32)
  double* out_d = nullptr;   // ascii: the value as a double instead (out unused), for the origin
};

}  // namespace

// ---- header ---------------------------------------------------------------------------------

PcdHeader parse_pcd_header(const char* data, size_t size, const std::string& path) {
  if (size == 0) fail(path, "empty file, expected a PCD header");
  PcdHeader h;
  bool seen_fields = false, seen_size = false, seen_type = false, seen_count = false;
  bool seen_width = false, seen_height = false, seen_points = false, seen_data = false;
  int64_t line_no = 0;
  size_t pos = 0;
  auto where = [&](int64_t line) { return path + ": header line " + std::to_string(line); };

  // A header longer than 1 MiB is not a point cloud's (real ones take a few hundred bytes): its
  // lines are split into tokens and names, ~45 bytes of memory per byte of a FIELDS line, so a
  // 20 MB header took 900 MB before it was refused.
  const size_t reach = std::min(size, kMaxHeaderBytes + 1);
  while (pos < size && !seen_data) {
    ++line_no;
    if (pos >= reach) fail(path, "the header is longer than 1 MiB without a DATA line (not a PCD file?)");
    const char* nl = static_cast<const char*>(std::memchr(data + pos, '\n', reach - pos));
    if (!nl && reach < size) fail(path, "the header is longer than 1 MiB without a DATA line (not a PCD file?)");
    size_t end = nl ? size_t(nl - data) : size;
    std::string_view line(data + pos, end - pos);
    size_t next = nl ? end + 1 : size;
    auto tok = split_ws(line);
    pos = next;
    if (tok.empty() || tok[0][0] == '#') continue;
    std::string_view key = tok[0];
    std::vector<std::string_view> vals(tok.begin() + 1, tok.end());
    auto dup = [&](bool& seen) {
      if (seen) throw Error(where(line_no) + ": duplicate " + std::string(key));
      seen = true;
    };
    auto one_int = [&](int64_t& v) {
      if (vals.size() != 1) throw Error(where(line_no) + ": " + std::string(key) + " needs one value");
      if (!parse_i64(vals[0], v) || v < 0)
        throw Error(where(line_no) + ": " + std::string(key) + " '" + std::string(vals[0]) +
                    "' is not a non-negative integer");
    };
    if (key == "VERSION") {
      if (vals.size() != 1) throw Error(where(line_no) + ": VERSION needs one value");
      h.version = std::string(vals[0]);
      static const char* known[] = {".7", "0.7", ".6", "0.6", ".5", "0.5"};
      if (std::find(std::begin(known), std::end(known), h.version) == std::end(known))
        throw Error(where(line_no) + ": unsupported VERSION '" + h.version + "' (expected .7 or .5)");
    } else if (key == "FIELDS" || key == "COLUMNS") {
      dup(seen_fields);
      if (vals.empty()) throw Error(where(line_no) + ": FIELDS is empty");
      for (auto v : vals) h.fields.emplace_back(v);
    } else if (key == "SIZE") {
      dup(seen_size);
      for (auto v : vals) {
        int64_t s;
        if (!parse_i64(v, s) || s <= 0 || s > 8)
          throw Error(where(line_no) + ": invalid SIZE '" + std::string(v) + "'");
        h.sizes.push_back((int)s);
      }
    } else if (key == "TYPE") {
      dup(seen_type);
      for (auto v : vals) {
        if (v.size() != 1 || (v[0] != 'I' && v[0] != 'U' && v[0] != 'F'))
          throw Error(where(line_no) + ": unknown TYPE '" + std::string(v) + "' (expected I, U or F)");
        h.types.push_back(v[0]);
      }
    } else if (key == "COUNT") {
      dup(seen_count);
      for (auto v : vals) {
        int64_t c;
        if (!parse_i64(v, c) || c <= 0 || c > kMaxCount)
          throw Error(where(line_no) + ": invalid COUNT '" + std::string(v) + "'");
        h.counts.push_back((int)c);
      }
    } else if (key == "WIDTH") {
      dup(seen_width);
      one_int(h.width);
    } else if (key == "HEIGHT") {
      dup(seen_height);
      one_int(h.height);
    } else if (key == "POINTS") {
      dup(seen_points);
      one_int(h.points);
    } else if (key == "VIEWPOINT") {
      if (vals.size() != 7) throw Error(where(line_no) + ": VIEWPOINT needs 7 values");
      for (size_t i = 0; i < vals.size(); ++i) {
        if (i) h.viewpoint += ' ';
        h.viewpoint.append(vals[i]);
      }
    } else if (key == "DATA") {
      if (vals.size() != 1) throw Error(where(line_no) + ": DATA needs one value");
      h.data = std::string(vals[0]);
      if (h.data != "ascii" && h.data != "binary" && h.data != "binary_compressed")
        throw Error(where(line_no) + ": unknown DATA '" + h.data +
                    "' (expected ascii, binary or binary_compressed)");
      seen_data = true;
      h.data_offset = next;
    } else {
      std::string k(key.substr(0, 40));
      for (char& c : k)
        if ((unsigned char)c < 32 || (unsigned char)c > 126) c = '?';
      throw Error(where(line_no) + ": unknown header key '" + k + "' (not a PCD file?)");
    }
  }
  if (!seen_data) fail(path, "truncated header: no DATA line (not a PCD file?)");
  if (!seen_fields) fail(path, "header has no FIELDS");
  if (!seen_size) fail(path, "header has no SIZE");
  if (!seen_type) fail(path, "header has no TYPE");
  if (!seen_count) h.counts.assign(h.fields.size(), 1);
  auto same_len = [&](const char* name, size_t n) {
    if (n != h.fields.size())
      fail(path, std::string(name) + " has " + std::to_string(n) + " entries but FIELDS has " +
                     std::to_string(h.fields.size()));
  };
  same_len("SIZE", h.sizes.size());
  same_len("TYPE", h.types.size());
  same_len("COUNT", h.counts.size());
  for (size_t f = 0; f < h.fields.size(); ++f) {
    Num n;
    if (!num_of(h.types[f], h.sizes[f], n))
      fail(path, "invalid SIZE " + std::to_string(h.sizes[f]) + " for TYPE " + h.types[f] + " of field '" +
                     h.fields[f] + "'");
  }
  if (!seen_width && !seen_points) fail(path, "header has neither WIDTH nor POINTS");
  if (!seen_height) h.height = 1;
  if (!seen_width) {
    if (h.height != 1) fail(path, "header has HEIGHT but no WIDTH");
    h.width = h.points;
  }
  if (h.height != 0 && h.width > std::numeric_limits<int64_t>::max() / h.height)
    fail(path, "WIDTH * HEIGHT overflows (" + std::to_string(h.width) + " x " + std::to_string(h.height) + ")");
  if (!seen_points) h.points = h.width * h.height;
  if (h.points != h.width * h.height)
    fail(path, "POINTS " + std::to_string(h.points) + " != WIDTH * HEIGHT = " + std::to_string(h.width) +
                   " x " + std::to_string(h.height));
  return h;
}

// ---- body -------------------------------------------------------------------------------------

namespace {

// Requested name -> (field, element). "name[k]" selects element k. Padding fields never match.
bool find_field(const PcdHeader& h, const std::string& name, int& field, int& elem) {
  std::string base = name;
  int64_t k = 0;
  if (!name.empty() && name.back() == ']') {
    size_t lb = name.rfind('[');
    if (lb != std::string::npos && parse_i64(std::string_view(name).substr(lb + 1, name.size() - lb - 2), k))
      base = name.substr(0, lb);
    else
      k = 0;
  }
  for (size_t f = 0; f < h.fields.size(); ++f) {
    if (h.fields[f] == "_" || h.fields[f] != base) continue;
    if (k < 0 || k >= h.counts[f]) return false;
    field = (int)f;
    elem = (int)k;
    return true;
  }
  return false;
}

std::string field_list(const PcdHeader& h) {
  std::string s;
  for (auto& f : h.fields) s += (s.empty() ? "" : " ") + f;
  return s;
}

size_t field_bytes(const PcdHeader& h, size_t f) { return size_t(h.sizes[f]) * size_t(h.counts[f]); }

// Binary data, validated and located: element e of field f of point i is at
// base + off[f] + e * sizes[f] + i * stride[f].
struct BinaryBody {
  const char* base = nullptr;
  std::vector<size_t> off, stride;
  std::unique_ptr<uint8_t[]> owned;  // the decompressed bytes of binary_compressed
};

BinaryBody locate_binary(const PcdHeader& h, const char* data, size_t size, const std::string& path, size_t n) {
  BinaryBody b;
  size_t point_size = 0;
  for (size_t f = 0; f < h.fields.size(); ++f) {
    b.off.push_back(point_size);
    point_size += field_bytes(h, f);  // <= 8 * 2^24 per field: no overflow
  }
  b.stride.assign(h.fields.size(), point_size);
  size_t avail = size - h.data_offset;
  if (n > avail / point_size)  // division first: n * point_size may overflow
    fail(path, at_byte(h.data_offset) + "data shorter than declared: " + std::to_string(n) + " points x " +
                   std::to_string(point_size) + " bytes need " + std::to_string(n * point_size) +
                   " bytes, the file has " + std::to_string(avail) + " after the header");
  b.base = data + h.data_offset;
  return b;
}

BinaryBody locate_compressed(const PcdHeader& h, const char* data, size_t size, const std::string& path, size_t n) {
  // Layout (as PCL writes it): uint32 compressed size, uint32 uncompressed size, then LZF bytes
  // that decompress to all of field 0, then all of field 1, ...; padding fields "_" left out.
  BinaryBody b;
  b.off.assign(h.fields.size(), 0);
  b.stride.assign(h.fields.size(), 0);
  size_t packed = 0;
  for (size_t f = 0; f < h.fields.size(); ++f)
    if (h.fields[f] != "_") packed += field_bytes(h, f);
  if (packed == 0) fail(path, "binary_compressed file has only padding fields \"_\"");
  size_t avail = size - h.data_offset;
  if (avail < 8) {
    if (n == 0) return b;
    fail(path, at_byte(h.data_offset) + "truncated: binary_compressed data needs an 8-byte size prefix, the file has " +
                   std::to_string(avail) + " bytes after the header");
  }
  uint32_t csize, usize;
  std::memcpy(&csize, data + h.data_offset, 4);
  std::memcpy(&usize, data + h.data_offset + 4, 4);
  if (n > std::numeric_limits<uint32_t>::max() / packed)
    fail(path, at_byte(h.data_offset) + "header declares " + std::to_string(n) + " points of " +
                   std::to_string(packed) + " bytes, more than binary_compressed can hold (4 GiB)");
  const size_t expected = n * packed;
  if (usize != expected)
    fail(path, at_byte(h.data_offset + 4) + "uncompressed size " + std::to_string(usize) +
                   " does not match the header: " + std::to_string(n) + " points x " + std::to_string(packed) +
                   " bytes = " + std::to_string(expected));
  if (csize > avail - 8)
    fail(path, at_byte(h.data_offset) + "compressed size " + std::to_string(csize) + " exceeds the " +
                   std::to_string(avail - 8) + " bytes left in the file (truncated?)");
  // One 3-byte LZF token expands to at most 264 bytes: a larger claim is a lie, and rejecting
  // it here keeps a tiny file from making us allocate gigabytes.
  if (uint64_t(usize) > uint64_t(csize) * 88)
    fail(path, at_byte(h.data_offset) + "compressed size " + std::to_string(csize) +
                   " cannot decompress to the declared " + std::to_string(usize) + " bytes");
  b.owned.reset(new uint8_t[std::max<size_t>(usize, 1)]);  // uninitialized: LZF fills all of it
  const size_t lzf_at = h.data_offset + 8;
  size_t got = lzf_decompress(reinterpret_cast<const uint8_t*>(data + lzf_at), csize, b.owned.get(), usize, path, lzf_at);
  if (got != usize)
    fail(path, at_byte(lzf_at) + "LZF data decompressed to " + std::to_string(got) + " bytes, the header says " +
                   std::to_string(usize));
  size_t off = 0;
  for (size_t f = 0; f < h.fields.size(); ++f) {
    if (h.fields[f] == "_") continue;
    b.off[f] = off;
    b.stride[f] = field_bytes(h, f);
    off += field_bytes(h, f) * n;
  }
  b.base = reinterpret_cast<const char*>(b.owned.get());
  return b;
}

void decode_binary(const PcdHeader& h, const BinaryBody& b, const std::vector<Target>& targets, size_t n,
                   const MappedFile* mapped) {
  // Blocks of points keep a block's source bytes in L1 while each column is copied out of it.
  constexpr size_t kBlock = 256;
  // Uncompressed data read from a mapping: every ~8 MiB the pages behind are released.
  const bool release = mapped && !b.owned && !b.stride.empty();
  const size_t point_bytes = release ? b.stride[0] : 0;
#if defined(__x86_64__)
  // Interleaved float32 columns that all lie in one 16-byte window of the record (x y z
  // intensity at stride 16, the common layout): four records at a time are loaded as four
  // vectors, transposed, and each lane written to its column. Exact (moves only); measured
  // 3.2 -> see bench/results/pcd_read.md against the per-column copies below.
  size_t window = SIZE_MAX;  // the window's offset in the record
  float* lane_out[4] = {nullptr, nullptr, nullptr, nullptr};
  if (!b.owned && !targets.empty() && targets.size() <= 4) {
    const size_t stride = b.stride[targets[0].field];
    size_t lo = SIZE_MAX, hi = 0;
    bool ok = true;
    for (auto& t : targets) {
      const size_t off = b.off[t.field] + size_t(t.elem) * size_t(h.sizes[t.field]);
      ok = ok && t.num == Num::F32 && b.stride[t.field] == stride;
      lo = std::min(lo, off), hi = std::max(hi, off + 4);
    }
    if (ok && hi - lo <= 16 && stride >= 16) {
      window = std::min(lo, stride - 16);  // the window stays inside the record
      for (auto& t : targets) {
        const size_t rel = b.off[t.field] + size_t(t.elem) * size_t(h.sizes[t.field]) - window;
        // Off the 4-byte lanes (after a 2-byte field), or two targets on one element: the
        // general path.
        if (rel % 4 != 0 || lane_out[rel / 4]) {
          window = SIZE_MAX;
          break;
        }
        lane_out[rel / 4] = t.out;
      }
    }
  }
#endif
  // A large cloud decodes in parts (graph/parallel.h) on all threads: each part writes its own
  // rows, and releases the whole file pages inside it.
  auto decode_part = [&](size_t p_lo, size_t p_hi) {
    size_t released = p_lo * point_bytes, next_release = released + (size_t(8) << 20);
    for (size_t i0 = p_lo; i0 < p_hi; i0 += kBlock) {
      size_t m = std::min(kBlock, p_hi - i0);
#if defined(__x86_64__)
      if (window != SIZE_MAX) {
        const size_t stride = b.stride[targets[0].field];
        const char* src = b.base + window + i0 * stride;
        size_t i = 0;
        for (; i + 4 <= m; i += 4, src += 4 * stride) {
          __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(src));
          __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(src + stride));
          __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(src + 2 * stride));
          __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(src + 3 * stride));
          _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
          const __m128 lanes[4] = {r0, r1, r2, r3};
          for (int l = 0; l < 4; ++l)
            if (lane_out[l]) _mm_storeu_ps(lane_out[l] + i0 + i, lanes[l]);
        }
        for (; i < m; ++i, src += stride)
          for (int l = 0; l < 4; ++l)
            if (lane_out[l]) std::memcpy(lane_out[l] + i0 + i, src + 4 * l, 4);
      } else
#endif
      for (auto& t : targets) {
        size_t stride = b.stride[t.field];
        const char* src = b.base + b.off[t.field] + size_t(t.elem) * size_t(h.sizes[t.field]) + i0 * stride;
        copy_strided(t.num, src, stride, m, t.out + i0, t.origin);
      }
      if (release && ((i0 + m) * point_bytes >= next_release || i0 + m == p_hi)) {
        mapped->release_range(h.data_offset + released, h.data_offset + (i0 + m) * point_bytes);
        released = (i0 + m) * point_bytes, next_release = released + (size_t(8) << 20);
      }
    }
  };
  parallel_parts(n, decode_part);
}

// Ascii token layout. PCL's writers leave padding fields "_" out of ascii data; other writers
// keep them: both are accepted, decided by the number of values on the first data line.
struct AsciiLayout {
  size_t ntok = 0;
  std::vector<size_t> first_tok;  // per field
};

AsciiLayout ascii_layout(const PcdHeader& h, const char* data, size_t size, const std::string& path, size_t n) {
  size_t tok_all = 0, tok_nopad = 0;
  for (size_t f = 0; f < h.fields.size(); ++f) {
    tok_all += size_t(h.counts[f]);
    if (h.fields[f] != "_") tok_nopad += size_t(h.counts[f]);
  }
  AsciiLayout L;
  L.ntok = tok_all;
  const char* p = data + h.data_offset;
  const char* end = data + size;
  if (tok_all != tok_nopad) {
    while (p < end && (*p == '\n' || *p == '\r' || is_space(*p))) ++p;
    const char* e = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    if (split_ws(std::string_view(p, size_t((e ? e : end) - p))).size() == tok_nopad) L.ntok = tok_nopad;
  }
  // Each value takes at least two bytes ("0 " or "0\n"): reject a lying POINTS before allocating.
  size_t avail = size - h.data_offset;
  if (L.ntok > 0 && n > 0 && (avail + 1) / 2 / L.ntok < n)
    fail(path, at_byte(h.data_offset) + "data shorter than declared: " + std::to_string(n) + " points of " +
                   std::to_string(L.ntok) + " values cannot fit in the " + std::to_string(avail) + " bytes left");
  size_t t = 0;
  for (size_t f = 0; f < h.fields.size(); ++f) {
    L.first_tok.push_back(t);
    if (L.ntok == tok_all || h.fields[f] != "_") t += size_t(h.counts[f]);
  }
  return L;
}

void decode_ascii(const PcdHeader& h, const AsciiLayout& L, const char* data, size_t size, const std::string& path,
                  const std::vector<Target>& targets, size_t n) {
  const size_t ntok = L.ntok;
  std::vector<int> tok_target(ntok, -1);  // per token: target index, or -1 to skip it unparsed
  for (size_t i = 0; i < targets.size(); ++i) tok_target[L.first_tok[targets[i].field] + size_t(targets[i].elem)] = (int)i;
  auto bad = [&](const char* at, const std::string& why) {
    fail(path, "line " + std::to_string(1 + std::count(data, at, '\n')) + ", byte " + std::to_string(at - data) + ": " + why);
  };
  const char* p = data + h.data_offset;
  const char* end = data + size;
  for (size_t i = 0; i < n; ++i) {
    while (p < end && (*p == '\n' || *p == '\r' || is_space(*p))) ++p;  // blank lines
    if (p == end)
      fail(path, "data shorter than declared: found " + std::to_string(i) + " of " + std::to_string(n) + " points");
    for (size_t t = 0; t < ntok; ++t) {
      while (p < end && is_space(*p)) ++p;
      if (p == end || *p == '\n' || *p == '\r')
        bad(p, "expected " + std::to_string(ntok) + " values on the line, found " + std::to_string(t));
      const char* s = p;
      while (p < end && !is_space(*p) && *p != '\n' && *p != '\r') ++p;
      if (tok_target[t] < 0) continue;
      const Target& tg = targets[tok_target[t]];
      const char* b = (*s == '+') ? s + 1 : s;  // from_chars rejects a leading '+'
      float v = 0;
      std::from_chars_result r{b, std::errc::invalid_argument};
      // Floats parse straight to float (correctly rounded, as PCL's strtof); integer types and
      // values beyond float range go through double ("1e39" -> inf, as a C cast would).
      if (tg.num == Num::F32 && !tg.out_d) r = std::from_chars(b, p, v);
      if (tg.num != Num::F32 || tg.out_d || r.ec == std::errc::result_out_of_range) {
        double d = 0;
        r = std::from_chars(b, p, d);
        v = to_float_sat(d - tg.origin);
        if (tg.out_d) tg.out_d[i] = d;
      }
      if (r.ec != std::errc() || r.ptr != p)
      {
        std::string tok(s, size_t(std::min<ptrdiff_t>(p - s, 40)));
        bad(s, "'" + tok + "' is not a number");
      }
      if (!tg.out_d) tg.out[i] = v;
    }
    while (p < end && (is_space(*p) || *p == '\r')) ++p;
    if (p < end && *p != '\n') bad(p, "more than " + std::to_string(ntok) + " values on the line");
  }
}

}  // namespace

PointCloud parse_pcd(const char* data, size_t size, const std::string& path, const PcdReadOptions& opt,
                     int64_t* dropped_nan, const MappedFile* mapped, DecodeInfo* info) {
  PcdHeader h = parse_pcd_header(data, size, path);
  if (h.points > opt.max_points)
    fail(path, "POINTS " + std::to_string(h.points) + " exceeds the limit of " + std::to_string(opt.max_points));
  const size_t n = size_t(h.points);

  PointCloud cloud;
  cloud.fields = opt.fields;
  std::vector<int> src_field(opt.fields.size(), -1), src_elem(opt.fields.size(), 0);
  for (size_t c = 0; c < opt.fields.size(); ++c)
    if (!find_field(h, opt.fields[c], src_field[c], src_elem[c]) && !opt.missing_default)
      fail(path, "requested field '" + opt.fields[c] + "' is not in the file (fields: " + field_list(h) + ")");
  // The file's x, y, z drive the NaN check; ones not requested are decoded into scratch columns.
  int xyz_field[3] = {-1, -1, -1}, xyz_col[3] = {-1, -1, -1};
  if (opt.drop_nan) {
    const char* names[3] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a) {
      int f, e;
      if (!find_field(h, names[a], f, e)) continue;
      xyz_field[a] = f;
      for (size_t c = 0; c < opt.fields.size(); ++c)
        if (src_field[c] == f && src_elem[c] == 0) xyz_col[a] = (int)c;
    }
  }

  // Validate the data against the file size (and decompress) before any allocation sized by n.
  BinaryBody bin;
  AsciiLayout asc;
  if (h.data == "binary") bin = locate_binary(h, data, size, path, n);
  else if (h.data == "binary_compressed") {
    bin = locate_compressed(h, data, size, path, n);
    if (mapped) mapped->release(size);  // decompressed: the file's bytes are not needed again
  }
  else asc = ascii_layout(h, data, size, path, n);

  cloud.columns.resize(opt.fields.size());
  std::vector<Target> targets;
  for (size_t c = 0; c < opt.fields.size(); ++c) {
    if (src_field[c] < 0) {
      cloud.columns[c].assign(n, *opt.missing_default);
      continue;
    }
    cloud.columns[c].reserve(n);
    advise_huge_pages(cloud.columns[c].data(), n * sizeof(float));  // a tile's columns: 2 MiB pages
    cloud.columns[c].resize(n);
    Num num = Num::F32;
    num_of(h.types[src_field[c]], h.sizes[src_field[c]], num);
    targets.push_back({src_field[c], src_elem[c], num, cloud.columns[c].data()});
  }
  // The origin (formats/clouds/origin.h) moves output columns 0, 1, 2 -- the coordinates. Stored as
  // float32 (or narrower), they are decoded as they are and moved after the NaN check; stored
  // wider (F 8, 32/64-bit integers), they are moved in double while decoded, the auto origin
  // taken from a first pass over the stored values (ascii: parsed into doubles first).
  const bool has_coords = opt.fields.size() >= 3 && src_field[0] >= 0 && src_field[1] >= 0 && src_field[2] >= 0;
  bool wide = false;
  for (size_t c = 0; c < 3 && has_coords; ++c) wide |= wider_than_float(targets[c].num);
  std::vector<double> coords_d[3];
  Bounds wide_bounds;
  if (wide && h.data == "ascii") {
    for (size_t c = 0; c < 3; ++c) {
      coords_d[c].resize(n);
      targets[c].out_d = coords_d[c].data();
    }
  } else if (wide) {
    Vec3d o = opt.origin.fixed;
    if (opt.origin.automatic) {
      const char* at[3];
      size_t stride[3];
      for (size_t c = 0; c < 3; ++c) {
        const Target& t = targets[c];
        at[c] = bin.base + bin.off[t.field] + size_t(t.elem) * size_t(h.sizes[t.field]);
        stride[c] = bin.stride[t.field];
      }
      for (size_t i = 0; i < n; ++i) {
        const double x = load_double(targets[0].num, at[0] + i * stride[0]);
        const double y = load_double(targets[1].num, at[1] + i * stride[1]);
        const double z = load_double(targets[2].num, at[2] + i * stride[2]);
        // The points the NaN check keeps, as the float path's bounds after it.
        if (!opt.drop_nan || (std::isfinite(x) && std::isfinite(y) && std::isfinite(z))) wide_bounds.add(x, y, z);
      }
      o = grid_origin(wide_bounds);
    }
    cloud.origin = o;
    for (size_t c = 0; c < 3; ++c) targets[c].origin = o[c];
  }
  std::vector<float> scratch[3];
  const float* check[3] = {nullptr, nullptr, nullptr};
  for (int a = 0; a < 3; ++a) {
    if (xyz_field[a] < 0) continue;
    if (xyz_col[a] >= 0) {
      check[a] = cloud.columns[xyz_col[a]].data();
      continue;
    }
    scratch[a].resize(n);
    Num num = Num::F32;
    num_of(h.types[xyz_field[a]], h.sizes[xyz_field[a]], num);
    targets.push_back({xyz_field[a], 0, num, scratch[a].data()});
    check[a] = scratch[a].data();
  }
  if (h.data == "ascii") decode_ascii(h, asc, data, size, path, targets, n);
  else decode_binary(h, bin, targets, n, mapped);
  if (!coords_d[0].empty()) {  // ascii, stored wide: the origin from the parsed doubles
    Vec3d o = opt.origin.fixed;
    if (opt.origin.automatic) {
      for (size_t i = 0; i < n; ++i) {
        const double x = coords_d[0][i], y = coords_d[1][i], z = coords_d[2][i];
        if (!opt.drop_nan || (std::isfinite(x) && std::isfinite(y) && std::isfinite(z))) wide_bounds.add(x, y, z);
      }
      o = grid_origin(wide_bounds);
    }
    cloud.origin = o;
    for (size_t c = 0; c < 3; ++c) {
      float* out = cloud.columns[c].data();
      for (size_t i = 0; i < n; ++i) out[i] = to_float_sat(coords_d[c][i] - o[c]);
      std::vector<double>().swap(coords_d[c]);
    }
  }

  int64_t dropped = 0;
  if (check[0] || check[1] || check[2]) {
    auto valid = [&](size_t i) {
      for (int a = 0; a < 3; ++a)
        if (check[a] && !std::isfinite(check[a][i])) return false;
      return true;
    };
    // The first invalid point of [lo, hi), or hi.
    auto first_invalid = [&](size_t lo, size_t hi) {
      size_t i = lo;
#if defined(__x86_64__)
      // Four points at a time while all are valid (the common case: a whole file is scanned):
      // (v - v) is 0 for a finite v and NaN otherwise, so a sum of them is 0 only if all are.
      if (check[0] && check[1] && check[2]) {
        const __m128 zero = _mm_setzero_ps();
        for (; i + 4 <= hi; i += 4) {
          __m128 acc = zero;
          for (int a = 0; a < 3; ++a) {
            const __m128 v = _mm_loadu_ps(check[a] + i);
            acc = _mm_add_ps(acc, _mm_sub_ps(v, v));
          }
          if (_mm_movemask_ps(_mm_cmpeq_ps(acc, zero)) != 0xf) break;
        }
      }
#endif
      while (i < hi && valid(i)) ++i;
      return i;
    };
    // Scanned in parts on all threads; the compaction below (files with invalid points) is serial.
    std::vector<size_t> part_first(part_count(n));
    parallel_parts(n, [&](size_t lo, size_t hi) { part_first[lo / kPartSize] = first_invalid(lo, hi); });
    size_t first_bad = n;
    for (size_t k = 0; k < part_first.size(); ++k)
      if (part_first[k] < std::min(n, (k + 1) * kPartSize)) {
        first_bad = part_first[k];
        break;
      }
    if (first_bad < n) {  // stable in-place compaction (reads at i happen before any write at i)
      size_t w = first_bad;
      for (size_t i = first_bad; i < n; ++i) {
        if (!valid(i)) continue;
        for (auto& col : cloud.columns) col[w] = col[i];
        ++w;
      }
      dropped = int64_t(n - w);
      for (auto& col : cloud.columns) col.resize(w);
    }
  }
  const bool stored_frame = !opt.origin.automatic && opt.origin.fixed == Vec3d{0, 0, 0};
  if (has_coords && !wide && (!stored_frame || info)) dropped += localize_float32(cloud, opt.origin, info, opt.drop_nan);
  if (dropped_nan) *dropped_nan = dropped;
  if (info) info->dropped = dropped;
  return cloud;
}

PointCloud read_pcd(const std::string& path, const PcdReadOptions& opt, int64_t* dropped_nan, DecodeInfo* info) {
  MappedFile f(path);
  return parse_pcd(f.data(), f.size(), path, opt, dropped_nan, &f, info);
}

// ---- writer -----------------------------------------------------------------------------------

const char* pcd_data_mode_name(PcdDataMode m) {
  switch (m) {
    case PcdDataMode::Ascii: return "ascii";
    case PcdDataMode::Binary: return "binary";
    case PcdDataMode::BinaryCompressed: return "binary_compressed";
  }
  return "?";
}

void write_pcd(const std::string& path, const PointCloud& cloud, PcdDataMode mode) {
  const size_t nf = cloud.fields.size();
  if (nf == 0) fail(path, "cannot write a PCD with no fields");
  if (cloud.columns.size() != nf)
    fail(path, "cloud has " + std::to_string(nf) + " field names but " + std::to_string(cloud.columns.size()) + " columns");
  const size_t n = cloud.columns[0].size();
  // A cloud with an origin is written in world coordinates: x, y, z as F 8, column + origin.
  const bool world = cloud.origin != std::array<double, 3>{0, 0, 0};
  std::vector<int> axis(nf, -1);  // per field: 0/1/2 for a world coordinate, -1 for F 4
  for (size_t f = 0; f < nf; ++f) {
    const auto& name = cloud.fields[f];
    if (name.empty() || std::any_of(name.begin(), name.end(), [](char c) { return c <= ' ' || c == 127; }))
      fail(path, "field name '" + name + "' is empty or contains whitespace");
    if (cloud.columns[f].size() != n)
      fail(path, "column '" + name + "' has " + std::to_string(cloud.columns[f].size()) + " values, expected " +
                     std::to_string(n));
    if (world && (name == "x" || name == "y" || name == "z")) axis[f] = name[0] - 'x';
  }
  auto world_at = [&](size_t f, size_t i) { return to_world(cloud.columns[f][i], cloud.origin[size_t(axis[f])]); };
  std::string head = "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS";
  for (auto& name : cloud.fields) head += " " + name;
  head += "\nSIZE";
  for (size_t f = 0; f < nf; ++f) head += axis[f] >= 0 ? " 8" : " 4";
  head += "\nTYPE";
  for (size_t f = 0; f < nf; ++f) head += " F";
  head += "\nCOUNT";
  for (size_t f = 0; f < nf; ++f) head += " 1";
  head += "\nWIDTH " + std::to_string(n) + "\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS " + std::to_string(n) +
          "\nDATA " + pcd_data_mode_name(mode) + "\n";
  size_t point_bytes = 0;
  for (size_t f = 0; f < nf; ++f) point_bytes += axis[f] >= 0 ? 8 : 4;

  std::string body;
  if (mode == PcdDataMode::Ascii) {
    body.reserve(n * nf * 12);
    char buf[32];
    for (size_t i = 0; i < n; ++i) {
      for (size_t f = 0; f < nf; ++f) {
        float v = cloud.columns[f][i];
        char* e;
        if (std::isnan(v)) {
          e = std::copy_n("nan", 3, buf);
        } else if (axis[f] >= 0) {
          const std::string w = exact_number(world_at(f, i));  // shortest text of the double
          e = std::copy(w.begin(), w.end(), buf);
        } else {
          e = std::to_chars(buf, buf + sizeof buf, v).ptr;  // shortest text that reads back exactly
        }
        if (f) body += ' ';
        body.append(buf, e);
      }
      body += '\n';
    }
  } else if (mode == PcdDataMode::Binary) {
    body.resize(n * point_bytes);
    char* out = body.data();
    for (size_t i = 0; i < n; ++i)
      for (size_t f = 0; f < nf; ++f) {
        if (axis[f] >= 0) {
          const double d = world_at(f, i);
          std::memcpy(out, &d, 8);
          out += 8;
        } else {
          std::memcpy(out, &cloud.columns[f][i], 4);
          out += 4;
        }
      }
  } else {
    // Fields one after another (column-major): that is exactly our SoA layout.
    std::vector<uint8_t> raw(n * point_bytes);
    uint8_t* out = raw.data();
    for (size_t f = 0; f < nf; ++f) {
      if (axis[f] >= 0) {
        for (size_t i = 0; i < n; ++i, out += 8) {
          const double d = world_at(f, i);
          std::memcpy(out, &d, 8);
        }
      } else {
        if (n) std::memcpy(out, cloud.columns[f].data(), n * 4);
        out += n * 4;
      }
    }
    if (raw.size() > std::numeric_limits<uint32_t>::max())
      fail(path, "cloud too large for binary_compressed (more than 4 GiB)");
    std::vector<uint8_t> comp = lzf_compress(raw.data(), raw.size());
    uint32_t sizes[2] = {uint32_t(comp.size()), uint32_t(raw.size())};
    body.resize(8 + comp.size());
    std::memcpy(body.data(), sizes, 8);
    if (!comp.empty()) std::memcpy(body.data() + 8, comp.data(), comp.size());
  }
  std::string_view pieces[2] = {head, body};
  write_file_atomic(path, pieces, 2);
}

// The PCD row of the cloud-format table (formats/clouds/formats.h).
namespace {
CloudFormat pcd_format() {
  CloudFormat f;
  f.name = "pcd";
  f.extension = ".pcd";
  f.doc = "PCL's PCD v0.5/v0.7: ascii, binary, binary_compressed; fields x y z intensity";
  f.decode = [](const std::string& path, const DecodeOptions& d, DecodeInfo* info) {
    PcdReadOptions opt;
    opt.drop_nan = d.drop_nan;
    opt.origin = d.origin;
    return read_pcd(path, opt, nullptr, info);
  };
  f.count = [](const std::string& path) {
    MappedFile m(path, MappedFile::HeaderOnly{});
    return parse_pcd_header(m.data(), m.size(), path).points;
  };
  f.write = [](const std::string& path, const PointCloud& c) { write_pcd(path, c, PcdDataMode::Binary); };
  return f;
}
SL_REGISTER_CLOUD_FORMAT(pcd_format);
}  // namespace

}  // namespace sl
