#!/usr/bin/env bash
# The real-map checks of issue 23 on a map that is not in the repository (Lanelet2's own
# lanelet2_io/test/test_data/mapping_example.osm; its license is unclear to us):
#   tests/io/maps/check_real_map.sh MAP.osm COUNTS.txt [BUILD_DIR]
# COUNTS.txt: the map's elements counted by another reader (Python's ElementTree), in the layout
# tests/train/real_map_test.cpp reads. Needs osmium-tool, libxml2-utils (xmllint) and python3.
#  1. osmium export writes the map as GeoJSON (another tool's GeoJSON);
#  2. RealLanelet2Map.* (tests/train/real_map_test.cpp) on both, keeping the written maps;
#  3. the written maps checked by tools that are not ours: cmp (zero refinement: the same bytes),
#     xmllint (well-formed XML), osmium diff (which OSM objects changed), and for GeoJSON a
#     feature-by-feature comparison in Python (the same features and properties; which moved).
set -euo pipefail
map=$(realpath "$1")
counts=$(realpath "$2")
build=$(realpath "${3:-build}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
osmium export "$map" -o "$out/export.geojson" -f geojson --overwrite
SL_REAL_LANELET2_MAP="$map" SL_REAL_LANELET2_COUNTS="$counts" SL_REAL_LANELET2_GEOJSON="$out/export.geojson" \
  SL_REAL_LANELET2_OUT="$out" "$build/sl_tests" --gtest_filter='RealLanelet2Map.*' --gtest_brief=1
echo "== zero refinement: the same bytes"
cmp "$map" "$out/zero_map.osm" && echo "map.osm: identical"
cmp "$out/export.geojson" "$out/zero_map.geojson" && echo "export.geojson: identical"
for f in zero_map left_map trained; do
  echo "== $f.osm"
  xmllint --noout "$out/$f.osm" && echo "xmllint: well-formed"
  (osmium diff -c -s "$map" "$out/$f.osm" 2>&1 >/dev/null || true) | tail -1  # exit 1: the files differ
done
echo "== trained.osm: what infer reports"
cat "$out/trained_report.txt"
echo "== left_map.geojson against the export"
python3 - "$out/export.geojson" "$out/left_map.geojson" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["features"]
b = json.load(open(sys.argv[2]))["features"]
assert len(a) == len(b), "feature count"
moved = {}
for fa, fb in zip(a, b):
    assert fa["properties"] == fb["properties"] and fa["geometry"]["type"] == fb["geometry"]["type"]
    if fa["geometry"] != fb["geometry"]:
        cat = fa["properties"].get("type", "") + (":" + fa["properties"]["subtype"] if "subtype" in fa["properties"] else "")
        moved[cat] = moved.get(cat, 0) + 1
print(f"{len(a)} features, same properties and geometry types; features moved by category: {moved}")
EOF
