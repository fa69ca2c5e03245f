#include "kernels/model.h"

#include <tbb/parallel_for.h>

#include <cmath>
#include <cstring>

#include "graph/error.h"
#include "kernels/ops.h"

namespace sl {

namespace {

struct Layer {
  int in, out;
};

struct Layout {
  std::vector<Layer> enc, line, reg;  // reg includes the final output layer
};

Layout layout_of(const ModelConfig& c) {
  auto check = [](const std::vector<int>& w, const char* what) {
    if (w.empty()) fail("model config", std::string(what) + " has no layers");
    for (int v : w)
      if (v <= 0) fail("model config", std::string(what) + " has a non-positive width");
  };
  check(c.encoder, "encoder");
  check(c.line_mlp, "line_mlp");
  check(c.regressor, "regressor");
  if (c.in_channels <= 0 || c.line_channels <= 0 || c.out_channels <= 0)
    fail("model config", "channel counts must be positive");
  Layout l;
  int prev = c.in_channels;
  for (int w : c.encoder) l.enc.push_back({prev, w}), prev = w;
  prev = c.line_channels;
  for (int w : c.line_mlp) l.line.push_back({prev, w}), prev = w;
  prev = c.encoder.back() + c.line_mlp.back();
  for (int w : c.regressor) l.reg.push_back({prev, w}), prev = w;
  l.reg.push_back({prev, c.out_channels});
  return l;
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<ParamInfo> make_param_table(const ModelConfig& cfg) {
  const Layout l = layout_of(cfg);
  std::vector<ParamInfo> t;
  size_t off = 0;
  auto add = [&](const std::string& prefix, const std::vector<Layer>& layers) {
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string base = prefix + "." + std::to_string(2 * i);
      const size_t nw = size_t(layers[i].out) * layers[i].in;
      t.push_back({base + ".weight", {layers[i].out, layers[i].in, 1}, off, nw});
      off += nw;
      t.push_back({base + ".bias", {layers[i].out}, off, size_t(layers[i].out)});
      off += layers[i].out;
    }
  };
  add("encoder", l.enc);
  add("line_mlp", l.line);
  add("regressor", l.reg);
  return t;
}

// ---- reference model --------------------------------------------------------------------------
template <class T>
T line_refiner_reference(const ModelConfig& cfg, const T* params, T* grads, const T* context,
                         const T* noisy_line, const T* target_offset, int B, int P, int L,
                         T* pred) {
  const Layout lay = layout_of(cfg);
  const std::vector<ParamInfo> table = make_param_table(cfg);
  size_t ti = 0;  // walks the table: weight, bias per layer
  struct Ref {
    const Layer* l;
    size_t w, b;
  };
  auto take = [&](const std::vector<Layer>& ls) {
    std::vector<Ref> r;
    for (const Layer& l : ls) {
      r.push_back({&l, table[ti].offset, table[ti + 1].offset});
      ti += 2;
    }
    return r;
  };
  const auto enc = take(lay.enc), line = take(lay.line), reg = take(lay.reg);
  const int G = cfg.encoder.back(), F = cfg.line_mlp.back();
  const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;

  // forward, keeping every activation
  auto run = [&](const std::vector<Ref>& ls, const T* x, int64_t n, bool relu_last,
                 std::vector<std::vector<T>>& acts) {
    const T* in = x;
    for (size_t i = 0; i < ls.size(); ++i) {
      acts.emplace_back(size_t(n) * ls[i].l->out);
      const bool relu = i + 1 < ls.size() || relu_last;
      linear_forward_reference(acts.back().data(), in, params + ls[i].w, params + ls[i].b, n,
                               ls[i].l->in, ls[i].l->out, relu);
      in = acts.back().data();
    }
  };
  std::vector<std::vector<T>> ea, la, ra;
  run(enc, context, NP, true, ea);
  std::vector<T> global(size_t(B) * G);
  std::vector<int32_t> argmax(size_t(B) * G);
  maxpool_forward(global.data(), argmax.data(), ea.back().data(), B, P, G);
  run(line, noisy_line, NL, true, la);
  std::vector<T> cat(size_t(NL) * (G + F));
  concat_forward(cat.data(), global.data(), la.back().data(), B, L, G, F);
  run(reg, cat.data(), NL, false, ra);
  const int OUT = cfg.out_channels;
  const T loss = mse_forward(ra.back().data(), target_offset, NL * OUT);
  if (pred) std::copy(ra.back().begin(), ra.back().end(), pred);
  if (!grads) return loss;

  // backward, in exact reverse order
  auto back = [&](const std::vector<Ref>& ls, const T* x, int64_t n, bool relu_last,
                  std::vector<std::vector<T>>& acts, std::vector<T> dout, T* dx) {
    for (size_t i = ls.size(); i-- > 0;) {
      const T* in = i == 0 ? x : acts[i - 1].data();
      std::vector<T> din(size_t(n) * ls[i].l->in, T(0));
      const bool relu = i + 1 < ls.size() || relu_last;
      linear_backward_reference(din.data(), grads + ls[i].w, grads + ls[i].b, dout.data(),
                                acts[i].data(), in, params + ls[i].w, n, ls[i].l->in,
                                ls[i].l->out, relu);
      dout = std::move(din);
    }
    if (dx)
      for (size_t k = 0; k < dout.size(); ++k) dx[k] += dout[k];
  };
  std::vector<T> dpred(size_t(NL) * OUT, T(0));
  mse_backward(dpred.data(), ra.back().data(), target_offset, NL * OUT);
  std::vector<T> dcat(size_t(NL) * (G + F), T(0));
  back(reg, cat.data(), NL, false, ra, dpred, dcat.data());
  std::vector<T> dglobal(size_t(B) * G, T(0)), dfeat(size_t(NL) * F, T(0));
  concat_backward(dglobal.data(), dfeat.data(), dcat.data(), B, L, G, F);
  back(line, noisy_line, NL, true, la, dfeat, nullptr);
  std::vector<T> dlast(size_t(NP) * G, T(0));
  maxpool_backward(dlast.data(), dglobal.data(), argmax.data(), B, P, G);
  back(enc, context, NP, true, ea, dlast, nullptr);
  return loss;
}

template float line_refiner_reference<float>(const ModelConfig&, const float*, float*,
                                             const float*, const float*, const float*, int, int,
                                             int, float*);
template double line_refiner_reference<double>(const ModelConfig&, const double*, double*,
                                               const double*, const double*, const double*, int,
                                               int, int, double*);

// ---- fast model -------------------------------------------------------------------------------
struct LineRefiner::Workspace {
  int B = -1, P = -1, L = -1;
  // forward, saved for backward
  std::vector<std::vector<float>> enc_act;  // [B*P, enc[i].out] for all but the last layer
  std::vector<float> global;                // [B, G]
  std::vector<int32_t> argmax;              // [B, G]
  std::vector<std::vector<float>> line_act, reg_act;  // [B*L, width]
  std::vector<float> scratch;                         // [B, reg[0].out]
  // backward
  std::vector<std::vector<float>> dline, dreg;  // same shapes as line_act/reg_act
  std::vector<float> dglobal;                   // [B, G]
  std::vector<int32_t> row_of;                  // [B*P]: compact index of an argmax row or -1
  std::vector<int32_t> sample_rows;             // [B+1] prefix sums of compact rows per sample
  std::vector<int32_t> din_row;                 // [B, G] compact row of each (b, channel)
  std::vector<int64_t> compact_src;             // [U] source row b*P+p of each compact row
  std::vector<std::vector<float>> cin, cd;      // compact enc inputs / their grads [U, width]
};

LineRefiner::LineRefiner(ModelConfig cfg, uint64_t seed)
    : cfg_(std::move(cfg)), table_(make_param_table(cfg_)) {
  const size_t n = table_.back().offset + table_.back().numel;
  params_.assign(n, 0.f);
  grads_.assign(n, 0.f);
  init(seed);
}
LineRefiner::~LineRefiner() = default;
LineRefiner::LineRefiner(LineRefiner&&) noexcept = default;
LineRefiner& LineRefiner::operator=(LineRefiner&&) noexcept = default;

void LineRefiner::init(uint64_t seed) {
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
        params_[p.offset + j] = (2.f * u - 1.f) * bound;
      }
    }
  }
}

