// A LAZ writer for tests only: compresses the points of a LAS file to the LASzip format
// (point-wise items version 2 for formats 0-5 -- WAVEPACKET13 version 1, LASzip's only one --,
// layered items version 3 for formats 6-10, extra bytes as BYTE / BYTE14), with fixed or variable chunks and a chunk table that can be left
// out or moved, so the decoder (formats/clouds/laz.h) is tested on files of every point format
// and layout. Its output is checked against an independent decoder (laz-perf, from the npm
// registry) when the fixtures are made: a file it writes is not trusted because our own
// decoder reads it back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sl::test {

struct LazWriteOptions {
  int compressor = 0;                  // 0: by the format (2 for 0-5, 3 for 6-10); 1, 2 or 3
  uint32_t chunk_size = 50000;         // points per chunk; 0xFFFFFFFF: variable, `chunk_points` gives them
  std::vector<uint32_t> chunk_points;  // variable chunks' point counts (adding up to the point count)
  int layered_version = 3;  // the layered items' version: 3, or 4 (LASzip 3.4's scanner-channel contexts)
  // COPC: the "copc" info VLR first, and a hierarchy EVLR with one node per chunk (LAS 1.4,
  // formats 6-8, variable chunks); copc.js reads such a file node by node.
  bool copc = false;
  enum class Table { kNormal, kNone, kAtEnd } table = Table::kNormal;  // kNone: offset 0; kAtEnd: -1, offset in the last 8 bytes
};

// The LAZ file holding the points of the LAS file `las` (its header, VLRs and EVLRs kept; the
// point format's bit 7 set and a "laszip encoded" VLR added). Throws std::runtime_error.
std::string laz_from_las(const std::string& las, const LazWriteOptions& opt = {});

}  // namespace sl::test
