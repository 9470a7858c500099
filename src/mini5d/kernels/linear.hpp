// SPDX-License-Identifier: BSD-3-Clause
// Fully connected layer y = x W^T + b with W stored [out, in] (the PyTorch and
// checkpoint convention). Every product goes through KokkosBlas::gemm so the BLAS /
// cuBLAS TPL does the work; gradients accumulate (beta = 1) so micro-batches sum.
//
// S is the storage type of x, y, w, b, dx and dy: float, double, or bf16. Parameter
// gradients dw, db and the `ones` vector are in acc_t<S> (fp32 for bf16: the main
// gradient). For float and double every product is the one KokkosBlas::gemm it always
// was; for bf16 the products go through gemm_bf16.hpp (fp32 panels, fp32 accumulation).
#pragma once
#include "mini5d/kernels/team_reduce.hpp"
#include <KokkosBlas3_gemm.hpp>
#include <type_traits>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/gemm_bf16.hpp"

#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// The transpose flags keep every operand in its stored row-major form: Kokkos Kernels
// hands a LayoutRight product to the column-major BLAS as the transposed product, so
// no operand is ever copied or transposed in memory.

// y[N, O] += b[O] on every row; an empty b adds nothing. A team per row, threads over
// consecutive columns.
template <class S>
void add_bias(MatU<S> y, CVecU<S> b) {
  if (b.extent(0) == 0) return;
  const int rows = int(y.extent(0)), cols = int(y.extent(1));
  prof::Scope ps(prof::Family::bias, double(rows) * cols, 2.0 * double(sizeof(S)) * rows * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::linear_bias", teams(rows), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        team_for(t, 0, cols, [&](const int c) { y(r, c) = st<S>(ld(y(r, c)) + ld(b(c))); });
      });
}

// y[N, O] = x[N, I] * w[O, I]^T (BLAS only; the bias is the caller's).
template <class S>
void matmul_nt(MatU<S> y, CMatU<S> x, CMatU<S> w) {
  double flops = 0, bytes = 0;
  prof::gemm_work<S>(double(y.extent(0)), double(y.extent(1)), double(x.extent(1)), false, flops, bytes);
  prof::Scope ps(prof::Family::gemm, flops, bytes);
  if constexpr (std::is_same_v<S, bf16>)
    gemm_bf16_rows<S>("T", y, x, w, false, CVecU<S>());
  else
    KokkosBlas::gemm("N", "T", S(1), x, w, S(0), y);
}

// y[N, O] = x[N, I] * w[O, I]^T + b[O]
// For bf16 the bias is added to the fp32 product before its one rounding.
template <class S>
void linear_forward(MatU<S> y, CMatU<S> x, CMatU<S> w, CVecU<S> b) {
  if constexpr (std::is_same_v<S, bf16>) {
    double flops = 0, bytes = 0;
    prof::gemm_work<S>(double(y.extent(0)), double(y.extent(1)), double(x.extent(1)), false, flops, bytes);
    prof::Scope ps(prof::Family::gemm, flops, bytes);
    gemm_bf16_rows<S>("T", y, x, w, false, b);
  } else {
    matmul_nt<S>(y, x, w);
    add_bias<S>(y, b);
  }
}

// dx[N, I] = dy[N, O] * w[O, I] (overwritten, or added when accumulate).
template <class S>
void linear_backward_input(MatU<S> dx, CMatU<S> dy, CMatU<S> w, bool accumulate = false) {
  double flops = 0, bytes = 0;
  prof::gemm_work<S>(double(dx.extent(0)), double(dx.extent(1)), double(dy.extent(1)), accumulate, flops, bytes);
  prof::Scope ps(prof::Family::gemm, flops, bytes);
  if constexpr (std::is_same_v<S, bf16>)
    gemm_bf16_rows<S>("N", dx, dy, w, accumulate, CVecU<S>());
  else
    KokkosBlas::gemm("N", "N", S(1), dy, w, accumulate ? S(1) : S(0), dx);
}

// db += column sums of dy, as ones^T * dy: a 1-row gemm walks dy in its natural order
// (Kokkos Kernels' gemv has no BLAS path for LayoutRight and is ~10x slower here).
// `ones` is a caller-owned vector of at least dy.extent(0) ones; an empty db skips.
template <class S>
void bias_backward(VecU<acc_t<S>> db, CMatU<S> dy, CVecU<acc_t<S>> ones) {
  if (db.extent(0) == 0) return;
  prof::Scope ps(prof::Family::bias, 2.0 * double(dy.size()), double(sizeof(S)) * double(dy.size() + 2 * db.extent(0)));
  if constexpr (std::is_same_v<S, bf16>) {
    gemm_bf16_bias_grad<S>(db, dy, ones);
  } else {
    Kokkos::View<const S**, Kokkos::LayoutRight, MemSpace, Unmanaged> ones_row(ones.data(), 1, dy.extent(0));
    MatU<S> db_row(db.data(), 1, db.extent(0));
    KokkosBlas::gemm("N", "N", S(1), ones_row, dy, S(1), db_row);
  }
}

// Given dy = dL/dy: dx = dy * w (overwritten, or added when accumulate_dx),
// dw += dy^T * x, db += column sums of dy. An empty dx skips dx, an empty db skips db.
template <class S>
void linear_backward(MatU<S> dx, MatU<acc_t<S>> dw, VecU<acc_t<S>> db, CMatU<S> dy, CMatU<S> x,
                     CMatU<S> w, CVecU<acc_t<S>> ones, bool accumulate_dx = false) {
  if (dx.extent(0) > 0) linear_backward_input<S>(dx, dy, w, accumulate_dx);
  {
    double flops = 0, bytes = 0;
    prof::gemm_work<S>(double(dw.extent(0)), double(dw.extent(1)), double(dy.extent(0)), true, flops, bytes);
    prof::Scope ps(prof::Family::gemm, flops, bytes);
    if constexpr (std::is_same_v<S, bf16>)
      gemm_bf16_weight_grad<S>(dw, dy, x);
    else
      KokkosBlas::gemm("T", "N", S(1), dy, x, S(1), dw);
  }
  bias_backward<S>(db, dy, ones);
}

}  // namespace mini5d::kernels
