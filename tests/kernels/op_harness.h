// The op harness (ggml's test-backend-ops, for the ops of kernels/ops.h): an op case declares
// its inputs, outputs and reference once; the harness runs it on every backend x precision row
// and either checks it (tests/kernels/backend_test.cpp) or times it (bench/bench_ops.cpp).
//
//   check:  inputs random (never zeros), every buffer fenced by guard values that must survive
//           the op bit for bit (an overrun shows as a changed guard, an overread as a NaN in the
//           result), inputs unchanged, each output against the float64 reference of
//           kernels/reference.h with the row's tolerance (normalized error: max |got - expect|
//           over the largest value the op itself contributes);
//   perf:   the same cases at the model's sizes, the op alone timed, no reference;
//   refuse: a row that must not run (double on CUDA, float on CUDA in a build without it): the
//           op is called on host memory with that row's context and must throw, saying why.
// Outputs that an op accumulates into (+=) start from random values scaled like the op's own
// contribution, so "+=" is checked without loosening the tolerance; overwritten outputs start
// from random garbage, so an element the op forgets to write is caught.
// No GoogleTest here: results come back as values.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "graph/error.h"
#include "kernels/backend.h"
#include "kernels/cuda/runtime.h"
#include "device/device.h"

namespace sl::test {

// ---- rows: every backend x precision, and the element type the ops run in ---------------------
struct Row {
  Backend backend;
  Precision precision = Precision::FP32;
  bool f64 = false;  // T = double (the CPU-only instantiation)
  std::string name() const {
    return (backend.is_cuda() ? std::string("cuda") : std::string("cpu")) + "_" +
           (f64 ? "fp64" : precision_name(precision));
  }
};

// How GoogleTest prints a row (test names, ctest's listing).
inline void PrintTo(const Row& r, std::ostream* os) { *os << r.name(); }

inline std::vector<Row> op_rows() {
  std::vector<Row> rows;
  for (Backend b : {Backend::cpu(), Backend::cuda(0)}) {
    for (Precision p : {Precision::FP32, Precision::TF32, Precision::BF16}) rows.push_back({b, p, false});
    rows.push_back({b, Precision::FP32, true});
  }
  return rows;
}

// Whether a row runs here. Unsupported: refused by design (the reason is the refusal's own
// text); unavailable: supported, but nothing here can run it (no CUDA build, no device).
struct RowStatus {
  enum Kind { Runs, Unsupported, Unavailable } kind = Runs;
  std::string why;
  std::string refusal;  // Unsupported / Unavailable rows whose ops must refuse: the error's text
};

inline RowStatus row_status(const Row& r) {
  try {
    check_precision(r.backend, r.precision);
  } catch (const Error& e) {
    return {RowStatus::Unsupported, e.what(), ""};
  }
  if (r.backend.is_cuda() && r.f64)
    return {RowStatus::Unsupported, "T = double: the CUDA bodies are float only", "not supported on cuda:0"};
#ifndef SL_WITH_CUDA
  if (r.backend.is_cuda()) return {RowStatus::Unavailable, "this build has no CUDA backend", "no CUDA backend"};
#endif
  std::string why;
  if (r.backend.is_cuda() && cuda_device_count(&why) == 0) return {RowStatus::Unavailable, "no CUDA device: " + why, ""};
  return {};
}

// Tolerance of the row's GEMMs (normalized error): tf32 inputs keep a 10-bit mantissa, bf16
// inputs a 7-bit one (unit roundoff 2^-9 = 2e-3; the bar of 1e-2 is the issue's, ~5 of it).
inline double row_tolerance(const Row& r) {
  if (r.f64) return 1e-12;
  if (r.precision == Precision::BF16) return 1e-2;
  return r.precision == Precision::TF32 ? 5e-3 : 2e-5;
}

// A context for a row: on CUDA with its own stream, cuBLAS handle and a vector of ones.
struct RowContext {
  OpContext c;
#ifdef SL_WITH_CUDA
  std::unique_ptr<cuda::Blas> blas;
  std::unique_ptr<Buffer> ones;
#endif
  static constexpr int64_t kOnes = 1 << 17;  // >= every N the cases use (the bias GEMVs)
  explicit RowContext(const Row& r) {
    c.backend = r.backend;
    c.precision = r.precision;
#ifdef SL_WITH_CUDA
    if (r.backend.is_cuda()) {
      c.stream = cuda::stream_create(r.backend.device);
      blas = std::make_unique<cuda::Blas>(r.backend.device, r.precision);
      blas->bind(c.stream);
      c.blas = blas.get();
      ones = std::make_unique<Buffer>(r.backend, kOnes * sizeof(float), "ones");
      const std::vector<float> h(kOnes, 1.f);
      copy_from_host(c, ones->data(), h.data(), h.size() * sizeof(float));
      c.ones = ones->as<float>();
      c.ones_len = kOnes;
    }
#endif
  }
  ~RowContext() {
#ifdef SL_WITH_CUDA
    if (c.stream) {
      cuda::stream_sync(c.stream);
      ones.reset();
      blas.reset();
      cuda::stream_destroy(c.backend.device, c.stream);
    }
#endif
  }
  RowContext(const RowContext&) = delete;
  RowContext& operator=(const RowContext&) = delete;
};

// ---- guarded backend buffers ------------------------------------------------------------------
constexpr size_t kGuard = 64;  // guard elements on each side of every buffer

// Quiet NaNs with a payload (a float read past an input poisons the result), odd integers. The
// inputs' guards differ from the outputs': a NaN read past an input and written past an output
// (the payload survives the arithmetic) still changes the output's guard.
template <class E>
E guard_value(bool output) {
  E v;
  if constexpr (std::is_same_v<E, float>) {
    const uint32_t bits = output ? 0x7fd3c3c3u : 0x7fc5a5a5u;
    std::memcpy(&v, &bits, 4);
  } else if constexpr (std::is_same_v<E, double>) {
    const uint64_t bits = output ? 0x7ffc3c3c3c3c3c3cull : 0x7ff8a5a5a5a5a5a5ull;
    std::memcpy(&v, &bits, 8);
  } else {
    v = E(output ? 0x3c3cc3c3 : 0x5a5aa5a5);
  }
  return v;
}

// n elements of E on the context's backend between two guard zones. `host` mirrors the
// elements as doubles (exact for float, double and the integers used here).
struct GuardedBase {
  virtual ~GuardedBase() = default;
  virtual void upload(const OpContext& c, const std::vector<double>& v) = 0;
  virtual std::vector<double> download(const OpContext& c, std::string* guard_error) = 0;
  std::string name;
  size_t n = 0;
};

template <class E>
struct Guarded : GuardedBase {
  Buffer buf;
  E* p = nullptr;  // the first element, inside the guards
  bool output;
  Guarded(const Backend& where, std::string nm, size_t count, bool out)
      : buf(where, (count + 2 * kGuard) * sizeof(E), "op harness: " + nm), output(out) {
    name = std::move(nm);
    n = count;
    p = buf.as<E>() + kGuard;
  }
  void upload(const OpContext& c, const std::vector<double>& v) override {
    std::vector<E> h(n + 2 * kGuard, guard_value<E>(output));
    for (size_t i = 0; i < n; ++i) h[kGuard + i] = E(v[i]);
    copy_from_host(c, buf.data(), h.data(), h.size() * sizeof(E));
  }
  std::vector<double> download(const OpContext& c, std::string* guard_error) override {
    std::vector<E> h(n + 2 * kGuard);
    copy_to_host(c, h.data(), buf.data(), h.size() * sizeof(E));
    const E g = guard_value<E>(output);
    for (size_t i = 0; i < h.size(); ++i) {
      if (i == kGuard) i += n;
      if (i < h.size() && std::memcmp(&h[i], &g, sizeof(E)) != 0 && guard_error && guard_error->empty()) {
        const long long at = i < kGuard ? (long long)i - (long long)kGuard : (long long)(i - kGuard - n);
        *guard_error = name + ": written outside the buffer, at element " +
                       (i < kGuard ? std::to_string(at) : std::to_string(at) + " past its end") + " (a guard changed)";
      }
    }
    return std::vector<double>(h.begin() + kGuard, h.begin() + kGuard + n);
  }
};

// An input: random (never zero) or given values, rounded to E; h = what the op sees, in double.
template <class E>
struct In {
  Guarded<E>* g = nullptr;
  std::vector<double> h;
  E* p() const { return g->p; }  // the ops take it const; structs of pointers (ArgmaxRows) do not
  const double* hd() const { return h.data(); }
  std::vector<E> as() const { return std::vector<E>(h.begin(), h.end()); }
};

// An output: how the op writes it, what it must hold after, how it is compared.
enum class Writes {
  Overwrite,   // the op writes every element: starts as garbage, expect = the reference
  Accumulate,  // the op adds (+=): starts random, expect = start + the reference's increment
  InOut,       // the op reads and rewrites it: starts as given, expect = the reference's value
};
template <class E>
struct Out {
  Guarded<E>* g = nullptr;
  Writes writes = Writes::Overwrite;
  std::vector<double> init, expect, got;
  double tol = -1;       // < 0: the row's tolerance; 0: exact
  bool compare = true;   // false: checked by the case itself (guards still checked)
  E* p() const { return g->p; }
  double* ex() { return expect.data(); }
};

// ---- one case on one row --------------------------------------------------------------------
enum class Mode { Check, Perf, Refuse };

struct CaseResult {
  std::string row, op, shape;
  enum Status { Ok, Failed, Unsupported } status = Ok;
  std::vector<std::string> failures;
  double worst = 0;      // the largest error / tolerance among compared outputs
  double median_us = 0;  // perf
  double flops = 0;      // per run, 0 when not stated
  std::string note;      // unsupported: why
};

template <class T>
class Run {
 public:
  Run(const OpContext& c, const Row& row, Mode mode, CaseResult& res, uint32_t seed)
      : c(c), row(row), mode_(mode), io_(mode == Mode::Refuse ? OpContext::cpu() : c), res_(res), rng_(seed) {}
  const OpContext& c;
  const Row& row;

