// The LineRefiner's layer sequence, written once over kernels/ops.h for both backends.
#include "kernels/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "graph/error.h"
#include "kernels/cuda/runtime.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"

namespace sl {

namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr size_t kAlign = 256;  // bytes: every workspace buffer starts on this boundary

// The loss bookkeeping as it sits in the workspace ("loss") and in its host mirror.
struct HostLoss {
  double sum;
  int32_t count;
  float last;
};
static_assert(sizeof(HostLoss) == 16);

}  // namespace

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::off: return "off";
    case Recompute::on: return "on";
    case Recompute::automatic: return "auto";
  }
  return "?";
}

Recompute parse_recompute(const std::string& s) {
  if (s == "off") return Recompute::off;
  if (s == "on") return Recompute::on;
  if (s == "auto") return Recompute::automatic;
  fail("model config", "recompute must be off, on or auto, got '" + s + "'");
}

int recompute_chunk_groups(int groups, int points) {
  if (groups <= 0 || points <= 0) fail("recompute_chunk_groups", "groups and points must be positive");
  // Whole groups (the max is per group), and a multiple of the CPU GEMM's row block so a chunk's
  // row blocks are those of the whole batch.
  const int64_t align = kGemmRowBlock / std::gcd<int64_t>(kGemmRowBlock, points);
  int64_t g = std::max<int64_t>(1, kRecomputeRows / points);
  g = (g + align - 1) / align * align;
  return int(std::min<int64_t>(g, groups));
}

ModelLayout model_layout(const ModelConfig& c) {
  auto check = [](const std::vector<int>& w, const char* what) {
    if (w.empty()) fail("model config", std::string(what) + " has no layers");
    for (int v : w)
      if (v <= 0) fail("model config", std::string(what) + " has a non-positive width");
  };
  check(c.encoder, "encoder");
  check(c.line_mlp, "line_mlp");
  check(c.regressor, "regressor");
  if (c.has_local()) {
    check(c.local, "local");
    if (c.local_k <= 0) fail("model config", "the local branch needs K > 0 points per line point");
    if (c.local_window < 0) fail("model config", "the local window must be >= 0");
  }
  if (c.has_variance()) check(c.variance, "variance");
  if (c.in_channels <= 0 || c.line_channels <= 0 || c.out_channels <= 0)
    fail("model config", "channel counts must be positive");
  ModelLayout l;
  size_t off = 0;
  auto add = [&](std::vector<Layer>& dst, int in, int out) {
    dst.push_back({in, out, off, off + size_t(out) * in});
    off += size_t(out) * in + out;
  };
  int prev = c.in_channels;
  for (int w : c.encoder) add(l.enc, prev, w), prev = w;
  prev = c.line_channels;
  for (int w : c.line_mlp) add(l.line, prev, w), prev = w;
  prev = c.encoder.back() + c.line_mlp.back();
  if (c.has_local()) prev += (2 * c.local_window + 1) * c.local.back();
  for (int w : c.regressor) add(l.reg, prev, w), prev = w;
  add(l.reg, prev, c.out_channels);
  prev = c.in_channels;
  for (int w : c.local) add(l.local, prev, w), prev = w;
  if (c.has_variance()) {  // reads the regressor's last hidden layer
    prev = c.regressor.back();
    for (int w : c.variance) add(l.var, prev, w), prev = w;
    add(l.var, prev, c.out_channels);
  }
  return l;
}

std::vector<ParamInfo> make_param_table(const ModelConfig& cfg) {
  const ModelLayout l = model_layout(cfg);
  std::vector<ParamInfo> t;
  auto add = [&](const std::string& prefix, const std::vector<Layer>& layers) {
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string base = prefix + "." + std::to_string(2 * i);
      const Layer& y = layers[i];
      t.push_back({base + ".weight", {y.out, y.in, 1}, y.w, size_t(y.out) * y.in});
      t.push_back({base + ".bias", {y.out}, y.b, size_t(y.out)});
    }
  };
  add("encoder", l.enc);
  add("line_mlp", l.line);
  add("regressor", l.reg);
  add("local", l.local);
  add("variance", l.var);
  return t;
}

size_t num_model_params(const ModelConfig& cfg) {
  const std::vector<ParamInfo> t = make_param_table(cfg);
  return t.back().offset + t.back().numel;
}

size_t batch_input_floats(const ModelConfig& cfg, int B, int P, int L) {
  return size_t(B) * P * cfg.in_channels + size_t(B) * L * cfg.line_channels + size_t(B) * L * cfg.out_channels +
         (cfg.has_local() ? size_t(B) * L * cfg.local_k * cfg.in_channels : 0);
}

// ---- the workspace ------------------------------------------------------------------------------
const WorkspaceBuffer& WorkspaceLayout::at(const std::string& name) const {
  for (const WorkspaceBuffer& b : buffers)
    if (b.name == name) return b;
  fail("model workspace", "no buffer named '" + name + "'");
}

bool WorkspaceLayout::has(const std::string& name) const {
  for (const WorkspaceBuffer& b : buffers)
    if (b.name == name) return true;
  return false;
}

