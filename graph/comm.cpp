#include "graph/comm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "graph/error.h"

#ifdef SL_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only (the deprecated C++ bindings need their own library)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace sl {
namespace {

// A world of one process.
class SoloComm final : public Comm {
 public:
  std::string describe() const override { return "1 process"; }
  void sum(double*, size_t) override {}
  void sum_identical(float*, size_t) override {}
  void allgather(const void* in, size_t bytes, void* out) override {
    if (bytes) std::memmove(out, in, bytes);
  }
  void broadcast(void*, size_t, int) override {}
  [[noreturn]] void abort(int code) override {
    std::fflush(nullptr);
    std::_Exit(code);
  }
};

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

#ifdef SL_WITH_MPI
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string(what) + " failed: " + std::string(msg, (size_t)len));
}

// Counts above INT_MAX do not occur here (the gradient is ~0.3 M floats), but say so if they do.
int as_count(size_t n, const char* what) {
  if (n > (size_t)0x7fffffff) throw Error(std::string(what) + ": " + std::to_string(n) + " elements is too many for one MPI call");
  return (int)n;
}

class MpiComm final : public Comm {
 public:
  MpiComm() {
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    // Errors come back as codes (check() turns them into sl::Error naming the call) instead of
    // MPI's default of ending the job without a word of ours.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(ver, &len);
    library_ = std::string(ver, (size_t)len);
    if (auto nl = library_.find_first_of(",\n"); nl != std::string::npos) library_.resize(nl);
  }
  std::string describe() const override {
    return "MPI, " + std::to_string(size_) + " ranks (" + library_ + ")";
  }
  void sum(double* data, size_t n) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, as_count(n, "MPI_Allreduce"), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
  void sum_identical(float* data, size_t n) override {
    if (size_ == 1 || n == 0) return;
    const size_t chunk = (n + (size_t)size_ - 1) / (size_t)size_;
    staging_.assign(chunk * (size_t)size_, 0.f);
    std::memcpy(staging_.data(), data, n * sizeof(float));
    mine_.resize(chunk);
    const int c = as_count(chunk, "MPI_Reduce_scatter_block");
    check(MPI_Reduce_scatter_block(staging_.data(), mine_.data(), c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
          "MPI_Reduce_scatter_block");
    check(MPI_Allgather(mine_.data(), c, MPI_FLOAT, staging_.data(), c, MPI_FLOAT, MPI_COMM_WORLD), "MPI_Allgather");
    std::memcpy(data, staging_.data(), n * sizeof(float));
  }
  void allgather(const void* in, size_t bytes, void* out) override {
    const int c = as_count(bytes, "MPI_Allgather");
    check(MPI_Allgather(in, c, MPI_BYTE, out, c, MPI_BYTE, MPI_COMM_WORLD), "MPI_Allgather");
  }
  void broadcast(void* data, size_t bytes, int root) override {
    check(MPI_Bcast(data, as_count(bytes, "MPI_Bcast"), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  [[noreturn]] void abort(int code) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  std::string library_;
  std::vector<float> staging_, mine_;
};
#endif

std::unique_ptr<Comm>& world_slot() {
  static std::unique_ptr<Comm> c;
  return c;
}

bool g_mpi_started = false;

}  // namespace

std::vector<std::string> allgather_text(Comm& comm, const std::string& mine) {
  const size_t world = (size_t)comm.size();
  if (world <= 1) return {mine};
  // An all-gather moves the same bytes from every rank: the lengths first, then each text
  // padded to the longest.
  const uint64_t size = mine.size();
  std::vector<uint64_t> sizes(world);
  comm.allgather(&size, sizeof size, sizes.data());
  uint64_t longest = 0;
  for (uint64_t n : sizes) longest = std::max(longest, n);
  std::vector<std::string> out(world);
  if (longest == 0) return out;
  std::string padded = mine;
  padded.resize(longest, '\0');
  std::string all(longest * world, '\0');
  comm.allgather(padded.data(), longest, all.data());
  for (size_t r = 0; r < world; ++r) out[r] = all.substr(longest * r, sizes[r]);
  return out;
}

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

int launcher_world_size() {
  for (const char* k : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const int n = env_int(k);
    if (n >= 1) return n;
  }
  return 1;
}

void init_comm(int* argc, char*** argv) {
#ifdef SL_WITH_MPI
  if (!launched_by_mpirun() || g_mpi_started) return;
  int provided = 0;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "error: MPI_Init_thread failed (code %d): cannot join the mpirun job\n", rc);
    std::exit(1);
  }
  g_mpi_started = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    std::fprintf(stderr, "error: this MPI library offers thread level %d; streamline needs MPI_THREAD_SERIALIZED (the trainer "
                 "runs on whichever engine thread is free)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  world_slot() = std::make_unique<MpiComm>();
#else
  (void)argc, (void)argv;
#endif
}

void finalize_comm() {
#ifdef SL_WITH_MPI
  if (!g_mpi_started) return;
  world_slot().reset();
  MPI_Finalize();
  g_mpi_started = false;
#endif
}

Comm& solo_comm() {
  static SoloComm c;
  return c;
}

Comm& world_comm() {
  auto& c = world_slot();
  if (!c) {
    if (launched_by_mpirun() && launcher_world_size() > 1)
      throw Error("started by mpirun with " + std::to_string(launcher_world_size()) +
                  " ranks, but this build has no MPI (configure with -DSL_MPI=ON and install libopenmpi-dev): every "
                  "rank would train on all the data and write the same files");
    c = std::make_unique<SoloComm>();
  }
  return *c;
}

std::string comm_build_info() {
#ifdef SL_WITH_MPI
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  std::string s = "MPI " + std::to_string(major) + "." + std::to_string(minor) + " (data-parallel with mpirun -np N)";
#else
  std::string s = "no MPI in this build (one process; configure with -DSL_MPI=ON for mpirun)";
#endif
#ifdef SL_WITH_NCCL
  s += ", NCCL for GPU gradients";
#endif
  return s;
}

}  // namespace sl
