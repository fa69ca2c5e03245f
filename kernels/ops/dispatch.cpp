#include "kernels/ops/dispatch.h"

#include <string>

#include "graph/error.h"

namespace sl::detail {

void unsupported_type(const OpContext& c, const char* op, const char* type) {
  throw Error(std::string(op) + ": T = " + type + " is not supported on " + c.backend.name() +
              " (the CUDA bodies are float only; double runs on the CPU)");
}

void no_cuda_build(const char* op) {
  throw Error(std::string(op) + ": a CUDA context, but this build has no CUDA backend (no CUDA toolkit was found "
              "at build time)");
}

}  // namespace sl::detail
