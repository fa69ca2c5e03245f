#include "kernels/cuda/workspace_layout.h"

#include <algorithm>

#include "graph/error.h"

namespace sl {

const WorkspaceBuffer& WorkspaceLayout::at(const std::string& name) const {
  for (const WorkspaceBuffer& b : buffers)
    if (b.name == name) return b;
  fail("cuda workspace", "no buffer named '" + name + "'");
}

size_t num_model_params(const ModelConfig& cfg) {
  const std::vector<ParamInfo> t = make_param_table(cfg);  // validates the config
  return t.back().offset + t.back().numel;
}

size_t batch_input_floats(const ModelConfig& cfg, int B, int P, int L) {
  return size_t(B) * P * cfg.in_channels + size_t(B) * L * cfg.line_channels +
         size_t(B) * L * cfg.out_channels;
}

WorkspaceLayout cuda_workspace_layout(const ModelConfig& cfg, int B, int P, int L) {
  (void)num_model_params(cfg);
  if (B <= 0 || P <= 0 || L <= 0) fail("cuda workspace", "B, P and L must be positive");
  const size_t NP = size_t(B) * P, NL = size_t(B) * L;
  const size_t G = size_t(cfg.encoder.back()), F = size_t(cfg.line_mlp.back());
  WorkspaceLayout w;
  auto add = [&](const std::string& name, size_t floats) {
    w.buffers.push_back({name, w.total_floats, floats});
    w.total_floats += (floats + kWorkspaceAlignFloats - 1) / kWorkspaceAlignFloats *
                      kWorkspaceAlignFloats;
  };
  add("input.context", NP * cfg.in_channels);
  add("input.noisy_line", NL * cfg.line_channels);
  add("input.target_offset", NL * cfg.out_channels);
  const size_t nE = cfg.encoder.size();
  for (size_t i = 0; i + 1 < nE; ++i) add("enc.act." + std::to_string(i), NP * cfg.encoder[i]);
  add("enc.pre_max", NP * G);
  add("global", size_t(B) * G);
  add("argmax", size_t(B) * G);
  for (size_t i = 0; i < cfg.line_mlp.size(); ++i)
    add("line.act." + std::to_string(i), NL * cfg.line_mlp[i]);
  add("cat", NL * (G + F));
  std::vector<int> reg = cfg.regressor;
  reg.push_back(cfg.out_channels);
  for (size_t i = 0; i < reg.size(); ++i) add("reg.act." + std::to_string(i), NL * reg[i]);
  for (size_t i = 0; i + 1 < nE; ++i) add("enc.grad." + std::to_string(i), NP * cfg.encoder[i]);
  add("dglobal", size_t(B) * G);
  for (size_t i = 0; i < cfg.line_mlp.size(); ++i)
    add("line.grad." + std::to_string(i), NL * cfg.line_mlp[i]);
  add("dcat", NL * (G + F));
  for (size_t i = 0; i < reg.size(); ++i) add("reg.grad." + std::to_string(i), NL * reg[i]);
  add("ones", std::max(NP, NL));
  return w;
}

}  // namespace sl
