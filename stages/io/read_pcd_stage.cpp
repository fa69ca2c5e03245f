// read_pcd: a PCD file (ascii, binary, binary_compressed; v0.5/v0.7) decoded into x y z
// intensity, with the file's fields chosen by name (formats/clouds/pcd.h); through the scene cache.
#include "stages/io/cloud_reader.h"
#include "formats/clouds/pcd.h"

namespace sl {
namespace {

class ReadPcd : public CloudReader {
 public:
  explicit ReadPcd(const Params& p) : CloudReader(p) {
    opt_.fields = p.get_strings("fields");
    if (opt_.fields.size() != 4) fail(p.where("fields"), "expected 4 field names (mapped to x, y, z, intensity)");
    if (!p.is_null("missing_intensity")) opt_.missing_default = (float)p.get_float("missing_intensity");
  }

 protected:
  PointCloud decode(const std::string& path, const DecodeOptions& d, DecodeInfo* info) override {
    PcdReadOptions opt = opt_;
    opt.drop_nan = d.drop_nan;
    opt.origin = d.origin;
    return read_pcd(path, opt, nullptr, info);
  }

 private:
  PcdReadOptions opt_;
};

void register_read_pcd(StageRegistry& r) {
  ParamSpec missing{"missing_intensity", ParamType::Float, "null",
                    "value for the 4th field when a file lacks it (null: such a file is an error)"};
  missing.nullable = true;
  r.add(reader_schema(
      "read_pcd", "decodes a PCD file (ascii, binary, binary_compressed; v0.5/v0.7) into x y z intensity",
      {p_strings("fields", {"x", "y", "z", "intensity"}, "the 4 file fields read as x, y, z, intensity"), missing},
      [](const Params& p) { return std::make_unique<ReadPcd>(p); }));
}

SL_REGISTER_STAGES(register_read_pcd);

}  // namespace
}  // namespace sl
