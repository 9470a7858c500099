// SPDX-License-Identifier: BSD-3-Clause
// Column-parallel linear (Megatron): W [O, I] is split by output rows, so rank r
// computes y[:, its O/t columns] = x W_r^T + b_r from the whole input. Its input
// operator is the identity in the forward and an all-reduce of dx in the backward
// (Megatron's f); with sequence parallelism the input rows are all-gathered first and
// dx is reduce-scattered back to the rank's rows instead. The forward keeps only the
// rank's rows of x (the caller's LayerNorm output): the backward gathers them again,
// so that the activation memory of the region is divided by t.
#pragma once
#include "mini5d/kernels/linear.hpp"
#include "mini5d/parallel/tp/region.hpp"

namespace mini5d::tp {

// x_rows: this rank's rows of the input ([N/t, I] with SP, else [N, I]); y [N, O/t].
template <class S>
void column_forward(Region<S>& reg, MatU<S> y, CMatU<S> x_rows, CMatU<S> w, CVecU<S> b) {
  if (!reg.sequence_split()) {
    kernels::linear_forward<S>(y, x_rows, w, b);
    return;
  }
  reg.comm->template allgather_rows<S>(reg.gathered, x_rows);
  kernels::linear_forward<S>(y, reg.gathered, w, b);
}

// dy [N, O/t]; dx_rows: dL/dx for this rank's rows, overwritten (reduced over t).
// dw, db accumulate (acc_t<S>: fp32 main gradients for bf16); an empty db skips it.
template <class S>
void column_backward(Region<S>& reg, MatU<S> dx_rows, MatU<acc_t<S>> dw, VecU<acc_t<S>> db, CMatU<S> dy,
                     CMatU<S> x_rows, CMatU<S> w, CVecU<acc_t<S>> ones) {
  if (!reg.sequence_split()) {
    kernels::linear_backward<S>(dx_rows, dw, db, dy, x_rows, w, ones);
    reg.comm->template allreduce<S>(dx_rows);  // f's backward: sum the partial dx of every rank's columns
    return;
  }
  reg.comm->template allgather_rows<S>(reg.gathered, x_rows);  // the input again, for dw
  kernels::linear_backward<S>(MatU<S>(), dw, db, dy, reg.gathered, w, ones);
  kernels::linear_backward_input<S>(reg.gathered, dy, w);  // the buffer is free again
  reg.comm->template reduce_scatter_rows<S>(dx_rows, reg.gathered);
}

}  // namespace mini5d::tp
