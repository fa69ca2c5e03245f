// NVTX ranges for Nsight Systems: `SL_NVTX_RANGE("train_step");` opens a range that closes at
// the end of the scope. Real ranges when the build links CUDA::nvtx3 (SL_WITH_NVTX, header-only
// NVTX v3), no-ops otherwise, so any .cpp may use it.
#pragma once

#ifdef SL_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
namespace sl {
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};
}  // namespace sl
#else
namespace sl {
class NvtxRange {
 public:
  explicit NvtxRange(const char*) {}
};
}  // namespace sl
#endif

#define SL_NVTX_CAT2(a, b) a##b
#define SL_NVTX_CAT(a, b) SL_NVTX_CAT2(a, b)
#define SL_NVTX_RANGE(name) ::sl::NvtxRange SL_NVTX_CAT(sl_nvtx_range_, __LINE__)(name)
