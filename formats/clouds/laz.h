// LAZ (LASzip-compressed LAS) and COPC point data, decoded here to the LASzip format (no
// LASzip, laz-perf or PDAL is packaged for Debian 12). The output is what the LAS file would
// hold: the point records, byte for byte.
//
// A LAZ file is a LAS file whose point format byte has bit 7 (or 6) set and which carries a
// "laszip encoded" VLR (record 22204, parsed into LazInfo): the compressor, and the items a
// point record is made of (POINT10, GPSTIME11, RGB12, BYTE for LAS 1.0-1.3 formats 0-5;
// POINT14, RGB14, RGBNIR14, WAVEPACKET14, BYTE14 for LAS 1.4 formats 6-10), each with the
// version of its coding. The point data is cut into chunks (50,000 points by default; COPC: one chunk per
// octree node, of variable size) that decode independently: a chunk starts with its first
// record raw, then
//  - point-wise (compressor 1 and 2; items version 1 and 2): one arithmetic-coded stream in
//    which every item of a point follows the previous one;
//  - layered (compressor 3; items version 3): the point count, the byte count of every layer,
//    then the layers (x/y and returns, z, classification, flags, intensity, scan angle, user
//    data, point source, GPS time, RGB, NIR, each extra byte), each its own arithmetic-coded
//    stream; a point's attributes are predicted per scanner channel (four contexts). The items
//    after POINT14 (RGB14, RGBNIR14, BYTE14) get the channel as their context: in version 3
//    only on a point whose channel changed, channel 0 on the others (LASzip's reader starts
//    every point from context 0, as laz-perf and laz-rs do), and a switch to a channel seen
//    before keeps predicting from the previous channel's values; version 4 (LASzip 3.4) gives
//    them the current channel and switches the values too.
// Chunked data (compressor 2 and 3) begins with the 8-byte offset of the chunk table, which
// holds (integer-compressed) every chunk's byte count, and, for variable chunks, its point
// count. A table that is missing (offset 0 or the offset's own position, as left by an
// interrupted writer; -1 means "in the last 8 bytes of the file") or unreadable is, as LASzip
// does, replaced by walking the chunks one after the other when they have a fixed size, and
// refused when their sizes vary.
//
// Every failure is an sl::Error "<path>: chunk N: byte B: <reason>" ("<path>: byte B: ..." for
// the VLR and the table): a stream that runs out of its chunk's (or layer's) bytes, a stream
// the arithmetic decoder cannot have come from, a table pointing outside the file, counts that
// cannot fit the bytes they are given. Every count is checked against the bytes of the file
// before anything is allocated, no read leaves the given bytes and every loop consumes input.
//
// Wave packets: in formats 9 and 10 (WAVEPACKET14, a layer of its own) the layer is skipped, as
// LASzip's selective decompression does, and each record keeps its chunk's first point's 29
// wave packet bytes (everything else decodes exactly); in formats 4 and 5 (WAVEPACKET13, inside
// the point-wise stream, version 1 only) they are decoded with the rest of the point. Checked
// against other decoders (laz-perf, copc.js; tests/formats/clouds/fixtures): point-wise items
// version 2 and layered version 3. The point-wise items of version 1 (LASzip 1.x, 2011) and the
// layered ones of version 4 follow LASzip's source; no file of those was at hand, nor a decoder
// here that reads them, to check them against. WAVEPACKET13: no file from another tool either;
// the test writer's format 4/5 files decode to their LAS twins with a decoder transcribed from
// laz-rs (outside the repository) as with this one.
//
// Used by the LAS reader (formats/clouds/las.h: read_las, las_laz), which decodes the chunks of
// the chunk table on all threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sl {

// The item types of the LASzip VLR.
enum LazItemType : uint16_t {
  kLazByte = 0,
  kLazPoint10 = 6,
  kLazGpsTime11 = 7,
  kLazRgb12 = 8,
  kLazWavePacket13 = 9,
  kLazPoint14 = 10,
  kLazRgb14 = 11,
  kLazRgbNir14 = 12,
  kLazWavePacket14 = 13,
  kLazByte14 = 14,
};

struct LazItem {
  uint16_t type = 0, size = 0, version = 0;
};

