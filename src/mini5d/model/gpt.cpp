// SPDX-License-Identifier: BSD-3-Clause
// GPT forward and backward: the units in order, then in reverse. The residual stream
// gradient (ctx.ws.dres) flows from the head down through the blocks; each unit's
// hooks let ZeRO gather its weights before it runs and reduce its gradients after.
#include "mini5d/model/gpt.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "mini5d/kernels/fill.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/model/param_views.hpp"
#include "mini5d/rules/vocab_padding.hpp"

namespace mini5d::model {

namespace {
Dims dims_of(const ModelConfig& cfg, int batch, int t, int r, bool sp, const cp::Split& cps, int cp_rank) {
  Dims d;
  d.batch = batch;
  d.cp = cps.c;
  d.blockwise = cfg.attention == Attention::blockwise;
  d.rmsnorm = cfg.norm == Norm::rmsnorm;
  d.swiglu = cfg.mlp == Mlp::swiglu;
  d.seq = cfg.seq / cps.c;
  d.pos = cps.positions(cp_rank, cfg.seq);
  d.rope = cfg.positions == Positions::rope;
  d.rope_theta = cfg.rope_theta;
  d.tokens = batch * d.seq;
  const bool split = sp && t > 1;
  d.rows = split ? d.tokens / t : d.tokens;
  d.row_begin = split ? r * d.rows : 0;
  d.d_model = cfg.d_model;
  d.head_dim = cfg.d_model / cfg.heads;
  d.heads = cfg.heads / t;
  // Whole key/value heads; with t > kv_heads the one its query heads read (replicated).
  d.kv_heads = std::max(1, cfg.kv_head_count() / t);
  d.ffn = cfg.ffn / t;
  // Rows of the padded vocabulary (rules/vocab_padding.hpp); padding comes last, so only
  // the last ranks hold any.
  d.vocab = int(padded_vocab(cfg.vocab, cfg.vocab_pad_to, t) / t);
  d.vocab_begin = r * d.vocab;
  d.vocab_valid = std::clamp(cfg.vocab - d.vocab_begin, 0, d.vocab);
  return d;
}

template <class S>
Workspace<S> make_workspace(Alloc& a, const Dims& d, bool split, Recompute rc) {
  Workspace<S> w;
  const int R = d.rows, N = d.tokens, D = d.d_model, Dt = d.heads * d.head_dim;
  const int BH = d.att_rows(), T = d.seq, hd = d.head_dim;
  w.dres = a.mat<S>("mini5d::model::dres", R, D);
  w.dln = a.mat<S>("mini5d::model::dln", R, D);
  w.dqkv = a.mat<S>("mini5d::model::dqkv", N, d.qkv_width());
  w.datt_merged = a.mat<S>("mini5d::model::datt_merged", N, Dt);
  w.dfc = a.mat<S>("mini5d::model::dfc", N, d.fc_width());
  w.dfc_gelu = a.mat<S>("mini5d::model::dfc_gelu", N, d.ffn);
  w.dq = a.ten<S>("mini5d::model::dq", BH, T, hd);
  w.dk = a.ten<S>("mini5d::model::dk", d.att_kv_rows(), T, hd);
  w.dv = a.ten<S>("mini5d::model::dv", d.att_kv_rows(), T, hd);
  w.dy = a.ten<S>("mini5d::model::dy", BH, T, hd);
  // Full attention's probability gradient, or blockwise attention's tile buffers (ring
  // attention has its own).
  if (d.keeps_probs()) w.dp = a.ten<S>("mini5d::model::dp", BH, T, T);
  if (d.cp == 1 && d.blockwise) {
    // The planner sizes these buffers from the same tile sizes (rules/attention_tiles.hpp).
    const int tile = kernels::blockwise_tile(T), panel = kernels::blockwise_panel(T);
    using A = acc_t<S>;  // a bf16 model's core runs in fp32 (kernels/widened_attention.hpp)
    w.tiles.s = a.ten<A>("mini5d::model::tile_scores", BH, tile, panel);
    w.tiles.dp = a.ten<A>("mini5d::model::tile_dscores", BH, tile, panel);
    w.tiles.l = a.mat<A>("mini5d::model::tile_row_sum", BH, T);
  }
  // A bf16 core computes on fp32 copies (kernels/widened_attention.hpp; ring attention
  // widens each K/V block in hand into k and v: parallel/cp/ring_attention.hpp).
  if constexpr (is_bf16_v<S>) {
    if (d.cp > 1 || d.blockwise) {
      const int KBH = d.att_kv_rows();
      w.wide.q = a.ten<float>("mini5d::model::wide_q", BH, T, hd);
      w.wide.k = a.ten<float>("mini5d::model::wide_k", KBH, T, hd);
      w.wide.v = a.ten<float>("mini5d::model::wide_v", KBH, T, hd);
      w.wide.y = a.ten<float>("mini5d::model::wide_y", BH, T, hd);
      w.wide.dy = a.ten<float>("mini5d::model::wide_dy", BH, T, hd);
      w.wide.dq = a.ten<float>("mini5d::model::wide_dq", BH, T, hd);
      w.wide.dk = a.ten<float>("mini5d::model::wide_dk", KBH, T, hd);
      w.wide.dv = a.ten<float>("mini5d::model::wide_dv", KBH, T, hd);
    }
  }
  if (split) w.gathered = a.mat<S>("mini5d::tp::gathered", N, D);
  w.ones = a.vec<acc_t<S>>("mini5d::model::ones", N);
  kernels::fill("mini5d::model::ones", w.ones, acc_t<S>(1));
  if (d.rope) {
    // The angles of this rank's positions, once: every layer and step reads them.
    w.rope.cos = a.mat<acc_t<S>>("mini5d::model::rope_cos", T, hd / 2);
    w.rope.sin = a.mat<acc_t<S>>("mini5d::model::rope_sin", T, hd / 2);
    kernels::rope_table<acc_t<S>>(w.rope, d.pos, hd, d.rope_theta);
  }
  if (rc == Recompute::selective) w.core.allocate(a, d);
  if (rc == Recompute::full) w.block.allocate(a, d, true);
  return w;
}

// The chunks of a stage (the whole model when none are given), and the global units
// they hold, in model order.
std::vector<ChunkSpec> chunks_of(const ModelConfig& cfg, const StageSpec& st) {
  if (!st.chunks.empty()) return st.chunks;
  return {ChunkSpec{0, cfg.layers, true, true}};
}

}  // namespace

std::vector<int> stage_units(const ModelConfig& cfg, const StageSpec& st) {
  if (st.chunks.empty()) return {};
  std::vector<int> u;
  for (const auto& c : st.chunks) {
    if (c.embedding) u.push_back(0);
    for (int l = c.first_block; l < c.first_block + c.blocks; ++l) u.push_back(l + 1);
    if (c.head) u.push_back(cfg.layers + 1);
  }
  std::sort(u.begin(), u.end());
  return u;
}

namespace {
int take(std::vector<int>& free, const char* what) {
  if (free.empty()) throw std::logic_error(std::string("mini5d: no free ") + what + " activation set (pipeline slots)");
  const int i = free.back();
  free.pop_back();
  return i;
}
}  // namespace

ParamLayout param_layout(const ModelConfig& cfg, const ModelParallel& par) {
  return ParamLayout(cfg, par.tp ? par.tp->size() : 1, par.tp ? par.tp->rank() : 0, stage_units(cfg, par.stage),
                     par.ep ? par.ep->size() : 1, par.ep ? par.ep->rank() : 0);
}

template <class S>
Gpt<S>::Gpt(const ModelConfig& cfg, int micro_batch, Owns owns, ModelParallel par)
    : Gpt(cfg, micro_batch, param_layout(cfg, par), owns, par) {}

template <class S>
Gpt<S>::Gpt(const ModelConfig& cfg, int micro_batch, ParamLayout layout, Owns owns, ModelParallel par)
    : cfg_(cfg),
      batch_(micro_batch),
      layout_(std::move(layout)),
      pw_(cfg.layers),
      gw_(cfg.layers),
      chunks_(chunks_of(cfg, par.stage)) {
  for (int u = 0; u <= cfg.layers + 1; ++u) {
    const std::string unit = u == 0 ? "embedding" : u == cfg.layers + 1 ? "head" : "block" + std::to_string(u - 1);
    unit_regions_.push_back({"mini5d::" + unit + "::forward", "mini5d::" + unit + "::backward"});
  }
  tp::TpComm* tpc = par.tp ? par.tp : &single_;
  const int t = tpc->size();
  cp::Split split;
  split.c = par.cp ? par.cp->size() : 1;
  split.zigzag = par.zigzag;
  ctx_.dims = dims_of(cfg, micro_batch, t, tpc->rank(), par.sp, split, par.cp ? par.cp->rank() : 0);
  ctx_.region.comm = tpc;
  ctx_.region.sp = par.sp;
  ctx_.recompute = par.recompute;
  ctx_.hooks = &no_hooks_;
  ctx_.ep = par.ep ? par.ep : &single_ep_;
  if (cfg.experts > 0) {
    MoeSettings& m = ctx_.moe;
    m.experts = cfg.experts;
    m.top_k = cfg.top_k;
    m.ffn = cfg.ffn;
    m.swiglu = cfg.mlp == Mlp::swiglu;
    m.local_experts = cfg.experts / ctx_.ep->size();
    m.first_expert = ctx_.ep->rank() * m.local_experts;
    m.capacity_factor = cfg.capacity_factor;
    m.aux_coef = par.aux_loss_coef;
  }
  const auto& units = layout_.units();
  if (owns != Owns::nothing) {
    params = Vec<S>("mini5d::model::params", layout_.total());
    params_mem_ = mem::Charge(mem::Category::weights, mem::view_bytes(params));
    for (int u = 0; u < int(units.size()); ++u) bind_unit(u, params.data() + units[u].offset, nullptr);
  }
  if (owns == Owns::params_and_grads) {
    grads = Vec<acc_t<S>>("mini5d::model::grads", layout_.total());
    grads_mem_ = mem::Charge(mem::Category::gradients, mem::view_bytes(grads));
    for (int u = 0; u < int(units.size()); ++u) bind_unit(u, nullptr, grads.data() + units[u].offset);
  }
  Alloc kept, work;
  ctx_.ws = make_workspace<S>(work, ctx_.dims, ctx_.region.sequence_split(), ctx_.recompute);
  ctx_.region.gathered = ctx_.ws.gathered;
  if constexpr (is_bf16_v<S>) {
    if (!ctx_.dims.blockwise)
      throw std::invalid_argument("mini5d: a bf16 model runs blockwise (or ring) attention (the deck refuses full)");
  }
  if (split.c > 1) {
    const Dims& d = ctx_.dims;
    ring_ = std::make_unique<cp::RingAttention<S>>(*par.cp, split, d.att_rows(), d.seq, d.head_dim, d.att_kv_rows());
    ctx_.ring = ring_.get();
    ctx_.cp = par.cp;
    work.bytes += ring_->workspace_bytes();
    ring_mem_ = mem::Charge(mem::Category::comm_buffers, ring_->comm_buffer_bytes());
  }
  // As many activation sets as micro-batches in flight (one of each without a pipeline).
  bool any_embedding = false, any_head = false;
  int most_blocks = 0;
  for (const auto& c : chunks_) {
    any_embedding = any_embedding || c.embedding;
    any_head = any_head || c.head;
    most_blocks = std::max(most_blocks, c.blocks);
  }
  const int n_blocks = par.stage.block_slots > 0 ? par.stage.block_slots : most_blocks;
  for (int i = 0; any_embedding && i < par.stage.embedding_slots; ++i) {
    embeddings_.push_back(std::make_unique<EmbeddingLayer<S>>(ctx_, kept));
  }
  blocks_.reserve(std::size_t(n_blocks));
  // An activation set serves any block: it keeps an MoE layer's buffers if the model
  // has MoE blocks, and the dense MLP's if it has dense ones.
  bool any_moe = false, any_dense = false;
  for (int l = 0; l < cfg.layers; ++l) (is_moe_block(cfg, l) ? any_moe : any_dense) = true;
  for (int i = 0; i < n_blocks; ++i) blocks_.emplace_back(ctx_, kept, any_moe, any_dense);
  for (int i = 0; any_head && i < par.stage.head_slots; ++i)
    heads_.push_back(std::make_unique<HeadLayer<S>>(ctx_, kept, work));
  // Taken from the back: set 0 first.
  for (int i = int(embeddings_.size()) - 1; i >= 0; --i) free_embeddings_.push_back(i);
  for (int i = n_blocks - 1; i >= 0; --i) free_blocks_.push_back(i);
  for (int i = int(heads_.size()) - 1; i >= 0; --i) free_heads_.push_back(i);
  acts_mem_ = mem::Charge(mem::Category::activations, kept.bytes);
  work_mem_ = mem::Charge(mem::Category::workspace, work.bytes);
}

template <class S>
void Gpt<S>::bind_unit(int unit, S* params_base, acc_t<S>* grads_base) {
  if (params_base) bind_views(layout_, unit, params_base, pw_, po_);
  if (grads_base) bind_views(layout_, unit, grads_base, gw_, go_);
}

template <class S>
void Gpt<S>::init_params(std::uint64_t seed) {
  init_param_range<S>(layout_, seed, params, 0, layout_.total());
}

template <class S>
void Gpt<S>::zero_grads() {
  kernels::fill("mini5d::model::zero_grads", grads, acc_t<S>(0));
}

template <class S>
double Gpt<S>::forward(CTok inputs, CTokU targets, acc_t<S> grad_scale) {
  if (chunks_.size() != 1 || !chunks_[0].embedding || !chunks_[0].head)
    throw std::logic_error("mini5d: Gpt::forward on a pipeline stage (use forward_chunk)");
  return forward_chunk(0, 0, inputs, CMatU<S>(), targets, grad_scale);
}

template <class S>
void Gpt<S>::backward() {
  backward_chunk(0, 0, CMatU<S>());
}

template <class S>
double Gpt<S>::forward_chunk(int chunk, int mb, CTok inputs, CMatU<S> x_in, CTokU targets, acc_t<S> grad_scale) {
  const ChunkSpec& c = chunks_.at(std::size_t(chunk));
  UnitHooks& h = *ctx_.hooks;
  ctx_.grad_scale = double(grad_scale);
  const double aux_before = ctx_.moe_stats.aux;
  auto local = [&](int global) { return layout_.local_unit(global); };
  // A forward again without its backward (finite differences, evaluation) reuses the sets.
  if (const auto was = in_flight_.find({chunk, mb}); was != in_flight_.end()) {
    if (was->second.embedding >= 0) free_embeddings_.push_back(was->second.embedding);
    for (int b : was->second.blocks) free_blocks_.push_back(b);
    if (was->second.head >= 0) free_heads_.push_back(was->second.head);
    in_flight_.erase(was);
  }
  InFlight f;
  f.x_in = x_in;
  CMatU<S> x = x_in;
  if (c.embedding) {
    f.embedding = take(free_embeddings_, "embedding");
    f.tokens = inputs;  // a reference to the caller's ids until backward_chunk: no copy per micro-batch
    prof::Region region(unit_regions_[0].forward);
    h.before_forward(local(0));
    embeddings_[std::size_t(f.embedding)]->forward(ctx_, po_, inputs);
    h.after_forward(local(0));
    x = embeddings_[std::size_t(f.embedding)]->out();
  }
  for (int l = c.first_block; l < c.first_block + c.blocks; ++l) {
    const int b = take(free_blocks_, "block");
    f.blocks.push_back(b);
    prof::Region region(unit_regions_[std::size_t(l + 1)].forward);
    h.before_forward(local(l + 1));
    blocks_[std::size_t(b)].forward(ctx_, pw_[std::size_t(l)], x);
    x = blocks_[std::size_t(b)].out();
    h.after_forward(local(l + 1));
  }
  double loss = 0;
  if (c.head) {
    f.head = take(free_heads_, "head");
    const int u = local(cfg_.layers + 1);
    prof::Region region(unit_regions_[std::size_t(cfg_.layers + 1)].forward);
    h.before_forward(u);
    loss = heads_[std::size_t(f.head)]->forward(ctx_, po_, x, targets, grad_scale);
    h.after_forward(u);
  }
  in_flight_[{chunk, mb}] = std::move(f);
  last_aux_ = ctx_.moe_stats.aux - aux_before;
  return loss;
}

template <class S>
CMatU<S> Gpt<S>::chunk_output(int chunk, int mb) const {
  const auto& f = in_flight_.at({chunk, mb});
  if (!f.blocks.empty()) return blocks_[std::size_t(f.blocks.back())].out();
  if (f.embedding >= 0) return embeddings_[std::size_t(f.embedding)]->out();
  return f.x_in;
}

template <class S>
CMatU<S> Gpt<S>::backward_chunk(int chunk, int mb, CMatU<S> dy) {
  const ChunkSpec& c = chunks_.at(std::size_t(chunk));
  const auto it = in_flight_.find({chunk, mb});
  if (it == in_flight_.end()) throw std::logic_error("mini5d: backward of a micro-batch with no forward");
  const InFlight f = std::move(it->second);
  in_flight_.erase(it);
  UnitHooks& h = *ctx_.hooks;
  auto local = [&](int global) { return layout_.local_unit(global); };
  // The input of the chunk's i-th block (i = blocks: the head's input).
  auto input_of = [&](int i) -> CMatU<S> {
    if (i > 0) return blocks_[std::size_t(f.blocks[std::size_t(i - 1)])].out();
    return f.embedding >= 0 ? embeddings_[std::size_t(f.embedding)]->out() : f.x_in;
  };
  if (c.head) {
    const int u = local(cfg_.layers + 1);
    prof::Region region(unit_regions_[std::size_t(cfg_.layers + 1)].backward);
    h.before_backward(u);
    heads_[std::size_t(f.head)]->backward(ctx_, po_, go_, input_of(c.blocks));
    h.after_backward(u);
    free_heads_.push_back(f.head);
  } else {
    // On the default instance, behind the work before it: the form without an
    // execution space fences the whole device, once per micro-batch on every stage.
    Kokkos::deep_copy(ExecSpace(), ctx_.ws.dres, dy);
  }
  for (int i = c.blocks - 1; i >= 0; --i) {
    const int l = c.first_block + i;
    prof::Region region(unit_regions_[std::size_t(l + 1)].backward);
    h.before_backward(local(l + 1));
    blocks_[std::size_t(f.blocks[std::size_t(i)])].backward(ctx_, pw_[std::size_t(l)], gw_[std::size_t(l)], input_of(i));
    h.after_backward(local(l + 1));
  }
  for (int b : f.blocks) free_blocks_.push_back(b);
  if (c.embedding) {
    prof::Region region(unit_regions_[0].backward);
    h.before_backward(local(0));
    embeddings_[std::size_t(f.embedding)]->backward(ctx_, go_, ctx_.ws.dres, f.tokens);
    h.after_backward(local(0));
    free_embeddings_.push_back(f.embedding);
    return CMatU<S>();
  }
  return ctx_.ws.dres;
}

template class Gpt<float>;
template class Gpt<double>;
template class Gpt<bf16>;

}  // namespace mini5d::model
