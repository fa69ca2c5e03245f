// The op harness in its performance mode: every op case at the default model's sizes
// (tests/kernels/op_cases.h: perf_cases), timed alone on every row that runs here (the CPU in
// fp32; CUDA fp32 and tf32 when a GPU answers; the rows that cannot run are listed). Prints a markdown table: median microseconds per
// call, and GFLOP/s where the case counts its FLOPs.
// Usage: bench_ops [filter]   (filter: run only the ops whose name contains it)
#include <cstdio>
#include <string>

#include "kernels/gemm.h"
#include "tests/kernels/op_cases.h"

using namespace sl;

int main(int argc, char** argv) {
  ensure_blas_env(argc, argv);
  const std::string filter = argc > 1 ? argv[1] : "";
  std::printf("OpenBLAS core: %s\n\n", blas_corename().c_str());
  std::printf("| row | op | shape | median us | GFLOP/s |\n|---|---|---|---|---|\n");
  for (const test::Row& row : test::op_rows()) {
    if (row.f64) continue;  // the double instantiation serves the finite-difference tests only
    const test::RowStatus st = test::row_status(row);
    if (st.kind != test::RowStatus::Runs) {
      std::printf("| %s | | | %s: %s | |\n", row.name().c_str(),
                  st.kind == test::RowStatus::Unsupported ? "unsupported" : "skipped", st.why.c_str());
      continue;
    }
    test::RowContext rc(row);
    uint32_t seed = 1;
    for (const auto& k : test::perf_cases()) {
      if (!filter.empty() && k->op().find(filter) == std::string::npos) continue;
      const test::CaseResult r = test::run_case(*k, row, rc.c, test::Mode::Perf, seed++);
      if (r.status == test::CaseResult::Unsupported) {
        std::printf("| %s | %s | %s | unsupported: %s | |\n", r.row.c_str(), r.op.c_str(), r.shape.c_str(),
                    r.note.c_str());
      } else if (r.status == test::CaseResult::Failed) {
        std::printf("| %s | %s | %s | failed: %s | |\n", r.row.c_str(), r.op.c_str(), r.shape.c_str(),
                    r.failures.empty() ? "?" : r.failures[0].c_str());
      } else if (r.flops > 0) {
        std::printf("| %s | %s | %s | %.1f | %.1f |\n", r.row.c_str(), r.op.c_str(), r.shape.c_str(), r.median_us,
                    r.flops / r.median_us * 1e-3);
      } else {
        std::printf("| %s | %s | %s | %.1f | |\n", r.row.c_str(), r.op.c_str(), r.shape.c_str(), r.median_us);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
