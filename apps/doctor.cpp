#include "apps/doctor.h"

#include <oneapi/tbb/version.h>
#include <rapidjson/rapidjson.h>

#include <sstream>
#include <thread>

#include "graph/comm.h"
#include "device/device.h"
#include "geometry/crop.h"

#ifdef SL_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda/cublas_lazy.h"
#endif

extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

namespace sl {

std::string doctor_report() {
  std::ostringstream o;
  o << "streamline " << SL_VERSION << "\n";
  o << "  CPU cores (hardware threads): " << std::thread::hardware_concurrency() << "\n";
  o << "  oneTBB: " << TBB_VERSION_MAJOR << "." << TBB_VERSION_MINOR << " (interface " << TBB_INTERFACE_VERSION << ")\n";
  o << "  RapidJSON: " << RAPIDJSON_VERSION_STRING << "\n";
#ifdef SL_PCL_VERSION
  o << "  PCL: " << SL_PCL_VERSION << " (found at build time; tests and baselines compare against it, the engine does not use it)\n";
#else
  o << "  PCL: not found at build time (only the reference tests and baselines need it)\n";
#endif
  o << "  OpenBLAS: " << openblas_get_config() << " (kernels: " << openblas_get_corename() << ")\n";
  o << "  ranks: " << comm_build_info() << "\n";
  o << "  crop kernel: " << crop_kernel() << " (this CPU runs: ";
  const auto kernels = crop_kernels();
  for (size_t i = 0; i < kernels.size(); ++i) o << (i ? ", " : "") << kernels[i];
  o << ")\n";
#ifdef SL_WITH_CUDA
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  o << "  CUDA runtime: " << rt / 1000 << "." << rt % 1000 / 10 << "\n";
  o << "  CUDA driver: " << (drv ? std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10) : "none loaded") << "\n";
  o << "  cuBLAS: " << CUBLAS_VER_MAJOR << "." << CUBLAS_VER_MINOR << "." << CUBLAS_VER_PATCH
    << " (headers); " << (cuda::cublas_loaded() ? "loaded" : "not loaded: it loads when a CUDA backend starts") << "\n";
#else
  o << "  CUDA: not in this build\n";
#endif
  std::string why;
  int n = cuda_device_count(&why);
  o << "  CUDA devices: " << n << (n == 0 ? " -- " + why : "") << "\n";
#ifdef SL_WITH_CUDA
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    size_t free_b = 0, total_b = 0;
    cudaSetDevice(i);
    cudaMemGetInfo(&free_b, &total_b);
    o << "    cuda:" << i << " " << p.name << ", compute capability " << p.major << "." << p.minor << ", "
      << total_b / (1 << 20) << " MiB (" << free_b / (1 << 20) << " MiB free), " << p.multiProcessorCount << " SMs\n";
  }
#endif
  DeviceChoice c = choose_device("auto");
  o << "  device \"auto\" resolves to: " << c.device << " (" << c.reason << ")\n";
  return o.str();
}

}  // namespace sl
