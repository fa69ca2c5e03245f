// DeviceRing's CUDA transport: one device allocation, a non-blocking copy stream, per slot an
// event after its copies and one after its last read. Only the CUDA-specific calls live here;
// the accounting is in copy_engine.cpp and tested on the host. Empty without CUDA.
#ifdef SL_WITH_CUDA
#include <vector>

#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/runtime.h"
#include "device/copy_engine.h"

namespace sl {

namespace {

class CudaTransport : public RingTransport {
 public:
  CudaTransport(int device, size_t floats, int slots) : device_(device), bytes_(floats * sizeof(float)) {
    try {
      mem_ = static_cast<float*>(cuda::device_alloc(device, bytes_, "device ring"));
      copy_ = cuda::stream_create(device);
      for (int k = 0; k < slots; ++k) {
        copied_.push_back(cuda::event_create(device));
        read_.push_back(cuda::event_create(device));
      }
      ever_read_.assign(size_t(slots), false);
    } catch (...) {
      release_all();
      throw;
    }
  }
  ~CudaTransport() override { release_all(); }
  float* memory() override { return mem_; }
  size_t bytes() const override { return bytes_; }
  void* copy_stream() override { return copy_; }
  void wait_read(int slot) override {
    cuda::set_device(device_);
    if (ever_read_[size_t(slot)]) cuda::stream_wait_event(copy_, read_[size_t(slot)]);
  }
  void copy(float* dst, const float* src, size_t bytes) override {
    SL_NVTX_RANGE("DeviceRing::copy");
    cuda::memcpy_async(dst, src, bytes, cuda::Copy::HostToDevice, copy_);
  }
  void mark_copied(int slot) override { cuda::event_record(copied_[size_t(slot)], copy_); }
  bool copied(int slot) override { return cuda::event_done(copied_[size_t(slot)]); }
  void wait_copied_host(int slot) override { cuda::event_sync(copied_[size_t(slot)]); }
  void consumer_wait(int slot, void* stream) override {
    cuda::set_device(device_);
    cuda::stream_wait_event(stream, copied_[size_t(slot)]);
  }
  void mark_read(int slot, void* stream) override {
    cuda::set_device(device_);
    cuda::event_record(read_[size_t(slot)], stream);
    ever_read_[size_t(slot)] = true;
  }
  void synchronize() override {
    cuda::set_device(device_);
    cuda::stream_sync(copy_);
  }

 private:
  void release_all() noexcept {
    if (copy_) cuda::stream_sync_noexcept(copy_);
    for (void* e : copied_) cuda::event_destroy(device_, e);
    for (void* e : read_) cuda::event_destroy(device_, e);
    copied_.clear();
    read_.clear();
    if (copy_) cuda::stream_destroy(device_, copy_);
    if (mem_) cuda::device_free(device_, mem_);
    copy_ = nullptr;
    mem_ = nullptr;
  }
  int device_;
  size_t bytes_;
  float* mem_ = nullptr;
  void* copy_ = nullptr;
  std::vector<void*> copied_, read_;
  std::vector<bool> ever_read_;
};

}  // namespace

std::unique_ptr<RingTransport> make_cuda_transport(int device, size_t floats, int slots) {
  return std::make_unique<CudaTransport>(device, floats, slots);
}

}  // namespace sl
#endif  // SL_WITH_CUDA
