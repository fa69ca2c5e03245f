// safetensors (https://github.com/huggingface/safetensors): 8-byte little-endian header size N,
// N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {str: str}} (trailing spaces allowed), then the raw little-endian data; offsets are relative to
// the data start. Tensors are written in name order (std::map) so identical content gives
// identical bytes; the header is padded with spaces to a multiple of 8 so data is aligned.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sl {

struct StTensor {
  std::string dtype;           // "F32", "F64", "I32", "I64"
  std::vector<int64_t> shape;  // [] is a scalar (1 element)
  std::string_view bytes;      // a VIEW: into StFile::storage after a read, or caller memory
};

struct StFile {
  std::map<std::string, StTensor> tensors;
  std::map<std::string, std::string> metadata;
  std::shared_ptr<const std::string> storage;  // owns the bytes of a file that was read
};

// Reads and validates the whole file (one copy: the file itself). Throws sl::Error
// "<path>: <reason>" for: file shorter than 8 bytes, header size beyond the file, invalid
// JSON, a non-object entry, unknown dtype, bad shape, offsets out of range / overlapping /
// leaving holes / not matching dtype*shape, non-string metadata, trailing bytes.
StFile read_safetensors(const std::string& path);
// Writes atomically (sl::write_file_atomic) without concatenating the tensor bytes.
// Throws sl::Error naming the path for an unknown dtype or a size that does not match the shape.
void write_safetensors(const std::string& path, const StFile& file);

size_t st_dtype_size(const std::string& dtype);  // 0 when unknown
int64_t st_numel(const std::vector<int64_t>& shape);

inline StTensor st_view_f32(const float* data, std::vector<int64_t> shape) {
  const int64_t n = st_numel(shape);
  return {"F32", std::move(shape),
          std::string_view(reinterpret_cast<const char*>(data), size_t(n) * sizeof(float))};
}

}  // namespace sl
