// NCCL for the GPU gradient all-reduce of a data-parallel run (train/grad_sync.h). The
// communicator is bootstrapped over the run's Comm (MPI): rank 0 makes the unique id and
// broadcasts it, Horovod-style. Built only with SL_WITH_NCCL (CUDA + MPI + NCCL found); without
// it every call throws sl::Error saying so.
#pragma once
#include <cstddef>

namespace sl {
class Comm;

namespace nccl {

bool available();  // this build has NCCL
// A communicator over every rank of `comm`, on `device` (collective: every rank calls it).
void* create(Comm& comm, int device);
void destroy(void* nccl_comm) noexcept;
// In-place float sum over the ranks, ENQUEUED on `stream` (the model's): the host does not wait.
void sum(void* nccl_comm, float* data, size_t n, void* stream);

}  // namespace nccl
}  // namespace sl