  bool checking() const { return mode_ == Mode::Check; }
  bool refusing() const { return mode_ == Mode::Refuse; }

  // n random values in +-[0.1, 1] x scale: never zero, so no input sits on a ReLU kink.
  std::vector<double> random(size_t n, double scale = 1) {
    std::vector<double> v(n);
    std::uniform_real_distribution<double> mag(0.1, 1.0);
    for (double& x : v) x = scale * mag(rng_) * (rng_() & 1 ? 1.0 : -1.0);
    return v;
  }
  // A random integer in [0, n).
  int64_t below(int64_t n) { return int64_t(rng_() % uint64_t(n)); }

  // Inputs: random values, or the values given.
  template <class E = T>
  const In<E>& in(const char* name, size_t n, double scale = 1) {
    return in<E>(name, random(n, scale));
  }
  template <class E = T>
  const In<E>& in(const char* name, std::vector<double> values) {
    auto g = std::make_unique<Guarded<E>>(io_.backend, name, values.size(), false);
    auto* i = new In<E>{g.get(), {}};
    for (double& x : values) x = double(E(x));
    i->h = std::move(values);
    g->upload(io_, i->h);
    inputs_.push_back({std::move(g), i->h});
    keep_.emplace_back(i, [](void* q) { delete static_cast<In<E>*>(q); });
    return *i;
  }
  // Outputs: n elements written as `writes` says; InOut starts from `init`.
  template <class E = T>
  Out<E>& out(const char* name, size_t n, Writes writes = Writes::Overwrite, std::vector<double> init = {}) {
    auto g = std::make_unique<Guarded<E>>(io_.backend, name, n, true);
    auto* o = new Out<E>{g.get(), writes};
    if (writes == Writes::InOut)
      for (double& x : init) x = double(E(x));
    o->init = std::move(init);
    o->expect.assign(n, 0.0);
    auto* gp = g.get();
    outputs_.push_back({std::move(g), [o, this] { return prepare(*o); }, [o, gp, this](std::vector<double> got) {
                          o->got = std::move(got);
                          if (o->compare) compare(gp->name, *o);
                        }});
    keep_.emplace_back(o, [](void* q) { delete static_cast<Out<E>*>(q); });
    return *o;
  }
  // Work memory the op may use as it likes (fenced, never compared).
  template <class E = T>
  E* scratch(const char* name, size_t n) {
    auto g = std::make_unique<Guarded<E>>(io_.backend, name, n, true);
    E* p = g->p;
    std::vector<double> garbage(n);
    for (double& x : garbage) x = double(E(std::uniform_real_distribution<double>(-1, 1)(rng_)));
    g->upload(io_, garbage);
    scratch_.push_back(std::move(g));
    return p;
  }

