// Every op x every backend x every precision, as ONE table (the cases: op_cases.h; the harness:
// op_harness.h), the way ggml checks every backend against a reference; then the whole model
// and its step on each backend. A row whose backend cannot run here SKIPS and says why; an
// unsupported combination says so, after checking that the ops refuse it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "graph/error.h"
#include "kernels/adam.h"
#include "kernels/backend.h"
#include "kernels/model.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "tests/kernels/op_cases.h"
#include "tests/kernels/test_util.h"

namespace sl {
namespace {

using test::CaseResult;
using test::Row;
using test::RowStatus;

std::vector<std::string> op_list() {
#define SL_OP_NAME(types, ret, name, params, args) #name,
  return {SL_OPS(SL_OP_NAME, T)};
#undef SL_OP_NAME
}

// Adding an op = a list entry, two bodies, a case: an op without a case fails here.
TEST(OpCases, EveryOpOfTheListHasACheckCaseAndAPerfCase) {
  for (const auto* table : {"check", "perf"}) {
    std::set<std::string> covered;
    for (const auto& k : std::string(table) == "check" ? test::check_cases() : test::perf_cases())
      covered.insert(k->op());
    for (const std::string& op : op_list()) EXPECT_TRUE(covered.count(op)) << op << " has no " << table << " case";
    EXPECT_EQ(covered.size(), op_list().size()) << "a " << table << " case names an op outside the list";
  }
}

std::string describe(const CaseResult& r) {
  std::string s = r.op + " " + r.shape + ":";
  for (const auto& f : r.failures) s += "\n    " + f;
  return s;
}

class OpCases : public ::testing::TestWithParam<Row> {};

TEST_P(OpCases, EveryCaseMatchesItsReference) {
  const Row row = GetParam();
  const RowStatus st = test::row_status(row);
  if (st.kind != RowStatus::Runs) {
    // What may not run must be refused by every op, saying why (on host memory: never run).
    if (!st.refusal.empty()) {
      OpContext c;
      c.backend = row.backend, c.precision = row.precision;
      for (const auto& k : test::check_cases()) {
        const CaseResult r = test::run_case(*k, row, c, test::Mode::Refuse, 1, st.refusal);
        EXPECT_NE(r.status, CaseResult::Failed) << describe(r);
      }
    }
    GTEST_SKIP() << (st.kind == RowStatus::Unsupported ? "unsupported: " : "skipped: ") << st.why
                 << (st.refusal.empty() ? "" : " (every op refuses it, saying '" + st.refusal + "')");
  }
  test::RowContext rc(row);
  uint32_t seed = 100;
  int ok = 0, unsupported = 0;
  for (const auto& k : test::check_cases()) {
    const CaseResult r = test::run_case(*k, row, rc.c, test::Mode::Check, seed++);
    const char* verdict = r.status == CaseResult::Ok ? "OK" : r.status == CaseResult::Failed ? "FAIL" : "unsupported";
    std::printf("  %-12s %-28s %-52s %s", r.row.c_str(), r.op.c_str(), r.shape.c_str(), verdict);
    if (r.status == CaseResult::Ok && r.worst > 0) std::printf(" (error %.2g of the tolerance)", r.worst);
    if (r.status == CaseResult::Unsupported) std::printf(" (%s)", r.note.c_str());
    std::printf("\n");
    EXPECT_NE(r.status, CaseResult::Failed) << row.name() << ": " << describe(r);
    ok += r.status == CaseResult::Ok;
    unsupported += r.status == CaseResult::Unsupported;
  }
  EXPECT_GT(ok, 0);
  std::printf("  %s: %d cases passed, %d unsupported\n", row.name().c_str(), ok, unsupported);
}

INSTANTIATE_TEST_SUITE_P(Rows, OpCases, ::testing::ValuesIn(test::op_rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return i.param.name(); });

TEST(OpHarnessUnsupported, CombinationsAreRefusedWithTheirReason) {
  EXPECT_THROW(check_precision(Backend::cpu(), Precision::TF32), Error);
  EXPECT_THROW(check_precision(Backend::cpu(), Precision::BF16), Error);
  EXPECT_NO_THROW(check_precision(Backend::cuda(0), Precision::BF16));
  EXPECT_NO_THROW(check_precision(Backend::cuda(0), Precision::TF32));
  OpContext c;
  c.backend = Backend::cuda(0);
  std::vector<double> x(4), y(4);
  try {
    linear_forward<double>(c, y.data(), x.data(), x.data(), x.data(), 1, 2, 2, false);
    ADD_FAILURE() << "double on CUDA must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not supported on cuda:0"), std::string::npos) << e.what();
  }
#ifndef SL_WITH_CUDA
  // float on a CUDA context in a build without CUDA: refused, saying so (not a crash)
  std::vector<float> xf(4), yf(4);
  try {
    linear_forward<float>(c, yf.data(), xf.data(), xf.data(), xf.data(), 1, 2, 2, false);
    ADD_FAILURE() << "a CUDA context must be refused without CUDA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA backend"), std::string::npos) << e.what();
  }
