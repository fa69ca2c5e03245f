// The multi-rank guard of train_step: what keeps the ranks of a data-parallel run (graph/comm.h)
// in step with each other. Rank 0 reads the start files and writes the run's files; these
// functions hand its start to the others, refuse ranks that cannot train together, compare their
// weights, gather what a checkpoint records and what the end-of-run summary shows, and end the
// whole job when one rank fails, so that no rank waits forever in a collective.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/comm.h"
#include "graph/stage.h"
#include "kernels/adam.h"
#include "kernels/backend.h"
#include "kernels/model.h"

namespace sl {

// Where one rank's data stood: the next source item of its share and the samples of that item
// already trained.
struct RankPosition {
  Position position;
  int64_t skip = 0;
  bool operator==(const RankPosition& o) const {
    return position.epoch == o.position.epoch && position.index == o.position.index && skip == o.skip;
  }
};

// An error on one rank of several: prints "[rank r] error: <stage>: <what>" and ends every rank
// of the job (Comm::abort) -- the others may be waiting in a collective this one never reaches.
[[noreturn]] void end_the_job(const RunContext& ctx, Comm& comm, const std::string& stage, const std::string& what);

// Rank 0's weights, Adam state, step and epoch, and every rank's start position, to every rank
// (the other ranks need not see rank 0's files). Collective.
void broadcast_start(Comm& comm, bool rank0, LineRefiner& model, Adam& adam, int64_t* step, int64_t* epoch,
                     std::vector<RankPosition>& starts);

// Throws sl::Error unless every rank trains on the same kind of backend (GPU or CPU): their
// gradient exchanges would differ. Collective.
void check_ranks_share_a_backend(Comm& comm, int world, const Backend& backend);

// A checksum of every rank's weights, compared; they differ only through a fault, and training
// on would average two models: throws sl::Error naming the step, the ranks and their checksums.
// Collective. (STREAMLINE_TEST_DRIFT=<rank>:<step> nudges one weight of that rank first: the
// test of this check.)
void check_ranks_hold_the_same_weights(Comm& comm, const RunContext& ctx, LineRefiner& model, int64_t step,
                                       const std::string& last_checkpoint);

// Every rank's data position, on every rank (rank 0 records them in its checkpoint). Collective.
std::vector<RankPosition> gather_rank_positions(Comm& comm, int world, const RankPosition& mine);

// The counters every rank kept for one epoch (RunContext::counts: crop_tiles' tile_loads and
// tile_hits), summed name by name, on every rank: each rank handles its own share of the epoch's
// items, so rank 0's alone would be a fraction of the run's. A name a rank lacks counts 0 there.
// Collective (allgather_text, graph/comm.h; world 1: `mine`).
std::map<std::string, int64_t> sum_counts_over_ranks(Comm& comm, int world, const std::map<std::string, int64_t>& mine);

// Whether any rank says `failed`: after rank 0's checkpoint write, nobody goes on (or ends the
// job) before it is known. Collective.
bool any_rank_failed(Comm& comm, bool failed);

// One rank's end-of-run figures, and rank 0's summary of all of them: one row per rank and the
// slowest one, which sets the pace. Collective.
struct RankFigures {
  double samples = 0, compute_s = 0, data_wait_s = 0, allreduce_s = 0, gradient_s = 0, exchanges = 0;
};
void summarize_ranks(RunContext& ctx, Comm& comm, bool rank0, const RankFigures& mine, int accumulate);

}  // namespace sl