WorkspaceLayout model_workspace(const ModelConfig& cfg, int B, int P, int L, const Backend& backend) {
  const ModelLayout lay = model_layout(cfg);
  if (B <= 0 || P <= 0 || L <= 0) fail("model workspace", "B, P and L must be positive");
  const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
  const int G = cfg.encoder.back();
  const int64_t U = argmax_rows_capacity(B, P, G);
  const bool cuda = backend.is_cuda();
  WorkspaceLayout w;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, size_t elem) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    w.buffers.push_back({name, std::move(shape), elem, w.total_bytes, n * elem});
    w.total_bytes += (n * elem + kAlign - 1) / kAlign * kAlign;
  };
  add("input.context", {NP, cfg.in_channels}, 4);
  add("input.noisy_line", {NL, cfg.line_channels}, 4);
  add("input.target_offset", {NL, cfg.out_channels}, 4);
  // Recomputing: the encoders' dense activations for one forward chunk only.
  const bool rc = cfg.recomputes();
  const int64_t NPa = rc ? int64_t(recompute_chunk_groups(B, P)) * P : NP;
  for (size_t i = 0; i + 1 < lay.enc.size(); ++i) add("enc.act." + std::to_string(i), {NPa, lay.enc[i].out}, 4);
  if (cuda) add("enc.pre_max", {NPa, G}, 4);
  add("global", {B, G}, 4);
  add("argmax", {B, G}, 4);
  for (size_t i = 0; i < lay.line.size(); ++i) add("line.act." + std::to_string(i), {NL, lay.line[i].out}, 4);
  for (size_t i = 0; i < lay.reg.size(); ++i) add("reg.act." + std::to_string(i), {NL, lay.reg[i].out}, 4);
  add("reg.scratch", {B, lay.reg[0].out}, 4);
  add("rows.row_of", {NP}, 4);
  add("rows.sample_rows", {B + 1}, 4);
  add("rows.source", {U}, 8);
  add("rows.din_row", {B, G}, 4);
  add("rows.chan_begin", {U}, 4);
  add("rows.chan_count", {U}, 4);
  add("rows.chans", {B, G}, 4);
  for (size_t i = 0; i < lay.enc.size(); ++i) add("enc.in." + std::to_string(i), {U, lay.enc[i].in}, 4);
  for (size_t i = 1; i < lay.enc.size(); ++i) add("enc.cgrad." + std::to_string(i), {U, lay.enc[i].in}, 4);
  add("dglobal", {B, G}, 4);
  for (size_t i = 0; i < lay.line.size(); ++i) add("line.grad." + std::to_string(i), {NL, lay.line[i].out}, 4);
  for (size_t i = 0; i < lay.reg.size(); ++i) add("reg.grad." + std::to_string(i), {NL, lay.reg[i].out}, 4);
  int64_t UL = 0;
  if (cfg.has_local()) {  // appended: the seeds' buffers keep their offsets
    const int64_t NLK = NL * cfg.local_k;
    const int64_t NLKa = rc ? int64_t(recompute_chunk_groups(int(NL), cfg.local_k)) * cfg.local_k : NLK;
    const int C = cfg.local.back(), Fw = lay.reg[0].in - G;
    UL = argmax_rows_capacity(int(NL), cfg.local_k, C);
    add("input.local", {NLK, cfg.in_channels}, 4);
    for (size_t i = 0; i + 1 < lay.local.size(); ++i)
      add("loc.act." + std::to_string(i), {NLKa, lay.local[i].out}, 4);
    if (cuda) add("loc.pre_max", {NLKa, C}, 4);
    add("loc.out", {NL, C}, 4);
    add("loc.argmax", {NL, C}, 4);
    add("window", {NL, Fw}, 4);
    add("loc.rows.row_of", {NLK}, 4);
    add("loc.rows.sample_rows", {NL + 1}, 4);
    add("loc.rows.source", {UL}, 8);
    add("loc.rows.din_row", {NL, C}, 4);
    add("loc.rows.chan_begin", {UL}, 4);
    add("loc.rows.chan_count", {UL}, 4);
    add("loc.rows.chans", {NL, C}, 4);
    for (size_t i = 0; i < lay.local.size(); ++i) add("loc.in." + std::to_string(i), {UL, lay.local[i].in}, 4);
    for (size_t i = 1; i < lay.local.size(); ++i) add("loc.cgrad." + std::to_string(i), {UL, lay.local[i].in}, 4);
    add("window.grad", {NL, Fw}, 4);
    add("loc.dout", {NL, C}, 4);
  }
  for (size_t i = 0; i < lay.var.size(); ++i) add("var.act." + std::to_string(i), {NL, lay.var[i].out}, 4);
  for (size_t i = 0; i < lay.var.size(); ++i) add("var.grad." + std::to_string(i), {NL, lay.var[i].out}, 4);
  add("loss", {1}, sizeof(HostLoss));
  if (cuda) add("ones", {std::max({NL, U, int64_t(B), UL})}, 4);
  return w;
}

