#include "kernels/gemm.h"

#include <cblas.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace sl {

void ensure_blas_env(int argc, char** argv) {
  (void)argc;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  if (std::getenv("SL_BLAS_REEXEC") != nullptr) return;  // already re-executed once
  __builtin_cpu_init();
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f")) {
    core = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    core = "Haswell";
  }
  if (core == nullptr) return;
  ::setenv("OPENBLAS_CORETYPE", core, 1);
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  ::setenv("SL_BLAS_REEXEC", "1", 1);
  ::execv("/proc/self/exe", argv);
  // execv only returns on failure: carry on with the kernels already loaded.
  std::fprintf(stderr, "streamline: re-exec for OPENBLAS_CORETYPE=%s failed; continuing\n", core);
}

std::string blas_corename() { return openblas_get_corename(); }

namespace {
void pin_blas_single_thread() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}
CBLAS_TRANSPOSE cb(Trans t) { return t == Trans::N ? CblasNoTrans : CblasTrans; }
}  // namespace

template <>
void gemm<float>(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                 int64_t ldc) {
  if (M == 0 || N == 0) return;
  pin_blas_single_thread();
  cblas_sgemm(CblasRowMajor, cb(ta), cb(tb), (blasint)M, (blasint)N, (blasint)K, alpha, A,
              (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

template <>
void gemm<double>(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, double alpha,
                  const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
                  double* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  pin_blas_single_thread();
  cblas_dgemm(CblasRowMajor, cb(ta), cb(tb), (blasint)M, (blasint)N, (blasint)K, alpha, A,
              (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

template <class T>
void gemm_parallel(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                   int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const int64_t nblocks = (M + kGemmRowBlock - 1) / kGemmRowBlock;
  if (nblocks <= 1) {
    gemm<T>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  tbb::parallel_for(int64_t(0), nblocks, [&](int64_t blk) {
    const int64_t r0 = blk * kGemmRowBlock;
    const int64_t m = std::min(kGemmRowBlock, M - r0);
    // Row r of op(A): row-major A when N, column r of A when T.
    const T* Ab = ta == Trans::N ? A + r0 * lda : A + r0;
    gemm<T>(ta, tb, m, N, K, alpha, Ab, lda, B, ldb, beta, C + r0 * ldc, ldc);
  });
}

template <class T>
void gemm_reference(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                    int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const T a = ta == Trans::N ? A[i * lda + k] : A[k * lda + i];
        const T b = tb == Trans::N ? B[k * ldb + j] : B[j * ldb + k];
        acc += double(a) * double(b);
      }
      const double prev = beta == T(0) ? 0.0 : double(beta) * double(C[i * ldc + j]);
      C[i * ldc + j] = T(double(alpha) * acc + prev);
    }
  }
}

template void gemm_parallel<float>(Trans, Trans, int64_t, int64_t, int64_t, float, const float*,
                                   int64_t, const float*, int64_t, float, float*, int64_t);
template void gemm_parallel<double>(Trans, Trans, int64_t, int64_t, int64_t, double,
                                    const double*, int64_t, const double*, int64_t, double,
                                    double*, int64_t);
template void gemm_reference<float>(Trans, Trans, int64_t, int64_t, int64_t, float, const float*,
                                    int64_t, const float*, int64_t, float, float*, int64_t);
template void gemm_reference<double>(Trans, Trans, int64_t, int64_t, int64_t, double,
                                     const double*, int64_t, const double*, int64_t, double,
                                     double*, int64_t);

}  // namespace sl
