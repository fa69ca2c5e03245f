#include "train/ranks.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "graph/error.h"

namespace sl {

void end_the_job(const RunContext& ctx, Comm& comm, const std::string& stage, const std::string& what) {
  std::fprintf(stderr, "[rank %d] error: %s: %s\n", ctx.rank(), stage.c_str(), what.c_str());
  comm.abort(1);
  std::abort();  // not reached: Comm::abort ends the process (the compiler cannot see that through a virtual call)
}

void broadcast_start(Comm& comm, bool rank0, LineRefiner& model, Adam& adam, int64_t* step, int64_t* epoch,
                     std::vector<RankPosition>& starts) {
  const OpContext& oc = model.context();
  int64_t head[3] = {*step, *epoch, adam.step_count(oc)};
  comm.broadcast(head, sizeof head, 0);
  std::vector<int64_t> pos(starts.size() * 3);
  for (size_t r = 0; r < starts.size(); ++r)
    pos[3 * r] = starts[r].position.epoch, pos[3 * r + 1] = starts[r].position.index, pos[3 * r + 2] = starts[r].skip;
  comm.broadcast(pos.data(), pos.size() * sizeof(int64_t), 0);
  for (size_t r = 0; r < starts.size(); ++r) starts[r] = RankPosition{Position{pos[3 * r], pos[3 * r + 1]}, pos[3 * r + 2]};
  const size_t n = model.num_params();
  std::vector<float> w(n), m, v;
  if (rank0) {
    model.download_params(w.data());
    m = adam.exp_avg(oc);
    v = adam.exp_avg_sq(oc);
  } else {
    m.resize(n), v.resize(n);
  }
  comm.broadcast(w.data(), n * sizeof(float), 0);
  comm.broadcast(m.data(), n * sizeof(float), 0);
  comm.broadcast(v.data(), n * sizeof(float), 0);
  if (!rank0) {
    *step = head[0], *epoch = head[1];
    model.upload_params(w.data());
    adam.load(oc, m.data(), v.data(), head[2]);
  }
}

void check_ranks_share_a_backend(Comm& comm, int world, const Backend& backend) {
  const char mine = backend.is_cuda() ? 'g' : 'c';
  std::string all((size_t)world, ' ');
  comm.allgather(&mine, 1, all.data());
  if (all.find(mine == 'g' ? 'c' : 'g') != std::string::npos)
    throw Error("the ranks run on different backends (" + all + ": g = GPU, c = CPU, by rank); give every rank a GPU "
                "or set \"device\": \"cpu\"");
}

void check_ranks_hold_the_same_weights(Comm& comm, const RunContext& ctx, LineRefiner& model, int64_t step,
                                       const std::string& last_checkpoint) {
  const size_t n = model.num_params();
  std::vector<float> w(n);
  model.download_params(w.data());
  if (const char* f = std::getenv("STREAMLINE_TEST_DRIFT")) {
    int r = -1;
    long long at = -1;
    if (std::sscanf(f, "%d:%lld", &r, &at) == 2 && r == ctx.rank() && at == step) {
      w[0] += 1e-3f;
      model.upload_params(w.data());
    }
  }
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the bytes
  const auto* bytes = reinterpret_cast<const unsigned char*>(w.data());
  for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  std::vector<uint64_t> all((size_t)ctx.world());
  comm.allgather(&h, sizeof h, all.data());
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (differ.empty()) return;
  char hex[32];
  std::string sums;
  for (size_t r = 0; r < all.size(); ++r) {
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)all[r]);
    sums += (r ? ", rank " : "rank ") + std::to_string(r) + " " + hex;
  }
  throw Error("the weights of rank(s) " + differ + " differ from rank 0's after step " + std::to_string(step) +
              " (checksums: " + sums + "); stopped before the ranks train different models. Every rank applies "
              "the same averaged gradient, so this is a fault: the last checkpoint is " +
              (last_checkpoint.empty() ? std::string("none") : last_checkpoint));
}

std::vector<RankPosition> gather_rank_positions(Comm& comm, int world, const RankPosition& mine) {
  if (world <= 1) return {mine};
  int64_t m[3] = {mine.position.epoch, mine.position.index, mine.skip};
  std::vector<int64_t> all(3 * (size_t)world);
  comm.allgather(m, sizeof m, all.data());
  std::vector<RankPosition> out;
  for (int r = 0; r < world; ++r) out.push_back(RankPosition{Position{all[3 * r], all[3 * r + 1]}, all[3 * r + 2]});
  return out;
}

std::map<std::string, int64_t> sum_counts_over_ranks(Comm& comm, int world, const std::map<std::string, int64_t>& mine) {
  if (world <= 1) return mine;
  // "name value\n" per counter (names are the stages' identifiers: no space, no newline).
  std::string text;
  for (const auto& [name, n] : mine) text += name + " " + std::to_string(n) + "\n";
  const std::vector<std::string> all = allgather_text(comm, text);
  std::map<std::string, int64_t> sum;
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string& part = all[r];
    for (size_t at = 0; at < part.size();) {
      const size_t sp = part.find(' ', at), nl = part.find('\n', at);
      if (sp == std::string::npos || nl == std::string::npos || sp > nl)
        throw Error("sum_counts_over_ranks: rank " + std::to_string(r) + " sent a malformed counter list");
      sum[part.substr(at, sp - at)] += std::stoll(part.substr(sp + 1, nl - sp - 1));
      at = nl + 1;
    }
  }
  return sum;
}

bool any_rank_failed(Comm& comm, bool failed) {
  double bad = failed ? 1 : 0;
  comm.sum(&bad, 1);
  return bad > 0;
}

void summarize_ranks(RunContext& ctx, Comm& comm, bool rank0, const RankFigures& f, int accumulate) {
  double mine[6] = {f.samples, f.compute_s, f.data_wait_s, f.allreduce_s, f.gradient_s, f.exchanges};
  std::vector<double> all(6 * (size_t)ctx.world());
  comm.allgather(mine, sizeof mine, all.data());
  if (!rank0) return;
  ctx.add_summary("ranks: " + comm.describe() + "; global batch = " + std::to_string(ctx.world()) +
                  " ranks x batch.size x accumulate " + std::to_string(accumulate));
  char line[256];
  std::snprintf(line, sizeof line, "  %-5s %9s %10s %14s %22s %13s", "rank", "samples", "compute s", "wait data s",
                "all-reduce s (waiting)", "gradient s");
  ctx.add_summary(line);
  int slowest = 0;
  for (int r = 0; r < ctx.world(); ++r) {
    const double* x = &all[6 * (size_t)r];
    std::snprintf(line, sizeof line, "  %-5d %9.0f %10.2f %14.2f %22.2f %13.3f", r, x[0], x[1], x[2], x[3], x[4]);
    ctx.add_summary(line);
    if (x[3] < all[6 * (size_t)slowest + 3]) slowest = r;
  }
  std::snprintf(line, sizeof line,
                "slowest rank: %d (it waited least for the others in the all-reduce: its data path or compute sets the "
                "pace; %.0f exchanges)", slowest, all[5]);
  ctx.add_summary(line);
}

}  // namespace sl
