// Where the model's arithmetic runs and how its memory is held, for both backends.
//
//   Backend    cpu | cuda:N (the one parser of "cuda:N" in the code base)
//   Precision  GEMM math: fp32 | tf32 (CUDA tensor cores) | bf16 (not implemented yet)
//   OpContext  what every op takes first: backend, precision, and on CUDA the stream it
//              enqueues on, the cuBLAS handle and a vector of ones for column sums
//   Buffer     ONE allocation on a backend (host memory, or device memory), zero-filled
//
// Ops on the CPU run synchronously on the calling thread (plus oneTBB workers). Ops on CUDA
// only ENQUEUE on `OpContext::stream` and never wait; the copy helpers below that return data
// to the host say so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sl {

namespace cuda {
class Blas;
}

enum class BackendKind { CPU, CUDA };

struct Backend {
  BackendKind kind = BackendKind::CPU;
  int device = 0;  // CUDA device index

  static Backend cpu() { return {}; }
  static Backend cuda(int device = 0) { return {BackendKind::CUDA, device}; }
  // "cpu", "cuda" (= cuda:0) or "cuda:N"; throws sl::Error otherwise.
  static Backend parse(const std::string& name);
  bool is_cuda() const { return kind == BackendKind::CUDA; }
  std::string name() const;  // "cpu" | "cuda:N"
  bool operator==(const Backend& o) const { return kind == o.kind && (kind == BackendKind::CPU || device == o.device); }
};

enum class Precision { FP32, TF32, BF16 };
// "fp32" | "tf32" | "bf16"; throws sl::Error otherwise. Which backend supports which is
// check_precision's business.
Precision parse_precision(const std::string& s);
const char* precision_name(Precision p);
// Throws sl::Error when `backend` cannot run `p` (the CPU computes in fp32 only).
void check_precision(const Backend& backend, Precision p);

struct OpContext {
  Backend backend;
  Precision precision = Precision::FP32;
  void* stream = nullptr;      // cudaStream_t (CUDA); must not be the legacy stream when captured
  cuda::Blas* blas = nullptr;  // cuBLAS handle bound to `stream` (CUDA)
  const float* ones = nullptr; // CUDA: >= ones_len floats equal to 1 (bias gradients as GEMVs)
  int64_t ones_len = 0;

  static OpContext cpu() { return {}; }
  bool on_cuda() const { return backend.is_cuda(); }
};

// One allocation on a backend, zero-filled. Move-only. A failed allocation throws sl::Error
// naming `what` and the size (on CUDA: the runtime's out-of-memory message).
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Backend& backend, size_t bytes, const std::string& what);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }
  const Backend& backend() const { return backend_; }

 private:
  void release() noexcept;
  Backend backend_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Enqueued on c.stream (CPU: done on return).
void zero_async(const OpContext& c, void* p, size_t bytes);
void copy_async(const OpContext& c, void* dst, const void* src, size_t bytes);  // within the backend
// Host <-> backend; these WAIT until c.stream has run everything before them and the copy.
void copy_to_host(const OpContext& c, void* host, const void* src, size_t bytes);
void copy_from_host(const OpContext& c, void* dst, const void* host, size_t bytes);
// Waits until c.stream has run everything enqueued so far (CPU: nothing to wait for).
void synchronize(const OpContext& c);

}  // namespace sl
