// The ranks of a data-parallel run and the few collectives training needs (docs/training.md "Training on
// many processes"). One process is a world of one: every call is a copy or nothing. Under `mpirun -np N`
// a build with MPI (SL_MPI) gives a world of N over MPI_COMM_WORLD.
//
// Who calls: the collectives are called by the training sink only (a serial stage: one thread
// at a time, possibly a different TBB thread each time -- MPI_THREAD_SERIALIZED), and every rank
// calls the same collectives in the same order: the protocol is in train/grad_sync.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sl {

class Comm {
 public:
  virtual ~Comm() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // What the world runs over, for messages: "1 process" or "MPI, 2 ranks (Open MPI v4.1.4)".
  virtual std::string describe() const = 0;
  // False for a shard whose ranks cannot exchange anything (a loader's, loader/loader.h): the
  // collectives below are not available, and checks that need them are skipped.
  virtual bool collective() const { return true; }

  // In-place sums. The float sum is the same bits on every rank by construction: each slice is
  // reduced once, by one rank, in the library's fixed order (never the order of arrival), and
  // then copied to the others (a reduce-scatter followed by an all-gather).
  virtual void sum(double* data, size_t n) = 0;
  virtual void sum_identical(float* data, size_t n) = 0;
  // out[r * bytes ...] = rank r's `bytes` bytes of in, on every rank.
  virtual void allgather(const void* in, size_t bytes, void* out) = 0;
  // root's bytes to every rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Ends every rank of the job now, with `code` (a failure on one rank must not leave the others
  // waiting in a collective). A world of one: std::exit.
  [[noreturn]] virtual void abort(int code) = 0;

 protected:
  int rank_ = 0, size_ = 1;
};

// Every rank's text (of any length, different on each rank), on every rank, in rank order.
// Collective: two all-gathers, the lengths and then the texts padded to the longest. A world
// of one: {mine}.
std::vector<std::string> allgather_text(Comm& comm, const std::string& mine);

// The process's world: MPI when the program was started by mpirun (and built with MPI), a
// world of one otherwise. Throws sl::Error when started by an mpirun of more than one rank in a
// build without MPI (every rank would train the whole data alone and write the same files).
Comm& world_comm();
// A world of one (what a run without ranks uses; never MPI).
Comm& solo_comm();
// Starts MPI when the program was launched by mpirun; no-op otherwise. Call once, first in main.
void init_comm(int* argc, char*** argv);
// Ends MPI after a normal run (every rank calls it).
void finalize_comm();
// True when the environment says an MPI launcher started this process (OMPI / PMI / PMIx).
bool launched_by_mpirun();
// The number of ranks the launcher asked for (1 when not launched by one).
int launcher_world_size();
// Whether this build can run data-parallel, and over what, for `streamline doctor`.
std::string comm_build_info();

}  // namespace sl
