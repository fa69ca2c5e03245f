// CUDA runtime and cuBLAS calls behind kernels/cuda/runtime.h. Plain C++ (no kernels); empty
// in builds without CUDA.
#ifdef SL_WITH_CUDA
#include "kernels/cuda/runtime.h"

#include <cstdio>

#include "kernels/cuda/cuda_check.h"

namespace sl::cuda {

namespace {
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
}  // namespace

// ---- memory -------------------------------------------------------------------------------
void* device_alloc(int device, size_t bytes, const std::string& what) {
  SL_CUDA_CHECK(cudaSetDevice(device));
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it: the caller reports, frees and may carry on
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f MiB", double(bytes) / (1 << 20));
    throw Error("cudaMalloc of " + std::string(mib) + " for " + what + " on cuda:" + std::to_string(device) +
                " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
  try {
    // The memset runs on the legacy default stream, which is not ordered with the engine's
    // non-blocking streams: without the wait, a first copy into the buffer on such a stream can
    // land before the zeros do, and be overwritten by them (seen on an H200: the op harness's
    // vector of ones, copied in on the row's stream, read back as zeros by the bias GEMV).
    SL_CUDA_CHECK(cudaMemset(p, 0, bytes));
    SL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  } catch (...) {
    cudaFree(p);
    throw;
  }
  return p;
}

void device_free(int device, void* p) noexcept {
  if (!p) return;
  cudaSetDevice(device);
  cudaFree(p);  // synchronizes the device: nothing queued can still touch p
}

void memcpy_async(void* dst, const void* src, size_t bytes, Copy kind, void* stream) {
  const cudaMemcpyKind k = kind == Copy::HostToDevice   ? cudaMemcpyHostToDevice
                           : kind == Copy::DeviceToHost ? cudaMemcpyDeviceToHost
                                                        : cudaMemcpyDeviceToDevice;
  SL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, k, as_stream(stream)));
}

void memset_async(void* p, size_t bytes, void* stream) {
  SL_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, as_stream(stream)));
}

void* pinned_alloc(size_t bytes) {
  void* p = nullptr;
  SL_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}

void pinned_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}

void mem_info(int device, size_t* free_bytes, size_t* total_bytes) {
  SL_CUDA_CHECK(cudaSetDevice(device));
  SL_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

// ---- streams and events ---------------------------------------------------------------------
void set_device(int device) { SL_CUDA_CHECK(cudaSetDevice(device)); }

void* stream_create(int device) {
  SL_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  SL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void stream_destroy(int device, void* stream) noexcept {
  if (!stream) return;
  cudaSetDevice(device);
  cudaStreamSynchronize(as_stream(stream));
  cudaStreamDestroy(as_stream(stream));
}

void stream_sync(void* stream) { SL_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream))); }

void stream_sync_noexcept(void* stream) noexcept {
  if (stream) cudaStreamSynchronize(as_stream(stream));
}

void* event_create(int device) {
  SL_CUDA_CHECK(cudaSetDevice(device));
  cudaEvent_t e = nullptr;
  SL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void event_destroy(int device, void* event) noexcept {
  if (!event) return;
  cudaSetDevice(device);
  cudaEventDestroy(as_event(event));
}

void event_record(void* event, void* stream) { SL_CUDA_CHECK(cudaEventRecord(as_event(event), as_stream(stream))); }

bool event_done(void* event) {
  const cudaError_t e = cudaEventQuery(as_event(event));
  if (e == cudaErrorNotReady) return false;
  SL_CUDA_CHECK(e);
  return true;
}

void event_sync(void* event) { SL_CUDA_CHECK(cudaEventSynchronize(as_event(event))); }

void stream_wait_event(void* stream, void* event) {
  SL_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0));
}

// ---- StepGraph ------------------------------------------------------------------------------
StepGraph::~StepGraph() { reset(); }

void StepGraph::reset() noexcept {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  exec_ = nullptr;
  warmed_ = false;
}