const ParamInfo& LineRefiner::param(const std::string& name) const {
  for (const ParamInfo& p : table_)
    if (p.name == name) return p;
  fail("LineRefiner", "no parameter named '" + name + "'");
}

LineRefiner::Workspace& LineRefiner::workspace(int B, int P, int L) {
  if (B <= 0 || P <= 0 || L <= 0) fail("LineRefiner", "B, P and L must be positive");
  if (!ws_) ws_ = std::make_unique<Workspace>();
  Workspace& w = *ws_;
  if (w.B == B && w.P == P && w.L == L) return w;
  const Layout lay = layout_of(cfg_);
  const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
  const int G = cfg_.encoder.back();
  const int64_t U = int64_t(B) * std::min(P, G);
  w = Workspace{};
  w.B = B, w.P = P, w.L = L;
  for (size_t i = 0; i + 1 < lay.enc.size(); ++i) w.enc_act.emplace_back(NP * lay.enc[i].out);
  w.global.resize(size_t(B) * G);
  w.argmax.resize(size_t(B) * G);
  w.dglobal.resize(size_t(B) * G);
  for (const Layer& l : lay.line) w.line_act.emplace_back(NL * l.out), w.dline.emplace_back(NL * l.out);
  for (const Layer& l : lay.reg) w.reg_act.emplace_back(NL * l.out), w.dreg.emplace_back(NL * l.out);
  w.scratch.resize(size_t(B) * lay.reg[0].out);
  w.row_of.resize(NP);
  w.sample_rows.resize(B + 1);
  w.din_row.resize(size_t(B) * G);
  w.compact_src.resize(U);
  for (const Layer& l : lay.enc) w.cin.emplace_back(U * l.in), w.cd.emplace_back(U * l.in);
  return w;
}

