// SPDX-License-Identifier: BSD-3-Clause
// cuBLAS's bf16 GEMM behind gemm_bf16_vendor.hpp: cublasGemmEx with CUDA_R_16BF inputs,
// a CUDA_R_32F output and CUBLAS_COMPUTE_32F. Included only where Kokkos runs on CUDA and
// Kokkos Kernels has the cuBLAS TPL (the vendor header decides).
#pragma once
#include <KokkosBlas_tpl_spec.hpp>
#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels::detail {

inline cublasOperation_t cublas_op(char t) { return t == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N; }

// vendor_bf16_gemm's contract (gemm_bf16_vendor.hpp). cuBLAS is column-major, and a
// row-major matrix is its transpose there, so this asks for c^T = op(b)^T op(a)^T: b
// first, each with its own op. It runs on the default execution space's stream, after
// the kernels already queued there.
inline void cublas_bf16_gemm(char ta, char tb, int n, int m, int k, const void* a, int lda, const void* b,
                             int ldb, float beta, float* c, int ldc) {
  auto& blas = KokkosBlas::Impl::CudaBlasSingleton::singleton();
  cublasStatus_t status = cublasSetStream(blas.handle, ExecSpace().cuda_stream());
  const float alpha = 1.0f;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasGemmEx(blas.handle, cublas_op(tb), cublas_op(ta), m, n, k, &alpha, b, CUDA_R_16BF, ldb, a,
                          CUDA_R_16BF, lda, &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLAS bf16 GEMM (" + std::to_string(n) + " x " + std::to_string(m) + " x " +
                             std::to_string(k) + ") failed: " + cublasGetStatusString(status));
}

}  // namespace mini5d::kernels::detail
