// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/params/param_layout.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mini5d/rules/vocab_padding.hpp"

namespace mini5d::model {

bool is_moe_block(const ModelConfig& m, int layer) {
  return m.experts > 0 && (layer + 1) % std::max(1, m.moe_every) == 0;
}

ParamLayout::ParamLayout(const ModelConfig& m, int tp_size, int tp_rank, std::vector<int> owned, int ep_size,
                         int ep_rank)
    : tp_size_(tp_size), tp_rank_(tp_rank), ep_size_(ep_size), ep_rank_(ep_rank), tied_(m.tie_embeddings) {
  // The embedding and the LM head hold the padded vocabulary (rules/vocab_padding.hpp).
  const std::int64_t V = padded_vocab(m.vocab, m.vocab_pad_to, tp_size), D = m.d_model, F = m.ffn, T = m.seq;
  // GPT-2 initialisation: N(0, 0.02), with the projections that write into the
  // residual stream scaled by 1/sqrt(2 * layers) so its variance does not grow with
  // depth.
  const double std0 = 0.02, std_res = 0.02 / std::sqrt(2.0 * m.layers);
  // model.bias=false drops every bias; RMSNorm has none (model.norm); SwiGLU's gate
  // and up projections are one [2F, D] tensor, gate rows then up rows, cut over t as two
  // row blocks, so that a rank's gate and up rows are one GEMM (model.mlp).
  const bool bias = m.bias, norm_bias = bias && m.norm != Norm::rmsnorm, swiglu = m.mlp == Mlp::swiglu;
  const std::int64_t F_in = swiglu ? 2 * F : F;  // rows of the MLP's first matrix
  // The fused QKV's row blocks: the query heads', then the key and the value heads'
  // (grouped-query attention: fewer key/value heads, model.kv_heads).
  const std::int64_t hd = D / m.heads, Dkv = std::int64_t(m.kv_head_count()) * hd;
  qkv_blocks_ = {D, Dkv, Dkv};
  kv_heads_ = m.kv_head_count(), head_dim_ = hd;
  const char* fc = swiglu ? "gate_up" : "fc";
  auto norm = [&](const std::string& n) {
    add(n + ".weight", {D}, Split::none, Init::Ones, 0, false, false);
    if (norm_bias) add(n + ".bias", {D}, Split::none, Init::Zeros, 0, false, false);
  };
  add("wte", {V, D}, Split::rows, Init::Normal, std0, true, false);
  tensors_.back().stored_rows = m.vocab;
  // Rotary positions (model.positions=rope) turn q and k instead: no table.
  if (m.positions != Positions::rope) add("wpe", {T, D}, Split::none, Init::Normal, std0, true, false);
  close_unit("embeddings");
  for (int l = 0; l < m.layers; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    norm(b + "ln1");
    add(b + "attn.qkv.weight", {D + 2 * Dkv, D}, Split::qkv_rows, Init::Normal, std0, true, true);
    if (bias) add(b + "attn.qkv.bias", {D + 2 * Dkv}, Split::qkv_rows, Init::Zeros, 0, false, false);
    add(b + "attn.proj.weight", {D, D}, Split::cols, Init::Normal, std_res, true, true);
    if (bias) add(b + "attn.proj.bias", {D}, Split::none, Init::Zeros, 0, false, false);
    norm(b + "ln2");
    if (is_moe_block(m, l)) {
      // The router is dense (replicated over t, reduced over d x c x e); the experts
      // come last in the unit, one [E, ...] tensor per kind (one logical dataset each).
      const std::int64_t E = m.experts;
      const std::string x = b + "moe.experts." + fc;
      add(b + "moe.router.weight", {E, D}, Split::none, Init::Normal, std0, true, true);
      add(x + ".weight", {E, F_in, D}, Split::experts, Init::Normal, std0, true, true);
      if (bias) add(x + ".bias", {E, F_in}, Split::experts, Init::Zeros, 0, false, false);
      add(b + "moe.experts.proj.weight", {E, D, F}, Split::experts, Init::Normal, std_res, true, true);
      if (bias) add(b + "moe.experts.proj.bias", {E, D}, Split::experts, Init::Zeros, 0, false, false);
    } else {
      const Split first = swiglu ? Split::pair_rows : Split::rows;
      add(b + "mlp." + fc + ".weight", {F_in, D}, first, Init::Normal, std0, true, true);
      if (bias) add(b + "mlp." + fc + ".bias", {F_in}, first, Init::Zeros, 0, false, false);
      add(b + "mlp.proj.weight", {D, F}, Split::cols, Init::Normal, std_res, true, true);
      if (bias) add(b + "mlp.proj.bias", {D}, Split::none, Init::Zeros, 0, false, false);
    }
    close_unit("blocks." + std::to_string(l));
  }
  norm("lnf");
  // Tied: a rank holding the head without the embeddings (a last pipeline stage) keeps
  // its own copy of wte, split over t as wte is; else the head uses wte itself.
  const int head_unit = m.layers + 1;
  const auto owns = [&](int g) { return owned.empty() || std::find(owned.begin(), owned.end(), g) != owned.end(); };
  if (!tied_) {
    add("lm_head.weight", {V, D}, Split::rows, Init::Normal, std0, true, true);
    tensors_.back().stored_rows = m.vocab;
  } else if (owns(head_unit) && !owns(0)) {
    add("wte", {V, D}, Split::rows, Init::Normal, std0, true, false);
    tensors_.back().stored_rows = m.vocab;
    tensors_.back().tied_copy = true;
  }
  close_unit("head");
  // The tied head's product with wte is a matrix product all the same.
  if (tied_) matmul_params_ += V * D;
  for (const auto& t : tensors_) {
    // An expert's weights act on the top_k / E of the tokens routed to it: per token,
    // top_k experts' worth of them take part (the "active" parameters).
    if (t.in_matmul) matmul_params_ += t.expert ? t.global_size() / m.experts * m.top_k : t.global_size();
    if (!t.tied_copy) global_total_ += t.global_size();
  }
  local_of_.assign(units_.size(), -1);
  if (owned.empty()) {
    for (int u = 0; u < int(units_.size()); ++u) local_of_[std::size_t(u)] = u;
    return;
  }
  // A pipeline rank: keep only its units' tensors, packed in model order.
  std::vector<TensorSpec> kept;
  std::vector<Unit> kept_units;
  std::int64_t at = 0;
  for (int g : owned) {
    const Unit u = units_.at(std::size_t(g));
    Unit k{u.name, at, u.size, g, u.expert_begin};
    for (const auto& t : tensors_)
      if (t.offset >= u.offset && t.offset < u.offset + u.size) {
        kept.push_back(t);
        kept.back().offset = at + (t.offset - u.offset);
      }
    at += u.size;
    local_of_[std::size_t(g)] = int(kept_units.size());
    kept_units.push_back(k);
  }
  tensors_ = std::move(kept);
  units_ = std::move(kept_units);
  total_ = at;
}

int ParamLayout::local_unit(int global) const {
  return global >= 0 && global < int(local_of_.size()) ? local_of_[std::size_t(global)] : -1;
}

void ParamLayout::close_unit(const std::string& name) {
  const std::int64_t begin = units_.empty() ? 0 : units_.back().offset + units_.back().size;
  const std::int64_t size = total_ - begin;
  // With t > 1 the tensors every tensor rank holds whole come first in the unit, then
  // the sharded ones, then the experts. ZeRO 2-3 sum those replicated gradients over
  // t on each rank's part of the unit only; keeping them in one run at the unit's start
  // makes each rank's share a function of its part's bounds alone, which the planner
  // predicts exactly (plan/cost/axis_traffic.cpp). At t = 1 the order stays the model's.
  if (tp_size_ > 1) {
    auto first = std::find_if(tensors_.begin(), tensors_.end(), [&](const TensorSpec& t) { return t.offset >= begin; });
    auto rank_of = [](const TensorSpec& t) { return t.expert ? 2 : t.replicated ? 0 : 1; };
    std::stable_sort(first, tensors_.end(),
                     [&](const TensorSpec& a, const TensorSpec& b) { return rank_of(a) < rank_of(b); });
    std::int64_t at = begin;
    for (auto it = first; it != tensors_.end(); ++it) {
      it->offset = at;
      at += it->size();
    }
  }
  units_.push_back({name, begin, size, int(units_.size()), expert_begin_ < 0 ? size : expert_begin_ - begin});
  expert_begin_ = -1;
}

void ParamLayout::add(const std::string& name, std::vector<std::int64_t> shape, Split split, Init init,
                      double stddev, bool decay, bool in_matmul) {
  TensorSpec t;
  t.name = name;
  t.global_shape = shape;
  t.shape = shape;
  t.init = init;
  t.stddev = stddev;
  t.decay = decay;
  t.in_matmul = in_matmul;
  const std::int64_t n = tp_size_, r = tp_rank_;
  Piece whole{std::vector<std::int64_t>(shape.size(), 0), shape};
  if (split == Split::experts) {  // whole experts ep_rank*E/P .. over the e x t group
    if (expert_begin_ < 0) expert_begin_ = total_;
    t.expert = true;
    Piece p = whole;
    p.extent[0] = shape[0] / ep_size_;
    p.offset[0] = ep_rank_ * p.extent[0];
    t.pieces.push_back(p);
    t.shape[0] = p.extent[0];
    // Not held whole by every tensor rank once t > 1: each holds other experts.
    t.replicated = n == 1;
    t.offset = total_;
    total_ += t.size();
    tensors_.push_back(std::move(t));
    return;
  }
  if (n == 1 || split == Split::none) {
    t.pieces.push_back(whole);
  } else if (split == Split::rows) {  // rows r*n0/t .. of the leading dimension
    Piece p = whole;
    p.extent[0] = shape[0] / n;
    p.offset[0] = r * p.extent[0];
    t.pieces.push_back(p);
    t.shape[0] = p.extent[0];
  } else if (split == Split::cols) {  // columns r*n1/t .. of a matrix
    Piece p = whole;
    p.extent[1] = shape[1] / n;
    p.offset[1] = r * p.extent[1];
    t.pieces.push_back(p);
    t.shape[1] = p.extent[1];
  } else {  // fused QKV (three row blocks: q, k, v) or SwiGLU's gate and up (two): this
            // rank's rows of each block, one piece per block
    const std::vector<std::int64_t> blocks =
        split == Split::qkv_rows ? qkv_blocks_ : std::vector<std::int64_t>(2, shape[0] / 2);
    // With more tensor ranks than key/value heads (t > kv_heads) each rank holds the one
    // key/value head its query heads read, head r / (t/kv_heads), shared with the other
    // t/kv_heads - 1 ranks of its group (Megatron's replication).
    const bool replicate = split == Split::qkv_rows && n > kv_heads_;
    const std::int64_t replicas = replicate ? n / kv_heads_ : 1;
    const std::int64_t row = shape.size() > 1 ? shape[1] : 1;
    std::int64_t start = 0;
    t.shape[0] = 0;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      const bool kv = replicate && k > 0;
      const std::int64_t part = kv ? head_dim_ : blocks[k] / n;
      Piece p = whole;
      p.extent[0] = part;
      p.offset[0] = start + (kv ? r / replicas : r) * part;
      t.pieces.push_back(p);
      t.shape[0] += part;
      start += blocks[k];
    }
    if (replicate) {
      t.replicas = int(replicas), t.replica = int(r % replicas);
      t.shared_from = blocks[0];
      t.shared_begin = t.pieces[0].extent[0] * row;
      t.shared_end = t.shared_begin + 2 * head_dim_ * row;
    }
  }
  t.replicated = n == 1 || split == Split::none;
  t.offset = total_;
  total_ += t.size();
  tensors_.push_back(std::move(t));
}