  // The reference: run in check mode only, with every output's expect zeroed (an Accumulate
  // output gets the increment; its start is added afterwards).
  void reference(const std::function<void()>& f) {
    if (checking()) f();
  }
  // The op under test: once (check: then every output is read back and compared), timed
  // (perf), or expected to throw (refuse).
  void op(const std::function<void()>& f) {
    for (auto& o : outputs_) o.prepare();
    if (mode_ == Mode::Refuse) {
      try {
        f();
        fail("ran on a row that must refuse it");
      } catch (const Error& e) {
        refused_ = true;
        if (std::string(e.what()).find(refusal_) == std::string::npos)
          fail(std::string("refused, but not saying '") + refusal_ + "': " + e.what());
      }
      return;
    }
    if (mode_ == Mode::Perf) {
      time(f);
      return;
    }
    f();
    synchronize(c);
    for (auto& o : outputs_) {
      std::string guard;
      std::vector<double> got = o.g->download(io_, &guard);
      if (!guard.empty()) fail(guard);
      o.done(std::move(got));
    }
    for (auto& i : inputs_) {
      std::string guard;
      const std::vector<double> now = i.g->download(io_, &guard);
      if (!guard.empty()) fail(guard);
      if (std::memcmp(now.data(), i.h.data(), now.size() * sizeof(double)) != 0)
        fail(i.g->name + ": an input changed");
    }
    for (auto& s : scratch_) {
      std::string guard;
      s->download(io_, &guard);
      if (!guard.empty()) fail(guard);
    }
  }
  // A check of the case's own (after op()); `what` says what failed.
  void expect(bool ok, const std::string& what) {
    if (checking() && !ok) fail(what);
  }
  void fail(const std::string& what) {
    res_.status = CaseResult::Failed;
    if (res_.failures.size() < 8) res_.failures.push_back(what);
  }
  void set_refusal(std::string text) { refusal_ = std::move(text); }
  bool refused() const { return refused_; }

