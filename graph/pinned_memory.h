// Page-locked host memory for batch slots (HostBuffer, batch.h) when the build has CUDA and a
// device answers; otherwise null, and the caller falls back to ordinary memory (the CPU backend
// needs nothing else).
#pragma once
#include <cstddef>

namespace sl {
void* cuda_host_alloc(size_t bytes);  // null when CUDA is absent or the call fails
void cuda_host_free(void* p);
}  // namespace sl