// The "laszip encoded" VLR (user id kLazVlrUser, record kLazVlrRecord).
struct LazInfo {
  uint16_t compressor = 0;  // 0 none, 1 point-wise, 2 point-wise chunked, 3 layered chunked
  uint16_t coder = 0;       // 0 arithmetic (the only one)
  uint8_t version_major = 0, version_minor = 0;
  uint16_t version_revision = 0;
  uint32_t options = 0;
  uint32_t chunk_size = 0;  // points per chunk; 0xFFFFFFFF (or 0): variable, the chunk table gives each
  int64_t special_evlr_count = -1, special_evlr_offset = -1;
  std::vector<LazItem> items;

  bool chunked() const { return compressor == 2 || compressor == 3; }
  bool variable_chunks() const { return chunk_size == 0xFFFFFFFFu || chunk_size == 0; }
};

inline constexpr char kLazVlrUser[] = "laszip encoded";
inline constexpr uint16_t kLazVlrRecord = 22204;

// Parses the VLR's payload (found at byte `at` of the file). Throws sl::Error "<path>: byte B: ...".
LazInfo parse_laz_vlr(const char* payload, size_t size, const std::string& path, uint64_t at);

// The name of an item type ("POINT10", ...; "item type N" for an unknown one).
std::string laz_item_name(uint16_t type);

// Checks that the items make up a record of `point_format` and `record_length` bytes (the
// format's items in order, then extra bytes as BYTE / BYTE14), that every item's version is
// decoded here and that the compressor and coder are known. `at`: the VLR's payload offset.
void check_laz_items(const LazInfo& info, int point_format, uint16_t record_length, const std::string& path,
                     uint64_t at);

// A chunk: `points` records from point `first_point`, in bytes [start, end) of the file.
struct LazChunk {
  uint64_t first_point = 0, points = 0;
  uint64_t start = 0, end = 0;
};

// Where the chunks of a file lie. Chunks [0, tabled) have known byte ranges and decode
// independently (in parallel); the others, when the chunk table is missing or ends early,
// follow each other: chunk k starts where chunk k-1's data ended (decode_laz_chunk returns
// it), and its `start` here is only right for the first of them; their `end` is `data_end`.
struct LazChunks {
  std::vector<LazChunk> chunks;  // their points add up to the requested count
  size_t tabled = 0;
  uint64_t data_end = 0;         // where the compressed points end at the latest
};

// The chunk list for `points` points whose data starts at `point_offset` and ends at the latest
// at `data_end` (the start of the EVLRs, or the end of the file). Reads the chunk table of
// compressor 2 and 3 (compressor 1: one chunk). Throws sl::Error naming the chunk and byte.
LazChunks laz_chunks(const char* file, size_t size, const LazInfo& info, uint64_t point_offset, uint64_t points,
                     uint16_t record_length, uint64_t data_end, const std::string& path);

// Decodes one chunk a block of records at a time (memory bounded whatever the chunk claims).
// Needs check_laz_items to have passed. Chunks decode concurrently, each with its own decoder.
class LazChunkDecoder {
 public:
  LazChunkDecoder(const char* file, size_t size, const LazInfo& info, const LazChunk& chunk, size_t index,
                  uint16_t record_length, const std::string& path);
  ~LazChunkDecoder();
  LazChunkDecoder(const LazChunkDecoder&) = delete;
  LazChunkDecoder& operator=(const LazChunkDecoder&) = delete;

  // The chunk's next `n` records into `out` (n * record_length bytes). Throws sl::Error.
  void read(uint8_t* out, uint64_t n);
  // The byte after the data read so far (once every record is read: where the chunk's data ends).
  uint64_t end() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Decodes chunk `index` (`chunk.points` records) into `out` (chunk.points * record_length
// bytes). Returns the byte after the chunk's data. Needs check_laz_items to have passed.
// Thread-safe: chunks decode concurrently. Throws sl::Error "<path>: chunk N: byte B: ...".
uint64_t decode_laz_chunk(const char* file, size_t size, const LazInfo& info, const LazChunk& chunk, size_t index,
                          uint16_t record_length, uint8_t* out, const std::string& path);

// Every point in order, chunk by chunk: sink(first point, count, records).
using LazSink = std::function<void(uint64_t first, uint64_t count, const uint8_t* records)>;
void decode_laz(const char* file, size_t size, const LazInfo& info, uint64_t point_offset, uint64_t points,
                uint16_t record_length, uint64_t data_end, const std::string& path, const LazSink& sink);

}  // namespace sl
