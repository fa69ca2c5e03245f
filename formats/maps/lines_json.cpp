#include "formats/maps/lines_json.h"

#include <rapidjson/document.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"
#include "formats/maps/categories.h"
#include "formats/maps/json_numbers.h"
#include "formats/clouds/origin.h"

namespace sl {

namespace {

using Value = rapidjson::Value;

const char* type_name(const Value& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "a boolean";
    case rapidjson::kObjectType: return "an object";
    case rapidjson::kArrayType: return "an array";
    case rapidjson::kStringType: return "a string";
    case rapidjson::kNumberType: return "a number";
  }
  return "?";
}

struct Ctx {
  const std::string& path;
  [[noreturn]] void bad(const std::string& pointer, const std::string& why) const {
    fail(path, (pointer.empty() ? std::string("/") : pointer) + ": " + why);
  }
  const Value& member(const Value& obj, const char* key, const std::string& pointer) const {
    auto it = obj.FindMember(key);
    if (it == obj.MemberEnd()) bad(pointer, std::string("missing key \"") + key + "\"");
    return it->value;
  }
};

}  // namespace

LinesFile parse_lines_json(const std::string& text, const std::string& path, const std::vector<std::string>& categories,
                           int64_t max_points_per_line, const std::array<double, 3>& origin) {
  // The reader (SAX) recurses once per level as the DOM would: a deep file is refused first.
  check_json_depth(text, path);
  rapidjson::Document doc;
  rapidjson::ParseResult res;
  auto generate = [&](rapidjson::Document& d) {
    // RapidJSON 1.1.0 (Debian's rapidjson-dev) misreads numbers in full-precision mode: a zero
    // with an exponent beyond +-22 ("0e60" -> 2e-115, "0.000e100" -> 5e294) and any number of more
    // than 20 significant digits ("1.84467440737095516159" -> -1e-199) come out as garbage (found by
    // fuzz/fuzz_lines_json; fixed upstream after 1.1.0). The reader still checks the JSON grammar,
    // but hands every number over as text (kParseNumbersAsStringsFlag) and this handler converts it
    // with std::from_chars, which is correctly rounded: a float written with 9 digits by
    // write_lines_json reads back bit-exact. Everything else goes to the Document as it would
    // (ExactNumbers, formats/maps/json_numbers.h).
    ExactNumbers handler{d};
    rapidjson::MemoryStream ms(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
    res = rapidjson::Reader().Parse<rapidjson::kParseNumbersAsStringsFlag>(is, handler);
    return !res.IsError();
  };
  doc.Populate(generate);
  if (res.IsError()) {
    size_t off = std::min(res.Offset(), text.size());
    size_t line = 1 + size_t(std::count(text.begin(), text.begin() + off, '\n'));
    size_t nl = text.rfind('\n', off == 0 ? 0 : off - 1);
    size_t col = (nl == std::string::npos || off == 0) ? off + 1 : off - nl;
    fail(path, "JSON parse error at line " + std::to_string(line) + ":" + std::to_string(col) + ": " +
                   rapidjson::GetParseError_En(res.Code()));
  }
  Ctx c{path};
  if (!doc.IsObject()) c.bad("", std::string("expected an object, found ") + type_name(doc));
  LinesFile out;
  out.origin = origin;
  const Value& frame = c.member(doc, "frame", "");
  if (!frame.IsString()) c.bad("/frame", std::string("expected a string, found ") + type_name(frame));
  out.frame.assign(frame.GetString(), frame.GetStringLength());
  const Value& lines = c.member(doc, "lines", "");
  if (!lines.IsArray()) c.bad("/lines", std::string("expected an array, found ") + type_name(lines));
  for (rapidjson::SizeType li = 0; li < lines.Size(); ++li) {
    const std::string lp = "/lines/" + std::to_string(li);
    const Value& line = lines[li];
    if (!line.IsObject()) c.bad(lp, std::string("expected an object, found ") + type_name(line));
    Polyline pl;
    const Value& id = c.member(line, "id", lp);
    if (!id.IsInt64()) c.bad(lp + "/id", std::string("expected an integer, found ") + type_name(id));
    pl.id = id.GetInt64();
    const Value& cat = c.member(line, "category", lp);
    if (!cat.IsString()) c.bad(lp + "/category", std::string("expected a string, found ") + type_name(cat));
    pl.category.assign(cat.GetString(), cat.GetStringLength());
    const Value& pts = c.member(line, "points", lp);
    const std::string pp = lp + "/points";
    if (!pts.IsArray()) c.bad(pp, std::string("expected an array, found ") + type_name(pts));
    if (pts.Size() < 2) c.bad(pp, "a line needs at least 2 points, found " + std::to_string(pts.Size()));
    if (int64_t(pts.Size()) > max_points_per_line)
      c.bad(pp, std::to_string(pts.Size()) + " points exceed the limit of " + std::to_string(max_points_per_line) +
                    " per line");
    pl.points.resize(pts.Size());
    for (rapidjson::SizeType pi = 0; pi < pts.Size(); ++pi) {
      const Value& pt = pts[pi];
      const std::string ptp = pp + "/" + std::to_string(pi);
      if (!pt.IsArray() || pt.Size() != 3)
        c.bad(ptp, pt.IsArray() ? "expected [x, y, z], found " + std::to_string(pt.Size()) + " values"
                                : std::string("expected [x, y, z], found ") + type_name(pt));
      for (rapidjson::SizeType k = 0; k < 3; ++k) {
        const Value& v = pt[k];
        // World minus origin in double, then float: the float keeps the local coordinate's precision.
        const double local = v.IsNumber() ? v.GetDouble() - origin[k] : 0.0;
        const bool in_range = std::isfinite(local) && std::fabs(local) <= double(std::numeric_limits<float>::max());
        if (!v.IsNumber() || !in_range)  // a finite double can still overflow float
          c.bad(ptp + "/" + std::to_string(k), std::string("expected a finite number, found ") +
                                                   (v.IsNumber() ? "a number out of float range" : type_name(v)));
        pl.points[pi][k] = static_cast<float>(local);
      }
    }
    // No filter keeps every line of the file, virtual ones too: `infer --lines` writes back each line it
    // read (a map's readers leave non-physical lines out instead: categories.h).
    if (categories.empty() || category_matches(pl.category, categories))
      out.lines.push_back(std::move(pl));
  }
  return out;
}

LinesFile read_lines_json(const std::string& path, const std::vector<std::string>& categories,
                          int64_t max_points_per_line, const std::array<double, 3>& origin) {
  return parse_lines_json(read_file(path), path, categories, max_points_per_line, origin);
}

namespace {

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += char(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += char(ch);
    }
  }
  out += '"';
}

}  // namespace

