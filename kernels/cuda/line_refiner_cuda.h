// CudaLineRefiner: the LineRefiner (kernels/model.h) trained on one CUDA device.
// Plain C++ header (no CUDA types): streams are cudaStream_t passed as void*, device buffers are
// float*. Defined only in builds with CUDA (SL_WITH_CUDA); include it anywhere, call it only
// under #ifdef SL_WITH_CUDA.
//
// Memory: ONE device allocation each for params, grads, Adam exp_avg and exp_avg_sq (the flat
// layout of make_param_table, so checkpoints and the CPU model share it), a small state block
// (loss sum/count, Adam step t), a cuBLAS workspace, and per (B, P, L) one activation workspace
// (kernels/cuda/workspace_layout.h: also holds the fixed input buffers a CUDA graph reads).
//
// Streams and synchronisation (who waits when):
//  - step(), step_graph(), forward(), load_inputs() only ENQUEUE on the given stream; the host
//    never waits. The first use of a new (B, P, L) allocates its workspace (cudaMalloc: may
//    synchronise the device) -- do it once, before the hot loop, with prepare().
//  - upload_*/download_*/step_count() block the host until `stream` (and the copy) is done.
//  - read_loss_and_reset() blocks until `stream` reaches it; request_loss() + poll_loss() are
//    the non-blocking pair (an event polled with cudaEventQuery).
//  - One model is driven by one host thread at a time; the caller orders streams (the model
//    keeps no cross-stream dependencies of its own).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/adam.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/model.h"

namespace sl {

struct CudaModelOptions {
  int device = 0;
  std::string precision = "fp32";  // "fp32" | "tf32" (cuBLAS TF32 tensor-op math); no bf16
  AdamConfig adam;
};

class CudaLineRefiner {
 public:
  // init_params: make_param_table(cfg) layout, e.g. LineRefiner(cfg, seed).param_data(), so both
  // backends start identical. Adam moments start at zero, step count 0.
  CudaLineRefiner(const ModelConfig& cfg, const float* init_params, CudaModelOptions opt = {});
  ~CudaLineRefiner();
  CudaLineRefiner(CudaLineRefiner&&) noexcept;
  CudaLineRefiner& operator=(CudaLineRefiner&&) noexcept;

  const ModelConfig& config() const;
  size_t num_params() const;

  // ---- host <-> device state (each blocks until `stream` and the copy are done) -----------
  void upload_params(const float* host, void* stream = nullptr);
  void download_params(float* host, void* stream = nullptr);
  void download_grads(float* host, void* stream = nullptr);  // grads of the last step
  // Adam moments [num_params] each and the step count t (for checkpoints / resume).
  int64_t download_adam(float* exp_avg, float* exp_avg_sq, void* stream = nullptr);
  void upload_adam(const float* exp_avg, const float* exp_avg_sq, int64_t step,
                   void* stream = nullptr);
  int64_t step_count(void* stream = nullptr);
  // Changes the optimizer / GEMM precision; drops captured graphs (they bake both in).
  void set_adam(const AdamConfig& cfg);
  void set_precision(const std::string& precision);

  // ---- workspace and the fixed inputs of the CUDA graph -------------------------------------
  // Allocates (once) the workspace of this shape and makes it current. Synchronises.
  void prepare(int B, int P, int L);
  // Device buffers of the CURRENT shape (prepare / step_graph): context [B,P,in],
  // noisy_line [B,L,line], target_offset [B,L,out]. Stable for the model's lifetime.
  float* input_context();
  float* input_noisy();
  float* input_target();
  // Enqueues device-to-device copies of a batch into the current shape's inputs on `stream`.
  void load_inputs(const float* d_context, const float* d_noisy, const float* d_target, int B,
                   int P, int L, void* stream);

  // ---- training -------------------------------------------------------------------------------
  // One step on `stream`: forward, MSE loss (accumulated on the device), backward, Adam (t += 1
  // on the device). d_context [B,P,in], d_noisy [B,L,line], d_target [B,L,out]: device pointers
  // that must stay valid until the stream has run the step.
  void step(const float* d_context, const float* d_noisy, const float* d_target, int B, int P,
            int L, void* stream);
  // The same step reading input_context()/input_noisy()/input_target() of shape (B,P,L), as ONE
  // CUDA graph: the first call for a shape runs a plain step (warm-up: loads modules, lets cuBLAS
  // pick its kernels), the second captures the step once and launches it, later calls replay it.
  // Every call is exactly one training step. `stream` must not be the legacy null stream.
  void step_graph(int B, int P, int L, void* stream);

  // ---- inference ------------------------------------------------------------------------------
  // pred [B,L,out] into d_pred (device, nullable: then read prediction()).
  void forward(const float* d_context, const float* d_noisy, int B, int P, int L, float* d_pred,
               void* stream);
  const float* prediction() const;  // device [B,L,out] of the current shape's last forward

  // ---- loss -----------------------------------------------------------------------------------
  // Mean of the per-step losses since the last reset (NaN when no step ran), then resets the sum.
  // BLOCKS the host until every step enqueued on `stream` before it has run.
  float read_loss_and_reset(void* stream, int* steps = nullptr);
  // Non-blocking pair: request_loss enqueues the copy + reset and records an event; poll_loss
  // returns true (and the mean, step count) once the event completed. One request at a time.
  void request_loss(void* stream);
  bool poll_loss(float* mean, int* steps);

  // ---- introspection ----------------------------------------------------------------------------
  // GEMM/GEMV shapes issued by the last plain step() (for the GEMM-floor benchmark).
  const std::vector<cuda::GemmShape>& last_step_gemms() const;
  size_t device_bytes() const;  // everything this model allocated on the device

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sl