// ---- the model ----------------------------------------------------------------------------------
// Point-wise layers over the points of each group, the last fused with a max over the group, and
// the argmax-sparse backward: the encoder (B groups of P points) and the local branch (B*L
// groups of K points) are the same structure, run by the same code.
struct MaxBranch {
  std::vector<Layer> layers;
  std::vector<float*> act, in, cgrad;  // act: all but the last layer; in/cgrad: at the compact rows
  float *pre_max = nullptr, *out = nullptr, *dout = nullptr;
  // Recomputing: the forward runs chunk_groups groups at a time through act/pre_max (0: all at
  // once, act keeps every row for the backward).
  bool recompute = false;
  int chunk_groups = 0;
  int32_t* argmax = nullptr;
  ArgmaxRows rows;
};

struct LineRefiner::Impl {
  // Declared first, destroyed last: everything below may use the stream.
  Backend backend;
  void* stream = nullptr;  // CUDA: the model's own non-blocking stream
  OpContext ctx;
  std::unique_ptr<cuda::Blas> blas;
  std::unique_ptr<cuda::StepGraph> graph;
  const Adam* graph_adam = nullptr;  // the Adam baked into the captured graph
  float graph_lr = 0;                // and its learning rate then (a schedule changes it: captured again)
  ModelLayout lay;
  Buffer params, grads;
  // workspace of the prepared shape
  WorkspaceLayout ws;
  Buffer mem;
  int cap = 0, P = 0, L = 0;
  int K = 0, W = 0;  // the local branch's points per line point and window (K = 0: none)
  int last_B = 0;
  int64_t last_U = -1;
  // resolved buffer pointers
  float *in_ctx = nullptr, *in_noisy = nullptr, *in_target = nullptr, *in_local = nullptr, *scratch = nullptr,
        *window = nullptr, *dwindow = nullptr;
  MaxBranch enc, loc;
  std::vector<float*> line_act, reg_act, line_grad, reg_grad, var_act, var_grad;
  LossState<float> loss;
  // loss readback
  HostLoss* host_loss = nullptr;  // pinned on CUDA
  HostLoss cpu_loss{};
  void* loss_event = nullptr;
  bool loss_pending = false;

  template <class T>
  T* at(const std::string& name) const {
    return reinterpret_cast<T*>(mem.as<char>() + ws.at(name).offset);
  }
  void zero(void* p, size_t bytes) const { zero_async(ctx, p, bytes); }
  void zero_rows(float* buf, int64_t rows, int width) const { zero(buf, size_t(rows) * width * sizeof(float)); }

  void check_prepared(int B, int P_, int L_) const {
    if (cap == 0) fail("LineRefiner", "no workspace yet: call prepare(capacity, P, L) first");
    if (B <= 0 || B > cap || P_ != P || L_ != L)
      fail("LineRefiner", "batch B=" + std::to_string(B) + ", P=" + std::to_string(P_) + ", L=" +
                              std::to_string(L_) + " does not fit the prepared workspace (capacity " +
                              std::to_string(cap) + ", P=" + std::to_string(P) + ", L=" + std::to_string(L) + ")");
  }
  void check_local(const float* local) const {
    if (K > 0 && !local)
      fail("LineRefiner", "this model has a local branch: it reads `local` [B, L, K=" + std::to_string(K) +
                              ", in] beside context and noisy_line, and none was given");
  }

  // ---- the layer sequence --------------------------------------------------------------------
  // x [groups*points, layers[0].in] -> br.out [groups, C] (and br.argmax)
  void branch_forward(const MaxBranch& br, const float* x, int groups, int points) {
    const float* p = params.as<float>();
    const int step = br.recompute ? br.chunk_groups : groups;
    const int C = br.layers.back().out;
    for (int g0 = 0; g0 < groups; g0 += step) {
      const int gc = std::min(step, groups - g0);
      const int64_t N = int64_t(gc) * points;
      const float* in = x + int64_t(g0) * points * br.layers[0].in;
      for (size_t i = 0; i < br.layers.size(); ++i) {
        const Layer& y = br.layers[i];
        if (i + 1 < br.layers.size()) {
          linear_forward(ctx, br.act[i], in, p + y.w, p + y.b, N, y.in, y.out, true);
          in = br.act[i];
        } else {
          linear_relu_max_forward(ctx, br.out + int64_t(g0) * C, br.argmax + int64_t(g0) * C, in, p + y.w, p + y.b,
                                  gc, points, y.in, y.out, br.pre_max);
        }
      }
    }
  }

