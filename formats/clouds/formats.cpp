#include "formats/clouds/formats.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <mutex>

#include "graph/error.h"

namespace sl {
namespace {

// Rows never move once added (a deque): lookups hand out pointers to them.
std::mutex g_mu;
std::deque<CloudFormat>& rows() {
  static std::deque<CloudFormat> r;
  return r;
}

}  // namespace

void add_cloud_format(CloudFormat f) {
  if (f.name.empty() || f.extension.empty() || !f.decode || !f.count)
    throw Error("cloud format '" + f.name + "' needs a name, an extension, a decoder and a count");
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& r : rows())
    if (r.name == f.name || r.extension == f.extension)
      throw Error("cloud format '" + f.name + "' (" + f.extension + ") clashes with '" + r.name + "' (" + r.extension + ")");
  rows().push_back(std::move(f));
}

CloudFormatRegistrar::CloudFormatRegistrar(CloudFormat (*row)()) { add_cloud_format(row()); }

std::vector<const CloudFormat*> cloud_formats() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<const CloudFormat*> out;
  for (const auto& r : rows()) out.push_back(&r);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return out;
}

std::vector<std::string> cloud_format_names() {
  std::vector<std::string> out;
  for (const auto* f : cloud_formats()) out.push_back(f->name);
  return out;
}

std::vector<std::string> writable_cloud_format_names() {
  std::vector<std::string> out;
  for (const auto* f : cloud_formats())
    if (f->write) out.push_back(f->name);
  return out;
}

std::string cloud_extensions_text() {
  std::string out;
  for (const auto* f : cloud_formats()) out += (out.empty() ? "" : ", ") + f->extension;
  return out;
}

const CloudFormat& cloud_format(const std::string& name, const std::string& where) {
  for (const auto* f : cloud_formats())
    if (f->name == name) return *f;
  std::string names;
  for (const auto& n : cloud_format_names()) names += (names.empty() ? "" : ", ") + n;
  fail(where, "unknown cloud format '" + name + "' (known: " + names + ")");
}

const CloudFormat* format_of_path(const std::string& path) {
  const CloudFormat* best = nullptr;
  for (const auto* f : cloud_formats())
    if (path.size() > f->extension.size() &&
        path.compare(path.size() - f->extension.size(), f->extension.size(), f->extension) == 0 &&
        (!best || f->extension.size() > best->extension.size()))
      best = f;
  return best;
}

std::string cloud_stem(const std::string& path, const CloudFormat& f) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > f.extension.size() ? name.substr(0, name.size() - f.extension.size()) : name;
}

void write_cloud(const CloudFormat& format, const std::string& path, const PointCloud& cloud, const CloudCrs& crs) {
  if (!format.write) fail(path, "the " + format.name + " format is read only: it cannot be written");
  if (!crs.empty() && format.write_crs) format.write_crs(path, cloud, crs);
  else format.write(path, cloud);
}

PointCloud read_cloud_file(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) {
  const CloudFormat* f = format_of_path(path);
  if (!f) fail(path, "unknown cloud file type (expected one of " + cloud_extensions_text() + ")");
  return f->decode(path, opt, info);
}

}  // namespace sl
