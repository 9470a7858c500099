// SPDX-License-Identifier: BSD-3-Clause
// Fully connected layer y = x W^T + b with W stored [out, in] (the PyTorch and
// checkpoint convention). Every product goes through KokkosBlas::gemm so the BLAS /
// cuBLAS TPL does the work; gradients accumulate (beta = 1) so micro-batches sum.
#pragma once
#include <KokkosBlas3_gemm.hpp>

#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// y[N, O] = x[N, I] * w[O, I]^T + b[O]
template <class S>
void linear_forward(MatU<S> y, CMatU<S> x, CMatU<S> w, CVecU<S> b) {
  KokkosBlas::gemm("N", "T", S(1), x, w, S(0), y);
  if (b.extent(0) == 0) return;
  const int cols = int(y.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::linear_bias", Range(0, y.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int c = 0; c < cols; ++c) y(r, c) += b(c);
      });
}

// Given dy = dL/dy: dx = dy * w (overwritten, or added when accumulate_dx),
// dw += dy^T * x, db += column sums of dy. `ones` is a caller-owned vector of
// dy.extent(0) ones (kept out of the hot path's allocations); an empty dx skips dx.
template <class S>
void linear_backward(MatU<S> dx, MatU<S> dw, VecU<S> db, CMatU<S> dy, CMatU<S> x,
                     CMatU<S> w, CVecU<S> ones, bool accumulate_dx = false) {
  if (dx.extent(0) > 0) KokkosBlas::gemm("N", "N", S(1), dy, w, accumulate_dx ? S(1) : S(0), dx);
  KokkosBlas::gemm("T", "N", S(1), dy, x, S(1), dw);
  if (db.extent(0) == 0) return;
  // db += ones^T * dy as a 1-row gemm: the BLAS walks dy in its natural order (Kokkos
  // Kernels' gemv has no BLAS path for LayoutRight and is ~10x slower here).
  Kokkos::View<const S**, Kokkos::LayoutRight, MemSpace, Unmanaged> ones_row(ones.data(), 1, ones.extent(0));
  MatU<S> db_row(db.data(), 1, db.extent(0));
  KokkosBlas::gemm("N", "N", S(1), ones_row, dy, S(1), db_row);
}

}  // namespace mini5d::kernels
