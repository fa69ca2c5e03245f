// Device choice: "auto" takes a working GPU and otherwise says in one line why the run is on
// the CPU (no CUDA in this build, no driver, driver older than the runtime, no device).
#pragma once
#include <string>

namespace sl {

struct DeviceChoice {
  std::string device;  // "cpu" or "cuda:N"
  std::string reason;  // one line: why this device
};

// requested: auto | cpu | cuda | cuda:N. Throws sl::Error when a GPU is requested and unusable.
DeviceChoice choose_device(const std::string& requested);

// Number of CUDA devices (0 without CUDA); `why` gets the reason when 0.
int cuda_device_count(std::string* why);

}  // namespace sl
