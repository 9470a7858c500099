// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/head_layer.hpp"

#include "mini5d/model/norm.hpp"
#include "mini5d/parallel/tp/column_linear.hpp"

namespace mini5d::model {

template <class S>
HeadLayer<S>::HeadLayer(Context<S>& ctx, Alloc& kept, Alloc& work) {
  const Dims& d = ctx.dims;
  lnf_ = kept.mat<S>("mini5d::model::lnf", d.rows, d.d_model);
  mean_ = kept.vec<acc_t<S>>("mini5d::model::lnf_mean", d.rmsnorm ? 0 : d.rows);  // RMSNorm keeps no mean
  rstd_ = kept.vec<acc_t<S>>("mini5d::model::lnf_rstd", d.rows);
  logits_ = kept.mat<S>("mini5d::model::logits", d.tokens, d.vocab);
  const int t = ctx.region.comm->size();
  if (t > 1) {
    ce_.all_max = work.vec<acc_t<S>>("mini5d::tp::ce_all_max", std::int64_t(t) * d.tokens);
    ce_.row_max = work.vec<acc_t<S>>("mini5d::tp::ce_row_max", d.tokens);
    ce_.sums = work.vec<acc_t<S>>("mini5d::tp::ce_sums", 2 * std::int64_t(d.tokens));
  }
}

template <class S>
double HeadLayer<S>::forward(Context<S>& ctx, const OuterTensors<S>& w, CMatU<S> x_rows, CTokU targets,
                             acc_t<S> grad_scale) {
  norm_forward<S>(ctx.dims, lnf_, mean_, rstd_, x_rows, w.lnf_w, w.lnf_b);
  tp::column_forward<S>(ctx.region, logits_, lnf_, w.lm_head, CVecU<S>());
  return tp::vocab_cross_entropy<S>(*ctx.region.comm, logits_, targets, ctx.dims.vocab_begin, ctx.dims.vocab_valid,
                                   grad_scale, ce_);
}

template <class S>
void HeadLayer<S>::backward(Context<S>& ctx, const OuterTensors<S>& w, OuterTensors<acc_t<S>>& g, CMatU<S> x_rows) {
  auto& ws = ctx.ws;
  // logits_ holds dL/dlogits.
  tp::column_backward<S>(ctx.region, ws.dln, g.lm_head, VecU<acc_t<S>>(), logits_, lnf_, w.lm_head, ws.ones);
  norm_backward<S>(ctx.dims, ws.dres, g.lnf_w, g.lnf_b, ws.dln, x_rows, w.lnf_w, mean_, rstd_, false);
}

template class HeadLayer<float>;
template class HeadLayer<double>;
template class HeadLayer<bf16>;

}  // namespace mini5d::model