const TensorSpec& ParamLayout::at(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  throw std::out_of_range("mini5d: no parameter tensor named " + name);
}

const TensorSpec* ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::int64_t ParamLayout::expert_total() const {
  std::int64_t n = 0;
  for (const auto& t : tensors_)
    if (t.expert) n += t.size();
  return n;
}

void append_part_blocks(const TensorSpec& t, std::int64_t begin, std::int64_t end, std::int64_t local_offset,
                        std::vector<ShardBlock>& out) {
  std::int64_t piece_begin = 0;  // the piece's first element, in part indices
  for (const auto& p : t.pieces) {
    const std::int64_t lo = std::max(begin, piece_begin), hi = std::min(end, piece_begin + p.size());
    if (lo < hi) {
      std::vector<ShardBlock> sub;
      append_flat_range_blocks(p.extent, lo - piece_begin, hi - piece_begin, local_offset + (lo - begin), sub);
      for (auto& b : sub) {
        for (std::size_t d = 0; d < b.offset.size(); ++d) b.offset[d] += p.offset[d];
        out.push_back(std::move(b));
      }
    }
    piece_begin += p.size();
  }
}

ShardDescriptor stored_part(const TensorSpec& t, ShardDescriptor d) {
  if (t.stored_rows < 0 || t.global_shape.empty()) return d;
  d.global_shape[0] = t.stored_rows;
  std::vector<ShardBlock> kept;
  for (auto& b : d.blocks) {
    if (b.offset[0] >= t.stored_rows) continue;
    b.extent[0] = std::min(b.extent[0], t.stored_rows - b.offset[0]);
    kept.push_back(std::move(b));
  }
  d.blocks = std::move(kept);
  return d;
}

}  // namespace mini5d::model