void LineRefiner::run_forward(const float* context, const float* noisy_line, int B, int P,
                              int L) {
  Workspace& w = workspace(B, P, L);
  const Layout lay = layout_of(cfg_);
  const float* p = params_.data();
  const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
  size_t ti = 0;
  // encoder: all but the last layer dense (saved), the last fused with the max over points
  const float* in = context;
  for (size_t i = 0; i < lay.enc.size(); ++i, ti += 2) {
    const float* W = p + table_[ti].offset;
    const float* b = p + table_[ti + 1].offset;
    if (i + 1 < lay.enc.size()) {
      linear_forward(w.enc_act[i].data(), in, W, b, NP, lay.enc[i].in, lay.enc[i].out, true);
      in = w.enc_act[i].data();
    } else {
      linear_relu_max_forward(w.global.data(), w.argmax.data(), in, W, b, B, P, lay.enc[i].in,
                              lay.enc[i].out);
    }
  }
  in = noisy_line;
  for (size_t i = 0; i < lay.line.size(); ++i, ti += 2) {
    linear_forward(w.line_act[i].data(), in, p + table_[ti].offset, p + table_[ti + 1].offset, NL,
                   lay.line[i].in, lay.line[i].out, true);
    in = w.line_act[i].data();
  }
  const int G = cfg_.encoder.back(), F = cfg_.line_mlp.back();
  for (size_t i = 0; i < lay.reg.size(); ++i, ti += 2) {
    const bool relu = i + 1 < lay.reg.size();
    const float* W = p + table_[ti].offset;
    const float* b = p + table_[ti + 1].offset;
    if (i == 0)
      global_line_linear_forward(w.reg_act[0].data(), w.global.data(), w.line_act.back().data(),
                                 W, b, B, L, G, F, lay.reg[0].out, relu, w.scratch.data());
    else
      linear_forward(w.reg_act[i].data(), w.reg_act[i - 1].data(), W, b, NL, lay.reg[i].in,
                     lay.reg[i].out, relu);
  }
}

const float* LineRefiner::last_prediction() const {
  if (!ws_ || ws_->B < 0) fail("LineRefiner", "no forward pass has run yet");
  return ws_->reg_act.back().data();
}

int64_t LineRefiner::last_compact_rows() const {
  if (!ws_ || ws_->B < 0) fail("LineRefiner", "no forward_backward has run yet");
  return ws_->sample_rows[ws_->B];
}

void LineRefiner::forward(const float* context, const float* noisy_line, int B, int P, int L,
                          float* pred_offset) {
  run_forward(context, noisy_line, B, P, L);
  const std::vector<float>& out = ws_->reg_act.back();
  std::memcpy(pred_offset, out.data(), out.size() * sizeof(float));
}

