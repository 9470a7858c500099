// SPDX-License-Identifier: BSD-3-Clause
// The model's views of its parameters (or gradients): each named tensor of a unit
// (ParamLayout) as a matrix or vector view into the unit's storage. Which tensors exist
// follows model.norm, model.mlp and model.bias; an absent bias is an empty view.
#pragma once
#include <string>
#include <vector>

#include "mini5d/params/param_layout.hpp"
#include "mini5d/model/tensors.hpp"

namespace mini5d::model {

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
  auto m = [&](const std::string& n) { return mat_of(base, unit_offset, layout.at(b + n)); };
  // A bias the model may not have (model.bias, model.norm): an empty view if absent.
  auto v = [&](const std::string& n) {
    const TensorSpec* t = layout.find(b + n);
    return t ? vec_of(base, unit_offset, *t) : VecU<S>();
  };
  // The MLP's first matrix: GELU's fc or SwiGLU's fused gate and up (model.mlp).
  const std::string fc = layout.find(b + "mlp.gate_up.weight") || layout.find(b + "moe.experts.gate_up.weight")
                             ? "gate_up"
                             : "fc";
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
    auto stacked = [&](const std::string& n) {
      const TensorSpec* t = layout.find(b + n);
      if (!t) return MatU<S>();
      const std::int64_t cols = t->shape.back();
      return MatU<S>(base + (t->offset - unit_offset), t->size() / cols, cols);
    };
    bt.moe.router_w = mat_of(base, unit_offset, *r);
    bt.moe.fc_w = stacked("moe.experts." + fc + ".weight");
    bt.moe.fc_b = stacked("moe.experts." + fc + ".bias");
    bt.moe.proj_w = stacked("moe.experts.proj.weight");
    bt.moe.proj_b = stacked("moe.experts.proj.bias");
    return bt;
  }
  bt.mlp.fc_w = m("mlp." + fc + ".weight");
  bt.mlp.fc_b = v("mlp." + fc + ".bias");
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
  if (u.global == 0) {
    outer.wte = mat_of(base, u.offset, layout.at("wte"));
    const TensorSpec* wpe = layout.find("wpe");  // none with rotary positions
    outer.wpe = wpe ? mat_of(base, u.offset, *wpe) : MatU<S>();
    // Tied (model.tie_embeddings) on a rank with both units: the head reads and
    // accumulates into wte itself, so both paths' gradients land in one tensor.
    if (layout.tied()) outer.lm_head = outer.wte;
  } else if (u.global <= layers) {
    blocks[u.global - 1] = block_views(layout, base, u.offset, u.global - 1);
  } else {
    outer.lnf_w = vec_of(base, u.offset, layout.at("lnf.weight"));
    const TensorSpec* lnf_b = layout.find("lnf.bias");  // none with RMSNorm or model.bias=false
    outer.lnf_b = lnf_b ? vec_of(base, u.offset, *lnf_b) : VecU<S>();
    // Tied: the last pipeline stage's copy of wte; on a rank with the embeddings too,
    // binding unit 0 set lm_head to wte.
    if (!layout.tied()) {
      outer.lm_head = mat_of(base, u.offset, layout.at("lm_head.weight"));
    } else if (const TensorSpec* copy = layout.find("wte"); copy && copy->tied_copy) {
      outer.lm_head = mat_of(base, u.offset, *copy);
    }
  }
}

}  // namespace mini5d::model
