// An OSM file as libosmium (Debian's libosmium2-dev, the library behind osmium-tool) reads it: the
// independent reader the map tests check ours and our written files against. Include it only from a
// *_osmium.cpp test (built when libosmium is found).
#pragma once
#include <osmium/handler.hpp>
#include <osmium/io/xml_input.hpp>
#include <osmium/visitor.hpp>

#include <map>
#include <string>
#include <vector>

namespace sl::test {

struct OsmiumMap : osmium::handler::Handler {
  struct Node {
    double lat = 0, lon = 0;
    std::map<std::string, std::string> tags;
  };
  struct Way {
    std::vector<int64_t> refs;
    std::map<std::string, std::string> tags;
  };
  std::map<int64_t, Node> nodes;
  std::map<int64_t, Way> ways;
  std::map<int64_t, std::vector<std::string>> relations;  // members as "type ref role", and tags
  static std::map<std::string, std::string> tags_of(const osmium::TagList& t) {
    std::map<std::string, std::string> m;
    for (const auto& tag : t) m[tag.key()] = tag.value();
    return m;
  }
  void node(const osmium::Node& n) { nodes[n.id()] = {n.location().lat(), n.location().lon(), tags_of(n.tags())}; }
  void way(const osmium::Way& w) {
    Way x;
    for (const auto& r : w.nodes()) x.refs.push_back(r.ref());
    x.tags = tags_of(w.tags());
    ways[w.id()] = x;
  }
  void relation(const osmium::Relation& r) {
    auto& v = relations[r.id()];
    for (const auto& m : r.members())
      v.push_back(std::string(osmium::item_type_to_name(m.type())) + " " + std::to_string(m.ref()) + " " + m.role());
    for (const auto& t : r.tags()) v.push_back(std::string(t.key()) + "=" + t.value());
  }
};

inline OsmiumMap read_with_osmium(const std::string& text) {
  osmium::io::File file(text.data(), text.size(), "osm");
  osmium::io::Reader reader(file);
  OsmiumMap m;
  osmium::apply(reader, m);
  reader.close();
  return m;
}

}  // namespace sl::test
