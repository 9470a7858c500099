// SPDX-License-Identifier: BSD-3-Clause
// GPT forward and backward: the units in order, then in reverse. The residual stream
// gradient (ctx.ws.dres) flows from the head down through the blocks; each unit's
// hooks let ZeRO gather its weights before it runs and reduce its gradients after.
#include "mini5d/model/gpt.hpp"

#include <algorithm>
#include <stdexcept>

#include "mini5d/core/counter_rng.hpp"

namespace mini5d::model {

Recompute parse_recompute(const std::string& s) {
  if (s == "none") return Recompute::none;
  if (s == "selective") return Recompute::selective;
  if (s == "full") return Recompute::full;
  throw std::invalid_argument("mini5d: train.recompute: expected none, selective or full, got \"" + s + "\"");
}

namespace {
Dims dims_of(const ModelConfig& cfg, int batch, int t, int r, bool sp) {
  Dims d;
  d.batch = batch;
  d.seq = cfg.seq;
  d.tokens = batch * cfg.seq;
  const bool split = sp && t > 1;
  d.rows = split ? d.tokens / t : d.tokens;
  d.row_begin = split ? r * d.rows : 0;
  d.d_model = cfg.d_model;
  d.head_dim = cfg.d_model / cfg.heads;
  d.heads = cfg.heads / t;
  d.ffn = cfg.ffn / t;
  d.vocab = cfg.vocab / t;
  d.vocab_begin = r * d.vocab;
  return d;
}

template <class S>
Workspace<S> make_workspace(Alloc& a, const Dims& d, bool split, Recompute rc) {
  Workspace<S> w;
  const int R = d.rows, N = d.tokens, D = d.d_model, Dt = d.heads * d.head_dim;
  const int BH = d.att_rows(), T = d.seq, hd = d.head_dim;
  w.dres = a.mat<S>("mini5d::model::dres", R, D);
  w.dln = a.mat<S>("mini5d::model::dln", R, D);
  w.dqkv = a.mat<S>("mini5d::model::dqkv", N, 3 * Dt);
  w.datt_merged = a.mat<S>("mini5d::model::datt_merged", N, Dt);
  w.dfc = a.mat<S>("mini5d::model::dfc", N, d.ffn);
  w.dfc_gelu = a.mat<S>("mini5d::model::dfc_gelu", N, d.ffn);
  w.dq = a.ten<S>("mini5d::model::dq", BH, T, hd);
  w.dk = a.ten<S>("mini5d::model::dk", BH, T, hd);
  w.dv = a.ten<S>("mini5d::model::dv", BH, T, hd);
  w.dy = a.ten<S>("mini5d::model::dy", BH, T, hd);
  w.dp = a.ten<S>("mini5d::model::dp", BH, T, T);
  if (split) w.gathered = a.mat<S>("mini5d::tp::gathered", N, D);
  w.ones = a.vec<S>("mini5d::model::ones", N);
  Kokkos::deep_copy(w.ones, S(1));
  if (rc == Recompute::selective) w.core.allocate(a, d);
  if (rc == Recompute::full) w.block.allocate(a, d, true);
  return w;
}

// Views of a named tensor inside a unit's storage, whose first element is the
// unit's first (unit_offset in the flat layout).
template <class S>
MatU<S> mat_of(S* base, std::int64_t unit_offset, const TensorSpec& t) {
  return MatU<S>(base + (t.offset - unit_offset), t.shape[0], t.shape[1]);
}
template <class S>
VecU<S> vec_of(S* base, std::int64_t unit_offset, const TensorSpec& t) {
  return VecU<S>(base + (t.offset - unit_offset), t.shape[0]);
}

template <class S>
BlockTensors<S> block_views(const ParamLayout& layout, S* base, std::int64_t unit_offset, int layer) {
  const std::string b = "blocks." + std::to_string(layer) + ".";
  auto m = [&](const char* n) { return mat_of(base, unit_offset, layout.at(b + n)); };
  auto v = [&](const char* n) { return vec_of(base, unit_offset, layout.at(b + n)); };
  BlockTensors<S> bt;
  bt.ln1_w = v("ln1.weight");
  bt.ln1_b = v("ln1.bias");
  bt.attn.qkv_w = m("attn.qkv.weight");
  bt.attn.qkv_b = v("attn.qkv.bias");
  bt.attn.proj_w = m("attn.proj.weight");
  bt.attn.proj_b = v("attn.proj.bias");
  bt.ln2_w = v("ln2.weight");
  bt.ln2_b = v("ln2.bias");
  if (const TensorSpec* r = layout.find(b + "moe.router.weight")) {
    // Stacked local experts: [E_loc, F, D] as [E_loc * F, D], and so on.
    auto stacked = [&](const char* n) {
      const TensorSpec& t = layout.at(b + n);
      const std::int64_t cols = t.shape.back();
      return MatU<S>(base + (t.offset - unit_offset), t.size() / cols, cols);
    };
    bt.moe.router_w = mat_of(base, unit_offset, *r);
    bt.moe.fc_w = stacked("moe.experts.fc.weight");
    bt.moe.fc_b = stacked("moe.experts.fc.bias");
    bt.moe.proj_w = stacked("moe.experts.proj.weight");
    bt.moe.proj_b = stacked("moe.experts.proj.bias");
    return bt;
  }
  bt.mlp.fc_w = m("mlp.fc.weight");
  bt.mlp.fc_b = v("mlp.fc.bias");
  bt.mlp.proj_w = m("mlp.proj.weight");
  bt.mlp.proj_b = v("mlp.proj.bias");
  return bt;
}

// Binds the tensors of unit `unit` (embeddings, a block, or the head) in one set of
// views (parameters or gradients).
template <class S>
void bind_views(const ParamLayout& layout, int unit, S* base, std::vector<BlockTensors<S>>& blocks,
                OuterTensors<S>& outer) {
  const auto& u = layout.units()[unit];
  const int layers = int(blocks.size());
  if (unit == 0) {
    outer.wte = mat_of(base, u.offset, layout.at("wte"));
    outer.wpe = mat_of(base, u.offset, layout.at("wpe"));
  } else if (unit <= layers) {
    blocks[unit - 1] = block_views(layout, base, u.offset, unit - 1);
  } else {
    outer.lnf_w = vec_of(base, u.offset, layout.at("lnf.weight"));
    outer.lnf_b = vec_of(base, u.offset, layout.at("lnf.bias"));
    outer.lm_head = mat_of(base, u.offset, layout.at("lm_head.weight"));
  }
}
}  // namespace

template <class S>
Gpt<S>::Gpt(const ModelConfig& cfg, int micro_batch, Owns owns, ModelParallel par)
    : cfg_(cfg),
      batch_(micro_batch),
      layout_(cfg, par.tp ? par.tp->size() : 1, par.tp ? par.tp->rank() : 0, par.ep ? par.ep->size() : 1,
              par.ep ? par.ep->rank() : 0),
      pw_(cfg.layers),
      gw_(cfg.layers) {
  tp::TpComm* tpc = par.tp ? par.tp : &single_;
  const int t = tpc->size();
  ctx_.dims = dims_of(cfg, micro_batch, t, tpc->rank(), par.sp);
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
    grads = Vec<S>("mini5d::model::grads", layout_.total());
    grads_mem_ = mem::Charge(mem::Category::gradients, mem::view_bytes(grads));
    for (int u = 0; u < int(units.size()); ++u) bind_unit(u, nullptr, grads.data() + units[u].offset);
  }
  Alloc kept, work;
  ctx_.ws = make_workspace<S>(work, ctx_.dims, ctx_.region.sequence_split(), ctx_.recompute);
  ctx_.region.gathered = ctx_.ws.gathered;
  embedding_ = std::make_unique<EmbeddingLayer<S>>(ctx_, kept);
  blocks_.reserve(std::size_t(cfg.layers));
  for (int l = 0; l < cfg.layers; ++l) blocks_.emplace_back(ctx_, kept, is_moe_block(cfg, l));
  head_ = std::make_unique<HeadLayer<S>>(ctx_, kept, work);
  inputs_ = Kokkos::View<int*, Kokkos::LayoutRight, MemSpace>("mini5d::model::inputs", ctx_.dims.tokens);
  work.bytes += std::int64_t(ctx_.dims.tokens) * std::int64_t(sizeof(int));
  acts_mem_ = mem::Charge(mem::Category::activations, kept.bytes);
  work_mem_ = mem::Charge(mem::Category::workspace, work.bytes);
}

