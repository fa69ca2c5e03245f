#!/usr/bin/env python3
"""Keeps the first K point records of an uncompressed LAS 1.0-1.3 file, byte for byte.

Usage: cut_las.py IN.las OUT.las K

Everything before the point data (the header, its VLRs, any bytes up to the offset to point
data) is copied unchanged, then the first K records; nothing follows them (the file must end at
its last point record: no EVLRs, no waveform data). Patched in the header, and nothing else:
  - the legacy point count (byte 107) to K;
  - the five point-by-return counts (bytes 111-130) counted from the kept records' return
    numbers (formats 0-5: bits 0-2 of byte 14);
  - the max/min x, y, z (bytes 179-226) to X * scale + offset (Python doubles, as the writer
    computed them: the original header holds exactly that for the whole file) of the kept records'
    largest and smallest X, Y, Z.
"""
import struct
import sys

src, dst, keep = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = bytearray(open(src, "rb").read())
assert d[:4] == b"LASF" and d[24] == 1 and d[25] <= 3, "LAS 1.0-1.3 only"
fmt = d[104]
assert fmt <= 5, "uncompressed point formats 0-5 only"
at, = struct.unpack_from("<I", d, 96)
rec, = struct.unpack_from("<H", d, 105)
n, = struct.unpack_from("<I", d, 107)
assert len(d) == at + n * rec, "the file must end at its last point record"
assert 0 < keep <= n
scale = struct.unpack_from("<3d", d, 131)
offset = struct.unpack_from("<3d", d, 155)
xyz = [struct.unpack_from("<3i", d, at + i * rec) for i in range(keep)]
by_return = [0] * 5
for i in range(keep):
    r = d[at + i * rec + 14] & 7
    if 1 <= r <= 5:
        by_return[r - 1] += 1
out = d[: at + keep * rec]
struct.pack_into("<I", out, 107, keep)
struct.pack_into("<5I", out, 111, *by_return)
for a in range(3):
    hi = max(p[a] for p in xyz) * scale[a] + offset[a]
    lo = min(p[a] for p in xyz) * scale[a] + offset[a]
    struct.pack_into("<2d", out, 179 + 16 * a, hi, lo)
open(dst, "wb").write(out)
