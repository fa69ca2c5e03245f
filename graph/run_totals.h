// The end-of-run figures of a data-parallel run (`mpirun -np N streamline run ...`), added up over
// its ranks: each rank ran the same graph on its share of every epoch, so rank 0's stage table,
// skipped items and cache lines alone would show about 1/N of the run.
//
// Column by column (the table's legend says it):
//   items in / out, skipped, busy s, idle s, held s: summed over the ranks;
//   threads: each rank's (rank 0's when they differ);
//   busy %: the summed busy time / the sum over the ranks of wall x threads;
//   order s summed; tail %: the summed fork-join tails / the summed fork-join time;
//   CPU: every rank's user + system seconds / the sum over the ranks of wall x cores; its
//     start-up the same over the ranks whose data reached the last stage (wall: the longest);
//   wall: the longest rank's; peak RSS: the largest process's;
//   the bottleneck sentence: from those sums (every rank's time added up);
//   skipped items: the total, up to 20 examples taken in turn from each rank, each with its rank;
//     the groups by stage and cause summed, with examples from any rank;
//   a summary line with figures (RunContext::add_summary with a key): rank 0's line written
//     from every rank's figures, summed (or the largest, for names starting with "max_").
// Summary lines without figures (checkpoint, metrics) are rank 0's.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/comm.h"
#include "graph/engine.h"

namespace sl {

// What one rank sends: its result's figures, its first 20 skipped items and its skip groups.
std::string rank_share_json(const RunResult& r);
// Throws sl::Error naming the rank when the text is not a share.
RunResult parse_rank_share(const std::string& text, int rank);

// Rank 0's result (the first of `shares`, whose summary lines and their texts it keeps) made the
// run's: the figures of every rank added up, ranks = shares.size(). Throws sl::Error when the
// ranks ran different stages.
RunResult combine_rank_shares(const std::vector<RunResult>& shares);

// Collective: every rank of `comm` calls it once, after run_pipeline returned (the graph drained,
// every stage finished), whether its run succeeded or not -- a rank whose run threw ends the job
// instead (apps/main.cpp: leave), so no rank waits here forever. On rank 0, `r` becomes the run's
// (combine_rank_shares); on the others it is left as it was. A world of one: nothing.
void total_over_ranks(RunResult& r, Comm& comm);

}  // namespace sl