template <class S>
void Gpt<S>::bind_unit(int unit, S* params_base, S* grads_base) {
  if (params_base) bind_views(layout_, unit, params_base, pw_, po_);
  if (grads_base) bind_views(layout_, unit, grads_base, gw_, go_);
}

template <class S>
void init_param_range(const ParamLayout& layout, std::uint64_t seed, VecU<S> dst,
                      std::int64_t begin, std::int64_t end) {
  for (const auto& t : layout.tensors()) {
    // The part of tensor t inside [begin, end), in flat and in dst coordinates.
    const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
    if (lo >= hi) continue;
    auto out = Kokkos::subview(dst, std::make_pair(lo - begin, hi - begin));
    if (t.init == Init::Zeros) {
      Kokkos::deep_copy(out, S(0));
      continue;
    }
    if (t.init == Init::Ones) {
      Kokkos::deep_copy(out, S(1));
      continue;
    }
    // Each block of the logical tensor this range covers, drawn at its logical indices.
    const std::uint64_t stream = rng::name_hash(t.name.c_str());
    const double sd = t.stddev;
    std::vector<ShardBlock> blocks;
    append_part_blocks(t, lo - t.offset, hi - t.offset, lo - begin, blocks);
    for (const auto& b : blocks) {
      if (b.offset.size() > 3) throw std::logic_error("mini5d: init of a tensor of rank > 3");
      // As a 3-D block (leading dimensions of extent 1 for rank 1 and 2): offsets o*,
      // extents x1, x2 of a tensor of global shape [*, g1, g2].
      const std::size_t pad = 3 - b.offset.size();
      std::int64_t o[3] = {0, 0, 0}, x[3] = {1, 1, 1}, g[3] = {1, 1, 1};
      for (std::size_t d = 0; d < b.offset.size(); ++d) {
        o[pad + d] = b.offset[d];
        x[pad + d] = b.extent[d];
        g[pad + d] = t.global_shape[d];
      }
      const std::int64_t o0 = o[0], o1 = o[1], o2 = o[2], x1 = x[1], x2 = x[2], g1 = g[1], g2 = g[2];
      auto blk = Kokkos::subview(dst, std::make_pair(b.local_offset, b.local_offset + b.size()));
      Kokkos::parallel_for(
          "mini5d::model::init_normal", Range(0, b.size()), KOKKOS_LAMBDA(const std::int64_t i) {
            const std::int64_t i2 = i % x2, i1 = (i / x2) % x1, i0 = i / (x1 * x2);
            const std::int64_t logical = ((o0 + i0) * g1 + o1 + i1) * g2 + o2 + i2;
            blk(i) = S(sd * rng::normal(seed, stream, std::uint64_t(logical)));
          });
    }
  }
  Kokkos::fence();
}