  // From br.dout [groups, C]: only the argmax rows of active channels receive gradient. Compact
  // them and run the dense layers on those rows only. Returns the compact row count.
  int64_t branch_backward(const MaxBranch& br, const float* x, int groups, int points) {
    const OpContext& c = ctx;
    const float* p = params.as<float>();
    float* g = grads.as<float>();
    const size_t n = br.layers.size();
    const int G = br.layers.back().out;
    const int64_t U = compact_argmax_rows(c, br.rows, br.out, br.argmax, groups, points, G);
    if (!br.recompute) {
      for (size_t i = 0; i < n; ++i)
        gather_rows(c, br.in[i], i == 0 ? x : br.act[i - 1], br.rows.source, U, br.layers[i].in);
    } else {
      // The layers before the max run again, chunk by chunk as in the forward (the same GEMM row
      // blocks: OpenBLAS's result for a row depends on its place in the block, so running them on
      // the compact rows alone would not give the same bits), each chunk's compact rows gathered
      // from its activations. Compact rows are in sample order: a chunk's are one range.
      gather_rows(c, br.in[0], x, br.rows.source, U, br.layers[0].in);
      const int step = br.chunk_groups;
      const int stride = std::min(points, G);  // CUDA: sample b's compact rows start at b * stride
      auto rows_before = [&](int g) { return c.on_cuda() ? int64_t(g) * stride : int64_t(br.rows.sample_rows[g]); };
      for (int g0 = 0; g0 < groups && n > 1; g0 += step) {
        const int gc = std::min(step, groups - g0);
        const int64_t N = int64_t(gc) * points, u0 = rows_before(g0), u1 = rows_before(g0 + gc);
        const float* in = x + int64_t(g0) * points * br.layers[0].in;
        for (size_t i = 0; i + 1 < n; ++i) {
          const Layer& y = br.layers[i];
          linear_forward(c, br.act[i], in, p + y.w, p + y.b, N, y.in, y.out, true);
          in = br.act[i];
          // source holds batch rows: address the chunk's activations as if they started at row 0
          const float* rows0 = br.act[i] - int64_t(g0) * points * y.out;
          if (u1 > u0) gather_rows(c, br.in[i + 1] + u0 * y.out, rows0, br.rows.source + u0, u1 - u0, y.out);
        }
      }
    }
    const bool compact_in = br.recompute && n > 1;  // the last layer's input: only at the compact rows
    const Layer& yl = br.layers[n - 1];
    float* dlast = nullptr;
    if (n > 1) {
      zero_rows(br.cgrad[n - 1], U, yl.in);
      dlast = br.cgrad[n - 1];
    }
    linear_relu_max_backward(c, dlast, br.rows, g + yl.w, g + yl.b, br.dout, br.out, br.argmax,
                             compact_in ? br.in[n - 1] : n > 1 ? br.act[n - 2] : x, compact_in, p + yl.w, groups,
                             points, yl.in, yl.out);
    for (size_t i = n - 1; i-- > 0;) {
      // layer i: input in[i] [U, in], output = in[i+1] (saved, post-ReLU)
      const Layer& y = br.layers[i];
      float* din = nullptr;
      if (i > 0) {
        zero_rows(br.cgrad[i], U, y.in);
        din = br.cgrad[i];
      }
      linear_backward(c, din, g + y.w, g + y.b, br.cgrad[i + 1], br.in[i + 1], br.in[i], p + y.w, U, y.in, y.out,
                      true);
    }
    return U;
  }

  void forward(const float* context, const float* noisy, const float* local, int B) {
    check_local(local);
    const OpContext& c = ctx;
    const float* p = params.as<float>();
    const int64_t NL = int64_t(B) * L;
    const size_t nR = lay.reg.size();
    const int G = lay.enc.back().out, F = lay.line.back().out;
    branch_forward(enc, context, B, P);
    const float* in = noisy;
    for (size_t i = 0; i < lay.line.size(); ++i) {
      const Layer& y = lay.line[i];
      linear_forward(c, line_act[i], in, p + y.w, p + y.b, NL, y.in, y.out, true);
      in = line_act[i];
    }
    const float* feat = line_act.back();  // what the regressor reads per line point, [NL, Fr]
    int Fr = F;
    if (K > 0) {
      branch_forward(loc, local, int(NL), K);
      line_window_forward(c, window, feat, loc.out, B, L, F, lay.local.back().out, W);
      feat = window, Fr = lay.reg[0].in - G;
    }
    for (size_t i = 0; i < nR; ++i) {
      const Layer& y = lay.reg[i];
      const bool relu = i + 1 < nR;
      if (i == 0)
        global_line_linear_forward(c, reg_act[0], enc.out, feat, p + y.w, p + y.b, B, L, G, Fr, y.out, relu,
                                   scratch);
      else
        linear_forward(c, reg_act[i], reg_act[i - 1], p + y.w, p + y.b, NL, y.in, y.out, relu);
    }
    // the variance head, on the regressor's last hidden layer
    for (size_t i = 0; i < lay.var.size(); ++i) {
      const Layer& y = lay.var[i];
      linear_forward(c, var_act[i], i == 0 ? reg_act[nR - 2] : var_act[i - 1], p + y.w, p + y.b, NL, y.in, y.out,
                     i + 1 < lay.var.size());
    }
    last_B = B;
  }

