// Writes one training step of the default LineRefiner (weights, inputs, loss, prediction,
// gradients) to a safetensors file that bench/check_pytorch_parity.py compares with PyTorch.
// Usage: parity_dump <out.safetensors> [B=4] [P=256] [L=8]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"

using namespace sl;

int main(int argc, char** argv) {
  ensure_blas_env(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: parity_dump <out.safetensors> [B] [P] [L]\n");
    return 2;
  }
  const int B = argc > 2 ? std::atoi(argv[2]) : 4, P = argc > 3 ? std::atoi(argv[3]) : 256,
            L = argc > 4 ? std::atoi(argv[4]) : 8;
  LineRefiner m(ModelConfig{}, 42);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> ctx(size_t(B) * P * 4), line(size_t(B) * L * 3), tgt(size_t(B) * L * 3);
  for (auto& x : ctx) x = u(rng);
  for (auto& x : line) x = u(rng);
  for (auto& x : tgt) x = u(rng);
  float loss = m.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L);
  std::vector<float> pred(m.last_prediction(), m.last_prediction() + tgt.size());
  StFile f;
  for (const ParamInfo& p : m.params()) {
    f.tensors[p.name] = st_view_f32(m.param_data() + p.offset, p.shape);
    f.tensors["grad." + p.name] = st_view_f32(m.grad_data() + p.offset, p.shape);
  }
  f.tensors["input.context"] = st_view_f32(ctx.data(), {B, P, 4});
  f.tensors["input.noisy_line"] = st_view_f32(line.data(), {B, L, 3});
  f.tensors["input.target_offset"] = st_view_f32(tgt.data(), {B, L, 3});
  f.tensors["output.pred"] = st_view_f32(pred.data(), {B, L, 3});
  f.tensors["output.loss"] = st_view_f32(&loss, {});
  write_safetensors(argv[1], f);
  std::printf("wrote %s (loss %.6f)\n", argv[1], loss);
  return 0;
}
