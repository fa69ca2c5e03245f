// LZF (the liblzf format), the compression of PCD's binary_compressed data (formats/clouds/pcd.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sl {

// Decompresses in[0, in_size) into out[0, out_cap); returns the number of bytes written.
// Throws sl::Error (prefixed with `where`) on any malformed input: it never reads or writes
// outside the two buffers. `in_base_offset` is added to input offsets in error messages.
size_t lzf_decompress(const uint8_t* in, size_t in_size, uint8_t* out, size_t out_cap,
                      const std::string& where, size_t in_base_offset = 0);
// Compresses; the result decompresses to exactly the input. Never fails.
std::vector<uint8_t> lzf_compress(const uint8_t* in, size_t in_size);

}  // namespace sl
