// read_cloud: a cloud of any format of the table (formats/clouds/formats.h) decoded into x y z
// intensity -- the one named, or each file's own by its extension; through the scene cache.
// read_kitti_bin is the same stage with the KITTI format fixed (kept for existing pipelines).
#include "stages/io/cloud_reader.h"
#include "formats/clouds/formats.h"

namespace sl {
namespace {

// A format of the table: the one named, or each file's own (by its extension).
class ReadCloud : public CloudReader {
 public:
  ReadCloud(const Params& p, const std::string& format) : CloudReader(p) {
    if (format != "auto") format_ = &cloud_format(format, p.where("format"));
  }

 protected:
  PointCloud decode(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) override {
    return format_ ? format_->decode(path, opt, info) : read_cloud_file(path, opt, info);
  }

 private:
  const CloudFormat* format_ = nullptr;
};

void register_read_cloud(StageRegistry& r) {
  std::vector<std::string> formats = cloud_format_names();
  formats.insert(formats.begin(), "auto");
  r.add(reader_schema("read_cloud", "decodes a cloud of any format (formats/clouds/formats.h) into x y z intensity",
                      {p_string("format", "auto", "the cloud format (auto: each file's own, by its extension)", formats)},
                      [](const Params& p) { return std::make_unique<ReadCloud>(p, p.get_string("format")); }));
  r.add(reader_schema("read_kitti_bin", "decodes a KITTI velodyne .bin file (N x 4 float32: x y z reflectance)", {},
                      [](const Params& p) { return std::make_unique<ReadCloud>(p, "bin"); }));
}

SL_REGISTER_STAGES(register_read_cloud);

}  // namespace
}  // namespace sl
