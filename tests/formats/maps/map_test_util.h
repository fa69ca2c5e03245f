// Synthetic vector maps for the map tests: a Lanelet2 OSM text with what a real one has (shared
// nodes, a closed way, negative ids as JOSM gives new elements, relations, lat/lon-only nodes,
// Autoware local_x/local_y/ele nodes, single and double quotes, entities, a deleted way, a way
// without type) and the values it was made from, to check a reader against.
#pragma once
#include <array>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "formats/maps/map_numbers.h"
#include "formats/maps/projection.h"

namespace sl::test {

struct SynthNode {
  int64_t id = 0;
  double lat = 0, lon = 0;
  bool has_local = false, has_ele = false;
  double local_x = 0, local_y = 0, ele = 0;  // as written (rounded to 4 decimals)
};
struct SynthWay {
  int64_t id = 0;
  std::string category;  // "" = no type tag
  std::vector<int64_t> nodes;
  bool deleted = false;
};
struct SynthOsm {
  std::string text;
  std::map<int64_t, SynthNode> nodes;
  std::vector<SynthWay> ways;
  int relations = 0;
};

// local_frame: the projection local_x/local_y are written in (an Autoware map's MGRS square); an
// invalid one writes no local tags. local_every: every n-th node gets local_x/local_y (0: none).
inline SynthOsm synthetic_lanelet2(uint32_t seed, const Projection& local_frame, int local_every = 3, int n_ways = 12) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  SynthOsm m;
  const double lat0 = 49.0 + 0.01 * u(rng), lon0 = 8.42 + 0.01 * u(rng);
  const char* kCats[] = {"line_thin:solid", "line_thin:dashed", "line_thick:solid", "curbstone:high", "road_border",
                         "stop_line", "virtual"};
  int64_t next_pos = 1000 + int64_t(rng() % 1000), next_neg = -1;
  auto new_id = [&] { return (rng() % 3 == 0) ? next_neg-- : next_pos++; };
  std::vector<int64_t> order;  // nodes in file order
  auto add_node = [&](double lat, double lon) {
    SynthNode n;
    n.id = new_id();
    // 11 decimals as Lanelet2/JOSM write them: the value the reader sees is the rounded one.
    n.lat = std::stod(format_degrees(lat));
    n.lon = std::stod(format_degrees(lon));
    const size_t k = order.size();
    if (local_frame.valid() && local_every > 0 && k % size_t(local_every) == 1) {
      const auto q = local_frame.forward(n.lat, n.lon);
      n.has_local = true;
      n.local_x = std::stod(format_fixed(q[0], 4));
      n.local_y = std::stod(format_fixed(q[1], 4));
    }
    if (k % 2 == 0) {
      n.has_ele = true;
      n.ele = std::stod(format_fixed(110 + 5 * u(rng), 3));
    }
    m.nodes[n.id] = n;
    order.push_back(n.id);
    return n.id;
  };
  int64_t prev_end = 0;
  for (int w = 0; w < n_ways; ++w) {
    SynthWay way;
    way.id = new_id();
    way.category = kCats[rng() % 7];
    if (w == 3) way.category = "";  // a way without type: not a line
    const int n = 2 + int(rng() % 6);
    double lat = lat0 + 0.002 * u(rng), lon = lon0 + 0.002 * u(rng);
    const double dlat = (u(rng) - 0.5) * 4e-5, dlon = (u(rng) - 0.5) * 6e-5;
    for (int i = 0; i < n; ++i) {
      if (i == 0 && prev_end != 0 && rng() % 2 == 0) {
        way.nodes.push_back(prev_end);  // shared with the previous way
        lat = m.nodes[prev_end].lat, lon = m.nodes[prev_end].lon;
        continue;
      }
      lat += dlat + (u(rng) - 0.5) * 1e-5;
      lon += dlon + (u(rng) - 0.5) * 1e-5;
      way.nodes.push_back(add_node(lat, lon));
    }
    if (w == 5) way.nodes.push_back(way.nodes.front());  // a closed way
    prev_end = way.nodes.back();
    m.ways.push_back(way);
  }
  SynthWay del;  // JOSM's deleted way, referencing live nodes: not part of the map
  del.id = next_neg--;
  del.category = "line_thin:solid";
  del.nodes = {m.ways[0].nodes[0], m.ways[1].nodes.back()};
  del.deleted = true;
  m.ways.push_back(del);