  void forward_backward(const float* context, const float* noisy, const float* target, const float* local, int B) {
    forward(context, noisy, local, B);
    const OpContext& c = ctx;
    const float* p = params.as<float>();
    float* g = grads.as<float>();
    zero(g, grads.bytes());
    const int64_t NL = int64_t(B) * L;
    const size_t nLn = lay.line.size(), nR = lay.reg.size();
    const int G = lay.enc.back().out, F = lay.line.back().out;

    const int64_t n_out = NL * lay.reg.back().out;
    mse_loss(c, loss, reg_act.back(), target, n_out);
    zero_rows(reg_grad.back(), NL, lay.reg.back().out);
    mse_backward(c, reg_grad.back(), reg_act.back(), target, n_out, 1.f);

    // the variance head: the likelihood of the residual the offsets leave; nothing flows upstream
    if (!lay.var.empty()) {
      const size_t nV = lay.var.size();
      zero_rows(var_grad.back(), NL, lay.var.back().out);
      gaussian_nll_backward(c, var_grad.back(), var_act.back(), reg_act.back(), target, n_out, 1.f);
      for (size_t i = nV; i-- > 0;) {
        const Layer& y = lay.var[i];
        float* din = nullptr;
        if (i > 0) {
          zero_rows(var_grad[i - 1], NL, y.in);
          din = var_grad[i - 1];
        }
        linear_backward(c, din, g + y.w, g + y.b, var_grad[i], var_act[i], i > 0 ? var_act[i - 1] : reg_act[nR - 2],
                        p + y.w, NL, y.in, y.out, i + 1 < nV);
      }
    }

    // regressor, reverse; layer 0 is the fused global/line layer
    for (size_t i = nR; i-- > 1;) {
      const Layer& y = lay.reg[i];
      zero_rows(reg_grad[i - 1], NL, y.in);
      linear_backward(c, reg_grad[i - 1], g + y.w, g + y.b, reg_grad[i], reg_act[i], reg_act[i - 1], p + y.w, NL,
                      y.in, y.out, i + 1 < nR);
    }
    zero_rows(enc.dout, B, G);
    zero_rows(line_grad.back(), NL, F);
    {
      const Layer& y = lay.reg[0];
      if (K == 0) {
        global_line_linear_backward(c, enc.dout, line_grad.back(), g + y.w, g + y.b, reg_grad[0], reg_act[0], enc.out,
                                    line_act.back(), p + y.w, B, L, G, F, y.out, nR > 1, scratch);
      } else {  // through the window: its slots back to the line feature and the local features
        const int Fr = y.in - G, C = lay.local.back().out;
        zero_rows(dwindow, NL, Fr);
        global_line_linear_backward(c, enc.dout, dwindow, g + y.w, g + y.b, reg_grad[0], reg_act[0], enc.out, window,
                                    p + y.w, B, L, G, Fr, y.out, nR > 1, scratch);
        zero_rows(loc.dout, NL, C);
        line_window_backward(c, line_grad.back(), loc.dout, dwindow, B, L, F, C, W);
      }
    }
    // line MLP, reverse (no gradient for the network input)
    for (size_t i = nLn; i-- > 0;) {
      const Layer& y = lay.line[i];
      float* din = nullptr;
      if (i > 0) {
        zero_rows(line_grad[i - 1], NL, y.in);
        din = line_grad[i - 1];
      }
      linear_backward(c, din, g + y.w, g + y.b, line_grad[i], line_act[i], i > 0 ? line_act[i - 1] : noisy, p + y.w,
                      NL, y.in, y.out, true);
    }
    last_U = branch_backward(enc, context, B, P);
    if (K > 0) branch_backward(loc, local, int(NL), K);
  }

  void step(const float* context, const float* noisy, const float* target, const float* local, int B, Adam& adam) {
    forward_backward(context, noisy, target, local, B);
    adam.step(ctx, params.as<float>(), grads.as<float>());
  }

  void drop_graph() {
    if (graph) graph->reset();
    graph_adam = nullptr;
  }

  void release_workspace() {
    drop_graph();
    if (backend.is_cuda() && stream) synchronize(ctx);
    mem = Buffer();
    cap = P = L = 0;
    last_B = 0;
    last_U = -1;
  }

  void bind_branch(MaxBranch& br, const std::vector<Layer>& layers, bool recompute, int groups, int points,
                   const std::string& pre,
                   const std::string& rows, const std::string& out, const std::string& argmax,
                   const std::string& dout) {
    br.layers = layers;
    br.recompute = recompute;
    br.chunk_groups = recompute ? recompute_chunk_groups(groups, points) : 0;
    auto list = [&](std::vector<float*>& v, const std::string& prefix, size_t first, size_t n) {
      v.assign(n, nullptr);
      for (size_t i = first; i < n; ++i) v[i] = at<float>(prefix + std::to_string(i));
    };
    list(br.act, pre + ".act.", 0, layers.size() - 1);
    list(br.in, pre + ".in.", 0, layers.size());
    list(br.cgrad, pre + ".cgrad.", 1, layers.size());
    br.pre_max = ws.has(pre + ".pre_max") ? at<float>(pre + ".pre_max") : nullptr;
    br.out = at<float>(out);
    br.argmax = at<int32_t>(argmax);
    br.dout = at<float>(dout);
    br.rows.row_of = at<int32_t>(rows + ".row_of");
    br.rows.sample_rows = at<int32_t>(rows + ".sample_rows");
    br.rows.source = at<int64_t>(rows + ".source");
    br.rows.din_row = at<int32_t>(rows + ".din_row");
    br.rows.chan_begin = at<int32_t>(rows + ".chan_begin");
    br.rows.chan_count = at<int32_t>(rows + ".chan_count");
    br.rows.chans = at<int32_t>(rows + ".chans");
  }