 private:
  template <class E>
  void prepare(Out<E>& o) {
    const size_t n = o.expect.size();
    if (o.writes == Writes::Accumulate) {
      // Start from random values of the increment's size: "+=" is checked, the normalized
      // error still measures the op's own contribution.
      double scale = 0;
      for (double x : o.expect) scale = std::max(scale, std::abs(x));
      if (scale == 0 || !checking()) scale = 1;
      o.init.resize(n);
      std::uniform_real_distribution<double> mag(0.1, 1.0);
      for (double& x : o.init) {
        x = scale * mag(rng_) * (rng_() & 1 ? 1.0 : -1.0);
        if constexpr (std::is_integral_v<E>) x = std::round(x * 1000);
        x = double(E(x));
      }
      for (size_t i = 0; i < n; ++i) o.expect[i] += o.init[i];
    } else if (o.writes == Writes::Overwrite) {  // garbage no result equals
      o.init.resize(n);
      for (size_t i = 0; i < n; ++i)
        o.init[i] = std::is_integral_v<E> ? -1000003.0 - double(i % 7)
                                          : double(E(std::uniform_real_distribution<double>(-7, 7)(rng_)));
    }
    o.g->upload(io_, o.init);
  }

  template <class E>
  void compare(const std::string& name, const Out<E>& o) {
    const double tol = o.tol < 0 ? row_tolerance(row) : o.tol;
    double num = 0, den = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < o.got.size(); ++i) {
      const double d = std::isnan(o.got[i]) != std::isnan(o.expect[i]) ? INFINITY : std::abs(o.got[i] - o.expect[i]);
      if (d > num || std::isnan(d)) num = d, worst_at = i;
      den = std::max(den, std::abs(o.expect[i] - (o.writes == Writes::Accumulate ? o.init[i] : 0.0)));
    }
    if (tol == 0) {
      if (num != 0 || std::isnan(num)) {
        std::ostringstream s;
        s << name << "[" << worst_at << "] = " << o.got[worst_at] << ", expected exactly " << o.expect[worst_at];
        fail(s.str());
      }
      return;
    }
    const double err = num / std::max(den, 1e-30);
    res_.worst = std::max(res_.worst, err / tol);
    if (!(err <= tol)) {
      std::ostringstream s;
      s << name << ": normalized error " << err << " > " << tol << " (at [" << worst_at << "]: " << o.got[worst_at]
        << " vs " << o.expect[worst_at] << ")";
      fail(s.str());
    }
  }