template <class S>
void Gpt<S>::init_params(std::uint64_t seed) {
  init_param_range<S>(layout_, seed, params, 0, layout_.total());
}

template <class S>
void Gpt<S>::zero_grads() {
  Kokkos::deep_copy(grads, S(0));
}

template <class S>
double Gpt<S>::forward(CTokU inputs, CTokU targets, S grad_scale) {
  const int head = cfg_.layers + 1;
  UnitHooks& h = *ctx_.hooks;
  ctx_.grad_scale = double(grad_scale);
  const double aux_before = ctx_.moe_stats.aux;
  Kokkos::deep_copy(inputs_, inputs);
  h.before_forward(0);
  embedding_->forward(ctx_, po_, inputs_);
  h.after_forward(0);
  CMatU<S> x = embedding_->out();
  for (int l = 0; l < cfg_.layers; ++l) {
    h.before_forward(l + 1);
    blocks_[std::size_t(l)].forward(ctx_, pw_[std::size_t(l)], x);
    x = blocks_[std::size_t(l)].out();
    h.after_forward(l + 1);
  }
  h.before_forward(head);
  const double loss = head_->forward(ctx_, po_, x, targets, grad_scale);
  h.after_forward(head);
  last_aux_ = ctx_.moe_stats.aux - aux_before;
  return loss;
}

template <class S>
void Gpt<S>::backward() {
  const int head = cfg_.layers + 1;
  UnitHooks& h = *ctx_.hooks;
  auto input_of = [&](int l) { return l == 0 ? embedding_->out() : blocks_[std::size_t(l - 1)].out(); };
  h.before_backward(head);
  head_->backward(ctx_, po_, go_, input_of(cfg_.layers));
  h.after_backward(head);
  for (int l = cfg_.layers - 1; l >= 0; --l) {
    h.before_backward(l + 1);
    blocks_[std::size_t(l)].backward(ctx_, pw_[std::size_t(l)], gw_[std::size_t(l)], input_of(l));
    h.after_backward(l + 1);
  }
  h.before_backward(0);
  embedding_->backward(ctx_, go_, ctx_.ws.dres, inputs_);
  h.after_backward(0);
}

template class Gpt<float>;
template class Gpt<double>;
template void init_param_range<float>(const ParamLayout&, std::uint64_t, VecU<float>, std::int64_t, std::int64_t);
template void init_param_range<double>(const ParamLayout&, std::uint64_t, VecU<double>, std::int64_t, std::int64_t);

}  // namespace mini5d::model
