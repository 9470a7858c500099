// SPDX-License-Identifier: BSD-3-Clause
// GPT forward and backward, composed from the kernels. The residual stream gradient
// (dres_) flows from the head down through the blocks; each branch adds its share
// through the LayerNorm backward's accumulate mode.
#include "mini5d/model/gpt.hpp"

#include <algorithm>

#include "mini5d/core/counter_rng.hpp"
#include "mini5d/kernels/cross_entropy.hpp"
#include "mini5d/kernels/embedding.hpp"
#include "mini5d/kernels/gelu.hpp"
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/linear.hpp"
#include "mini5d/kernels/residual.hpp"

namespace mini5d::model {

namespace k = mini5d::kernels;

template <class S>
Gpt<S>::Gpt(const ModelConfig& cfg, int micro_batch, Owns owns)
    : cfg_(cfg),
      batch_(micro_batch),
      layout_(cfg),
      shape_{micro_batch, cfg.seq, cfg.heads, cfg.d_model / cfg.heads},
      pw_(cfg.layers),
      gw_(cfg.layers) {
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
  allocate_activations();
}

namespace {
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
  bt.qkv_w = m("attn.qkv.weight");
  bt.qkv_b = v("attn.qkv.bias");
  bt.proj_w = m("attn.proj.weight");
  bt.proj_b = v("attn.proj.bias");
  bt.ln2_w = v("ln2.weight");
  bt.ln2_b = v("ln2.bias");
  bt.fc_w = m("mlp.fc.weight");
  bt.fc_b = v("mlp.fc.bias");
  bt.fcproj_w = m("mlp.proj.weight");
  bt.fcproj_b = v("mlp.proj.bias");
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
void Gpt<S>::bind_unit(int unit, S* params_base, S* grads_base) {
  if (params_base) bind_views(layout_, unit, params_base, pw_, po_);
  if (grads_base) bind_views(layout_, unit, grads_base, gw_, go_);
}

template <class S>
void Gpt<S>::allocate_activations() {
  const int N = batch_ * cfg_.seq, D = cfg_.d_model, F = cfg_.ffn, V = cfg_.vocab;
  const int BH = batch_ * cfg_.heads, T = cfg_.seq, hd = shape_.head_dim;
  std::int64_t bytes = 0;  // the running total of the current category
  auto mat = [&](const char* name, int r, int c) {
    bytes += std::int64_t(r) * c * sizeof(S);
    return Mat<S>(Kokkos::ViewAllocateWithoutInitializing(name), r, c);
  };
  auto vec = [&](const char* name, int n) {
    bytes += std::int64_t(n) * sizeof(S);
    return Vec<S>(Kokkos::ViewAllocateWithoutInitializing(name), n);
  };
  auto ten = [&](const char* name, int a, int b, int c) {
    bytes += std::int64_t(a) * b * c * sizeof(S);
    return Ten3<S>(Kokkos::ViewAllocateWithoutInitializing(name), a, b, c);
  };
  for (int l = 0; l < cfg_.layers; ++l) {
    BlockActivations<S> a;
    a.ln1 = mat("mini5d::model::ln1", N, D);
    a.ln1_mean = vec("mini5d::model::ln1_mean", N);
    a.ln1_rstd = vec("mini5d::model::ln1_rstd", N);
    a.qkv = mat("mini5d::model::qkv", N, 3 * D);
    a.q = ten("mini5d::model::q", BH, T, hd);
    a.k = ten("mini5d::model::k", BH, T, hd);
    a.v = ten("mini5d::model::v", BH, T, hd);
    a.p = ten("mini5d::model::att_probs", BH, T, T);
    a.y = ten("mini5d::model::att_y", BH, T, hd);
    a.att_merged = mat("mini5d::model::att_merged", N, D);
    a.res2 = mat("mini5d::model::res2", N, D);
    a.ln2 = mat("mini5d::model::ln2", N, D);
    a.ln2_mean = vec("mini5d::model::ln2_mean", N);
    a.ln2_rstd = vec("mini5d::model::ln2_rstd", N);
    a.fc = mat("mini5d::model::fc", N, F);
    a.fc_gelu = mat("mini5d::model::fc_gelu", N, F);
    a.res3 = mat("mini5d::model::res3", N, D);
    acts_.push_back(a);
  }
  x0_ = mat("mini5d::model::embedded", N, D);
  lnf_ = mat("mini5d::model::lnf", N, D);
  lnf_mean_ = vec("mini5d::model::lnf_mean", N);
  lnf_rstd_ = vec("mini5d::model::lnf_rstd", N);
  logits_ = mat("mini5d::model::logits", N, V);
  acts_mem_ = mem::Charge(mem::Category::activations, bytes);
  bytes = 0;
  ones_ = vec("mini5d::model::ones", N);
  Kokkos::deep_copy(ones_, S(1));
  dres_ = mat("mini5d::model::dres", N, D);
  dln_ = mat("mini5d::model::dln", N, D);
  dqkv_ = mat("mini5d::model::dqkv", N, 3 * D);
  datt_merged_ = mat("mini5d::model::datt_merged", N, D);
  dfc_ = mat("mini5d::model::dfc", N, F);
  dfc_gelu_ = mat("mini5d::model::dfc_gelu", N, F);
  dq_ = ten("mini5d::model::dq", BH, T, hd);
  dk_ = ten("mini5d::model::dk", BH, T, hd);
  dv_ = ten("mini5d::model::dv", BH, T, hd);
  dy_ = ten("mini5d::model::dy", BH, T, hd);
  dp_ = ten("mini5d::model::dp", BH, T, T);
  inputs_ = Kokkos::View<int*, Kokkos::LayoutRight, MemSpace>("mini5d::model::inputs", N);
  bytes += std::int64_t(N) * sizeof(int);
  work_mem_ = mem::Charge(mem::Category::workspace, bytes);
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
    } else if (t.init == Init::Ones) {
      Kokkos::deep_copy(out, S(1));
    } else {
      const std::uint64_t stream = rng::name_hash(t.name.c_str());
      const double sd = t.stddev;
      const std::int64_t first = lo - t.offset;  // element index inside the tensor
      Kokkos::parallel_for(
          "mini5d::model::init_normal", Range(0, hi - lo), KOKKOS_LAMBDA(const std::int64_t i) {
            out(i) = S(sd * rng::normal(seed, stream, std::uint64_t(first + i)));
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
  Kokkos::deep_copy(inputs_, inputs);
  hooks_->before_forward(0);
  k::embedding_forward<S>(x0_, inputs_, po_.wte, po_.wpe, cfg_.seq);
  hooks_->after_forward(0);
  for (int l = 0; l < cfg_.layers; ++l) {
    hooks_->before_forward(l + 1);
    auto& a = acts_[l];
    const auto& w = pw_[l];
    CMatU<S> x_in = l == 0 ? x0_ : acts_[l - 1].res3;
    k::layernorm_forward<S>(a.ln1, a.ln1_mean, a.ln1_rstd, x_in, w.ln1_w, w.ln1_b);
    k::linear_forward<S>(a.qkv, a.ln1, w.qkv_w, w.qkv_b);
    k::attention_split_heads<S>(a.q, a.k, a.v, a.qkv, shape_);
    k::attention_forward<S>(a.y, a.p, a.q, a.k, a.v);
    k::attention_merge_heads<S>(a.att_merged, a.y, shape_);
    k::linear_forward<S>(a.res2, a.att_merged, w.proj_w, w.proj_b);
    k::accumulate<S>(a.res2, x_in);
    hooks_->progress();  // lets a prefetched gather (ZeRO-3) advance
    k::layernorm_forward<S>(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, w.ln2_w, w.ln2_b);
    k::linear_forward<S>(a.fc, a.ln2, w.fc_w, w.fc_b);
    k::gelu_forward<S>(a.fc_gelu, a.fc);
    k::linear_forward<S>(a.res3, a.fc_gelu, w.fcproj_w, w.fcproj_b);
    k::accumulate<S>(a.res3, a.res2);
    hooks_->after_forward(l + 1);
  }
  CMatU<S> last = cfg_.layers > 0 ? acts_.back().res3 : x0_;
  hooks_->before_forward(head);
  k::layernorm_forward<S>(lnf_, lnf_mean_, lnf_rstd_, last, po_.lnf_w, po_.lnf_b);
  k::linear_forward<S>(logits_, lnf_, po_.lm_head, VecU<S>());
  const double loss = k::cross_entropy_forward_backward<S>(logits_, targets, grad_scale);
  hooks_->after_forward(head);
  return loss;
}

template <class S>
void Gpt<S>::backward() {
  // logits_ now holds dL/dlogits.
  CMatU<S> last = cfg_.layers > 0 ? acts_.back().res3 : x0_;
  const int head = cfg_.layers + 1;
  hooks_->before_backward(head);
  k::linear_backward<S>(dln_, go_.lm_head, VecU<S>(), logits_, lnf_, po_.lm_head, ones_);
  k::layernorm_backward<S>(dres_, go_.lnf_w, go_.lnf_b, dln_, last, po_.lnf_w, lnf_mean_,
                           lnf_rstd_, false);
  hooks_->after_backward(head);
  for (int l = cfg_.layers - 1; l >= 0; --l) {
    hooks_->before_backward(l + 1);
    auto& a = acts_[l];
    const auto& w = pw_[l];
    auto& g = gw_[l];
    CMatU<S> x_in = l == 0 ? x0_ : acts_[l - 1].res3;
    // MLP branch: res3 = res2 + proj(gelu(fc(ln2(res2)))); dres holds dL/dres3.
    k::linear_backward<S>(dfc_gelu_, g.fcproj_w, g.fcproj_b, dres_, a.fc_gelu, w.fcproj_w, ones_);
    hooks_->progress();
    k::gelu_backward<S>(dfc_, dfc_gelu_, a.fc);
    k::linear_backward<S>(dln_, g.fc_w, g.fc_b, dfc_, a.ln2, w.fc_w, ones_);
    hooks_->progress();
    k::layernorm_backward<S>(dres_, g.ln2_w, g.ln2_b, dln_, a.res2, w.ln2_w, a.ln2_mean,
                             a.ln2_rstd, true);
    // Attention branch: res2 = x_in + proj(attn(qkv(ln1(x_in)))); dres = dL/dres2.
    k::linear_backward<S>(datt_merged_, g.proj_w, g.proj_b, dres_, a.att_merged, w.proj_w, ones_);
    k::attention_split_heads_grad<S>(dy_, datt_merged_, shape_);
    hooks_->progress();
    k::attention_backward<S>(dq_, dk_, dv_, dp_, dy_, a.p, a.q, a.k, a.v);
    hooks_->progress();
    k::attention_merge_heads_qkv<S>(dqkv_, dq_, dk_, dv_, shape_);
    k::linear_backward<S>(dln_, g.qkv_w, g.qkv_b, dqkv_, a.ln1, w.qkv_w, ones_);
    k::layernorm_backward<S>(dres_, g.ln1_w, g.ln1_b, dln_, x_in, w.ln1_w, a.ln1_mean,
                             a.ln1_rstd, true);
    hooks_->after_backward(l + 1);
  }
  hooks_->before_backward(0);
  k::embedding_backward<S>(go_.wte, go_.wpe, dres_, inputs_, cfg_.seq);
  hooks_->after_backward(0);
}

template class Gpt<float>;
template class Gpt<double>;
template void init_param_range<float>(const ParamLayout&, std::uint64_t, VecU<float>, std::int64_t, std::int64_t);
template void init_param_range<double>(const ParamLayout&, std::uint64_t, VecU<double>, std::int64_t, std::int64_t);

}  // namespace mini5d::model
