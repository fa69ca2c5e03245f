// The op cases: one case type per op of the op list (kernels/ops.h), each a few shapes, each
// checked against the plain references of kernels/reference.h (tests/kernels/backend_test.cpp)
// and timed at the model's sizes (bench/bench_ops.cpp). The harness: op_harness.h.
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/adam.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "tests/kernels/op_harness.h"

namespace sl::test {

inline std::string dims(std::initializer_list<std::pair<const char*, double>> d) {
  std::ostringstream s;
  for (const auto& [k, v] : d) s << (s.tellp() > 0 ? " " : "") << k << "=" << v;
  return s.str();
}

inline std::vector<double> relu_of(std::vector<double> v) {
  for (double& x : v) x = x > 0 ? x : 0;
  return v;
}

// ---- linear -------------------------------------------------------------------------------------
struct LinearForward : Case<LinearForward> {
  int64_t N;
  int C_in, C_out;
  bool relu;
  LinearForward(int64_t n, int ci, int co, bool r) : N(n), C_in(ci), C_out(co), relu(r) {}
  std::string op() const override { return "linear_forward"; }
  std::string shape() const override { return dims({{"N", N}, {"C_in", C_in}, {"C_out", C_out}, {"relu", relu}}); }
  double flops() const override { return 2.0 * N * C_in * C_out; }
  template <class T>
  void body(Run<T>& r) const {
    const auto &x = r.in("in", N * C_in), &W = r.in("weight", C_out * C_in), &b = r.in("bias", C_out);
    auto& out = r.out("out", N * C_out);
    r.reference([&] { linear_forward_reference(out.ex(), x.hd(), W.hd(), b.hd(), N, C_in, C_out, relu); });
    r.op([&] { linear_forward(r.c, out.p(), x.p(), W.p(), b.p(), N, C_in, C_out, relu); });
  }
};

struct LinearBackward : Case<LinearBackward> {
  int64_t N;
  int C_in, C_out;
  bool relu, din;
  LinearBackward(int64_t n, int ci, int co, bool r, bool d = true) : N(n), C_in(ci), C_out(co), relu(r), din(d) {}
  std::string op() const override { return "linear_backward"; }
  std::string shape() const override {
    return dims({{"N", N}, {"C_in", C_in}, {"C_out", C_out}, {"relu", relu}, {"din", din}});
  }
  double flops() const override { return (din ? 4.0 : 2.0) * N * C_in * C_out; }
  template <class T>
  void body(Run<T>& r) const {
    const auto &x = r.in("in", N * C_in), &W = r.in("weight", C_out * C_in);
    const auto& out = r.in("out", relu ? relu_of(r.random(N * C_out)) : r.random(N * C_out));  // saved
    const std::vector<double> R = r.random(N * C_out);
    auto& dout = r.out("dout", N * C_out, Writes::InOut, R);  // becomes the pre-activation gradient
    auto& dx = r.out("din", din ? N * C_in : 0, Writes::Accumulate);
    auto &dW = r.out("dweight", C_out * C_in, Writes::Accumulate), &db = r.out("dbias", C_out, Writes::Accumulate);
    r.reference([&] {
      linear_backward_reference(din ? dx.ex() : nullptr, dW.ex(), db.ex(), R.data(), out.hd(), x.hd(), W.hd(), N,
                                C_in, C_out, relu);
      for (size_t i = 0; i < R.size(); ++i) dout.ex()[i] = relu && !(out.h[i] > 0) ? 0 : R[i];
    });
    r.op([&] {
      linear_backward(r.c, din ? dx.p() : nullptr, dW.p(), db.p(), dout.p(), out.p(), x.p(), W.p(), N, C_in, C_out,
                      relu);
    });
  }
};

// ---- the max layer --------------------------------------------------------------------------------
// grid: inputs from {-1, -.5, 0, .5, 1}, so exact ties between points are common and "the first
// point attaining the max" is exercised on every backend, not just assumed (fp32: the GEMM is
// exact on such values, the ties are real).
struct LinearReluMaxForward : Case<LinearReluMaxForward> {
  int B, P, C_in, C_out;
  bool grid;
  LinearReluMaxForward(int b, int p, int ci, int co, bool g) : B(b), P(p), C_in(ci), C_out(co), grid(g) {}
  std::string op() const override { return "linear_relu_max_forward"; }
  std::string shape() const override {
    return dims({{"B", B}, {"P", P}, {"C_in", C_in}, {"C_out", C_out}, {"grid", grid}});
  }
  double flops() const override { return 2.0 * B * P * C_in * C_out; }
  template <class T>
  void body(Run<T>& r) const {
    auto on_grid = [&](std::vector<double> v) {
      if (grid)
        for (double& x : v) x = std::round(x * 2) / 2;
      return v;
    };
    std::vector<double> bias = r.random(C_out);
    bias[0] = -100;  // a dead channel
    const auto &x = r.in("in", on_grid(r.random(size_t(B) * P * C_in))),
               &W = r.in("weight", on_grid(r.random(size_t(C_out) * C_in))), &b = r.in("bias", bias);
    auto& out = r.out("out", size_t(B) * C_out);
    auto& arg = r.template out<int32_t>("argmax", size_t(B) * C_out);
    arg.compare = false;  // below: where the channel is active
    T* scratch = r.template scratch<T>("scratch", size_t(B) * P * C_out);
    std::vector<int32_t> aref(size_t(B) * C_out);
    // The reference: the dense linear without its bias, the max with the first argmax, then
    // relu(max + bias) -- equal to the max of relu(y + bias) in exact arithmetic, and keeping the
    // grid's exact ties exact (a bias added first, before the products, rounds each point's sum
    // differently and breaks a tie at random: seen at B = 70000).
    r.reference([&] {
      std::vector<double> y(size_t(B) * P * C_out), zero(C_out, 0.0);
      linear_forward_reference(y.data(), x.hd(), W.hd(), zero.data(), int64_t(B) * P, C_in, C_out, false);
      maxpool_forward(out.ex(), aref.data(), y.data(), B, P, C_out);
      for (size_t i = 0; i < size_t(B) * C_out; ++i) out.ex()[i] = std::max(0.0, out.ex()[i] + b.h[i % C_out]);
    });
    r.op([&] { linear_relu_max_forward(r.c, out.p(), arg.p(), x.p(), W.p(), b.p(), B, P, C_in, C_out, scratch); });
    if (!r.checking() || r.row.precision != Precision::FP32) return;  // tf32 may order near-ties otherwise
    for (size_t i = 0; i < aref.size(); ++i)
      if (out.expect[i] > 0 && arg.got[i] != aref[i]) {
        r.expect(false, "argmax of (b, channel) " + std::to_string(i) + " is " + std::to_string(int(arg.got[i])) +
                            ", the first maximum is " + std::to_string(aref[i]));
        break;
      }
  }
};

// The compact rows, listed plainly (what compact_argmax_rows must produce): per sample the
// distinct argmax rows of active channels in ascending point order; padded: each sample owns
// min(P, G) rows, the unused tail padding (the CUDA layout).
struct RowListing {
  std::vector<double> sample_rows, source, din_row, chan_begin, chan_count, chans;
  std::vector<std::vector<int64_t>> lists;  // per compact row: its channels b*G+o, ascending
  int64_t U = 0;                            // rows the backward runs on
};
inline RowListing list_argmax_rows(const std::vector<double>& out, const std::vector<double>& argmax, int B, int P,
                                   int G, bool padded) {
  const int64_t cap = argmax_rows_capacity(B, P, G), stride = std::min(P, G);
  RowListing l;
  l.sample_rows.assign(B + 1, 0), l.source.assign(cap, -1), l.chan_begin.assign(cap, 0), l.chan_count.assign(cap, 0);
  l.din_row.assign(size_t(B) * G, -1), l.chans.assign(size_t(B) * G, 0), l.lists.assign(cap, {});
  int64_t base = 0;
  for (int b = 0; b < B; ++b) {
    std::vector<int> rows;
    for (int o = 0; o < G; ++o)
      if (out[size_t(b) * G + o] > 0) rows.push_back(int(argmax[size_t(b) * G + o]));
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    l.sample_rows[b] = double(base);
    for (size_t k = 0; k < rows.size(); ++k) l.source[base + k] = double(int64_t(b) * P + rows[k]);
    for (int o = 0; o < G; ++o) {
      const size_t i = size_t(b) * G + o;
      if (!(out[i] > 0)) continue;
      const int64_t u = base + (std::lower_bound(rows.begin(), rows.end(), int(argmax[i])) - rows.begin());
      l.din_row[i] = double(u);
      l.lists[u].push_back(int64_t(i));
    }
    int64_t at = int64_t(b) * G;
    const int64_t n = padded ? stride : int64_t(rows.size());
    for (int64_t u = base; u < base + n; ++u) {
      l.chan_begin[u] = double(at), l.chan_count[u] = double(l.lists[u].size());
      for (int64_t i : l.lists[u]) l.chans[at++] = double(i);
    }
    base += n;
  }
  l.sample_rows[B] = double(base);
  l.U = base;
  return l;
}

// Saved values of a max layer: out a ReLU output (some channels dead), argmax anywhere in [0, P)
// (small P: rows shared by many channels).
template <class T>
std::pair<std::vector<double>, std::vector<double>> random_max_outputs(Run<T>& r, int B, int P, int G) {
  std::vector<double> out = relu_of(r.random(size_t(B) * G)), arg(size_t(B) * G);
  for (double& a : arg) a = double(r.below(P));
  return {out, arg};
}

struct CompactArgmaxRows : Case<CompactArgmaxRows> {
  int B, P, G;
  CompactArgmaxRows(int b, int p, int g) : B(b), P(p), G(g) {}
  std::string op() const override { return "compact_argmax_rows"; }
  std::string shape() const override { return dims({{"B", B}, {"P", P}, {"G", G}}); }
  template <class T>
  void body(Run<T>& r) const {
    const auto max_out = random_max_outputs(r, B, P, G);
    const std::vector<double>&outv = max_out.first, &argv = max_out.second;
    const auto& out = r.in("out", outv);
    const auto& arg = r.template in<int32_t>("argmax", argv);
    const int64_t cap = argmax_rows_capacity(B, P, G);
    auto& sample_rows = r.template out<int32_t>("sample_rows", B + 1);
    auto& source = r.template out<int64_t>("source", cap);
    auto& din_row = r.template out<int32_t>("din_row", size_t(B) * G);
    auto &chan_begin = r.template out<int32_t>("chan_begin", cap), &chan_count = r.template out<int32_t>("chan_count", cap);
    auto& chans = r.template out<int32_t>("chans", size_t(B) * G);
    for (auto* o : {&sample_rows, &din_row, &chan_begin, &chan_count, &chans}) o->compare = false;
    source.compare = false;  // compared below, up to the rows in use
    const ArgmaxRows rows{r.template scratch<int32_t>("row_of", size_t(B) * P), sample_rows.p(), source.p(),
                          din_row.p(), chan_begin.p(), chan_count.p(), chans.p()};
    int64_t U = -1;
    r.op([&] { U = compact_argmax_rows(r.c, rows, out.p(), arg.p(), B, P, G); });
    if (!r.checking()) return;
    const RowListing want = list_argmax_rows(out.h, arg.h, B, P, G, r.c.on_cuda());
    r.expect(U == want.U, "returned " + std::to_string(U) + " rows, expected " + std::to_string(want.U));
    r.expect(sample_rows.got == want.sample_rows, "sample_rows differ from the plain listing");
    r.expect(din_row.got == want.din_row, "din_row differs from the plain listing");
    for (int64_t u = 0; u < std::min(U, want.U); ++u) {
      std::vector<int64_t> list;
      for (int j = 0; j < chan_count.got[u]; ++j) list.push_back(int64_t(chans.got[size_t(chan_begin.got[u] + j)]));
      if (source.got[u] != want.source[u] || list != want.lists[u]) {
        r.expect(false, "compact row " + std::to_string(u) + ": source " + std::to_string(int64_t(source.got[u])) +
                            " (expected " + std::to_string(int64_t(want.source[u])) + ") or its channel list differs");
        break;
      }
    }
  }
};

struct GatherRows : Case<GatherRows> {
  int64_t U, S;
  int C;
  GatherRows(int64_t u, int64_t s, int c) : U(u), S(s), C(c) {}
  std::string op() const override { return "gather_rows"; }
  std::string shape() const override { return dims({{"U", U}, {"rows", S}, {"C", C}}); }
  template <class T>
  void body(Run<T>& r) const {
    std::vector<double> from(U);
    for (double& s : from) s = r.below(5) == 0 ? -1 : double(r.below(S));  // -1: a padding row
    const auto& src = r.in("src", S * C);
    const auto& source = r.template in<int64_t>("source", from);
    auto& dst = r.out("dst", U * C);
    dst.tol = 0;  // a copy
    r.reference([&] {
      for (int64_t u = 0; u < U; ++u)
        for (int k = 0; k < C; ++k) dst.ex()[u * C + k] = from[u] < 0 ? 0 : src.h[size_t(from[u]) * C + k];
    });
    r.op([&] { gather_rows(r.c, dst.p(), src.p(), source.p(), U, C); });
  }
};

// The backward over the compact rows, listed plainly in the backend's layout.
struct LinearReluMaxBackward : Case<LinearReluMaxBackward> {
  int B, P, C_in, C_out;
  bool din, compact;  // compact: the input given at the compact rows only (activation recomputation)
  LinearReluMaxBackward(int b, int p, int ci, int co, bool d = true, bool cp = false)
      : B(b), P(p), C_in(ci), C_out(co), din(d), compact(cp) {}
  std::string op() const override { return "linear_relu_max_backward"; }
  std::string shape() const override {
    return dims({{"B", B}, {"P", P}, {"C_in", C_in}, {"C_out", C_out}, {"din", din}, {"in_compact", compact}});
  }
  template <class T>
  void body(Run<T>& r) const {
    auto max_out = random_max_outputs(r, B, P, C_out);
    std::vector<double>&outv = max_out.first, &argv = max_out.second;
    for (int b = 0; b < B; ++b) outv[size_t(b) * C_out] = 0;  // channel 0 dead: no gradient at all
    const RowListing l = list_argmax_rows(outv, argv, B, P, C_out, r.c.on_cuda());
    const ArgmaxRows rows{nullptr,
                          r.template in<int32_t>("sample_rows", l.sample_rows).p(),
                          r.template in<int64_t>("source", l.source).p(),
                          r.template in<int32_t>("din_row", l.din_row).p(),
                          r.template in<int32_t>("chan_begin", l.chan_begin).p(),
                          r.template in<int32_t>("chan_count", l.chan_count).p(),
                          r.template in<int32_t>("chans", l.chans).p()};
    const auto &x = r.in("in", size_t(B) * P * C_in), &W = r.in("weight", size_t(C_out) * C_in);
    std::vector<double> xcv(size_t(l.U) * C_in, 0.0);  // x at the compact rows, as gather_rows writes it
    for (int64_t u = 0; u < l.U; ++u)
      for (int k = 0; k < C_in && l.source[u] >= 0; ++k) xcv[u * C_in + k] = x.hd()[size_t(l.source[u]) * C_in + k];
    const auto& xc = r.in("in_compact", xcv);
    const auto &dout = r.in("dout", size_t(B) * C_out), &out = r.in("out", outv);
    const auto& arg = r.template in<int32_t>("argmax", argv);
    auto& dx = r.out("din", din ? size_t(l.U) * C_in : 0, Writes::Accumulate);
    auto &dW = r.out("dweight", size_t(C_out) * C_in, Writes::Accumulate), &db = r.out("dbias", C_out, Writes::Accumulate);
    r.reference([&] {
      std::vector<double> dense(size_t(B) * P * C_in, 0.0);
      std::vector<int32_t> a(argv.begin(), argv.end());
      linear_relu_max_backward_reference(dense.data(), dW.ex(), db.ex(), dout.hd(), out.hd(), a.data(), x.hd(), W.hd(),
                                         B, P, C_in, C_out);
      for (int64_t u = 0; din && u < l.U; ++u)  // the dense gradient at each compact row
        for (int k = 0; k < C_in && l.source[u] >= 0; ++k)
          dx.ex()[u * C_in + k] = dense[size_t(l.source[u]) * C_in + k];
    });
    r.op([&] {
      linear_relu_max_backward(r.c, din ? dx.p() : nullptr, rows, dW.p(), db.p(), dout.p(), out.p(), arg.p(),
                               compact ? xc.p() : x.p(), compact, W.p(), B, P, C_in, C_out);
    });
    if (r.checking()) r.expect(db.got[0] == db.init[0], "the dead channel 0 got a bias gradient");
  }
};

// ---- the regressor's first layer over [global, line feature] --------------------------------------
struct GlobalLineForward : Case<GlobalLineForward> {
  int B, L, G, F, C_out;
  bool relu;
  GlobalLineForward(int b, int l, int g, int f, int co, bool r) : B(b), L(l), G(g), F(f), C_out(co), relu(r) {}
  std::string op() const override { return "global_line_linear_forward"; }
  std::string shape() const override {
    return dims({{"B", B}, {"L", L}, {"G", G}, {"F", F}, {"C_out", C_out}, {"relu", relu}});
  }
  double flops() const override { return 2.0 * (B * G + double(B) * L * F) * C_out; }
  template <class T>
  void body(Run<T>& r) const {
    const auto &g = r.in("global", size_t(B) * G), &f = r.in("feat", size_t(B) * L * F);
    const auto &W = r.in("weight", size_t(C_out) * (G + F)), &b = r.in("bias", C_out);
    auto& out = r.out("out", size_t(B) * L * C_out);
    T* scratch = r.template scratch<T>("scratch", size_t(B) * C_out);
    r.reference([&] {  // concat, then a plain linear
      std::vector<double> cat(size_t(B) * L * (G + F));
      concat_forward(cat.data(), g.hd(), f.hd(), B, L, G, F);
      linear_forward_reference(out.ex(), cat.data(), W.hd(), b.hd(), int64_t(B) * L, G + F, C_out, relu);
    });
    r.op([&] {
      global_line_linear_forward(r.c, out.p(), g.p(), f.p(), W.p(), b.p(), B, L, G, F, C_out, relu, scratch);
    });
  }
};

struct GlobalLineBackward : Case<GlobalLineBackward> {
  int B, L, G, F, C_out;
  bool relu, dinputs;
  GlobalLineBackward(int b, int l, int g, int f, int co, bool r, bool d = true)
      : B(b), L(l), G(g), F(f), C_out(co), relu(r), dinputs(d) {}
  std::string op() const override { return "global_line_linear_backward"; }
  std::string shape() const override {
    return dims({{"B", B}, {"L", L}, {"G", G}, {"F", F}, {"C_out", C_out}, {"relu", relu}, {"dinputs", dinputs}});
  }
  double flops() const override { return (dinputs ? 4.0 : 2.0) * (B * G + double(B) * L * F) * C_out; }
  template <class T>
  void body(Run<T>& r) const {
    const size_t NL = size_t(B) * L;
    const auto &g = r.in("global", size_t(B) * G), &f = r.in("feat", NL * F);
    const auto& W = r.in("weight", size_t(C_out) * (G + F));
    const auto& out = r.in("out", relu ? relu_of(r.random(NL * C_out)) : r.random(NL * C_out));
    const std::vector<double> R = r.random(NL * C_out);
    auto& dout = r.out("dout", NL * C_out, Writes::InOut, R);
    auto &dg = r.out("dglobal", dinputs ? size_t(B) * G : 0, Writes::Accumulate),
         &df = r.out("dfeat", dinputs ? NL * F : 0, Writes::Accumulate);
    auto &dW = r.out("dweight", size_t(C_out) * (G + F), Writes::Accumulate), &db = r.out("dbias", C_out, Writes::Accumulate);
    T* scratch = r.template scratch<T>("scratch", size_t(B) * C_out);
    r.reference([&] {
      std::vector<double> cat(NL * (G + F)), dcat(cat.size(), 0.0);
      concat_forward(cat.data(), g.hd(), f.hd(), B, L, G, F);
      linear_backward_reference(dcat.data(), dW.ex(), db.ex(), R.data(), out.hd(), cat.data(), W.hd(), int64_t(NL),
                                G + F, C_out, relu);
      if (dinputs) concat_backward(dg.ex(), df.ex(), dcat.data(), B, L, G, F);
      for (size_t i = 0; i < R.size(); ++i) dout.ex()[i] = relu && !(out.h[i] > 0) ? 0 : R[i];
    });
    r.op([&] {
      global_line_linear_backward(r.c, dinputs ? dg.p() : nullptr, dinputs ? df.p() : nullptr, dW.p(), db.p(),
                                  dout.p(), out.p(), g.p(), f.p(), W.p(), B, L, G, F, C_out, relu, scratch);
    });
  }
};

// ---- the line window: [line feature, local features of the 2W+1 neighbours] ----------------------
// L small against W in some shapes, so windows that hang over both ends are exercised.
struct LineWindowForward : Case<LineWindowForward> {
  int B, L, F, C, W;
  LineWindowForward(int b, int l, int f, int c, int w) : B(b), L(l), F(f), C(c), W(w) {}
  std::string op() const override { return "line_window_forward"; }
  std::string shape() const override { return dims({{"B", B}, {"L", L}, {"F", F}, {"C", C}, {"W", W}}); }
  template <class T>
  void body(Run<T>& r) const {
    const size_t NL = size_t(B) * L, width = F + size_t(2 * W + 1) * C;
    const auto &f = r.in("feat", NL * F), &x = r.in("local", NL * C);
    auto& out = r.out("out", NL * width);
    out.tol = 0;  // a copy
    r.reference([&] { line_window_forward_reference(out.ex(), f.hd(), x.hd(), B, L, F, C, W); });
    r.op([&] { line_window_forward(r.c, out.p(), f.p(), x.p(), B, L, F, C, W); });
  }
};

struct LineWindowBackward : Case<LineWindowBackward> {
  int B, L, F, C, W;
  bool dfeat;
  LineWindowBackward(int b, int l, int f, int c, int w, bool d = true) : B(b), L(l), F(f), C(c), W(w), dfeat(d) {}
  std::string op() const override { return "line_window_backward"; }
  std::string shape() const override {
    return dims({{"B", B}, {"L", L}, {"F", F}, {"C", C}, {"W", W}, {"dfeat", dfeat}});
  }
  template <class T>
  void body(Run<T>& r) const {
    const size_t NL = size_t(B) * L, width = F + size_t(2 * W + 1) * C;
    const auto& dout = r.in("dout", NL * width);
    auto& df = r.out("dfeat", dfeat ? NL * F : 0, Writes::Accumulate);
    auto& dx = r.out("dlocal", NL * C, Writes::Accumulate);
    r.reference([&] {
      line_window_backward_reference(dfeat ? df.ex() : nullptr, dx.ex(), dout.hd(), B, L, F, C, W);
    });
    r.op([&] { line_window_backward(r.c, dfeat ? df.p() : nullptr, dx.p(), dout.p(), B, L, F, C, W); });
  }
};

// ---- loss, optimizer, helpers -----------------------------------------------------------------------
// Two calls: last = the loss, sum += it twice, count += 2.
struct MseLoss : Case<MseLoss> {
  int64_t n;
  explicit MseLoss(int64_t k) : n(k) {}
  std::string op() const override { return "mse_loss"; }
  std::string shape() const override { return dims({{"n", n}}); }
  template <class T>
  void body(Run<T>& r) const {
    const auto &p = r.in("pred", n), &t = r.in("target", n);
    auto& last = r.out("last", 1);
    last.tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;  // not a GEMM: the same on every precision
    auto& sum = r.template out<double>("sum", 1, Writes::Accumulate);
    auto& count = r.template out<int32_t>("count", 1, Writes::Accumulate);
    sum.compare = false;  // below, exactly
    count.tol = 0;
    r.reference([&] {
      last.ex()[0] = mse_forward_reference(p.hd(), t.hd(), n);
      sum.ex()[0] = 2 * last.ex()[0];
      count.ex()[0] = 2;
    });
    const LossState<T> st{sum.p(), count.p(), last.p()};
    r.op([&] {
      mse_loss(r.c, st, p.p(), t.p(), n);
      mse_loss(r.c, st, p.p(), t.p(), n);
    });
    if (r.checking())
      r.expect(sum.got[0] == (sum.init[0] + last.got[0]) + last.got[0], "sum is not the start plus the loss, twice");
  }
};

struct MseBackward : Case<MseBackward> {
  int64_t n;
  double dloss;
  MseBackward(int64_t k, double d) : n(k), dloss(d) {}
  std::string op() const override { return "mse_backward"; }
  std::string shape() const override { return dims({{"n", n}, {"dloss", dloss}}); }
  template <class T>
  void body(Run<T>& r) const {
    const auto &p = r.in("pred", n), &t = r.in("target", n);
    auto& dp = r.out("dpred", n, Writes::Accumulate);
    dp.tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
    r.reference([&] {
      mse_backward_reference(dp.ex(), p.hd(), t.hd(), n);
      for (double& g : dp.expect) g *= dloss;
    });
    r.op([&] { mse_backward(r.c, dp.p(), p.p(), t.p(), n, T(dloss)); });
  }
};

// The variance head's likelihood gradient; log variances in +-3 and a few below the -20 clamp.
struct GaussianNllBackward : Case<GaussianNllBackward> {
  int64_t n;
  double dloss;
  GaussianNllBackward(int64_t k, double d) : n(k), dloss(d) {}
  std::string op() const override { return "gaussian_nll_backward"; }
  std::string shape() const override { return dims({{"n", n}, {"dloss", dloss}}); }
  template <class T>
  void body(Run<T>& r) const {
    std::vector<double> s = r.random(n, 3.0);
    for (int64_t i = 0; i < n; i += 97) s[size_t(i)] = -25.0;
    const auto &lv = r.in("logvar", s), &p = r.in("pred", n), &t = r.in("target", n);
    auto& dl = r.out("dlogvar", n, Writes::Accumulate);
    dl.tol = std::is_same_v<T, float> ? 1e-6 : 1e-12;
    r.reference([&] {
      gaussian_nll_backward_reference(dl.ex(), lv.hd(), p.hd(), t.hd(), n);
      for (double& g : dl.expect) g *= dloss;
    });
    r.op([&] { gaussian_nll_backward(r.c, dl.p(), lv.p(), p.p(), t.p(), n, T(dloss)); });
  }
};

// `steps` Adam steps from a state at step 2, against the textbook formula in double.
struct AdamStep : Case<AdamStep, true> {
  int64_t n;
  int steps;
  float weight_decay;
  AdamStep(int64_t k, int s, float wd) : n(k), steps(s), weight_decay(wd) {}
  std::string op() const override { return "adam_step"; }
  std::string shape() const override { return dims({{"n", n}, {"steps", steps}, {"weight_decay", weight_decay}}); }
  void body(Run<float>& r) const {
    AdamConfig cfg;
    cfg.weight_decay = weight_decay;
    std::vector<const In<float>*> grads;
    for (int s = 0; s < steps; ++s) grads.push_back(&r.in("grads", n));
    std::vector<double> v0 = r.random(n, 0.01);
    for (double& v : v0) v = std::abs(v);
    auto& w = r.out("params", n, Writes::InOut, r.random(n));
    auto &m = r.out("exp_avg", n, Writes::InOut, r.random(n, 0.1)), &v = r.out("exp_avg_sq", n, Writes::InOut, v0);
    auto& t = r.template out<int64_t>("step", 1, Writes::InOut, {2});
    for (auto* o : {&w, &m, &v}) o->tol = 1e-6;
    t.tol = 0;
    r.reference([&] {
      std::vector<float> wr(w.init.begin(), w.init.end()), mr(m.init.begin(), m.init.end()),
          vr(v.init.begin(), v.init.end());
      for (int s = 0; s < steps; ++s) adam_update_reference(wr.data(), mr.data(), vr.data(), grads[s]->as().data(), n, 3 + s, cfg);
      w.expect.assign(wr.begin(), wr.end()), m.expect.assign(mr.begin(), mr.end()), v.expect.assign(vr.begin(), vr.end());
      t.ex()[0] = 2 + steps;
    });
    const AdamState st{t.p(), r.template scratch<float>("scalars", 2)};
    r.op([&] {
      for (int s = 0; s < steps; ++s) adam_step(r.c, st, w.p(), m.p(), v.p(), grads[s]->p(), n, cfg);
    });
  }
};

struct Fill : Case<Fill, true> {
  int64_t n;
  float value;
  Fill(int64_t k, float v) : n(k), value(v) {}
  std::string op() const override { return "fill"; }
  std::string shape() const override { return dims({{"n", n}, {"value", value}}); }
  void body(Run<float>& r) const {
    auto& p = r.out("p", n);
    p.tol = 0;
    r.reference([&] { std::fill(p.expect.begin(), p.expect.end(), double(value)); });
    r.op([&] { fill(r.c, p.p(), value, n); });
  }
};

// y = a x + b y rounded as (a x) + (b y) in float: exact on both backends. b == 0 must ignore y,
// which starts as NaN then.
struct Axpby : Case<Axpby, true> {
  int64_t n;
  float a, b;
  Axpby(int64_t k, float a_, float b_) : n(k), a(a_), b(b_) {}
  std::string op() const override { return "axpby"; }
  std::string shape() const override { return dims({{"n", n}, {"a", a}, {"b", b}}); }
  void body(Run<float>& r) const {
    const auto& x = r.in("x", n);
    auto& y = r.out("y", n, Writes::InOut, b == 0 ? std::vector<double>(n, NAN) : r.random(n));
    y.tol = 0;
    r.reference([&] {
      for (int64_t i = 0; i < n; ++i) {
        const float ax = a * float(x.h[i]), by = b == 0 ? 0.f : b * float(y.init[i]);
        y.ex()[i] = b == 0 ? ax : ax + by;
      }
    });
    r.op([&] { axpby(r.c, y.p(), a, x.p(), b, n); });
  }
};

// ---- the tables -------------------------------------------------------------------------------------
using Cases = std::vector<std::unique_ptr<OpCase>>;

template <class... C>
void add(Cases& v, C&&... c) {
  (v.push_back(std::make_unique<std::decay_t<C>>(std::forward<C>(c))), ...);
}

// Odd shapes: C_in <= 8 (the CPU's small-K path), row counts across blocks, one row, one point.
inline Cases check_cases() {
  Cases v;
  add(v, LinearForward(1, 3, 5, true), LinearForward(37, 4, 64, true), LinearForward(300, 13, 7, false),
      LinearForward(513, 64, 33, true));
  add(v, LinearBackward(1, 3, 5, true), LinearBackward(37, 4, 64, true, false), LinearBackward(300, 13, 7, false),
      LinearBackward(513, 64, 33, true));
  add(v, LinearReluMaxForward(1, 1, 3, 5, true), LinearReluMaxForward(3, 37, 4, 40, true),
      LinearReluMaxForward(2, 600, 16, 33, true), LinearReluMaxForward(5, 9, 7, 64, true),
      LinearReluMaxForward(2, 300, 16, 40, false),
      LinearReluMaxForward(70000, 2, 3, 5, true));  // more samples than a grid has y blocks (65535)
  add(v, CompactArgmaxRows(1, 1, 5), CompactArgmaxRows(3, 37, 40), CompactArgmaxRows(2, 600, 33),
      CompactArgmaxRows(5, 9, 64));
  add(v, GatherRows(1, 1, 3), GatherRows(37, 20, 5), GatherRows(300, 100, 16));
  add(v, LinearReluMaxBackward(1, 1, 3, 5), LinearReluMaxBackward(3, 37, 4, 40),
      LinearReluMaxBackward(2, 600, 16, 33), LinearReluMaxBackward(5, 9, 7, 64), LinearReluMaxBackward(3, 50, 8, 20, false),
      LinearReluMaxBackward(3, 37, 4, 40, true, true), LinearReluMaxBackward(5, 9, 7, 64, false, true),
      // more samples than the CUDA weight gradient's 16 row groups; C_in + 1 (the bias) filling
      // one 32-lane tile exactly, and spilling one lane into a second
      LinearReluMaxBackward(300, 3, 40, 33), LinearReluMaxBackward(70, 5, 31, 9), LinearReluMaxBackward(45, 4, 32, 7));
  add(v, GlobalLineForward(1, 1, 3, 2, 5, true), GlobalLineForward(3, 17, 40, 9, 33, true),
      GlobalLineForward(2, 64, 8, 8, 3, false));
  add(v, GlobalLineBackward(1, 1, 3, 2, 5, true), GlobalLineBackward(3, 17, 40, 9, 33, true),
      GlobalLineBackward(2, 64, 8, 8, 3, false), GlobalLineBackward(3, 5, 6, 7, 9, true, false));
  add(v, LineWindowForward(1, 1, 2, 3, 1), LineWindowForward(3, 17, 9, 8, 1), LineWindowForward(2, 300, 5, 7, 2),
      LineWindowForward(2, 3, 4, 5, 3), LineWindowForward(2, 6, 3, 4, 0));
  add(v, LineWindowBackward(1, 1, 2, 3, 1), LineWindowBackward(3, 17, 9, 8, 1), LineWindowBackward(2, 300, 5, 7, 2),
      LineWindowBackward(2, 3, 4, 5, 3), LineWindowBackward(2, 6, 3, 4, 0, false));
  add(v, MseLoss(1), MseLoss(1001), MseBackward(1001, 1), MseBackward(12, 0.25));
  add(v, GaussianNllBackward(1001, 1), GaussianNllBackward(12, 0.25));
  add(v, AdamStep(777, 5, 0.01f), AdamStep(5, 2, 0.f));
  add(v, Fill(1001, 0.37f), Fill(1, -2.5f));
  add(v, Axpby(1001, 0.7f, -1.3f), Axpby(513, -2.f, 0.f));
  return v;
}

// The default model's sizes (B = 64, P = 1024, L = 32; widths 64-128-512, 64-128, 256-128-3).
inline Cases perf_cases() {
  const int B = 64, P = 1024, L = 32;
  const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
  Cases v;
  add(v, LinearForward(NP, 4, 64, true), LinearForward(NP, 64, 128, true), LinearForward(NL, 3, 64, true),
      LinearForward(NL, 64, 128, true), LinearForward(NL, 256, 128, true), LinearForward(NL, 128, 3, false));
  add(v, LinearBackward(NP, 64, 128, true), LinearBackward(NL, 3, 64, true, false),
      LinearBackward(NL, 64, 128, true), LinearBackward(NL, 256, 128, true), LinearBackward(NL, 128, 3, false));
  add(v, LinearReluMaxForward(B, P, 128, 512, false), CompactArgmaxRows(B, P, 512), GatherRows(NP / 6, NP, 128),
      LinearReluMaxBackward(B, P, 128, 512));
  add(v, GlobalLineForward(B, L, 512, 128, 256, true), GlobalLineBackward(B, L, 512, 128, 256, true));
  // the local branch (line_refiner_local: K = 32 points per line point, 64-128, W = 1): its layers
  // over the B*L groups, its window, and the regressor's first layer reading it
  const int K = 32;
  const int64_t NLK = NL * K;
  add(v, LinearForward(NLK, 4, 64, true), LinearReluMaxForward(int(NL), K, 64, 128, false),
      CompactArgmaxRows(int(NL), K, 128), GatherRows(NLK, NLK, 64), LinearReluMaxBackward(int(NL), K, 64, 128),
      LinearBackward(NLK, 4, 64, true, false));
  add(v, LineWindowForward(B, L, 128, 128, 1), LineWindowBackward(B, L, 128, 128, 1),
      GlobalLineForward(B, L, 512, 512, 256, true), GlobalLineBackward(B, L, 512, 512, 256, true));
  add(v, MseLoss(NL * 3), MseBackward(NL * 3, 1), GaussianNllBackward(NL * 3, 1), AdamStep(280643, 1, 0.f),
      Fill(280643, 0.f),
      Axpby(280643, 1.f, 1.f));
  return v;
}

}  // namespace sl::test