#endif
  EXPECT_THROW(Backend::parse("cuda:x"), Error);
  EXPECT_EQ(Backend::parse("cuda:3").device, 3);
}

// ---- the whole model on each backend --------------------------------------------------------------
// Backend memory filled from / read back into host vectors (tests only: waits).
struct Mem {
  OpContext c;
  Buffer buf;
  Mem(const OpContext& ctx, size_t bytes) : c(ctx), buf(ctx.backend, std::max<size_t>(bytes, 4), "test") {}
  template <class T>
  static Mem of(const OpContext& ctx, const std::vector<T>& h) {
    Mem m(ctx, h.size() * sizeof(T));
    copy_from_host(ctx, m.buf.data(), h.data(), h.size() * sizeof(T));
    return m;
  }
  template <class T>
  T* p() const { return buf.as<T>(); }
};

template <class T>
std::vector<double> to_d(const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); }

class ModelOnBackend : public ::testing::TestWithParam<Row> {};

// Loss and every gradient vs the float64 reference model, then steps through the fixed inputs
// (the CUDA graph at full capacity) and a short batch inside the same workspace, tracked by the
// CPU model. With `local`, the same with a local branch (K = 6 points per line point, W = 1); with
// `variance`, a variance head too (its likelihood gradient and its log variances checked as well).
void expect_step_matches_reference_and_cpu_model(const Row& row, bool local, bool variance = false, int line_channels = 3) {
  const double tol = test::row_tolerance(row);
  ModelConfig cfg;
  cfg.encoder = {16, 24, 40};
  cfg.line_mlp = {8, 12};
  cfg.regressor = {20, 10};
  if (local) cfg.local = {8, 12}, cfg.local_k = 6, cfg.local_window = 1;
  if (variance) cfg.variance = {8};
  cfg.line_channels = line_channels;
  const int B = 3, P = 50, L = 7, K = cfg.local_k, W = line_channels;
  LineRefiner m(cfg, 5, row.backend, row.precision);
  const size_t n = m.num_params();
  std::vector<float> w(n);
  m.download_params(w.data());
  using test::random_vec;
  using test::rel_err;
  auto ctx = random_vec<float>(size_t(B) * P * 4, 60), line = random_vec<float>(size_t(B) * L * W, 61),
       tgt = random_vec<float>(size_t(B) * L * 3, 62);
  auto loc = random_vec<float>(size_t(B) * L * K * 4 + 1, 63);  // + 1: never empty
  Mem mc = Mem::of(m.context(), ctx), ml = Mem::of(m.context(), line), mt = Mem::of(m.context(), tgt),
      mx = Mem::of(m.context(), loc);
  const float* lx = local ? mx.p<float>() : nullptr;
  const float loss = m.forward_backward(mc.p<float>(), ml.p<float>(), mt.p<float>(), B, P, L, lx);
  std::vector<double> gref(n, 0), lvref(size_t(B) * L * 3);
  const double lref = line_refiner_reference<double>(cfg, to_d(w).data(), gref.data(), to_d(ctx).data(),
                                                     to_d(line).data(), to_d(tgt).data(), B, P, L, nullptr,
                                                     local ? to_d(loc).data() : nullptr, lvref.data());
  if (variance) {
    Mem lv(m.context(), lvref.size() * sizeof(float));
    m.forward(mc.p<float>(), ml.p<float>(), B, P, L, nullptr, lx, lv.p<float>());
    std::vector<float> got(lvref.size());
    copy_to_host(m.context(), got.data(), lv.p<float>(), got.size() * sizeof(float));
    EXPECT_LT(rel_err(got, lvref), 10 * tol) << row.name() << ": log variances";
  }
  std::vector<float> g(n);
  m.download_grads(g.data());
  EXPECT_NEAR(loss, lref, tol * lref) << row.name();
  EXPECT_LT(rel_err(g, gref), 10 * tol) << row.name();

  // steps: full batches through step_inputs, then a short one, vs the CPU model on the same data
  LineRefiner cpu(cfg, 5);
  Adam adam(n, AdamConfig{}, row.backend), cadam(n);
  m.prepare(B, P, L);
  cpu.prepare(B, P, L);
  for (int s = 0; s < 4; ++s) {
    const int Bs = s == 3 ? 2 : B;
    auto c2 = random_vec<float>(size_t(Bs) * P * 4, 70 + s), l2 = random_vec<float>(size_t(Bs) * L * W, 80 + s),
         t2 = random_vec<float>(size_t(Bs) * L * 3, 90 + s), x2 = random_vec<float>(size_t(Bs) * L * K * 4 + 1, 95 + s);
    Mem a = Mem::of(m.context(), c2), b2 = Mem::of(m.context(), l2), d = Mem::of(m.context(), t2),
        e = Mem::of(m.context(), x2);
    m.load_inputs(a.p<float>(), b2.p<float>(), d.p<float>(), Bs, local ? e.p<float>() : nullptr);
    m.step_inputs(Bs, adam);
    synchronize(m.context());
    cpu.step(c2.data(), l2.data(), t2.data(), Bs, P, L, cadam, local ? x2.data() : nullptr);
  }
  int steps = 0;
  const float mean = m.read_loss(&steps);
  EXPECT_EQ(steps, 5) << row.name() << ": forward_backward + 4 steps since the model was made";
  EXPECT_TRUE(std::isfinite(mean));
  std::vector<float> wg(n);
  m.download_params(wg.data());
  EXPECT_LT(rel_err(wg, std::vector<float>(cpu.param_data(), cpu.param_data() + n)), 50 * tol) << row.name();
  // The weights above stay near their start whatever happens (four Adam steps move them by
  // ~0.7% of their scale, inside 50 x tol for tf32 and bf16): the update itself is compared, its
  // length and direction against the CPU model's. Adam's first steps move a weight by about lr
  // whatever the size of its gradient, so a reduced-precision GEMM that flipped a near-zero
  // gradient's sign would flip that weight's whole update; on an H200 (CUDA 13.0) tf32 and bf16
  // gave a length ratio of 0.9995 and a cosine of 0.9998. An update that never ran, ran twice or
  // started from moments that were not zero fails both (a late zeroing of new device memory did:
  // cosine 0.80 in bf16, fixed in cuda::device_alloc).
  double dot = 0, len_m = 0, len_cpu = 0;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dm = double(wg[i]) - w[i], dc = double(cpu.param_data()[i]) - w[i];
    finite += std::isfinite(wg[i]) ? 1 : 0;
    dot += dm * dc;
    len_m += dm * dm;
    len_cpu += dc * dc;
  }
  EXPECT_EQ(finite, n) << row.name();
  ASSERT_GT(len_cpu, 0);
  std::printf("  %s%s%s: update against the CPU model's: length ratio %.4f, cosine %.4f\n", row.name().c_str(),
              local ? " (local branch)" : "", variance ? " (variance head)" : "", std::sqrt(len_m / len_cpu), dot / std::sqrt(len_m * len_cpu + 1e-300));
  EXPECT_NEAR(std::sqrt(len_m / len_cpu), 1.0, 0.02) << row.name() << ": length of the update against the CPU model's";
  EXPECT_GT(dot / std::sqrt(len_m * len_cpu + 1e-300), 0.99) << row.name() << ": cosine of the update and the CPU model's";
  EXPECT_EQ(adam.step_count(m.context()), 4);
}