void write_lines_json(const std::string& path, const LinesFile& file) {
  const bool world = file.origin != std::array<double, 3>{0, 0, 0};
  std::string out = "{\"frame\": ";
  append_json_string(out, file.frame);
  out += ", \"lines\": [";
  char buf[32];
  for (size_t li = 0; li < file.lines.size(); ++li) {
    const Polyline& pl = file.lines[li];
    out += li ? ",\n  " : "\n  ";
    out += "{\"id\": " + std::to_string(pl.id) + ", \"category\": ";
    append_json_string(out, pl.category);
    out += ", \"points\": [";
    for (size_t pi = 0; pi < pl.points.size(); ++pi) {
      out += pi ? ", [" : "[";
      for (int k = 0; k < 3; ++k) {
        float v = pl.points[pi][k];
        if (!std::isfinite(v))
          fail(path, "cannot write line " + std::to_string(li) + " point " + std::to_string(pi) +
                         ": non-finite coordinate (JSON has no NaN)");
        if (k) out += ", ";
        if (world) {  // world = local + origin in double, written exactly (shortest round-trip text)
          out += exact_number(to_world(v, file.origin[k]));
        } else {
          auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 9);
          out.append(buf, r.ptr);
        }
      }
      out += ']';
    }
    out += "]}";
  }
  out += file.lines.empty() ? "]}\n" : "\n]}\n";
  write_file_atomic(path, out);
}

}  // namespace sl