float LineRefiner::forward_backward(const float* context, const float* noisy_line,
                                    const float* target_offset, int B, int P, int L) {
  run_forward(context, noisy_line, B, P, L);
  Workspace& w = *ws_;
  const Layout lay = layout_of(cfg_);
  const float* p = params_.data();
  float* g = grads_.data();
  std::memset(g, 0, grads_.size() * sizeof(float));
  const int64_t NL = int64_t(B) * L;
  const int G = cfg_.encoder.back(), F = cfg_.line_mlp.back();
  const size_t nE = lay.enc.size(), nLn = lay.line.size(), nR = lay.reg.size();
  auto W = [&](size_t layer) { return table_[2 * layer].offset; };
  auto Bi = [&](size_t layer) { return table_[2 * layer + 1].offset; };
  auto zero = [](std::vector<float>& v) { std::memset(v.data(), 0, v.size() * sizeof(float)); };

  const int64_t n_out = NL * cfg_.out_channels;
  const float loss = mse_forward(w.reg_act.back().data(), target_offset, n_out);
  zero(w.dreg.back());
  mse_backward(w.dreg.back().data(), w.reg_act.back().data(), target_offset, n_out);

  // regressor, reverse
  for (size_t i = nR; i-- > 1;) {
    const size_t li = nE + nLn + i;
    zero(w.dreg[i - 1]);
    linear_backward(w.dreg[i - 1].data(), g + W(li), g + Bi(li), w.dreg[i].data(),
                    w.reg_act[i].data(), w.reg_act[i - 1].data(), p + W(li), NL, lay.reg[i].in,
                    lay.reg[i].out, i + 1 < nR);
  }
  zero(w.dglobal);
  zero(w.dline.back());
  {
    const size_t li = nE + nLn;
    global_line_linear_backward(w.dglobal.data(), w.dline.back().data(), g + W(li), g + Bi(li),
                                w.dreg[0].data(), w.reg_act[0].data(), w.global.data(),
                                w.line_act.back().data(), p + W(li), B, L, G, F, lay.reg[0].out,
                                nR > 1, w.scratch.data());
  }
  // line MLP, reverse (no gradient for the network input)
  for (size_t i = nLn; i-- > 0;) {
    const size_t li = nE + i;
    float* din = nullptr;
    if (i > 0) {
      zero(w.dline[i - 1]);
      din = w.dline[i - 1].data();
    }
    linear_backward(din, g + W(li), g + Bi(li), w.dline[i].data(), w.line_act[i].data(),
                    i > 0 ? w.line_act[i - 1].data() : noisy_line, p + W(li), NL, lay.line[i].in,
                    lay.line[i].out, true);
  }

  // encoder: only the argmax rows of active channels receive gradient. Compact them (rows in
  // ascending order per sample, samples in order) and run the dense layers on those rows only.
  const int64_t P64 = P;
  const float* last_in = nE > 1 ? w.enc_act[nE - 2].data() : context;
  const int C_last = lay.enc[nE - 1].in;
  tbb::parallel_for(0, B, [&](int b) {
    int32_t* mark = w.row_of.data() + b * P64;
    std::fill(mark, mark + P, -1);
    for (int o = 0; o < G; ++o)
      if (w.global[size_t(b) * G + o] > 0.f) mark[w.argmax[size_t(b) * G + o]] = 0;
    int32_t n = 0;
    for (int r = 0; r < P; ++r)
      if (mark[r] == 0) mark[r] = n++;  // local index for now
    w.sample_rows[b + 1] = n;
  });
  w.sample_rows[0] = 0;
  for (int b = 0; b < B; ++b) w.sample_rows[b + 1] += w.sample_rows[b];
  const int64_t U = w.sample_rows[B];
  tbb::parallel_for(0, B, [&](int b) {
    const int32_t base = w.sample_rows[b];
    const int32_t* mark = w.row_of.data() + b * P64;
    for (int r = 0; r < P; ++r)
      if (mark[r] >= 0) w.compact_src[base + mark[r]] = b * P64 + r;
    for (int o = 0; o < G; ++o) {
      const size_t i = size_t(b) * G + o;
      w.din_row[i] = w.global[i] > 0.f ? base + mark[w.argmax[i]] : -1;
    }
  });
  // gather the saved inputs of every encoder layer for the compact rows
  auto gather = [&](float* dst, const float* src, int C) {
    tbb::parallel_for(int64_t(0), U, [&](int64_t u) {
      std::memcpy(dst + u * C, src + w.compact_src[u] * C, sizeof(float) * C);
    });
  };
  for (size_t i = 0; i < nE; ++i)
    gather(w.cin[i].data(), i == 0 ? context : w.enc_act[i - 1].data(), lay.enc[i].in);
  float* dlast = nullptr;
  if (nE > 1) {
    std::memset(w.cd[nE - 1].data(), 0, sizeof(float) * U * C_last);
    dlast = w.cd[nE - 1].data();
  }
  linear_relu_max_backward(dlast, w.din_row.data(), g + W(nE - 1), g + Bi(nE - 1),
                           w.dglobal.data(), w.global.data(), w.argmax.data(), last_in,
                           p + W(nE - 1), B, P, C_last, G);
  for (size_t i = nE - 1; i-- > 0;) {
    // layer i: input cin[i] [U, enc[i].in], output = cin[i+1] (saved, post-ReLU)
    float* din = nullptr;
    if (i > 0) {
      std::memset(w.cd[i].data(), 0, sizeof(float) * U * lay.enc[i].in);
      din = w.cd[i].data();
    }
    linear_backward(din, g + W(i), g + Bi(i), w.cd[i + 1].data(), w.cin[i + 1].data(),
                    w.cin[i].data(), p + W(i), U, lay.enc[i].in, lay.enc[i].out, true);
  }
  return loss;
}

}  // namespace sl