  void prepare(const ModelConfig& cfg, int capacity, int P_, int L_) {
    if (cap > 0 && capacity <= cap && P_ == P && L_ == L) return;
    release_workspace();
    ws = model_workspace(cfg, capacity, P_, L_, backend);
    mem = Buffer(backend, ws.total_bytes, "the model workspace (batch " + std::to_string(capacity) + ")");
    cap = capacity, P = P_, L = L_;
    K = cfg.has_local() ? cfg.local_k : 0, W = cfg.local_window;
    in_ctx = at<float>("input.context");
    in_noisy = at<float>("input.noisy_line");
    in_target = at<float>("input.target_offset");
    scratch = at<float>("reg.scratch");
    bind_branch(enc, lay.enc, cfg.recomputes(), capacity, P_, "enc", "rows", "global", "argmax", "dglobal");
    if (K > 0) {
      in_local = at<float>("input.local");
      window = at<float>("window");
      dwindow = at<float>("window.grad");
      bind_branch(loc, lay.local, cfg.recomputes(), capacity * L_, K, "loc", "loc.rows", "loc.out", "loc.argmax", "loc.dout");
    }
    auto list = [&](std::vector<float*>& v, const std::string& prefix, size_t n) {
      v.assign(n, nullptr);
      for (size_t i = 0; i < n; ++i) v[i] = at<float>(prefix + std::to_string(i));
    };
    list(line_act, "line.act.", lay.line.size());
    list(reg_act, "reg.act.", lay.reg.size());
    list(line_grad, "line.grad.", lay.line.size());
    list(reg_grad, "reg.grad.", lay.reg.size());
    list(var_act, "var.act.", lay.var.size());
    list(var_grad, "var.grad.", lay.var.size());
    char* l = at<char>("loss");
    loss = {reinterpret_cast<double*>(l), reinterpret_cast<int32_t*>(l + 8), reinterpret_cast<float*>(l + 12)};
    if (ws.has("ones")) {
      const WorkspaceBuffer& o = ws.at("ones");
      ctx.ones = at<float>("ones");
      ctx.ones_len = o.shape[0];
      fill(ctx, const_cast<float*>(ctx.ones), 1.f, size_t(ctx.ones_len));
      synchronize(ctx);
    }
  }
};

LineRefiner::LineRefiner(ModelConfig cfg, uint64_t seed, Backend backend, Precision precision)
    : cfg_(std::move(cfg)), table_(make_param_table(cfg_)), impl_(std::make_unique<Impl>()) {
  check_precision(backend, precision);
  n_ = table_.back().offset + table_.back().numel;
  Impl& I = *impl_;
  I.backend = backend;
  I.lay = model_layout(cfg_);
  I.ctx.backend = backend;
  I.ctx.precision = precision;
  if (backend.is_cuda()) {
#ifdef SL_WITH_CUDA
    I.stream = cuda::stream_create(backend.device);
    I.ctx.stream = I.stream;
    I.blas = std::make_unique<cuda::Blas>(backend.device, precision);
    I.blas->bind(I.stream);
    I.ctx.blas = I.blas.get();
    I.graph = std::make_unique<cuda::StepGraph>();
    I.loss_event = cuda::event_create(backend.device);
    I.host_loss = static_cast<HostLoss*>(cuda::pinned_alloc(sizeof(HostLoss)));
#else
    throw Error("LineRefiner on " + backend.name() + ": this build has no CUDA backend (no CUDA toolkit was found at build time)");
#endif
  } else {
    I.host_loss = &I.cpu_loss;
  }
  I.params = Buffer(backend, n_ * sizeof(float), "the model parameters");
  I.grads = Buffer(backend, n_ * sizeof(float), "the model gradients");
  init(seed);
}

LineRefiner::~LineRefiner() {
  if (!impl_) return;
  Impl& I = *impl_;
  if (!I.backend.is_cuda()) return;
#ifdef SL_WITH_CUDA
  // Order matters: nothing queued may still run when memory, the handle or the stream go.
  cuda::stream_sync_noexcept(I.stream);
  I.graph.reset();
  I.blas.reset();
  I.mem = Buffer();
  I.params = Buffer();
  I.grads = Buffer();
  cuda::pinned_free(I.host_loss);
  cuda::event_destroy(I.backend.device, I.loss_event);
  cuda::stream_destroy(I.backend.device, I.stream);
#endif
}

