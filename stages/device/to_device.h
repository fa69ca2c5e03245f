// to_device: Batch (host, pinned slot) -> DeviceBatch. On the CPU backend the batch passes
// through unchanged. On a GPU it is copied with cudaMemcpyAsync on a copy stream into a ring of
// device buffers; the compute stream waits on the copy's event (GPU side), and the pinned slot
// returns to the batch pool as soon as the copy has completed.
#pragma once
#include <memory>

#include "stages/batching/batch.h"

namespace sl {

class DeviceRing;
struct DeviceBatch;

// What a device batch carries in Batch::device: the ring slot and the ring itself (whose compute
// stream the trainer enqueues on, and which must see release() after the last read).
struct DeviceBatchHandle {
  std::shared_ptr<DeviceRing> ring;
  std::shared_ptr<DeviceBatch> batch;
};

void register_device_stages(class StageRegistry& r);

}  // namespace sl
