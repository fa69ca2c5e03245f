// to_device: Batch (host, pinned slot) -> DeviceBatch. On the CPU backend the batch passes
// through unchanged. On a GPU it is copied with cudaMemcpyAsync on a copy stream into a ring of
// device buffers (DeviceRing, copy_engine.h); the compute stream waits on the copy's event (GPU
// side), and the pinned slot returns to the batch pool as soon as the copy has completed. The
// stage never blocks: a batch waiting for a ring slot is held until a release wakes the stage.
#pragma once
#include <memory>

#include "graph/batch.h"
#include "device/copy_engine.h"  // DeviceBatchHandle

namespace sl {

// The to_device stage; with ring_on_host, a CPU run also goes through a host DeviceRing
// (tests: the ring's accounting, release on drop and the non-blocking stage without a GPU).
std::unique_ptr<Stage> make_to_device_stage(const class Params& p, bool ring_on_host);

}  // namespace sl
