// SPDX-License-Identifier: BSD-3-Clause
// Row-parallel linear (Megatron): W [O, I] is split by input columns, so rank r holds
// x[:, its I/t columns] (the output of a column-parallel layer) and computes a partial
// x_r W_r^T; the partial sums are all-reduced (Megatron's g) and the bias, replicated,
// is added once after the reduction. With sequence parallelism the reduction is a
// reduce-scatter to the rank's token rows, and the backward all-gathers dy.
#pragma once
#include "mini5d/kernels/linear.hpp"
#include "mini5d/parallel/tp/region.hpp"

namespace mini5d::tp {

// x [N, I/t]; y_rows: this rank's rows of the output ([N/t, O] with SP, else [N, O]).
template <class S>
void row_forward(Region<S>& reg, MatU<S> y_rows, CMatU<S> x, CMatU<S> w, CVecU<S> b) {
  if (!reg.sequence_split()) {
    kernels::linear_forward<S>(y_rows, x, w, CVecU<S>());
    reg.comm->template allreduce<S>(y_rows);
  } else {
    kernels::linear_forward<S>(reg.gathered, x, w, CVecU<S>());
    reg.comm->template reduce_scatter_rows<S>(y_rows, reg.gathered);
  }
  kernels::add_bias<S>(y_rows, b);
}

// dy_rows: dL/dy for this rank's rows; dx [N, I/t] overwritten; dw, db accumulate
// (db from this rank's rows only: with SP the caller sums it over t).
template <class S>
void row_backward(Region<S>& reg, MatU<S> dx, MatU<acc_t<S>> dw, VecU<acc_t<S>> db, CMatU<S> dy_rows, CMatU<S> x,
                  CMatU<S> w, CVecU<acc_t<S>> ones) {
  CMatU<S> dy = dy_rows;
  if (reg.sequence_split()) {
    reg.comm->template allgather_rows<S>(reg.gathered, dy_rows);
    dy = reg.gathered;
  }
  kernels::linear_backward<S>(dx, dw, VecU<acc_t<S>>(), dy, x, w, ones);
  kernels::bias_backward<S>(db, dy_rows, ones);
}

}  // namespace mini5d::tp
