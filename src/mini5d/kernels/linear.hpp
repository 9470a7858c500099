// SPDX-License-Identifier: BSD-3-Clause
// Fully connected layer y = x W^T + b with W stored [out, in] (the PyTorch and
// checkpoint convention). Every product goes through KokkosBlas::gemm so the BLAS /
// cuBLAS TPL does the work; gradients accumulate (beta = 1) so micro-batches sum.
#pragma once
#include <KokkosBlas3_gemm.hpp>

#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// y[N, O] += b[O] on every row; an empty b adds nothing.
template <class S>
void add_bias(MatU<S> y, CVecU<S> b) {
  if (b.extent(0) == 0) return;
  const int cols = int(y.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::linear_bias", Range(0, y.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int c = 0; c < cols; ++c) y(r, c) += b(c);
      });
}

// y[N, O] = x[N, I] * w[O, I]^T + b[O]
template <class S>
void linear_forward(MatU<S> y, CMatU<S> x, CMatU<S> w, CVecU<S> b) {
  KokkosBlas::gemm("N", "T", S(1), x, w, S(0), y);
  add_bias<S>(y, b);
}

// dx[N, I] = dy[N, O] * w[O, I] (overwritten, or added when accumulate).
template <class S>
void linear_backward_input(MatU<S> dx, CMatU<S> dy, CMatU<S> w, bool accumulate = false) {
  KokkosBlas::gemm("N", "N", S(1), dy, w, accumulate ? S(1) : S(0), dx);
}

// db += column sums of dy, as ones^T * dy: a 1-row gemm walks dy in its natural order
// (Kokkos Kernels' gemv has no BLAS path for LayoutRight and is ~10x slower here).
// `ones` is a caller-owned vector of at least dy.extent(0) ones; an empty db skips.
template <class S>
void bias_backward(VecU<S> db, CMatU<S> dy, CVecU<S> ones) {
  if (db.extent(0) == 0) return;
  Kokkos::View<const S**, Kokkos::LayoutRight, MemSpace, Unmanaged> ones_row(ones.data(), 1, dy.extent(0));
  MatU<S> db_row(db.data(), 1, db.extent(0));
  KokkosBlas::gemm("N", "N", S(1), ones_row, dy, S(1), db_row);
}

// Given dy = dL/dy: dx = dy * w (overwritten, or added when accumulate_dx),
// dw += dy^T * x, db += column sums of dy. An empty dx skips dx, an empty db skips db.
template <class S>
void linear_backward(MatU<S> dx, MatU<S> dw, VecU<S> db, CMatU<S> dy, CMatU<S> x,
                     CMatU<S> w, CVecU<S> ones, bool accumulate_dx = false) {
  if (dx.extent(0) > 0) linear_backward_input<S>(dx, dy, w, accumulate_dx);
  KokkosBlas::gemm("T", "N", S(1), dy, x, S(1), dw);
  bias_backward<S>(db, dy, ones);
}

}  // namespace mini5d::kernels
