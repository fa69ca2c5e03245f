// The GPU side of train_step: a CudaLineRefiner fed from the to_device ring, each step replayed
// as one CUDA graph on the ring's compute stream, the loss read back asynchronously. Only the
// checkpoint / eval path waits for the device (it copies the weights and Adam state to the host).
#pragma once
#include <memory>
#include <string>

#include "kernels/adam.h"
#include "kernels/model.h"
#include "stages/batching/batch.h"

namespace sl {

class CudaTrainer {
 public:
  // Starts from the host model's weights and the host Adam's state (fresh, initialised or
  // resumed). Prints the memory plan; on CUDA out-of-memory throws with that plan, the free
  // memory and the largest batch size that fits.
  CudaTrainer(const LineRefiner& model, const Adam& adam, const std::string& device, const std::string& precision,
              const Batch& first, int host_slots, bool quiet);
  ~CudaTrainer();
  void step(const Batch& b);                  // enqueue only
  void request_loss();                        // async copy of the loss accumulated since the last read
  bool poll_loss(float* mean, int* steps);    // true once that copy landed
  float read_loss(int* steps);                // waits for the device
  void sync_to_host(LineRefiner& model, Adam& adam);  // waits for the device

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// False (with the reason) when this build has no CUDA backend.
bool cuda_trainer_available(std::string* why);

}  // namespace sl
