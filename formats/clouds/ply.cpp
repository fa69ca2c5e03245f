#include "formats/clouds/ply.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/mapped_file.h"

namespace sl {
namespace {

enum class Type { I8, U8, I16, U16, I32, U32, F32, F64 };

struct TypeInfo {
  const char* name;
  Type type;
  int size;
};
// Both spellings of the PLY specification (char .. double, and int8 .. float64).
constexpr TypeInfo kTypes[] = {{"char", Type::I8, 1},    {"int8", Type::I8, 1},     {"uchar", Type::U8, 1},
                               {"uint8", Type::U8, 1},   {"short", Type::I16, 2},   {"int16", Type::I16, 2},
                               {"ushort", Type::U16, 2}, {"uint16", Type::U16, 2},  {"int", Type::I32, 4},
                               {"int32", Type::I32, 4},  {"uint", Type::U32, 4},    {"uint32", Type::U32, 4},
                               {"float", Type::F32, 4},  {"float32", Type::F32, 4}, {"double", Type::F64, 8},
                               {"float64", Type::F64, 8}};

struct Property {
  std::string name;
  TypeInfo type{};
  bool list = false;
  TypeInfo count_type{};  // lists: the type of the leading count
};

struct Element {
  std::string name;
  uint64_t count = 0;
  std::vector<Property> props;
};

struct Header {
  bool binary = false;
  std::vector<Element> elements;
  size_t body = 0;   // byte offset of the first element's data
  size_t vertex = 0; // index of the vertex element
};

// A header longer than this is not a point cloud's: refused rather than scanned to the end.
constexpr size_t kMaxHeaderBytes = size_t(1) << 20;

[[noreturn]] void bad(const std::string& name, size_t at, const std::string& why) {
  fail(name, "byte " + std::to_string(at) + ": " + why);
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

const TypeInfo* find_type(std::string_view name) {
  for (const TypeInfo& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

Header read_header(const char* d, size_t n, const std::string& name) {
  if (n < 4 || std::memcmp(d, "ply", 3) != 0 || (d[3] != '\n' && d[3] != '\r'))
    bad(name, 0, "not a PLY file (it does not start with a \"ply\" line)");
  Header h;
  bool have_format = false, have_vertex = false;
  size_t pos = 0;
  bool first = true;
  for (;;) {
    if (pos >= n) bad(name, pos, "the header has no end_header line (truncated?)");
    if (pos > kMaxHeaderBytes) bad(name, pos, "the header is longer than 1 MiB without an end_header line");
    // Searched only as far as a header may reach: one endless "line" is refused, not split.
    const size_t reach = std::min(n, kMaxHeaderBytes + 1);
    const char* nl = static_cast<const char*>(std::memchr(d + pos, '\n', reach - pos));
    if (!nl)
      bad(name, pos, reach < n ? "the header is longer than 1 MiB without an end_header line"
                               : "the header has no end_header line (truncated?)");
    std::string_view line(d + pos, size_t(nl - (d + pos)));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t at = pos;
    pos = size_t(nl - d) + 1;
    if (first) {
      first = false;
      continue;  // "ply", checked above
    }
    const auto tok = split(line);
    if (tok.empty()) continue;
    const std::string_view key = tok[0];
    if (key == "comment" || key == "obj_info") continue;
    if (key == "format") {
      if (tok.size() != 3) bad(name, at, "expected 'format <ascii|binary_little_endian> 1.0'");
      if (tok[1] == "ascii") h.binary = false;
      else if (tok[1] == "binary_little_endian") h.binary = true;
      else if (tok[1] == "binary_big_endian")
        bad(name, at, "binary_big_endian PLY is not supported (write it as binary_little_endian or ascii)");
      else bad(name, at, "unknown PLY format '" + std::string(tok[1]) + "'");
      if (tok[2] != "1.0") bad(name, at, "unsupported PLY version '" + std::string(tok[2]) + "' (expected 1.0)");
      have_format = true;
    } else if (key == "element") {
      if (tok.size() != 3) bad(name, at, "expected 'element <name> <count>'");
      Element e;
      e.name = std::string(tok[1]);
      auto [end, ec] = std::from_chars(tok[2].data(), tok[2].data() + tok[2].size(), e.count);
      if (ec != std::errc() || end != tok[2].data() + tok[2].size())
        bad(name, at, "element '" + e.name + "' has a count that is not a non-negative integer: '" + std::string(tok[2]) + "'");
      if (e.name == "vertex") {
        if (have_vertex) bad(name, at, "a second vertex element");
        have_vertex = true;
        h.vertex = h.elements.size();
      }
      h.elements.push_back(std::move(e));
    } else if (key == "property") {
      if (h.elements.empty()) bad(name, at, "a property before any element");
      Property p;
      if (tok.size() == 5 && tok[1] == "list") {
        const TypeInfo* c = find_type(tok[2]);
        const TypeInfo* t = find_type(tok[3]);
        if (!c || !t) bad(name, at, "unknown type in '" + std::string(line) + "'");
        if (c->type == Type::F32 || c->type == Type::F64) bad(name, at, "a list count must be an integer type");
        p.list = true, p.count_type = *c, p.type = *t, p.name = std::string(tok[4]);
      } else if (tok.size() == 3) {
        const TypeInfo* t = find_type(tok[1]);
        if (!t) bad(name, at, "unknown property type '" + std::string(tok[1]) + "'");
        p.type = *t, p.name = std::string(tok[2]);
      } else {
        bad(name, at, "expected 'property <type> <name>' or 'property list <type> <type> <name>'");
      }
      Element& e = h.elements.back();
      for (const Property& q : e.props)
        if (q.name == p.name) bad(name, at, "element '" + e.name + "' has two properties named '" + p.name + "'");
      e.props.push_back(std::move(p));
    } else if (key == "end_header") {
      h.body = pos;
      break;
    } else {
      bad(name, at, "unknown header line '" + std::string(line.substr(0, 80)) + "'");
    }
  }
  if (!have_format) bad(name, 0, "the header has no format line");
  if (!have_vertex) bad(name, 0, "the header has no vertex element");
  for (const Property& p : h.elements[h.vertex].props)
    if (p.list) bad(name, 0, "the vertex element has a list property '" + p.name + "' (a point cloud's vertices have scalars)");
  return h;
}

struct VertexLayout {
  int x = -1, y = -1, z = -1, intensity = -1;  // property indices
};

VertexLayout vertex_layout(const Element& v, const std::string& name) {
  VertexLayout l;
  for (size_t i = 0; i < v.props.size(); ++i) {
    const std::string& p = v.props[i].name;
    if (p == "x") l.x = int(i);
    if (p == "y") l.y = int(i);
    if (p == "z") l.z = int(i);
  }
  for (const char* want : {"intensity", "scalar_intensity", "scalar"}) {
    for (size_t i = 0; i < v.props.size() && l.intensity < 0; ++i)
      if (v.props[i].name == want) l.intensity = int(i);
  }
  if (l.x < 0 || l.y < 0 || l.z < 0) fail(name, "the vertex element lacks an x, y or z property");
  return l;
}

// A double as a float without undefined behaviour: out-of-range values become +-inf.
float to_float(double v) {
  if (v > double(std::numeric_limits<float>::max())) return std::numeric_limits<float>::infinity();
  if (v < -double(std::numeric_limits<float>::max())) return -std::numeric_limits<float>::infinity();
  return float(v);
}

// One stored value, exactly (every PLY type fits a double).
double load(const char* p, Type t) {
  switch (t) {
    case Type::I8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case Type::U8: { uint8_t v; std::memcpy(&v, p, 1); return v; }
    case Type::I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case Type::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case Type::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case Type::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case Type::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case Type::F64: { double v; std::memcpy(&v, p, 8); return v; }
  }
  return 0;
}

// Types float32 cannot hold exactly: coordinates stored in them are moved to the origin in double.
bool wider_than_float(Type t) { return t == Type::F64 || t == Type::I32 || t == Type::U32; }

uint64_t load_count(const char* p, Type t) {
  switch (t) {
    case Type::I8: { int8_t v; std::memcpy(&v, p, 1); return v < 0 ? UINT64_MAX : uint64_t(v); }
    case Type::I16: { int16_t v; std::memcpy(&v, p, 2); return v < 0 ? UINT64_MAX : uint64_t(v); }
    case Type::I32: { int32_t v; std::memcpy(&v, p, 4); return v < 0 ? UINT64_MAX : uint64_t(v); }
    case Type::U8: { uint8_t v; std::memcpy(&v, p, 1); return v; }
    case Type::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case Type::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: return UINT64_MAX;  // refused at the header
  }
}

// Skips element `e` of a binary body at `off`; lists are walked record by record (each record
// consumes at least its count's bytes, so a huge count ends at the end of the file).
size_t skip_binary(const Element& e, size_t off, const char* d, size_t n, const std::string& name) {
  bool has_list = false;
  uint64_t stride = 0;
  for (const Property& p : e.props) {
    has_list |= p.list;
    stride += uint64_t(p.type.size);
  }
  if (!has_list) {
    if (stride != 0 && e.count > (n - off) / stride)
      bad(name, off, "element '" + e.name + "' (" + std::to_string(e.count) + " records) runs past the end of the file");
    return off + size_t(e.count * stride);
  }
  for (uint64_t r = 0; r < e.count; ++r)
    for (const Property& p : e.props) {
      if (!p.list) {
        if (size_t(p.type.size) > n - off) bad(name, off, "element '" + e.name + "' runs past the end of the file");
        off += size_t(p.type.size);
        continue;
      }
      if (size_t(p.count_type.size) > n - off) bad(name, off, "element '" + e.name + "' runs past the end of the file");
      const uint64_t k = load_count(d + off, p.count_type.type);
      off += size_t(p.count_type.size);
      if (k == UINT64_MAX || k > (n - off) / uint64_t(p.type.size))
        bad(name, off, "a list of element '" + e.name + "' runs past the end of the file");
      off += size_t(k) * size_t(p.type.size);
    }
  return off;
}

// The next line of an ascii body: [pos, end) without the newline; returns the position after it.
size_t next_line(const char* d, size_t n, size_t pos, size_t* end) {
  const char* nl = static_cast<const char*>(std::memchr(d + pos, '\n', n - pos));
  *end = nl ? size_t(nl - d) : n;
  return nl ? *end + 1 : n;
}

}  // namespace

PlyInfo parse_ply_header(const char* data, size_t size, const std::string& name) {
  const Header h = read_header(data, size, name);
  const Element& v = h.elements[h.vertex];
  const VertexLayout l = vertex_layout(v, name);
  PlyInfo info;
  info.binary = h.binary;
  info.vertices = int64_t(std::min<uint64_t>(v.count, uint64_t(INT64_MAX)));
  if (l.intensity >= 0) info.intensity = v.props[size_t(l.intensity)].name;
  return info;
}

PointCloud parse_ply(const char* d, size_t n, const std::string& name, bool drop_nan, int64_t* dropped) {
  DecodeInfo info;
  PointCloud c = parse_ply(d, n, name, DecodeOptions{drop_nan, OriginPolicy::stored()}, &info);
  if (dropped) *dropped = info.dropped;
  return c;
}

PointCloud parse_ply(const char* d, size_t n, const std::string& name, const DecodeOptions& opt, DecodeInfo* info) {
  const bool drop_nan = opt.drop_nan;
  const Header h = read_header(d, n, name);
  const Element& v = h.elements[h.vertex];
  const VertexLayout l = vertex_layout(v, name);
  const size_t nprops = v.props.size();
  size_t off = h.body;
  if (h.binary) {
    for (size_t e = 0; e < h.vertex; ++e) off = skip_binary(h.elements[e], off, d, n, name);
  } else {
    for (size_t e = 0; e < h.vertex; ++e)
      for (uint64_t r = 0; r < h.elements[e].count; ++r) {
        if (off >= n) bad(name, off, "element '" + h.elements[e].name + "' has fewer lines than its count (truncated?)");
        size_t end;
        off = next_line(d, n, off, &end);
      }
  }
  // Refused before allocating: the count must fit in what is left of the file.
  std::vector<size_t> at(nprops);  // binary: byte offset of each property in a record
  size_t stride = 0;
  for (size_t i = 0; i < nprops; ++i) {
    at[i] = stride;
    stride += size_t(v.props[i].type.size);
  }
  const size_t left = n - off;
  // ascii: a digit and a separator per value, but the last line may end without a newline
  const size_t min_record = h.binary ? stride : 2 * nprops;
  if (v.count > (h.binary ? left : left + 1) / min_record)
    bad(name, off, std::to_string(v.count) + " vertices need at least " + std::to_string(min_record) +
                       " bytes each, and " + std::to_string(left) + " bytes are left (truncated, or a wrong count?)");
  const size_t count = size_t(v.count);
  PointCloud cloud;
  cloud.fields = {"x", "y", "z", "intensity"};
  cloud.columns.assign(4, std::vector<float>(count));
  float* col[4] = {cloud.columns[0].data(), cloud.columns[1].data(), cloud.columns[2].data(), cloud.columns[3].data()};
  const int src[4] = {l.x, l.y, l.z, l.intensity};
  // Coordinates stored wider than float32 stay doubles until the origin is known.
  const bool wide = wider_than_float(v.props[size_t(l.x)].type.type) || wider_than_float(v.props[size_t(l.y)].type.type) ||
                    wider_than_float(v.props[size_t(l.z)].type.type);
  std::vector<double> xyz_d[3];
  if (wide)
    for (auto& c : xyz_d) c.resize(count);
  std::vector<double> rec(nprops);
  size_t w = 0;
  for (size_t i = 0; i < count; ++i) {
    if (h.binary) {
      const char* r = d + off + i * stride;
      for (size_t k = 0; k < nprops; ++k) rec[k] = load(r + at[k], v.props[k].type.type);
    } else {
      if (off >= n) bad(name, off, "vertex " + std::to_string(i) + " of " + std::to_string(count) + " is missing (truncated?)");
      size_t end;
      const size_t line_at = off;
      off = next_line(d, n, off, &end);
      size_t k = 0, p = line_at;
      while (p < end) {
        while (p < end && (d[p] == ' ' || d[p] == '\t' || d[p] == '\r')) ++p;
        if (p == end) break;
        size_t q = p;
        while (q < end && d[q] != ' ' && d[q] != '\t' && d[q] != '\r') ++q;
        if (k == nprops)
          bad(name, p, "vertex " + std::to_string(i) + " has more than the " + std::to_string(nprops) + " values its element declares");
        double x = 0;
        auto [e, ec] = std::from_chars(d + p, d + q, x);
        if (e != d + q || (ec != std::errc() && ec != std::errc::result_out_of_range))
          bad(name, p, "vertex " + std::to_string(i) + ": '" + std::string(d + p, std::min<size_t>(q - p, 40)) +
                           "' is not a number");
        if (ec == std::errc::result_out_of_range)  // too large (+-inf) or too small (0) for a double
          x = std::strtod(std::string(d + p, q - p).c_str(), nullptr);
        // A property declared float holds a float32: the text's value as one, as a binary file would.
        rec[k] = v.props[k].type.type == Type::F32 ? double(to_float(x)) : x;
        ++k;
        p = q;
      }
      if (k != nprops)
        bad(name, line_at, "vertex " + std::to_string(i) + " has " + std::to_string(k) + " values, its element declares " +
                               std::to_string(nprops));
    }
    for (int c = 0; c < 4; ++c) col[c][w] = src[c] >= 0 ? to_float(rec[size_t(src[c])]) : 0.f;
    // Wide coordinates are checked once they are local (below): their float32 values are not yet.
    if (!wide && drop_nan && !(std::isfinite(col[0][w]) && std::isfinite(col[1][w]) && std::isfinite(col[2][w])))
      continue;
    if (wide)
      for (int c = 0; c < 3; ++c) xyz_d[c][w] = rec[size_t(src[c])];
    ++w;
  }
  if (wide) {
    Bounds b;
    for (size_t i = 0; i < w; ++i)
      if (!drop_nan || (std::isfinite(xyz_d[0][i]) && std::isfinite(xyz_d[1][i]) && std::isfinite(xyz_d[2][i])))
        b.add(xyz_d[0][i], xyz_d[1][i], xyz_d[2][i]);
    cloud.origin = resolve_origin(opt.origin, b);
    size_t kept = 0;
    for (size_t i = 0; i < w; ++i) {
      float p[3];
      for (size_t c = 0; c < 3; ++c) p[c] = to_float(xyz_d[c][i] - cloud.origin[c]);
      if (drop_nan && !(std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]))) continue;
      for (size_t c = 0; c < 3; ++c) col[c][kept] = p[c];
      col[3][kept++] = col[3][i];
    }
    w = kept;
    if (info) info->float32_extent = 0;
  }
  for (auto& c : cloud.columns) c.resize(w);
  const int64_t moved_out = wide ? 0 : localize_float32(cloud, opt.origin, info, drop_nan);
  if (info) info->dropped = int64_t(count - w) + moved_out;
  return cloud;
}

PointCloud read_ply(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) {
  MappedFile f(path);
  if (f.size() == 0) fail(path, "empty file, expected a PLY header");
  return parse_ply(f.data(), f.size(), path, opt, info);
}

PointCloud read_ply(const std::string& path, bool drop_nan, int64_t* dropped) {
  DecodeInfo info;
  PointCloud c = read_ply(path, DecodeOptions{drop_nan, OriginPolicy::stored()}, &info);
  if (dropped) *dropped = info.dropped;
  return c;
}

void write_ply(const std::string& path, const PointCloud& cloud, bool binary) {
  const std::vector<float>* col[4] = {nullptr, nullptr, nullptr, nullptr};
  const char* names[4] = {"x", "y", "z", "intensity"};
  for (size_t f = 0; f < cloud.fields.size(); ++f)
    for (int c = 0; c < 4; ++c)
      if (cloud.fields[f] == names[c]) col[c] = &cloud.columns[f];
  for (int c = 0; c < 3; ++c)
    if (!col[c]) fail(path, std::string("cannot write a PLY file: the cloud has no field '") + names[c] + "'");
  const size_t n = col[0]->size();
  // A cloud with an origin is written in world coordinates: x, y, z as doubles, column + origin.
  const bool world = cloud.origin != std::array<double, 3>{0, 0, 0};
  const char* coord_type = world ? "double" : "float";
  std::string out = std::string("ply\nformat ") + (binary ? "binary_little_endian" : "ascii") +
                    " 1.0\ncomment written by streamline\nelement vertex " + std::to_string(n) + "\nproperty " +
                    coord_type + " x\nproperty " + coord_type + " y\nproperty " + coord_type +
                    " z\nproperty float intensity\nend_header\n";
  char buf[128];
  for (size_t i = 0; i < n; ++i) {
    const float p[4] = {(*col[0])[i], (*col[1])[i], (*col[2])[i], col[3] ? (*col[3])[i] : 0.f};
    if (binary && world) {
      for (int a = 0; a < 3; ++a) {
        const double v = to_world(p[a], cloud.origin[size_t(a)]);
        out.append(reinterpret_cast<const char*>(&v), sizeof v);
      }
      out.append(reinterpret_cast<const char*>(&p[3]), sizeof(float));
    } else if (binary) {
      out.append(reinterpret_cast<const char*>(p), sizeof p);
    } else if (world) {
      for (int a = 0; a < 3; ++a) out += exact_number(to_world(p[a], cloud.origin[size_t(a)])) + ' ';
      const int k = std::snprintf(buf, sizeof buf, "%.9g\n", p[3]);
      out.append(buf, size_t(k));
    } else {
      const int k = std::snprintf(buf, sizeof buf, "%.9g %.9g %.9g %.9g\n", p[0], p[1], p[2], p[3]);
      out.append(buf, size_t(k));
    }
  }
  write_file_atomic(path, out);
}

// The PLY row of the cloud-format table (formats/clouds/formats.h): this file is the whole format.
namespace {
CloudFormat ply_format() {
  CloudFormat f;
  f.name = "ply";
  f.extension = ".ply";
  f.doc = "PLY ascii or binary_little_endian: vertex x y z and intensity (or scalar_intensity, scalar)";
  f.decode = [](const std::string& p, const DecodeOptions& o, DecodeInfo* i) { return read_ply(p, o, i); };
  f.count = [](const std::string& path) {
    MappedFile m(path, MappedFile::HeaderOnly{});
    return parse_ply_header(m.data(), m.size(), path).vertices;
  };
  f.write = [](const std::string& path, const PointCloud& c) { write_ply(path, c, true); };
  return f;
}
SL_REGISTER_CLOUD_FORMAT(ply_format);
}  // namespace

}  // namespace sl
