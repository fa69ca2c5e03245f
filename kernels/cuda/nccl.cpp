#include "kernels/cuda/nccl.h"

#include <string>

#include "graph/comm.h"
#include "graph/error.h"

#ifdef SL_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace sl::nccl {

#ifdef SL_WITH_NCCL
namespace {
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string(what) + " failed: " + ncclGetErrorString(r));
}
}  // namespace

bool available() { return true; }

void* create(Comm& comm, int device) {
  ncclUniqueId id{};
  if (comm.rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  comm.broadcast(&id, sizeof id, 0);
  if (cudaSetDevice(device) != cudaSuccess) throw Error("cudaSetDevice(" + std::to_string(device) + ") failed before NCCL init");
  ncclComm_t c = nullptr;
  check(ncclCommInitRank(&c, comm.size(), id, comm.rank()), "ncclCommInitRank");
  return c;
}

void destroy(void* c) noexcept {
  if (c) ncclCommDestroy(static_cast<ncclComm_t>(c));
}

void sum(void* c, float* data, size_t n, void* stream) {
  check(ncclAllReduce(data, data, n, ncclFloat32, ncclSum, static_cast<ncclComm_t>(c), static_cast<cudaStream_t>(stream)),
        "ncclAllReduce");
}
#else
bool available() { return false; }
void* create(Comm&, int) { throw Error("this build has no NCCL (it needs CUDA, MPI and nccl.h at configure time)"); }
void destroy(void*) noexcept {}
void sum(void*, float*, size_t, void*) { throw Error("this build has no NCCL"); }
#endif

}  // namespace sl::nccl
