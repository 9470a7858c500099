// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/attention_layer.hpp"

#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/blockwise_attention.hpp"
#include "mini5d/parallel/cp/ring_attention.hpp"
#include "mini5d/parallel/tp/column_linear.hpp"
#include "mini5d/parallel/tp/row_linear.hpp"

namespace mini5d::model {

namespace k = mini5d::kernels;

namespace {
k::AttentionShape shape_of(const Dims& d) { return {d.batch, d.seq, d.heads, d.head_dim, d.kv_heads}; }

// The rotary table when model.positions=rope, else nullptr (no rotation).
template <class S>
const k::RopeTable<acc_t<S>>* rope_of(const Context<S>& ctx) {
  return ctx.dims.rope ? &ctx.ws.rope : nullptr;
}

// q, k, v from qkv (q and k turned by their positions with model.positions=rope), then
// the causal core: ring attention over the c ring when the sequence is split (context
// parallelism), else on this rank's whole sequences (blockwise, or full with its T x T
// probabilities: model.attention); a bf16 core computes on fp32 copies (ctx.ws.wide).
template <class S>
void core_only(Context<S>& ctx, CoreActs<S>& c, CMatU<S> qkv) {
  // Rotary positions turn q and k (not v) as they are split, before the core, so the
  // ring sends turned K.
  k::attention_split_heads<S>(c.q, c.k, c.v, qkv, shape_of(ctx.dims), rope_of(ctx));
  if (ctx.ring) {
    ctx.ring->forward(c.y, c.lse, c.q, c.k, c.v, ctx.ws.wide);
  } else if constexpr (is_bf16_v<S>) {
    // bf16: blockwise (the deck refuses full attention in bf16).
    k::widened_attention_forward<S>(c.y, c.lse, c.q, c.k, c.v, ctx.ws.wide, ctx.ws.tiles);
  } else {
    if (ctx.dims.blockwise)
      k::blockwise_attention_forward<S>(c.y, c.lse, c.q, c.k, c.v, ctx.ws.tiles);
    else
      k::attention_forward<S>(c.y, c.p, c.q, c.k, c.v);
  }
}

// The causal core on this rank's heads: qkv [N, (H + 2*Hkv)*hd/t] -> att_merged [N, D/t].
template <class S>
void core_forward(Context<S>& ctx, AttentionActs<S>& a) {
  core_only<S>(ctx, a.core, a.qkv);
  k::attention_merge_heads<S>(a.att_merged, a.core.y, shape_of(ctx.dims));
}
}  // namespace

template <class S>
void AttentionLayer<S>::forward(Context<S>& ctx, AttentionActs<S>& a, const AttentionTensors<S>& w,
                                MatU<S> out_rows, CMatU<S> x_rows) {
  tp::column_forward<S>(ctx.region, a.qkv, x_rows, w.qkv_w, w.qkv_b);
  core_forward(ctx, a);
  tp::row_forward<S>(ctx.region, out_rows, a.att_merged, w.proj_w, w.proj_b);
}

template <class S>
void AttentionLayer<S>::backward(Context<S>& ctx, AttentionActs<S>& a, const AttentionTensors<S>& w,
                                 AttentionTensors<acc_t<S>>& g, MatU<S> dx_rows, CMatU<S> dout_rows, CMatU<S> x_rows) {
  auto& ws = ctx.ws;
  const auto s = shape_of(ctx.dims);
  tp::row_backward<S>(ctx.region, ws.datt_merged, g.proj_w, g.proj_b, dout_rows, a.att_merged, w.proj_w, ws.ones);
  k::attention_split_heads_grad<S>(ws.dy, ws.datt_merged, s);
  ctx.hooks->progress();
  if (ctx.recompute == Recompute::selective) {
    // The core's activations were not kept: rebuild q, k, v, y and the probabilities
    // (full attention) or the log-sum-exps (blockwise, ring) from the kept qkv
    // (Korthikanti et al. 2022). (With ring attention the K/V blocks go around the ring
    // again.)
    core_only<S>(ctx, a.core, a.qkv);
  }
  if (ctx.ring) {
    ctx.ring->backward(ws.dq, ws.dk, ws.dv, ws.dy, a.core.y, a.core.lse, a.core.q, a.core.k, a.core.v, ws.wide);
  } else if constexpr (is_bf16_v<S>) {
    k::widened_attention_backward<S>(ws.dq, ws.dk, ws.dv, ws.dy, a.core.y, a.core.lse, a.core.q, a.core.k, a.core.v,
                                     ws.wide, ws.tiles);
  } else {
    if (ctx.dims.blockwise)
      k::blockwise_attention_backward<S>(ws.dq, ws.dk, ws.dv, ws.dy, a.core.y, a.core.lse, a.core.q, a.core.k,
                                         a.core.v, ws.tiles);
    else
      k::attention_backward<S>(ws.dq, ws.dk, ws.dv, ws.dp, ws.dy, a.core.p, a.core.q, a.core.k, a.core.v);
  }
  ctx.hooks->progress();
  k::attention_merge_heads_qkv<S>(ws.dqkv, ws.dq, ws.dk, ws.dv, s, rope_of(ctx));  // dq, dk turned back
  tp::column_backward<S>(ctx.region, dx_rows, g.qkv_w, g.qkv_b, ws.dqkv, x_rows, w.qkv_w, ws.ones);
}

template struct AttentionLayer<float>;
template struct AttentionLayer<double>;
template struct AttentionLayer<bf16>;

}  // namespace mini5d::model
