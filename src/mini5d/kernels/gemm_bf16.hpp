// SPDX-License-Identifier: BSD-3-Clause
// The matrix products of linear.hpp for bf16 operands: inputs bf16, accumulation fp32.
// The host BLAS here has no bf16 GEMM (Debian's OpenBLAS 0.3.21 exports no sbgemm;
// `nm -D libopenblasp-r0.3.21.so` lists only support_avx512_bf16), and Kokkos Kernels
// has no bf16 path to a BLAS either, so the operands are widened to fp32 in panels of
// kGemmPanelRows rows, the fp32 BLAS multiplies them, and an output in bf16 is rounded
// once per element (an fp32 output, the main gradient, is accumulated in place). The
// weight is widened once per call; a panel bounds the extra fp32 memory of the
// activations to kGemmPanelRows rows whatever the batch. On a GPU with the vendor BLAS
// (gemm_bf16_vendor.hpp: cuBLAS or rocBLAS) the operands go to its bf16 GEMM as stored, with an fp32
// product: the forward and input-gradient products still land in an fp32 panel, so that
// the bias and the accumulation are added before the one rounding, as on the host.
#pragma once
#include <KokkosBlas3_gemm.hpp>
#include <cstdint>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/gemm_bf16_vendor.hpp"
#include "mini5d/kernels/scratch.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

constexpr int kGemmPanelRows = 256;

namespace detail {

// dst[n, cols] = src[r0 .. r0 + n, :] in fp32 (src may be strided: indexed, not copied).
template <class S>
void widen_rows(MatU<float> dst, CMatU<S> src, int r0) {
  const std::int64_t cols = std::int64_t(dst.extent(1)), n = std::int64_t(dst.extent(0)) * cols;
  Kokkos::parallel_for(
      "mini5d::kernels::widen_rows", Range(0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const int r = int(i / cols), c = int(i % cols);
        dst(r, c) = ld(src(r0 + r, c));
      });
}

// dst[r0 .. r0 + n, :] = src[n, cols] rounded to S, or dst + src when accumulate (the
// sum formed in fp32, one rounding), plus bias[c] when the bias is not empty.
template <class S>
void narrow_rows(MatU<S> dst, int r0, MatU<float> src, bool accumulate, CVecU<S> bias) {
  const std::int64_t cols = std::int64_t(src.extent(1)), n = std::int64_t(src.extent(0)) * cols;
  const bool has_bias = bias.extent(0) > 0;
  Kokkos::parallel_for(
      "mini5d::kernels::narrow_rows", Range(0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        const int r = int(i / cols), c = int(i % cols);
        const float v = has_bias ? src(r, c) + ld(bias(c)) : src(r, c);
        dst(r0 + r, c) = st<S>(accumulate ? ld(dst(r0 + r, c)) + v : v);
      });
}

inline int panel_rows(int rows) { return rows < kGemmPanelRows ? rows : kGemmPanelRows; }

// Rows per fp32 output panel for the vendor BLAS: as many as fit in kGpuPanelFloats (64 MiB), so a
// GPU gets products large enough to fill it, and never fewer than kGemmPanelRows.
constexpr std::int64_t kGpuPanelFloats = std::int64_t(1) << 24;
inline int gpu_panel_rows(int rows, int cols) {
  const std::int64_t fit = kGpuPanelFloats / (cols > 0 ? cols : 1);
  const std::int64_t p = fit < kGemmPanelRows ? kGemmPanelRows : fit;
  return rows < p ? rows : int(p);
}

// out[N, M] = rows op(w) through the vendor BLAS, panel by panel into fp32, then narrow_rows.
template <class S>
void vendor_rows(const char* tw, MatU<S> out, CMatU<S> rows, CMatU<S> w, bool accumulate, CVecU<S> bias) {
  const int N = int(rows.extent(0)), K = int(rows.extent(1)), M = int(out.extent(1));
  const int P = gpu_panel_rows(N, M);
  const VecU<float> buf = scratch<float>(std::int64_t(P) * M);
  for (int r0 = 0; r0 < N; r0 += P) {
    const int n = N - r0 < P ? N - r0 : P;
    const MatU<float> yf(buf.data(), n, M);
    vendor_bf16_gemm('N', tw[0], n, M, K, rows.data() + std::int64_t(r0) * rows.stride(0), int(rows.stride(0)),
                     w.data(), int(w.stride(0)), 0.0f, yf.data(), M);
    narrow_rows<S>(out, r0, yf, accumulate, bias);
  }
}

}  // namespace detail