  std::string& t = m.text;
  t = "<?xml version='1.0' encoding='UTF-8'?>\n<osm version='0.6' upload='never' generator='JOSM'>\n";
  t += "  <bounds minlat='48.9' minlon='8.4' maxlat='49.1' maxlon='8.5' />\n";
  char buf[512];
  for (size_t k = 0; k < order.size(); ++k) {
    const SynthNode& n = m.nodes[order[k]];
    const char q = k % 2 ? '\'' : '"';
    const std::string lat = format_degrees(n.lat), lon = format_degrees(n.lon);
    if (k % 4 == 3)
      std::snprintf(buf, sizeof buf, "  <node id=%c%lld%c visible=%ctrue%c version=%c1%c lat=%c%s%c lon=%c%s%c", q,
                    (long long)n.id, q, q, q, q, q, q, lat.c_str(), q, q, lon.c_str(), q);
    else
      std::snprintf(buf, sizeof buf, "  <node id=%c%lld%c lat=%c%s%c\n        lon=%c%s%c", q, (long long)n.id, q, q,
                    lat.c_str(), q, q, lon.c_str(), q);
    t += buf;
    if (!n.has_local && !n.has_ele && k % 5 != 0) {
      t += " />\n";
      continue;
    }
    t += ">\n";
    if (n.has_local) {
      t += "    <tag k='local_x' v='" + format_fixed(n.local_x, 4) + "'/>\n";
      t += "    <tag k=\"local_y\" v=\"" + format_fixed(n.local_y, 4) + "\" />\n";
    }
    if (n.has_ele) t += "    <tag k='ele' v='" + format_fixed(n.ele, 3) + "' />\n";
    if (k % 5 == 0) t += "    <tag k='note' v='a &amp; b &lt;c&gt; &#x4e2d;'/>\n";
    t += "  </node>\n";
  }
  for (const SynthWay& w : m.ways) {
    t += "  <way id='" + std::to_string(w.id) + "'" + (w.deleted ? " action='delete'" : "") + " visible='true'>\n";
    for (int64_t n : w.nodes) t += "    <nd ref='" + std::to_string(n) + "' />\n";
    if (!w.category.empty()) {
      const size_t colon = w.category.find(':');
      t += "    <tag k='type' v='" + w.category.substr(0, colon) + "' />\n";
      if (colon != std::string::npos) t += "    <tag k='subtype' v='" + w.category.substr(colon + 1) + "' />\n";
    }
    t += "    <tag k='width' v='0.15' />\n  </way>\n";
  }
  for (size_t w = 0; w + 1 < m.ways.size() - 1; w += 2) {
    t += "  <relation id='" + std::to_string(next_neg--) + "'>\n";
    t += "    <member type='way' ref='" + std::to_string(m.ways[w].id) + "' role='left' />\n";
    t += "    <member type='way' ref='" + std::to_string(m.ways[w + 1].id) + "' role='right' />\n";
    t += "    <tag k='type' v='lanelet' />\n    <tag k='subtype' v='road' />\n  </relation>\n";
    m.relations++;
  }
  t += "</osm>\n";
  return m;
}

// The lines a reader must find in a synthetic map: the live ways with a type.
inline std::vector<const SynthWay*> synthetic_lines(const SynthOsm& m) {
  std::vector<const SynthWay*> out;
  for (const auto& w : m.ways)
    if (!w.deleted && !w.category.empty()) out.push_back(&w);
  return out;
}

}  // namespace sl::test
