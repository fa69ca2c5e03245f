#!/bin/sh
# Remakes the fixtures in this folder (see README.md here): a small map from `streamline gen-data`
# (one scene; every 8th vertex of each line kept, and both ends), then the same map rewritten by
# GDAL's ogr2ogr and by osmium-tool. Needs build/streamline, python3, gdal-bin and osmium-tool;
# the tests only read the committed files.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
streamline=${STREAMLINE:-$here/../../../../build/streamline}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$streamline" gen-data "$tmp/gj" --format pcd --map geojson --train 1 --val 0 >/dev/null
"$streamline" gen-data "$tmp/ll" --format pcd --map lanelet2 --train 1 --val 0 >/dev/null
cd "$here"
rm -f gdal_* osmium_*
python3 - "$tmp/gj/map.geojson" "$tmp/ll/map.osm" <<'PY'
import json, re, sys
keep = lambda n: [i for i in range(n) if i % 8 == 0 or i == n - 1]
# GeoJSON: the same features with fewer positions, written as gen-data writes (one feature a line)
d = json.load(open(sys.argv[1]))
feats = []
for f in d["features"]:
    c = f["geometry"]["coordinates"]
    f["geometry"]["coordinates"] = [c[i] for i in keep(len(c))]
    feats.append(json.dumps(f))
open("source.geojson", "w").write('{"type": "FeatureCollection", "features": [\n' + ",\n".join(feats) + "\n]}\n")
# OSM: gen-data's text with the dropped nodes' elements and <nd> lines taken out (nothing else changes)
t = open(sys.argv[2]).read()
used = set()
for w in re.findall(r"<way .*?</way>", t, re.S):
    refs = re.findall(r'<nd ref="(\d+)"/>', w)
    used |= {refs[i] for i in keep(len(refs))}
t = re.sub(r'  <node id="(\d+)".*?</node>\n', lambda m: m.group(0) if m.group(1) in used else "", t, flags=re.S)
t = re.sub(r'    <nd ref="(\d+)"/>\n', lambda m: m.group(0) if m.group(1) in used else "", t)
open("source.osm", "w").write(t)
PY
# GDAL (ogr2ogr): the variants mapping tools write
ogr2ogr -f GeoJSON -lco RFC7946=YES -lco WRITE_BBOX=YES gdal_rfc7946_bbox.geojson source.geojson
ogr2ogr -f GeoJSON -lco RFC7946=YES -lco COORDINATE_PRECISION=9 gdal_rfc7946_p9.geojson source.geojson
ogr2ogr -f GeoJSON -t_srs EPSG:32632 gdal_utm32.geojson source.geojson
ogr2ogr -f GeoJSON -t_srs EPSG:32632 -lco COORDINATE_PRECISION=3 -lco WRITE_BBOX=YES gdal_utm32_p3_bbox.geojson source.geojson
ogr2ogr -f GeoJSON -dim XY gdal_2d.geojson source.geojson
ogr2ogr -f GeoJSON -nlt MULTILINESTRING gdal_multi.geojson source.geojson
ogr2ogr -f GeoJSONSeq gdal_seq.geojsonl source.geojson
ogr2ogr -f GeoJSONSeq -lco RS=YES gdal_seq_rs.geojsons source.geojson
# GDAL's OSM driver: the ways (category from other_tags by SQL) and the lanelet relations
# (GeometryCollections of their member ways)
ogr2ogr -f GeoJSON gdal_osm_lines.geojson source.osm -dialect SQLite \
  -sql "SELECT osm_id, hstore_get_value(other_tags, 'type') AS type, hstore_get_value(other_tags, 'subtype') AS subtype, geometry FROM lines"
ogr2ogr -f GeoJSON gdal_osm_relations.geojson source.osm other_relations
# osmium-tool: the Lanelet2 map rewritten (lat/lon to 7 decimals); with <bounds>; without version
osmium cat -f osm -o osmium_cat.osm source.osm
osmium extract -b 8.99,48.75,9.01,48.76 -s complete_ways --set-bounds -f osm -o osmium_extract_bounds.osm source.osm
osmium cat -f osm,add_metadata=false -o osmium_no_metadata.osm source.osm
