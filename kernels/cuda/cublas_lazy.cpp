// cuBLAS, loaded on first use instead of with the program.
//
// Linked as a NEEDED library, cuBLAS costs every process that starts ~145 MiB resident before
// main() (libcublasLt's constructors fill ~85 MiB of static tables and relocate ~60 MiB of its
// image), GPU or not: a CPU run or a preprocess of a large tile carried it in its peak RSS.
// So the program does not link cuBLAS. This file defines the few cuBLAS entry points the
// engine calls, with the header's own signatures (the compiler holds them to it), each
// forwarding to the real function found with dlopen/dlsym the first time any is called.
// The definitions are hidden: they bind this program's (or the Python module's) own calls and
// are never exported, so a library loaded beside us (PyTorch's cuBLAS) is not interposed.
#ifdef SL_WITH_CUDA
#include "kernels/cuda/cublas_lazy.h"

#include <cuComplex.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <library_types.h>

#include <mutex>
#include <string>

#include "graph/error.h"

// Only cuBLAS's own declarations get hidden visibility (the CUDA headers it includes come first
// and keep theirs: what they declare is defined in libcudart or inline).
#pragma GCC visibility push(hidden)
#include <cublas_api.h>
#pragma GCC visibility pop

namespace sl::cuda {
namespace {

struct Library {
  std::once_flag once;
  void* handle = nullptr;
  std::string path;
  std::string error;
};

Library& library() {
  static Library lib;
  return lib;
}

std::string soname() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

void load(Library& lib) {
  // 1. The loader's search (LD_LIBRARY_PATH, this object's RUNPATH, ld.so.cache).
  const std::string name = soname();
  std::string tried = name + ": ";
  if ((lib.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) {
    lib.path = name;
    return;
  }
  tried += dlerror();
  // 2. Beside the CUDA runtime this process loaded (the toolkit's lib folder: installed
  // programs lose the build's RUNPATH).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) && info.dli_fname) {
    std::string dir = info.dli_fname;
    const size_t slash = dir.rfind('/');
    if (slash != std::string::npos) {
      const std::string path = dir.substr(0, slash + 1) + name;
      if ((lib.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
        lib.path = path;
        return;
      }
      tried += "; " + path + ": " + dlerror();
    }
  }
  lib.error = "cuBLAS could not be loaded (" + tried +
              "); install the CUDA toolkit's cuBLAS or put its folder on LD_LIBRARY_PATH";
}

Library& loaded() {
  Library& lib = library();
  std::call_once(lib.once, [&] { load(lib); });
  return lib;
}

// The real function `name` of type F; throws sl::Error when cuBLAS or the symbol is missing.
template <class F>
F real(const char* name) {
  Library& lib = loaded();
  if (!lib.handle) throw Error(lib.error);
  void* f = dlsym(lib.handle, name);
  if (!f) throw Error(std::string("cuBLAS (") + lib.path + ") has no " + name);
  return reinterpret_cast<F>(f);
}

}  // namespace

const std::string& cublas_path() {
  Library& lib = loaded();
  if (!lib.handle) throw Error(lib.error);
  return lib.path;
}

bool cublas_loaded() noexcept {
  // Without loading: RTLD_NOLOAD finds the library only if something mapped it already.
  void* h = dlopen(soname().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

}  // namespace sl::cuda

// Each resolves once (a function-local static) and forwards.
#define SL_CUBLAS_FORWARD(name, params, args)                                          \
  extern "C" cublasStatus_t name params {                                       \
    static const auto f = ::sl::cuda::real<decltype(&::name)>(#name);                   \
    return f args;                                                                     \
  }

#define P(...) (__VA_ARGS__)
SL_CUBLAS_FORWARD(cublasCreate_v2, P(cublasHandle_t* handle), P(handle))
SL_CUBLAS_FORWARD(cublasDestroy_v2, P(cublasHandle_t handle), P(handle))
SL_CUBLAS_FORWARD(cublasSetStream_v2, P(cublasHandle_t handle, cudaStream_t stream), P(handle, stream))
SL_CUBLAS_FORWARD(cublasSetWorkspace_v2, P(cublasHandle_t handle, void* workspace, size_t bytes),
                  P(handle, workspace, bytes))
SL_CUBLAS_FORWARD(cublasSetMathMode, P(cublasHandle_t handle, cublasMath_t mode), P(handle, mode))
SL_CUBLAS_FORWARD(cublasSgemm_v2,
                  P(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                    float* C, int ldc),
                  P(handle, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
SL_CUBLAS_FORWARD(cublasSgemv_v2,
                  P(cublasHandle_t handle, cublasOperation_t trans, int m, int n, const float* alpha,
                    const float* A, int lda, const float* x, int incx, const float* beta, float* y, int incy),
                  P(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy))
#undef P
#undef SL_CUBLAS_FORWARD

// cublas_api.h overloads cublasGemmEx (a C++ wrapper taking the old cudaDataType compute type),
// so the macro's decltype(&::name) is ambiguous: the C function's type is written out.
extern "C" cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                       int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                                       const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
                                       cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                                       cublasGemmAlgo_t algo) {
  using Fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  static const auto f = ::sl::cuda::real<Fn>("cublasGemmEx");
  return f(handle, ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, compute, algo);
}

// The status names are used while reporting an error: they never throw.
extern "C" const char* cublasGetStatusName(cublasStatus_t status) {
  try {
    static const auto f = sl::cuda::real<decltype(&::cublasGetStatusName)>("cublasGetStatusName");
    return f(status);
  } catch (...) {
    return "CUBLAS_STATUS_?";
  }
}

extern "C" const char* cublasGetStatusString(cublasStatus_t status) {
  try {
    static const auto f = sl::cuda::real<decltype(&::cublasGetStatusString)>("cublasGetStatusString");
    return f(status);
  } catch (...) {
    return "cuBLAS could not be loaded";
  }
}
#endif
