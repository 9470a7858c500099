// SPDX-License-Identifier: BSD-3-Clause
// The GPT decoder on one rank: token + learned position embeddings, pre-LayerNorm
// blocks (causal multi-head attention with a fused QKV projection, GELU MLP), final
// LayerNorm and an untied LM head with softmax cross-entropy. It composes the kernels
// in kernels/ and keeps the activations the backward needs; parameters and gradients
// live in two flat buffers laid out by ParamLayout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/model/param_layout.hpp"
#include "mini5d/model/unit_hooks.hpp"

namespace mini5d::model {

// Views of one block's tensors inside a flat buffer (parameters or gradients).
template <class S>
struct BlockTensors {
  VecU<S> ln1_w, ln1_b, qkv_b, proj_b, ln2_w, ln2_b, fc_b, fcproj_b;
  MatU<S> qkv_w, proj_w, fc_w, fcproj_w;
};

// Views of the tensors outside the blocks (embeddings unit and head unit).
template <class S>
struct OuterTensors {
  MatU<S> wte, wpe, lm_head;
  VecU<S> lnf_w, lnf_b;
};

// Writes elements [begin, end) of the flat parameter buffer's initial values to
// dst(0 .. end-begin): the same values whichever rank or shard asks (counter RNG keyed
// by seed, tensor name and element), so a shard equals the slice of the whole.
template <class S>
void init_param_range(const ParamLayout& layout, std::uint64_t seed, VecU<S> dst,
                      std::int64_t begin, std::int64_t end);

// What one block's forward keeps for its backward.
template <class S>
struct BlockActivations {
  Mat<S> ln1, qkv, att_merged, res2, ln2, fc, fc_gelu, res3;
  Vec<S> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
  Ten3<S> q, k, v, p, y;
};

template <class S>
class Gpt {
 public:
  // Which flat buffers the model allocates and binds every unit to; what it does not
  // own (gradients under ZeRO-2, both under ZeRO-3) the caller binds per unit.
  enum class Owns { params_and_grads, params, nothing };
  Gpt(const ModelConfig& cfg, int micro_batch, Owns owns = Owns::params_and_grads);

  const ModelConfig& config() const { return cfg_; }
  const ParamLayout& layout() const { return layout_; }
  int micro_batch() const { return batch_; }

  // Parameters from the counter-based RNG keyed by (seed, tensor name, element):
  // any slice of a tensor equals the same slice of the single-rank tensor.
  void init_params(std::uint64_t seed);
  void zero_grads();

  // Forward on one micro-batch of micro_batch * seq tokens (row-major [b, t]) with
  // the loss; returns the summed token loss. The loss gradient, scaled by grad_scale
  // per token, is kept for backward().
  double forward(CTokU inputs, CTokU targets, S grad_scale);
  // Backward of the last forward; accumulates into grads.
  void backward();

  // Points unit `unit`'s parameter (or gradient) tensors at storage whose first
  // element is the unit's first; nullptr leaves that side as it is.
  void bind_unit(int unit, S* params_base, S* grads_base);
  // Called around every unit in forward and backward; nullptr for none.
  void set_hooks(UnitHooks* hooks) { hooks_ = hooks ? hooks : &no_hooks_; }

  Vec<S> params;  // flat, in ParamLayout order (empty if not owned)
  Vec<S> grads;   // same layout

 private:
  void allocate_activations();

  ModelConfig cfg_;
  int batch_;
  ParamLayout layout_;
  kernels::AttentionShape shape_;
  UnitHooks no_hooks_;
  UnitHooks* hooks_ = &no_hooks_;
  mem::Charge params_mem_, grads_mem_, acts_mem_, work_mem_;
  std::vector<BlockTensors<S>> pw_, gw_;  // parameter / gradient views per block
  OuterTensors<S> po_, go_;
  std::vector<BlockActivations<S>> acts_;
  Mat<S> x0_, lnf_, logits_;
  Vec<S> lnf_mean_, lnf_rstd_, ones_;
  // Backward work buffers, reused by every block.
  Mat<S> dres_, dln_, dqkv_, datt_merged_, dfc_, dfc_gelu_;
  Ten3<S> dq_, dk_, dv_, dp_, dy_;
  Kokkos::View<int*, Kokkos::LayoutRight, MemSpace> inputs_;
};

}  // namespace mini5d::model