LineRefiner::LineRefiner(LineRefiner&&) noexcept = default;
LineRefiner& LineRefiner::operator=(LineRefiner&& o) noexcept {
  if (this != &o) {
    LineRefiner dying(std::move(*this));  // releases the old state in order
    cfg_ = std::move(o.cfg_);
    table_ = std::move(o.table_);
    n_ = o.n_;
    impl_ = std::move(o.impl_);
  }
  return *this;
}

void LineRefiner::init(uint64_t seed) {
  std::vector<float> h(n_);
  uint64_t s = seed;
  for (size_t i = 0; i < table_.size(); i += 2) {
    const ParamInfo& w = table_[i];
    const double fan_in = double(w.shape[1] * w.shape[2]);
    const float bound = float(1.0 / std::sqrt(fan_in));
    for (int k = 0; k < 2; ++k) {
      const ParamInfo& p = table_[i + k];
      for (size_t j = 0; j < p.numel; ++j) {
        // 24 random bits -> [0, 1) exactly representable -> [-bound, bound)
        const float u = float(splitmix64(s) >> 40) * (1.0f / 16777216.0f);
        h[p.offset + j] = (2.f * u - 1.f) * bound;
      }
    }
  }
  upload_params(h.data());
}

const Backend& LineRefiner::backend() const { return impl_->backend; }
const OpContext& LineRefiner::context() const { return impl_->ctx; }

void LineRefiner::set_precision(Precision p) {
  check_precision(impl_->backend, p);
#ifdef SL_WITH_CUDA
  if (impl_->blas) impl_->blas->set_precision(p);
#endif
  impl_->ctx.precision = p;
  impl_->drop_graph();
}

void LineRefiner::set_recompute(bool on) {
  const Recompute r = on ? Recompute::on : Recompute::off;
  if (cfg_.recompute == r) return;
  const bool was_prepared = impl_->cap > 0;
  cfg_.recompute = r;
  if (was_prepared) impl_->release_workspace();  // the activation buffers change size
}

const ParamInfo& LineRefiner::param(const std::string& name) const {
  for (const ParamInfo& p : table_)
    if (p.name == name) return p;
  fail("LineRefiner", "no parameter named '" + name + "'");
}

float* LineRefiner::param_data() { return impl_->params.as<float>(); }
const float* LineRefiner::param_data() const { return impl_->params.as<float>(); }
float* LineRefiner::grad_data() { return impl_->grads.as<float>(); }
const float* LineRefiner::grad_data() const { return impl_->grads.as<float>(); }

void LineRefiner::download_params(float* host) const {
  copy_to_host(impl_->ctx, host, impl_->params.data(), n_ * sizeof(float));
}
void LineRefiner::upload_params(const float* host) {
  copy_from_host(impl_->ctx, impl_->params.data(), host, n_ * sizeof(float));
}
void LineRefiner::download_grads(float* host) const {
  copy_to_host(impl_->ctx, host, impl_->grads.data(), n_ * sizeof(float));
}

void LineRefiner::prepare(int capacity, int P, int L) { impl_->prepare(cfg_, capacity, P, L); }
int LineRefiner::capacity() const { return impl_->cap; }

float* LineRefiner::input_context() {
  impl_->check_prepared(1, impl_->P, impl_->L);
  return impl_->in_ctx;
}
float* LineRefiner::input_noisy() {
  impl_->check_prepared(1, impl_->P, impl_->L);
  return impl_->in_noisy;
}
float* LineRefiner::input_target() {
  impl_->check_prepared(1, impl_->P, impl_->L);
  return impl_->in_target;
}
float* LineRefiner::input_local() {
  impl_->check_prepared(1, impl_->P, impl_->L);
  if (impl_->K == 0) fail("LineRefiner", "this model has no local branch (no `local` input)");
  return impl_->in_local;
}

void LineRefiner::load_inputs(const float* context, const float* noisy_line, const float* target_offset, int B,
                              const float* local) {
  Impl& I = *impl_;
  I.check_prepared(B, I.P, I.L);
  I.check_local(local);
  copy_async(I.ctx, I.in_ctx, context, size_t(B) * I.P * cfg_.in_channels * sizeof(float));
  copy_async(I.ctx, I.in_noisy, noisy_line, size_t(B) * I.L * cfg_.line_channels * sizeof(float));
  copy_async(I.ctx, I.in_target, target_offset, size_t(B) * I.L * cfg_.out_channels * sizeof(float));
  if (I.K > 0) copy_async(I.ctx, I.in_local, local, size_t(B) * I.L * I.K * cfg_.in_channels * sizeof(float));
}

float LineRefiner::forward_backward(const float* context, const float* noisy_line, const float* target_offset,
                                    int B, int P, int L, const float* local) {
  Impl& I = *impl_;
  prepare(std::max(B, I.P == P && I.L == L ? I.cap : 0), P, L);
  I.check_prepared(B, P, L);
  I.forward_backward(context, noisy_line, target_offset, local, B);
  float last = 0;
  copy_to_host(I.ctx, &last, I.loss.last, sizeof last);
  return last;
}

