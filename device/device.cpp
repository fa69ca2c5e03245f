#include "device/device.h"

#include <string>

#include "graph/error.h"

#ifdef SL_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sl {

int cuda_device_count(std::string* why) {
#ifdef SL_WITH_CUDA
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) {
      if (e == cudaErrorInsufficientDriver) {
        int drv = 0;
        cudaDriverGetVersion(&drv);
        *why = drv == 0 ? "no NVIDIA driver is loaded on this machine (cudaGetDeviceCount: CUDA driver version is "
                          "insufficient for CUDA runtime version)"
                        : "the NVIDIA driver (CUDA " + std::to_string(drv / 1000) + "." + std::to_string(drv % 1000 / 10) +
                              ") is older than this build's CUDA runtime";
      } else if (e == cudaErrorNoDevice) {
        *why = "the driver reports no CUDA device";
      } else {
        *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
      }
    }
    return 0;
  }
  if (n == 0 && why) *why = "the driver reports no CUDA device";
  return n;
#else
  if (why) *why = "this build has no CUDA backend (no CUDA toolkit was found at build time)";
  return 0;
#endif
}

DeviceChoice choose_device(const std::string& requested) {
  if (requested == "cpu") return {"cpu", "device \"cpu\" requested"};
  std::string why;
  int n = cuda_device_count(&why);
  if (requested == "auto") {
    if (n > 0) return {"cuda:0", "device auto: using cuda:0"};
    return {"cpu", "device auto: running on the CPU because " + why};
  }
  int idx = 0;
  if (requested.size() > 5) idx = std::stoi(requested.substr(5));
  if (n == 0) throw Error("device \"" + requested + "\" requested, but " + why);
  if (idx >= n) throw Error("device \"" + requested + "\" requested, but only " + std::to_string(n) + " CUDA device(s) exist");
  return {"cuda:" + std::to_string(idx), "device " + requested + " requested"};
}

}  // namespace sl
