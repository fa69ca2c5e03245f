// cuBLAS is loaded on first use (kernels/cuda/cublas_lazy.cpp), not linked: a process that never
// makes a cuBLAS handle never maps it. Builds with CUDA only.
#pragma once
#include <string>

namespace sl::cuda {

// Loads cuBLAS if it is not loaded yet and returns the path it was loaded from; throws sl::Error
// naming what was tried when it cannot be loaded.
const std::string& cublas_path();

// Whether cuBLAS is mapped in this process (without loading it).
bool cublas_loaded() noexcept;

}  // namespace sl::cuda