TEST_P(ModelOnBackend, StepMatchesReferenceAndCpuModel) {
  const Row row = GetParam();
  const RowStatus st = test::row_status(row);
  if (st.kind != RowStatus::Runs) GTEST_SKIP() << row.name() << ": " << st.why;
  expect_step_matches_reference_and_cpu_model(row, false);
}

TEST_P(ModelOnBackend, LocalBranchStepMatchesReferenceAndCpuModel) {
  const Row row = GetParam();
  const RowStatus st = test::row_status(row);
  if (st.kind != RowStatus::Runs) GTEST_SKIP() << row.name() << ": " << st.why;
  expect_step_matches_reference_and_cpu_model(row, true);
}

TEST_P(ModelOnBackend, VarianceHeadStepMatchesReferenceAndCpuModel) {
  const Row row = GetParam();
  const RowStatus st = test::row_status(row);
  if (st.kind != RowStatus::Runs) GTEST_SKIP() << row.name() << ": " << st.why;
  expect_step_matches_reference_and_cpu_model(row, true, true);
}

// category_input's one-hot after x y z: 3 + 11 channels per noisy line point (the line MLP's input).
TEST_P(ModelOnBackend, CategoryChannelsStepMatchesReferenceAndCpuModel) {
  const Row row = GetParam();
  const RowStatus st = test::row_status(row);
  if (st.kind != RowStatus::Runs) GTEST_SKIP() << row.name() << ": " << st.why;
  expect_step_matches_reference_and_cpu_model(row, true, false, 3 + 11);
}

// The model runs in float: the rows of every backend in the precisions its GEMMs support.
INSTANTIATE_TEST_SUITE_P(Rows, ModelOnBackend,
                         ::testing::Values(Row{Backend::cpu(), Precision::FP32}, Row{Backend::cuda(0), Precision::FP32},
                                           Row{Backend::cuda(0), Precision::TF32}, Row{Backend::cuda(0), Precision::BF16}),
                         [](const ::testing::TestParamInfo<Row>& i) { return i.param.name(); });

}  // namespace
}  // namespace sl