void StepGraph::run(void* stream, const std::function<void()>& enqueue) {
  if (!stream) throw Error("StepGraph: the legacy null stream cannot be captured; use a created stream");
  const cudaStream_t st = as_stream(stream);
  if (!exec_) {
    if (!warmed_) {
      enqueue();
      warmed_ = true;
      return;
    }
    // Thread-local: other threads of the engine (the copy ring, pinned allocations) keep using
    // CUDA while this thread captures; only this thread's unsafe calls would be refused.
    SL_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      cudaStreamEndCapture(st, &graph);  // leave the stream usable; the first error is the one reported
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    SL_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    SL_CUDA_CHECK(e);
    exec_ = exec;
  }
  SL_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), st));
  ++launches_;
}

// ---- Blas -------------------------------------------------------------------------------------
struct Blas::Impl {
  int device = 0;
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
};

Blas::Blas(int device, Precision precision) : impl_(std::make_unique<Impl>()), precision_(precision) {
  impl_->device = device;
  SL_CUDA_CHECK(cudaSetDevice(device));
  SL_CUBLAS_CHECK(cublasCreate(&impl_->handle));
  try {
    impl_->workspace = device_alloc(device, kBlasWorkspaceBytes, "the cuBLAS workspace");
    set_precision(precision);
    bind(nullptr);
  } catch (...) {
    device_free(device, impl_->workspace);
    cublasDestroy(impl_->handle);
    throw;
  }
}

Blas::~Blas() {
  if (!impl_) return;
  // Destructors must not throw: errors here are ignored (the context may be going away).
  cudaSetDevice(impl_->device);
  if (impl_->handle) cublasDestroy(impl_->handle);
  device_free(impl_->device, impl_->workspace);
}

void Blas::bind(void* stream) {
  SL_CUBLAS_CHECK(cublasSetStream(impl_->handle, as_stream(stream)));
  SL_CUBLAS_CHECK(cublasSetWorkspace(impl_->handle, impl_->workspace, kBlasWorkspaceBytes));
}

void Blas::set_precision(Precision p) {
  // bf16 is not a math mode of cublasSgemm: gemm() asks cublasGemmEx for it per call.
  SL_CUBLAS_CHECK(cublasSetMathMode(impl_->handle, p == Precision::TF32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                         : CUBLAS_DEFAULT_MATH));
  precision_ = p;
}

void Blas::gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (record) record->push_back({false, ta, tb, int(M), int(N), int(K)});
  // Row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T: a row-major matrix is its
  // own transpose in column-major, so the operands swap and the op flags carry over.
  const cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (precision_ == Precision::BF16) {
    // bf16: float32 matrices in and out, which cuBLAS may round to bfloat16 (or TF32: the
    // header's words, "down-converting inputs to bfloat16 or TF32") for the tensor cores, products
    // accumulated in float32 (CUBLAS_COMPUTE_32F_FAST_16BF). Weights, gradients, the loss and
    // Adam stay float32.
    SL_CUBLAS_CHECK(cublasGemmEx(impl_->handle, opb, opa, int(N), int(M), int(K), &alpha, B, CUDA_R_32F, int(ldb), A,
                                 CUDA_R_32F, int(lda), &beta, C, CUDA_R_32F, int(ldc), CUBLAS_COMPUTE_32F_FAST_16BF,
                                 CUBLAS_GEMM_DEFAULT));
    return;
  }
  SL_CUBLAS_CHECK(cublasSgemm(impl_->handle, opb, opa, int(N), int(M), int(K), &alpha, B, int(ldb), A, int(lda), &beta,
                              C, int(ldc)));
}

void Blas::column_sum_acc(float* y, const float* d, int64_t ldd, const float* ones, int64_t rows, int C) {
  if (rows == 0 || C == 0) return;
  if (record) record->push_back({true, false, false, C, 1, int(rows)});
  // Row-major d [rows, C] (stride ldd) is column-major [C, rows] with leading dimension ldd:
  // y[C] += d_cm · ones[rows].
  const float one = 1.f;
  SL_CUBLAS_CHECK(cublasSgemv(impl_->handle, CUBLAS_OP_N, C, int(rows), &one, d, int(ldd), ones, 1, &one, y, 1));
}

}  // namespace sl::cuda
#else  // no CUDA: the destructors only (see runtime.h)
#include "kernels/cuda/runtime.h"

namespace sl::cuda {
struct Blas::Impl {};
StepGraph::~StepGraph() = default;
void StepGraph::reset() noexcept {}
Blas::~Blas() = default;
}  // namespace sl::cuda
#endif  // SL_WITH_CUDA
