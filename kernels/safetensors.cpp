#include "kernels/safetensors.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstring>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"

namespace sl {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

size_t st_dtype_size(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F64" || dtype == "I64") return 8;
  return 0;
}

int64_t st_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
constexpr uint64_t kMaxHeader = 100'000'000;  // as the reference implementation
}

StFile read_safetensors(const std::string& path) {
  auto storage = std::make_shared<std::string>(read_file(path));
  const std::string& s = *storage;
  if (s.size() < 8) fail(path, "not a safetensors file: shorter than the 8-byte header size");
  uint64_t n = 0;
  std::memcpy(&n, s.data(), 8);
  if (n > kMaxHeader) fail(path, "header size " + std::to_string(n) + " is implausibly large");
  if (n > s.size() - 8)
    fail(path, "header size " + std::to_string(n) + " goes beyond the end of the file (" +
                   std::to_string(s.size()) + " bytes): truncated or not safetensors");
  std::string header = s.substr(8, n);
  while (!header.empty() && header.back() == ' ') header.pop_back();
  if (const int64_t deep = json_depth_exceeded_at(header); deep >= 0)
    fail(path, "JSON header nested deeper than " + std::to_string(kJsonMaxDepth) + " levels (byte " +
                   std::to_string(8 + deep) + ")");
  rapidjson::Document doc;
  doc.Parse(header.data(), header.size());
  if (doc.HasParseError())
    fail(path, std::string("bad JSON header at offset ") + std::to_string(doc.GetErrorOffset()) +
                   ": " + rapidjson::GetParseError_En(doc.GetParseError()));
  if (!doc.IsObject()) fail(path, "JSON header is not an object");
  const uint64_t data_start = 8 + n;
  const uint64_t data_size = s.size() - data_start;
  StFile out;
  out.storage = storage;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string name(it->name.GetString(), it->name.GetStringLength());
    const auto& v = it->value;
    if (name == "__metadata__") {
      if (!v.IsObject()) fail(path, "__metadata__ is not an object");
      for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
        if (!m->value.IsString())
          fail(path, std::string("__metadata__.") + m->name.GetString() + " is not a string");
        out.metadata[m->name.GetString()] =
            std::string(m->value.GetString(), m->value.GetStringLength());
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!v.IsObject()) fail(path, where + " is not an object");
    if (!v.HasMember("dtype") || !v["dtype"].IsString()) fail(path, where + " has no dtype");
    if (!v.HasMember("shape") || !v["shape"].IsArray()) fail(path, where + " has no shape");
    if (!v.HasMember("data_offsets") || !v["data_offsets"].IsArray() ||
        v["data_offsets"].Size() != 2 || !v["data_offsets"][0].IsUint64() ||
        !v["data_offsets"][1].IsUint64())
      fail(path, where + " has no valid data_offsets [begin, end]");
    StTensor t;
    t.dtype = v["dtype"].GetString();
    const size_t es = st_dtype_size(t.dtype);
    if (es == 0) fail(path, where + " has unsupported dtype '" + t.dtype + "'");
    uint64_t numel = 1;
    for (const auto& d : v["shape"].GetArray()) {
      if (!d.IsUint64() || d.GetUint64() > (uint64_t(1) << 40))
        fail(path, where + " has an invalid shape entry");
      t.shape.push_back(int64_t(d.GetUint64()));
      numel *= d.GetUint64();
      if (numel > (uint64_t(1) << 40)) fail(path, where + " has an implausibly large shape");
    }
    const uint64_t b = v["data_offsets"][0].GetUint64(), e = v["data_offsets"][1].GetUint64();
    if (b > e) fail(path, where + " has data_offsets with begin > end");
    if (e > data_size)
      fail(path, where + " data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                     "] go beyond the data (" + std::to_string(data_size) +
                     " bytes): truncated file?");
    if (e - b != numel * es)
      fail(path, where + " has " + std::to_string(e - b) + " bytes but dtype " + t.dtype +
                     " x shape needs " + std::to_string(numel * es));
    t.bytes = std::string_view(s.data() + data_start + b, e - b);
    ranges.push_back({b, e});
    out.tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t pos = 0;
  for (const auto& [b, e] : ranges) {
    if (b < pos) fail(path, "tensor data ranges overlap at byte " + std::to_string(b));
    if (b > pos) fail(path, "tensor data leaves a hole at byte " + std::to_string(pos));
    pos = e;
  }
  if (pos != data_size)
    fail(path, std::to_string(data_size - pos) + " trailing bytes after the last tensor");
  return out;
}

void write_safetensors(const std::string& path, const StFile& file) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  if (!file.metadata.empty()) {
    w.Key("__metadata__");
    w.StartObject();
    for (const auto& [k, v] : file.metadata) {
      w.Key(k.data(), rapidjson::SizeType(k.size()));
      w.String(v.data(), rapidjson::SizeType(v.size()));
    }
    w.EndObject();
  }
  uint64_t off = 0;
  for (const auto& [name, t] : file.tensors) {
    const size_t es = st_dtype_size(t.dtype);
    if (es == 0) fail(path, "tensor '" + name + "' has unsupported dtype '" + t.dtype + "'");
    for (int64_t d : t.shape)
      if (d < 0) fail(path, "tensor '" + name + "' has a negative dimension");
    if (uint64_t(st_numel(t.shape)) * es != t.bytes.size())
      fail(path, "tensor '" + name + "' has " + std::to_string(t.bytes.size()) +
                     " bytes, shape needs " + std::to_string(st_numel(t.shape) * es));
    w.Key(name.data(), rapidjson::SizeType(name.size()));
    w.StartObject();
    w.Key("dtype");
    w.String(t.dtype.c_str());
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Uint64(uint64_t(d));
    w.EndArray();
    w.Key("data_offsets");
    w.StartArray();
    w.Uint64(off);
    w.Uint64(off + t.bytes.size());
    w.EndArray();
    w.EndObject();
    off += t.bytes.size();
  }
  w.EndObject();
  std::string header(sb.GetString(), sb.GetSize());
  header.append((8 - header.size() % 8) % 8, ' ');
  char size_le[8];
  const uint64_t n = header.size();
  std::memcpy(size_le, &n, 8);
  std::vector<std::string_view> pieces;
  pieces.emplace_back(size_le, 8);
  pieces.emplace_back(header);
  for (const auto& [name, t] : file.tensors) pieces.push_back(t.bytes);
  write_file_atomic(path, pieces.data(), pieces.size());
}

}  // namespace sl
