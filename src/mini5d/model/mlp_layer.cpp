// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/mlp_layer.hpp"

#include "mini5d/kernels/gelu.hpp"
#include "mini5d/kernels/swiglu.hpp"
#include "mini5d/parallel/tp/column_linear.hpp"
#include "mini5d/parallel/tp/row_linear.hpp"

namespace mini5d::model {

template <class S>
void MlpLayer<S>::forward(Context<S>& ctx, MlpActs<S>& a, const MlpTensors<S>& w, MatU<S> out_rows,
                          CMatU<S> x_rows) {
  if (ctx.dims.swiglu) {
    // Gate and up in one column-parallel GEMM ([N, 2F/t]: this rank's gate columns, then
    // its up columns), then a = silu(gate) * up.
    tp::column_forward<S>(ctx.region, a.fc, x_rows, w.fc_w, w.fc_b);
    kernels::swiglu_forward<S>(a.fc_gelu, a.fc);
  } else {
    // The fc bias is added by the GELU kernel (one pass over fc instead of two).
    tp::column_forward<S>(ctx.region, a.fc, x_rows, w.fc_w, CVecU<S>());
    kernels::bias_gelu_forward<S>(a.fc_gelu, a.fc, w.fc_b);
  }
  tp::row_forward<S>(ctx.region, out_rows, a.fc_gelu, w.proj_w, w.proj_b);
}

template <class S>
void MlpLayer<S>::backward(Context<S>& ctx, MlpActs<S>& a, const MlpTensors<S>& w, MlpTensors<acc_t<S>>& g,
                           MatU<S> dx_rows, CMatU<S> dout_rows, CMatU<S> x_rows) {
  auto& ws = ctx.ws;
  tp::row_backward<S>(ctx.region, ws.dfc_gelu, g.proj_w, g.proj_b, dout_rows, a.fc_gelu, w.proj_w, ws.ones);
  ctx.hooks->progress();
  if (ctx.dims.swiglu) {
    kernels::swiglu_backward<S>(ws.dfc, ws.dfc_gelu, a.fc);
    tp::column_backward<S>(ctx.region, dx_rows, g.fc_w, g.fc_b, ws.dfc, x_rows, w.fc_w, ws.ones);
  } else {
    // The fc bias gradient comes out of the GELU backward's sweep.
    kernels::gelu_backward_bias<S>(ws.dfc, g.fc_b, ws.dfc_gelu, a.fc);
    tp::column_backward<S>(ctx.region, dx_rows, g.fc_w, VecU<acc_t<S>>(), ws.dfc, x_rows, w.fc_w, ws.ones);
  }
  ctx.hooks->progress();
}

template struct MlpLayer<float>;
template struct MlpLayer<double>;
template struct MlpLayer<bf16>;

}  // namespace mini5d::model