// dst[N, M] += src[N, M] in fp32, rounded once to S per element (a product formed in
// fp32 outside this file, e.g. the MoE router's input gradient).
template <class S>
void add_fp32_rows(MatU<S> dst, MatU<float> src) {
  detail::narrow_rows<S>(dst, 0, src, true, CVecU<S>());
}

// out[N, M] = rows[N, K] op(w) (+ out when accumulate), op(w) = w^T for tw "T" (w [M, K])
// or w for "N" (w [K, M]): the forward (x w^T, plus the bias when not empty) and the
// input gradient (dy w).
template <class S>
void gemm_bf16_rows(const char* tw, MatU<S> out, CMatU<S> rows, CMatU<S> w, bool accumulate, CVecU<S> bias) {
  if constexpr (kVendorBf16Gemm<S>) {
    detail::vendor_rows<S>(tw, out, rows, w, accumulate, bias);
    return;
  }
  const int N = int(rows.extent(0)), K = int(rows.extent(1)), M = int(out.extent(1));
  const int P = detail::panel_rows(N);
  const std::int64_t nw = std::int64_t(w.size());
  const VecU<float> buf = scratch<float>(nw + std::int64_t(P) * (K + M));
  const MatU<float> wf(buf.data(), w.extent(0), w.extent(1));
  detail::widen_rows<S>(wf, w, 0);
  for (int r0 = 0; r0 < N; r0 += P) {
    const int n = N - r0 < P ? N - r0 : P;
    const MatU<float> xf(buf.data() + nw, n, K), yf(buf.data() + nw + std::int64_t(P) * K, n, M);
    detail::widen_rows<S>(xf, rows, r0);
    KokkosBlas::gemm("N", tw, 1.0f, xf, wf, 0.0f, yf);
    detail::narrow_rows<S>(out, r0, yf, accumulate, bias);
  }
}

// dw[O, I] += dy[N, O]^T x[N, I] in fp32 (the weight's main gradient): the sum over the
// N rows runs panel by panel, each panel's product added by the BLAS (beta = 1).
template <class S>
void gemm_bf16_weight_grad(MatU<float> dw, CMatU<S> dy, CMatU<S> x) {
  if constexpr (kVendorBf16Gemm<S>) {  // one product, accumulated into dw by the vendor BLAS (beta = 1)
    vendor_bf16_gemm('T', 'N', int(dw.extent(0)), int(dw.extent(1)), int(dy.extent(0)), dy.data(),
                     int(dy.stride(0)), x.data(), int(x.stride(0)), 1.0f, dw.data(), int(dw.stride(0)));
    return;
  }
  const int N = int(dy.extent(0)), O = int(dy.extent(1)), I = int(x.extent(1));
  const int P = detail::panel_rows(N);
  const VecU<float> buf = scratch<float>(std::int64_t(P) * (O + I));
  for (int r0 = 0; r0 < N; r0 += P) {
    const int n = N - r0 < P ? N - r0 : P;
    const MatU<float> dyf(buf.data(), n, O), xf(buf.data() + std::int64_t(P) * O, n, I);
    detail::widen_rows<S>(dyf, dy, r0);
    detail::widen_rows<S>(xf, x, r0);
    KokkosBlas::gemm("T", "N", 1.0f, dyf, xf, 1.0f, dw);
  }
}

// db[O] += column sums of dy[N, O] in fp32, as ones^T dy per panel (as linear.hpp's
// bias_backward does in fp32); `ones` holds at least N ones.
template <class S>
void gemm_bf16_bias_grad(VecU<float> db, CMatU<S> dy, CVecU<float> ones) {
  const int N = int(dy.extent(0)), O = int(dy.extent(1));
  const int P = detail::panel_rows(N);
  const VecU<float> buf = scratch<float>(std::int64_t(P) * O);
  const MatU<float> db_row(db.data(), 1, db.extent(0));
  for (int r0 = 0; r0 < N; r0 += P) {
    const int n = N - r0 < P ? N - r0 : P;
    const MatU<float> dyf(buf.data(), n, O);
    const CMatU<float> ones_row(ones.data() + r0, 1, n);
    detail::widen_rows<S>(dyf, dy, r0);
    KokkosBlas::gemm("N", "N", 1.0f, ones_row, dyf, 1.0f, db_row);
  }
}

}  // namespace mini5d::kernels
