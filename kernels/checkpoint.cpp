#include "kernels/checkpoint.h"

#include <charconv>
#include <cstring>

#include "graph/error.h"
#include "kernels/safetensors.h"

namespace sl {

namespace {
const char* kExpAvg = "adam.exp_avg.";
const char* kExpAvgSq = "adam.exp_avg_sq.";

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}
}  // namespace

void save_checkpoint(const std::string& path, const LineRefiner& model, const Adam* adam,
                     const std::map<std::string, std::string>& metadata) {
  if (adam && adam->size() != model.num_params())
    fail(path, "Adam state has " + std::to_string(adam->size()) + " elements, model has " +
                   std::to_string(model.num_params()));
  StFile f;
  f.metadata = metadata;
  f.metadata["format"] = "streamline.line_refiner.v1";
  // Host copies of the state, on whichever backend it lives (CUDA: waits for the model).
  const OpContext& c = model.context();
  std::vector<float> params(model.num_params()), m, v;
  model.download_params(params.data());
  if (adam) {
    f.metadata["adam.step"] = std::to_string(adam->step_count(c));
    m = adam->exp_avg(c);
    v = adam->exp_avg_sq(c);
  } else {
    f.metadata.erase("adam.step");
  }
  for (const ParamInfo& p : model.params()) {
    f.tensors[p.name] = st_view_f32(params.data() + p.offset, p.shape);
    if (adam) {
      f.tensors[kExpAvg + p.name] = st_view_f32(m.data() + p.offset, p.shape);
      f.tensors[kExpAvgSq + p.name] = st_view_f32(v.data() + p.offset, p.shape);
    }
  }
  write_safetensors(path, f);
}

void load_checkpoint(const std::string& path, LineRefiner& model, Adam* adam,
                     std::map<std::string, std::string>* metadata_out) {
  load_checkpoint(read_safetensors(path), path, model, adam, metadata_out);
}

void load_checkpoint(const StFile& f, const std::string& path, LineRefiner& model, Adam* adam,
                     std::map<std::string, std::string>* metadata_out) {
  auto need = [&](const std::string& name, const ParamInfo& p) -> const StTensor& {
    auto it = f.tensors.find(name);
    if (it == f.tensors.end())
      fail(path, "missing tensor '" + name + "' (checkpoint of another model?)");
    const StTensor& t = it->second;
    if (t.dtype != "F32")
      fail(path, "tensor '" + name + "' has dtype " + t.dtype + ", expected F32");
    if (t.shape != p.shape)
      fail(path, "tensor '" + name + "' has shape " + shape_str(t.shape) + ", the model expects " +
                     shape_str(p.shape) + " (checkpoint of a model with other widths?)");
    return t;
  };
  // validate everything first
  for (const auto& [name, t] : f.tensors) {
    std::string base = name;
    if (name.rfind(kExpAvgSq, 0) == 0) base = name.substr(std::strlen(kExpAvgSq));
    else if (name.rfind(kExpAvg, 0) == 0) base = name.substr(std::strlen(kExpAvg));
    bool known = false;
    for (const ParamInfo& p : model.params()) known = known || p.name == base;
    if (!known)
      fail(path, "unexpected tensor '" + name + "' (checkpoint of a model with other layers?)");
  }
  int64_t step = 0;
  if (adam) {
    if (adam->size() != model.num_params())
      fail(path, "the Adam given has " + std::to_string(adam->size()) + " elements, model has " +
                     std::to_string(model.num_params()));
    auto it = f.metadata.find("adam.step");
    if (it == f.metadata.end()) fail(path, "no Adam state (metadata 'adam.step' missing)");
    const std::string& v = it->second;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), step);
    if (ec != std::errc() || ptr != v.data() + v.size() || step < 0)
      fail(path, "metadata 'adam.step' is not a non-negative integer: '" + v + "'");
  }
  for (const ParamInfo& p : model.params()) {
    need(p.name, p);
    if (adam) need(kExpAvg + p.name, p), need(kExpAvgSq + p.name, p);
  }
  // then copy (host staging, then one upload per buffer to the model's backend)
  std::vector<float> params(model.num_params()), m, v;
  if (adam) m.resize(params.size()), v.resize(params.size());
  for (const ParamInfo& p : model.params()) {
    std::memcpy(params.data() + p.offset, need(p.name, p).bytes.data(), p.numel * 4);
    if (adam) {
      std::memcpy(m.data() + p.offset, need(kExpAvg + p.name, p).bytes.data(), p.numel * 4);
      std::memcpy(v.data() + p.offset, need(kExpAvgSq + p.name, p).bytes.data(), p.numel * 4);
    }
  }
  model.upload_params(params.data());
  if (adam) adam->load(model.context(), m.data(), v.data(), step);
  if (metadata_out) *metadata_out = f.metadata;
}

}  // namespace sl