  void time(const std::function<void()>& f) {
    using clock = std::chrono::steady_clock;
    for (int w = 0; w < 2; ++w) f();
    synchronize(c);
    std::vector<double> us;
    const auto t_end = clock::now() + std::chrono::milliseconds(300);
    while (us.size() < 5 || (clock::now() < t_end && us.size() < 200)) {
      const auto t0 = clock::now();
      f();
      synchronize(c);
      us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    res_.median_us = us[us.size() / 2];
  }

  struct InputRec {
    std::unique_ptr<GuardedBase> g;
    std::vector<double> h;
  };
  struct OutputRec {
    std::unique_ptr<GuardedBase> g;
    std::function<void()> prepare;
    std::function<void(std::vector<double>)> done;
  };
  Mode mode_;
  OpContext io_;  // what buffers are filled and read with (refuse: host memory)
  CaseResult& res_;
  std::mt19937 rng_;
  std::vector<InputRec> inputs_;
  std::vector<OutputRec> outputs_;
  std::vector<std::unique_ptr<GuardedBase>> scratch_;
  std::vector<std::unique_ptr<void, void (*)(void*)>> keep_;
  std::string refusal_;
  bool refused_ = false;
};

// ---- the case base ----------------------------------------------------------------------------
// A case names its op and shape and has one body, a template on T; kFloatOnly cases (ops
// declared FLOAT in the op list) do not exist for T = double.
struct OpCase {
  virtual ~OpCase() = default;
  virtual std::string op() const = 0;
  virtual std::string shape() const = 0;
  virtual bool float_only() const { return false; }
  virtual double flops() const { return 0; }
  virtual void run(Run<float>& r) const = 0;
  virtual void run(Run<double>& r) const = 0;
};

template <class Derived, bool kFloatOnly = false>
struct Case : OpCase {
  bool float_only() const override { return kFloatOnly; }
  void run(Run<float>& r) const override { static_cast<const Derived*>(this)->body(r); }
  void run(Run<double>& r) const override {
    if constexpr (!kFloatOnly) static_cast<const Derived*>(this)->body(r);
  }
};

// Runs one case on one row in a mode; `refusal`: the text a Refuse run must see.
inline CaseResult run_case(const OpCase& k, const Row& row, const OpContext& c, Mode mode, uint32_t seed,
                           const std::string& refusal = "") {
  CaseResult res;
  res.row = row.name(), res.op = k.op(), res.shape = k.shape(), res.flops = k.flops();
  if (row.f64 && k.float_only()) {
    res.status = CaseResult::Unsupported;
    res.note = "a float-only op (FLOAT in the op list)";
    return res;
  }
  try {
    if (row.f64) {
      Run<double> r(c, row, mode, res, seed);
      r.set_refusal(refusal);
      k.run(r);
      if (mode == Mode::Refuse && !r.refused()) r.fail("the case never called its op");
    } else {
      Run<float> r(c, row, mode, res, seed);
      r.set_refusal(refusal);
      k.run(r);
      if (mode == Mode::Refuse && !r.refused()) r.fail("the case never called its op");
    }
  } catch (const std::exception& e) {
    res.status = CaseResult::Failed;
    res.failures.push_back(std::string("threw: ") + e.what());
  }
  return res;
}

}  // namespace sl::test
