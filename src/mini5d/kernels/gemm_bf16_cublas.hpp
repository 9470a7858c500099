// SPDX-License-Identifier: BSD-3-Clause
// cuBLAS's bf16 GEMM for gemm_bf16.hpp: operands bf16, product and accumulation fp32
// (cublasGemmEx with CUDA_R_16BF inputs, a CUDA_R_32F output and CUBLAS_COMPUTE_32F), so
// on a GPU the operands are read as stored instead of being widened to fp32 panels
// first. It exists in a build whose Kokkos runs on CUDA and whose Kokkos Kernels has the
// cuBLAS TPL; kCublasBf16Gemm says whether this build has it (the start-up header
// reports it), and gemm_bf16.hpp keeps the widened path for every other build.
#pragma once
#include <KokkosKernels_config.h>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#include <KokkosBlas_tpl_spec.hpp>
#include <cublas_v2.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#define MINI5D_CUBLAS_BF16_GEMM 1
#endif

namespace mini5d::kernels {

#ifdef MINI5D_CUBLAS_BF16_GEMM
// bf16 is Kokkos' bhalf_t here, which on CUDA wraps __nv_bfloat16: the bytes cuBLAS reads.
template <class S>
constexpr bool kCublasBf16Gemm = std::is_same_v<S, bf16> && sizeof(bf16) == 2 &&
                                 std::is_same_v<MemSpace, Kokkos::CudaSpace>;

namespace detail {
inline cublasOperation_t cublas_op(char t) { return t == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N; }
}  // namespace detail

// Row-major c[n, m] (fp32, row stride ldc) = op(a) op(b) + beta c, over an inner length
// k, with a and b bf16 and row-major (row strides lda, ldb): ta 'N' a is [n, k], 'T' a is
// [k, n]; tb 'N' b is [k, m], 'T' b is [m, k]. cuBLAS is column-major, and a row-major
// matrix is its transpose there, so this asks for c^T = op(b)^T op(a)^T: b first, each
// with its own op. It runs on the default execution space's stream, after the kernels
// already queued there.
inline void cublas_bf16_gemm(char ta, char tb, int n, int m, int k, const void* a, int lda, const void* b,
                             int ldb, float beta, float* c, int ldc) {
  auto& blas = KokkosBlas::Impl::CudaBlasSingleton::singleton();
  cublasStatus_t status = cublasSetStream(blas.handle, ExecSpace().cuda_stream());
  const float alpha = 1.0f;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasGemmEx(blas.handle, detail::cublas_op(tb), detail::cublas_op(ta), m, n, k, &alpha, b, CUDA_R_16BF,
                          ldb, a, CUDA_R_16BF, lda, &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLAS bf16 GEMM (" + std::to_string(n) + " x " + std::to_string(m) + " x " +
                             std::to_string(k) + ") failed: " + cublasGetStatusString(status));
}
#else
template <class S>
constexpr bool kCublasBf16Gemm = false;

// Never called (every call site is under `if constexpr (kCublasBf16Gemm<S>)`); declared so
// that those sites compile in every build.
void cublas_bf16_gemm(char ta, char tb, int n, int m, int k, const void* a, int lda, const void* b, int ldb,
                      float beta, float* c, int ldc);
#endif

// What the start-up header says about bf16 products in this build.
constexpr bool kHaveCublasBf16Gemm = kCublasBf16Gemm<bf16>;

}  // namespace mini5d::kernels
