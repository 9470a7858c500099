// SPDX-License-Identifier: BSD-3-Clause
// The block's and the head's norm, as model.norm asks (Dims::rmsnorm): LayerNorm, which
// keeps a mean and an rstd per row, or RMSNorm, which keeps the rstd only (its `mean`
// view is empty and its bias too).
#pragma once
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/rmsnorm.hpp"
#include "mini5d/model/layer_context.hpp"

namespace mini5d::model {

template <class S>
void norm_forward(const Dims& d, MatU<S> y, VecU<acc_t<S>> mean, VecU<acc_t<S>> rstd, CMatU<S> x, CVecU<S> w,
                  CVecU<S> b) {
  if (d.rmsnorm)
    kernels::rmsnorm_forward<S>(y, rstd, x, w);
  else
    kernels::layernorm_forward<S>(y, mean, rstd, x, w, b);
}

template <class S>
void norm_backward(const Dims& d, MatU<S> dx, VecU<acc_t<S>> dw, VecU<acc_t<S>> db, CMatU<S> dy, CMatU<S> x,
                   CVecU<S> w, CVecU<acc_t<S>> mean, CVecU<acc_t<S>> rstd, bool accumulate_dx) {
  if (d.rmsnorm)
    kernels::rmsnorm_backward<S>(dx, dw, dy, x, w, rstd, accumulate_dx);
  else
    kernels::layernorm_backward<S>(dx, dw, db, dy, x, w, mean, rstd, accumulate_dx);
}

}  // namespace mini5d::model
