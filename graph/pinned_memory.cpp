#include "graph/pinned_memory.h"

#ifdef SL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sl {

void* cuda_host_alloc(size_t bytes) {
#ifdef SL_WITH_CUDA
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) == cudaSuccess) return p;
  cudaGetLastError();  // clear the sticky error: the caller falls back to pageable memory
#endif
  (void)bytes;
  return nullptr;
}

void cuda_host_free(void* p) {
#ifdef SL_WITH_CUDA
  cudaFreeHost(p);
#else
  (void)p;
#endif
}

}  // namespace sl
