// SPDX-License-Identifier: BSD-3-Clause
// rocBLAS's bf16 GEMM behind gemm_bf16_vendor.hpp: rocblas_gemm_ex with bf16 inputs
// (rocblas_datatype_bf16_r), an fp32 output and fp32 computation, the AMD counterpart of
// cublasGemmEx. Included only where Kokkos runs on HIP and Kokkos Kernels has the
// rocBLAS TPL (the vendor header decides).
#pragma once
#include <KokkosBlas_tpl_spec.hpp>
#include <rocblas/rocblas.h>

#include <stdexcept>
#include <string>

#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels::detail {

inline rocblas_operation rocblas_op(char t) {
  return t == 'T' ? rocblas_operation_transpose : rocblas_operation_none;
}

// vendor_bf16_gemm's contract (gemm_bf16_vendor.hpp). rocBLAS is column-major like
// cuBLAS, so the same swap: c^T = op(b)^T op(a)^T. The output is both C and D (rocBLAS
// allows them to alias when their types and leading dimensions match). On the default
// execution space's HIP stream, after the kernels already queued there.
inline void rocblas_bf16_gemm(char ta, char tb, int n, int m, int k, const void* a, int lda, const void* b,
                              int ldb, float beta, float* c, int ldc) {
  auto& blas = KokkosBlas::Impl::RocBlasSingleton::singleton();
  rocblas_status status = rocblas_set_stream(blas.handle, ExecSpace().hip_stream());
  const float alpha = 1.0f;
  // The name in parentheses calls the function, not the variadic macro of the same name
  // that rocBLAS 5.x defines over it (for two obsolete workspace arguments): called with
  // none, that macro trips -Wgnu-zero-variadic-macro-arguments under -Wpedantic.
  if (status == rocblas_status_success)
    status = (rocblas_gemm_ex)(blas.handle, rocblas_op(tb), rocblas_op(ta), m, n, k, &alpha, b,
                               rocblas_datatype_bf16_r, ldb, a, rocblas_datatype_bf16_r, lda, &beta, c,
                               rocblas_datatype_f32_r, ldc, c, rocblas_datatype_f32_r, ldc, rocblas_datatype_f32_r,
                               rocblas_gemm_algo_standard, 0, 0);
  if (status != rocblas_status_success)
    throw std::runtime_error("rocBLAS bf16 GEMM (" + std::to_string(n) + " x " + std::to_string(m) + " x " +
                             std::to_string(k) + ") failed: " + rocblas_status_to_string(status));
}

}  // namespace mini5d::kernels::detail
