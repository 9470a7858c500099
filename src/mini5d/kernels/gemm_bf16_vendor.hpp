// SPDX-License-Identifier: BSD-3-Clause
// The GPU vendor's bf16 GEMM for gemm_bf16.hpp: operands bf16, product and accumulation
// fp32, so on a GPU the operands are read as stored instead of being widened to fp32
// panels first. Two vendors, one contract:
//   * CUDA with Kokkos Kernels' cuBLAS TPL: cublasGemmEx (gemm_bf16_cublas.hpp);
//   * HIP with Kokkos Kernels' rocBLAS TPL: rocblas_gemm_ex (gemm_bf16_rocblas.hpp).
// kVendorBf16Gemm<S> says whether this build has one for S, kVendorBf16GemmName names it
// for the start-up header, and gemm_bf16.hpp keeps the widened path for every other
// build (a host backend, or a GPU build whose Kokkos Kernels lacks the vendor BLAS).
#pragma once
#include <KokkosKernels_config.h>

#include <type_traits>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#include "mini5d/kernels/gemm_bf16_cublas.hpp"
#define MINI5D_VENDOR_BF16_GEMM 1
#elif defined(KOKKOS_ENABLE_HIP) && defined(KOKKOSKERNELS_ENABLE_TPL_ROCBLAS)
#include "mini5d/kernels/gemm_bf16_rocblas.hpp"
#define MINI5D_VENDOR_BF16_GEMM 1
#endif

namespace mini5d::kernels {

#ifdef MINI5D_VENDOR_BF16_GEMM
// bf16 is 2 bytes in the vendor's bfloat16 layout (bf16.hpp): Kokkos' bhalf_t wrapping
// __nv_bfloat16 on CUDA, mini5d::BFloat16 (the top half of an IEEE float, as
// rocblas_bfloat16) on HIP. The views must live in the GPU's own memory space.
template <class S>
constexpr bool kVendorBf16Gemm = std::is_same_v<S, bf16> && sizeof(bf16) == 2 &&
                                 !std::is_same_v<MemSpace, Kokkos::HostSpace>;

// Row-major c[n, m] (fp32, row stride ldc) = op(a) op(b) + beta c, over an inner length
// k, with a and b bf16 and row-major (row strides lda, ldb): ta 'N' a is [n, k], 'T' a is
// [k, n]; tb 'N' b is [k, m], 'T' b is [m, k].
inline void vendor_bf16_gemm(char ta, char tb, int n, int m, int k, const void* a, int lda, const void* b, int ldb,
                             float beta, float* c, int ldc) {
#if defined(KOKKOS_ENABLE_CUDA)
  detail::cublas_bf16_gemm(ta, tb, n, m, k, a, lda, b, ldb, beta, c, ldc);
#else
  detail::rocblas_bf16_gemm(ta, tb, n, m, k, a, lda, b, ldb, beta, c, ldc);
#endif
}
#if defined(KOKKOS_ENABLE_CUDA)
constexpr const char* kVendorBf16GemmName = "cuBLAS";
#else
constexpr const char* kVendorBf16GemmName = "rocBLAS";
#endif
#else
template <class S>
constexpr bool kVendorBf16Gemm = false;
constexpr const char* kVendorBf16GemmName = nullptr;

// Never called (every call site is under `if constexpr (kVendorBf16Gemm<S>)`); declared so
// that those sites compile in every build.
void vendor_bf16_gemm(char ta, char tb, int n, int m, int k, const void* a, int lda, const void* b, int ldb,
                      float beta, float* c, int ldc);
#endif

// Whether bf16 products go to the vendor's GEMM in this build (the start-up header says).
constexpr bool kHaveVendorBf16Gemm = kVendorBf16Gemm<bf16>;

}  // namespace mini5d::kernels
