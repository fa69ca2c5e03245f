// Device memory layout of the CUDA LineRefiner, computed without CUDA so that the memory plan
// (stages/device/memory_plan.h) and the CUDA code allocate from the SAME numbers.
//
// Per (B, P, L) the CUDA model owns ONE activation allocation carved into the buffers below
// (offsets in floats, each buffer aligned to kWorkspaceAlignFloats). int32 buffers (argmax)
// take float-sized slots. Names and shapes (NP = B*P rows of points, NL = B*L rows of line points,
// G = encoder.back(), F = line_mlp.back()):
//   input.context [NP, in]   input.noisy_line [NL, line]   input.target_offset [NL, out]
//   enc.act.i   [NP, encoder[i]]  for every encoder layer but the last (post-ReLU, saved)
//   enc.pre_max [NP, G]           last encoder layer before bias/ReLU/max (dense GEMM output)
//   global [B, G]  argmax [B, G] (int32)
//   line.act.i  [NL, line_mlp[i]]   cat [NL, G+F]   reg.act.i [NL, regressor[i]] and the output
//   enc.grad.i  [NP, encoder[i]]  (dense; only argmax rows are non-zero for the last one)
//   dglobal [B, G]  line.grad.i  dcat [NL, G+F]  reg.grad.i   ones [max(NP, NL)] (bias grads)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/model.h"

namespace sl {

inline constexpr size_t kWorkspaceAlignFloats = 64;  // 256 bytes
// cuBLAS workspace set explicitly (cublasSetWorkspace) so that graph capture never allocates;
// 32 MiB is NVIDIA's recommendation for Hopper.
inline constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
// Small device state: loss sum (double), loss count, last loss, Adam step t (int64),
// Adam step size and sqrt(bias correction 2). Padded.
inline constexpr size_t kDeviceStateBytes = 256;

struct WorkspaceBuffer {
  std::string name;
  size_t offset, floats;  // in floats from the start of the activation allocation
};

struct WorkspaceLayout {
  std::vector<WorkspaceBuffer> buffers;
  size_t total_floats = 0;
  const WorkspaceBuffer& at(const std::string& name) const;  // throws sl::Error if unknown
  size_t bytes() const { return total_floats * sizeof(float); }
};

// Throws sl::Error for a bad config or non-positive B, P, L.
WorkspaceLayout cuda_workspace_layout(const ModelConfig& cfg, int B, int P, int L);

// Floats of one batch's three input tensors (context, noisy_line, target_offset).
size_t batch_input_floats(const ModelConfig& cfg, int B, int P, int L);

// Number of parameters (= floats of params, of grads, of each Adam moment).
size_t num_model_params(const ModelConfig& cfg);

}  // namespace sl
