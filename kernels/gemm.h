// The CPU GEMM every kernel uses: OpenBLAS (runtime-dispatched kernels), always called
// single-threaded; parallelism comes from oneTBB tasks over FIXED blocks so that results do
// not depend on the thread count.
//
// Why OpenBLAS: measured on the dev VM (AMD EPYC, AVX2+FMA, 1 core, M=8192 N=512 K=128):
// OpenBLAS (core "Zen"/"Haswell") ~60-67 GFLOP/s; Eigen 3.4 with the project's default flags
// (no -march) ~22 GFLOP/s (it only reaches OpenBLAS with -mavx2 -mfma, which we do not set).
// See bench/results/train_cpu.md.
#pragma once
#include <cstdint>
#include <string>

namespace sl {

// Call first thing in main(). If OPENBLAS_CORETYPE is unset, sets it from the CPU
// (AVX-512 -> SkylakeX, AVX2 -> Haswell) plus OPENBLAS_NUM_THREADS=1 and re-executes
// /proc/self/exe with the same argv exactly once (guarded by SL_BLAS_REEXEC), because OpenBLAS
// reads the variable only when the library is loaded. Returns normally when nothing is needed
// or when the re-exec fails (then the run continues with whatever OpenBLAS picked).
void ensure_blas_env(int argc, char** argv);

// The kernel set OpenBLAS selected ("Haswell", "SkylakeX", "Zen", "Prescott" = slow SSE3...).
std::string blas_corename();

enum class Trans { N, T };

// Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, computed on the calling
// thread only (OpenBLAS is pinned to 1 thread the first time this is called).
// T = float (sgemm) or double (dgemm).
template <class T>
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// Same contract, rows of C split in fixed blocks of `kGemmRowBlock` across oneTBB workers:
// byte-identical results for any thread count.
inline constexpr int64_t kGemmRowBlock = 256;
template <class T>
void gemm_parallel(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                   int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// Obviously-correct triple loop (accumulates in double), same contract; for tests.
template <class T>
void gemm_reference(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                    int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

}  // namespace sl
