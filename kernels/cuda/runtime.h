// The thin CUDA layer under the backend-neutral code: device memory, streams, events, the
// step's CUDA graph and the cuBLAS handle. Plain C++ header (streams and events travel as
// void*), so any file may include it; the definitions exist only in builds with CUDA
// (SL_WITH_CUDA) and every call is made under that guard; only the destructors of StepGraph
// and Blas exist in every build (objects that own them need them to link; they are never
// constructed without CUDA). Errors throw sl::Error naming the
// call, file and line (kernels/cuda/cuda_check.h), never exit().
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace sl::cuda {

// ---- memory -------------------------------------------------------------------------------
void* device_alloc(int device, size_t bytes, const std::string& what);  // zero-filled, waits
void device_free(int device, void* p) noexcept;
enum class Copy { HostToDevice, DeviceToHost, DeviceToDevice };
void memcpy_async(void* dst, const void* src, size_t bytes, Copy kind, void* stream);
void memset_async(void* p, size_t bytes, void* stream);
// Page-locked host memory (cudaHostAlloc), for copies the host polls for.
void* pinned_alloc(size_t bytes);
void pinned_free(void* p) noexcept;
// Bytes free and total on `device` (cudaMemGetInfo).
void mem_info(int device, size_t* free_bytes, size_t* total_bytes);

// ---- streams and events ---------------------------------------------------------------------
void* stream_create(int device);  // a non-blocking stream
void stream_destroy(int device, void* stream) noexcept;
void stream_sync(void* stream);
void stream_sync_noexcept(void* stream) noexcept;  // for destructors: errors ignored
void* event_create(int device);  // timing disabled
void event_destroy(int device, void* event) noexcept;
void event_record(void* event, void* stream);
bool event_done(void* event);   // cudaEventQuery, non-blocking
void event_sync(void* event);
void stream_wait_event(void* stream, void* event);  // GPU-side wait, the host does not block
void set_device(int device);

// ---- the step's CUDA graph ------------------------------------------------------------------
// One captured sequence of work, replayed with one launch. run() executes `enqueue` plainly
// while warming up (the first call: modules load, cuBLAS picks its kernels), captures it on the
// second call (thread-local capture mode: other threads may keep using CUDA meanwhile) and
// launches the graph from then on; reset() drops the graph (e.g. after a precision change).
class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  void run(void* stream, const std::function<void()>& enqueue);
  void reset() noexcept;
  bool captured() const { return exec_ != nullptr; }
  int64_t launches() const { return launches_; }

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
  bool warmed_ = false;
  int64_t launches_ = 0;
};

// ---- cuBLAS -----------------------------------------------------------------------------------
// One GEMM (or GEMV) as issued, row-major like sl::gemm; the GEMM-floor benchmark replays them.
struct GemmShape {
  bool gemv = false;  // a column sum: y[M] += A[K, M]^T ones[K] (N = 1)
  bool ta = false, tb = false;
  int M = 0, N = 0, K = 0;
};

// One cuBLAS handle with its own explicit workspace (so graph capture never allocates).
// Not thread-safe: one Blas per thread / per model.
class Blas {
 public:
  Blas(int device, Precision precision);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  // Route the following calls to `stream` (cublasSetStream, then cublasSetWorkspace again:
  // cublasSetStream resets the workspace to cuBLAS's own pool).
  void bind(void* stream);
  void set_precision(Precision p);
  Precision precision() const { return precision_; }
  // Row-major C[M,N] = alpha op(A)[M,K] op(B)[K,N] + beta C (the contract of sl::gemm).
  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
  // y[C] += sum over rows of d[rows, C] (row stride ldd), a GEMV with `ones` (>= rows floats).
  void column_sum_acc(float* y, const float* d, int64_t ldd, const float* ones, int64_t rows, int C);
  // When non-null, every gemm / column_sum_acc appends its shape here.
  std::vector<GemmShape>* record = nullptr;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Precision precision_;
};

// cuBLAS's workspace, set explicitly so that graph capture never allocates; 32 MiB is NVIDIA's
// recommendation for Hopper.
inline constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

}  // namespace sl::cuda
