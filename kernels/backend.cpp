#include "kernels/backend.h"

#include <cstdlib>
#include <cstring>

#include "graph/error.h"
#include "kernels/cuda/runtime.h"

namespace sl {

#ifndef SL_WITH_CUDA
namespace {
[[noreturn]] void no_cuda_build(const char* what) {
  throw Error(std::string(what) + ": this build has no CUDA backend (no CUDA toolkit was found at build time)");
}
}  // namespace
#endif

Backend Backend::parse(const std::string& name) {
  if (name == "cpu") return cpu();
  if (name == "cuda") return cuda(0);
  if (name.rfind("cuda:", 0) == 0 && name.size() > 5) {
    const std::string n = name.substr(5);
    char* end = nullptr;
    const long idx = std::strtol(n.c_str(), &end, 10);
    if (end && *end == '\0' && idx >= 0 && idx < 1024 && n.find_first_not_of("0123456789") == std::string::npos)
      return cuda(int(idx));
  }
  throw Error("device '" + name + "': expected cpu, cuda or cuda:N");
}

std::string Backend::name() const { return is_cuda() ? "cuda:" + std::to_string(device) : "cpu"; }

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "tf32") return Precision::TF32;
  if (s == "bf16") return Precision::BF16;
  throw Error("precision '" + s + "': expected fp32, tf32 or bf16");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
  }
  return "?";
}

void check_precision(const Backend& backend, Precision p) {
  if (p == Precision::FP32) return;
  if (!backend.is_cuda())
    throw Error(std::string("precision ") + precision_name(p) + " is a GPU GEMM mode; the CPU backend computes in fp32");
}

// ---- Buffer -----------------------------------------------------------------------------------
Buffer::Buffer(const Backend& backend, size_t bytes, const std::string& what) : backend_(backend), bytes_(bytes) {
  if (backend.is_cuda()) {
#ifdef SL_WITH_CUDA
    data_ = cuda::device_alloc(backend.device, bytes, what);
#else
    no_cuda_build(what.c_str());
#endif
  } else {
    // 64-byte aligned (cache lines, AVX-512 loads); aligned_alloc wants a multiple of it.
    data_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (!data_) throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory for " + what);
    std::memset(data_, 0, bytes);
  }
}

void Buffer::release() noexcept {
  if (!data_) return;
  if (backend_.is_cuda()) {
#ifdef SL_WITH_CUDA
    cuda::device_free(backend_.device, data_);
#endif
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  bytes_ = 0;
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& o) noexcept : backend_(o.backend_), data_(o.data_), bytes_(o.bytes_) {
  o.data_ = nullptr;
  o.bytes_ = 0;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    backend_ = o.backend_;
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

// ---- copies -----------------------------------------------------------------------------------
void zero_async(const OpContext& c, void* p, size_t bytes) {
  if (!bytes) return;
  if (c.on_cuda()) {
#ifdef SL_WITH_CUDA
    cuda::memset_async(p, bytes, c.stream);
#else
    no_cuda_build("zero_async");
#endif
  } else {
    std::memset(p, 0, bytes);
  }
}

void copy_async(const OpContext& c, void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  if (c.on_cuda()) {
#ifdef SL_WITH_CUDA
    cuda::memcpy_async(dst, src, bytes, cuda::Copy::DeviceToDevice, c.stream);
#else
    no_cuda_build("copy_async");
#endif
  } else {
    std::memcpy(dst, src, bytes);
  }
}

void copy_to_host(const OpContext& c, void* host, const void* src, size_t bytes) {
  if (c.on_cuda()) {
#ifdef SL_WITH_CUDA
    cuda::set_device(c.backend.device);
    cuda::memcpy_async(host, src, bytes, cuda::Copy::DeviceToHost, c.stream);
    cuda::stream_sync(c.stream);
#else
    no_cuda_build("copy_to_host");
#endif
  } else if (bytes) {
    std::memcpy(host, src, bytes);
  }
}

void copy_from_host(const OpContext& c, void* dst, const void* host, size_t bytes) {
  if (c.on_cuda()) {
#ifdef SL_WITH_CUDA
    cuda::set_device(c.backend.device);
    cuda::memcpy_async(dst, host, bytes, cuda::Copy::HostToDevice, c.stream);
    cuda::stream_sync(c.stream);
#else
    no_cuda_build("copy_from_host");
#endif
  } else if (bytes) {
    std::memcpy(dst, host, bytes);
  }
}

void synchronize(const OpContext& c) {
  if (!c.on_cuda()) return;
#ifdef SL_WITH_CUDA
  cuda::stream_sync(c.stream);
#else
  no_cuda_build("synchronize");
#endif
}

}  // namespace sl
