// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/block.hpp"

#include "mini5d/kernels/residual.hpp"
#include "mini5d/model/attention_layer.hpp"
#include "mini5d/model/mlp_layer.hpp"
#include "mini5d/model/norm.hpp"

namespace mini5d::model {

namespace k = mini5d::kernels;

template <class S>
Block<S>::Block(Context<S>& ctx, Alloc& kept, bool moe, bool dense) {
  const Dims& d = ctx.dims;
  if (ctx.recompute != Recompute::full) own_.allocate(kept, d, ctx.recompute == Recompute::none, dense);
  if (moe) moe_ = std::make_unique<MoeLayer<S>>(ctx, kept);
  if (ctx.recompute == Recompute::selective) own_.attn.core = ctx.ws.core;
  own_.res3 = kept.mat<S>("mini5d::model::res3", d.rows, d.d_model);
}

template <class S>
BlockActs<S>& Block<S>::acts(Context<S>& ctx) {
  if (ctx.recompute != Recompute::full) return own_;
  ctx.ws.block.res3 = own_.res3;
  return ctx.ws.block;
}

template <class S>
void Block<S>::attention_half(Context<S>& ctx, const BlockTensors<S>& w, CMatU<S> x_in) {
  auto& a = acts(ctx);
  norm_forward<S>(ctx.dims, a.ln1, a.ln1_mean, a.ln1_rstd, x_in, w.ln1_w, w.ln1_b);
  AttentionLayer<S>::forward(ctx, a.attn, w.attn, a.res2, a.ln1);
  k::accumulate<S>(a.res2, x_in);
  ctx.hooks->progress();  // lets a prefetched gather (ZeRO-3) advance
  norm_forward<S>(ctx.dims, a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.ln2_w, w.ln2_b);
}

template <class S>
void Block<S>::forward(Context<S>& ctx, const BlockTensors<S>& w, CMatU<S> x_in) {
  auto& a = acts(ctx);
  attention_half(ctx, w, x_in);
  if (w.moe.router_w.data()) {
    moe_->forward(ctx, w.moe, a.res3, a.ln2);
    k::accumulate<S>(a.res3, a.res2);
    return;
  }
  if (moe_) moe_->forget_routing();
  MlpLayer<S>::forward(ctx, a.mlp, w.mlp, a.res3, a.ln2);
  k::accumulate<S>(a.res3, a.res2);
}

template <class S>
void Block<S>::backward(Context<S>& ctx, const BlockTensors<S>& w, BlockTensors<acc_t<S>>& g, CMatU<S> x_in) {
  // Full recomputation rebuilds the shared activations from the block's input. An MoE
  // layer is not run again: it keeps its own routing and routed rows (MoeLayer), so a
  // second pass would only repeat its two all-to-alls and count its tokens and its
  // load-balancing loss twice; its output, like every block's, is kept.
  if (ctx.recompute == Recompute::full) {
    if (w.moe.router_w.data())
      attention_half(ctx, w, x_in);
    else
      forward(ctx, w, x_in);
  }
  auto& a = acts(ctx);
  auto& ws = ctx.ws;
  // MLP branch: res3 = res2 + mlp(ln2(res2)); dres holds dL/dres3.
  const bool moe_block = w.moe.router_w.data() != nullptr;
  if (moe_block) moe_->backward(ctx, w.moe, g.moe, ws.dln, ws.dres, a.ln2);
  if (!moe_block) MlpLayer<S>::backward(ctx, a.mlp, w.mlp, g.mlp, ws.dln, ws.dres, a.ln2);
  norm_backward<S>(ctx.dims, ws.dres, g.ln2_w, g.ln2_b, ws.dln, a.res2, w.ln2_w, a.ln2_mean, a.ln2_rstd, true);
  // Attention branch: res2 = x + attention(ln1(x)); dres holds dL/dres2.
  AttentionLayer<S>::backward(ctx, a.attn, w.attn, g.attn, ws.dln, ws.dres, a.ln1);
  norm_backward<S>(ctx.dims, ws.dres, g.ln1_w, g.ln1_b, ws.dln, x_in, w.ln1_w, a.ln1_mean, a.ln1_rstd, true);
}

template <class S>
void CoreActs<S>::allocate(Alloc& al, const Dims& d) {
  const int BH = d.att_rows(), T = d.seq, hd = d.head_dim;
  q = al.ten<S>("mini5d::model::q", BH, T, hd);
  k = al.ten<S>("mini5d::model::k", d.att_kv_rows(), T, hd);
  v = al.ten<S>("mini5d::model::v", d.att_kv_rows(), T, hd);
  if (d.keeps_probs())
    p = al.ten<S>("mini5d::model::att_probs", BH, T, T);
  else
    lse = al.mat<acc_t<S>>("mini5d::model::att_lse", BH, T);  // blockwise and ring attention keep no probabilities
  y = al.ten<S>("mini5d::model::att_y", BH, T, hd);
}

template <class S>
void BlockActs<S>::allocate(Alloc& al, const Dims& d, bool with_core, bool dense_mlp) {
  const int R = d.rows, N = d.tokens, D = d.d_model;
  const int stats = d.rmsnorm ? 0 : R;  // RMSNorm keeps no mean
  ln1 = al.mat<S>("mini5d::model::ln1", R, D);
  ln1_mean = al.vec<acc_t<S>>("mini5d::model::ln1_mean", stats);
  ln1_rstd = al.vec<acc_t<S>>("mini5d::model::ln1_rstd", R);
  attn.qkv = al.mat<S>("mini5d::model::qkv", N, d.qkv_width());
  if (with_core) attn.core.allocate(al, d);
  attn.att_merged = al.mat<S>("mini5d::model::att_merged", N, d.heads * d.head_dim);
  res2 = al.mat<S>("mini5d::model::res2", R, D);
  ln2 = al.mat<S>("mini5d::model::ln2", R, D);
  ln2_mean = al.vec<acc_t<S>>("mini5d::model::ln2_mean", stats);
  ln2_rstd = al.vec<acc_t<S>>("mini5d::model::ln2_rstd", R);
  if (!dense_mlp) return;  // a mixture of experts keeps its own (model/moe_layer.hpp)
  mlp.fc = al.mat<S>("mini5d::model::fc", N, d.fc_width());
  mlp.fc_gelu = al.mat<S>("mini5d::model::fc_gelu", N, d.ffn);
}

template class Block<float>;
template class Block<double>;
template class Block<bf16>;
template struct CoreActs<float>;
template struct CoreActs<double>;
template struct CoreActs<bf16>;
template struct BlockActs<float>;
template struct BlockActs<double>;
template struct BlockActs<bf16>;

}  // namespace mini5d::model