void LineRefiner::step(const float* context, const float* noisy_line, const float* target_offset, int B, int P,
                       int L, Adam& adam, const float* local) {
  Impl& I = *impl_;
  I.check_prepared(B, P, L);
  I.step(context, noisy_line, target_offset, local, B, adam);
}

void LineRefiner::step_inputs(int B, Adam& adam) {
  Impl& I = *impl_;
  I.check_prepared(B, I.P, I.L);
  if (!I.graph || B != I.cap) {  // the CPU, or a short batch: plainly, inside the same workspace
    I.step(I.in_ctx, I.in_noisy, I.in_target, I.in_local, B, adam);
    return;
  }
#ifdef SL_WITH_CUDA
  if (I.graph_adam != &adam || I.graph_lr != adam.config().lr) {  // the graph bakes in the optimizer's buffers and settings
    I.graph->reset();
    I.graph_adam = &adam;
    I.graph_lr = adam.config().lr;
  }
  I.graph->run(I.stream, [&] { I.step(I.in_ctx, I.in_noisy, I.in_target, I.in_local, B, adam); });
#endif
}

void LineRefiner::forward(const float* context, const float* noisy_line, int B, int P, int L, float* pred_offset,
                          const float* local, float* log_var) {
  Impl& I = *impl_;
  if (log_var && !cfg_.has_variance()) fail("LineRefiner", "this model has no variance head (no log variance)");
  prepare(std::max(B, I.P == P && I.L == L ? I.cap : 0), P, L);
  I.forward(context, noisy_line, local, B);
  if (pred_offset)
    copy_async(I.ctx, pred_offset, I.reg_act.back(), size_t(B) * L * cfg_.out_channels * sizeof(float));
  if (log_var) copy_async(I.ctx, log_var, I.var_act.back(), size_t(B) * L * cfg_.out_channels * sizeof(float));
}

const float* LineRefiner::last_prediction() const {
  if (impl_->last_B == 0) fail("LineRefiner", "no forward pass has run yet");
  return impl_->reg_act.back();
}

const int32_t* LineRefiner::last_argmax() const {
  if (impl_->last_B == 0) fail("LineRefiner", "no forward pass has run yet");
  return impl_->enc.argmax;
}

const int32_t* LineRefiner::last_local_argmax() const {
  if (impl_->last_B == 0) fail("LineRefiner", "no forward pass has run yet");
  if (impl_->K == 0) fail("LineRefiner", "this model has no local branch");
  return impl_->loc.argmax;
}

int64_t LineRefiner::last_compact_rows() const {
  if (impl_->last_U < 0) fail("LineRefiner", "no forward_backward has run yet");
  return impl_->last_U;
}

void LineRefiner::request_loss() {
  Impl& I = *impl_;
  if (I.loss_pending) fail("LineRefiner::request_loss", "the previous request was not taken yet (poll_loss)");
  if (I.cap == 0) fail("LineRefiner::request_loss", "no step has run (no workspace)");
  if (I.backend.is_cuda()) {
#ifdef SL_WITH_CUDA
    cuda::memcpy_async(I.host_loss, I.loss.sum, sizeof(HostLoss), cuda::Copy::DeviceToHost, I.stream);
    cuda::memset_async(I.loss.sum, 12, I.stream);  // sum and count; `last` stays
    cuda::event_record(I.loss_event, I.stream);
#endif
  } else {
    std::memcpy(I.host_loss, I.loss.sum, sizeof(HostLoss));
    std::memset(I.loss.sum, 0, 12);
  }
  I.loss_pending = true;
}

bool LineRefiner::poll_loss(float* mean, float* last, int* steps, bool wait) {
  Impl& I = *impl_;
  if (!I.loss_pending) fail("LineRefiner::poll_loss", "no loss was requested");
#ifdef SL_WITH_CUDA
  if (I.backend.is_cuda()) {
    if (wait) cuda::event_sync(I.loss_event);
    else if (!cuda::event_done(I.loss_event)) return false;
  }
#else
  (void)wait;
#endif
  I.loss_pending = false;
  const HostLoss h = *I.host_loss;
  if (steps) *steps = h.count;
  if (mean) *mean = h.count > 0 ? float(h.sum / h.count) : std::numeric_limits<float>::quiet_NaN();
  if (last) *last = h.count > 0 ? h.last : std::numeric_limits<float>::quiet_NaN();
  return true;
}

bool LineRefiner::loss_pending() const { return impl_->loss_pending; }

float LineRefiner::read_loss(int* steps) {
  Impl& I = *impl_;
  if (!I.loss_pending) request_loss();
  float mean = 0;
  poll_loss(&mean, nullptr, steps, true);
  return mean;
}

void LineRefiner::record_gemms(std::vector<cuda::GemmShape>* out) {
#ifdef SL_WITH_CUDA
  if (impl_->blas) impl_->blas->record = out;
#else
  (void)out;
#endif
}

size_t LineRefiner::backend_bytes() const {
  size_t b = impl_->params.bytes() + impl_->grads.bytes() + impl_->mem.bytes();
  if (impl_->backend.is_cuda()) b += cuda::kBlasWorkspaceBytes;
  return b;
}

}  // namespace sl
