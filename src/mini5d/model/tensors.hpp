// SPDX-License-Identifier: BSD-3-Clause
// Views of the model's parameter (or gradient) tensors inside a flat buffer: one set
// per block and one for the tensors outside the blocks. Shapes are this rank's part
// (ParamLayout): under tensor parallelism qkv_w is [(H + 2*Hkv)*hd/t, D], proj_w [D, D/t], ...
// A tensor the model does not have (model.bias=false; a norm's bias with RMSNorm) is an
// empty view, which the kernels skip. A model of storage type S has its parameters in S
// and its gradients in acc_t<S> (fp32 main gradients for a bf16 model): the same structs
// of views, instantiated for each.
#pragma once
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::model {

template <class S>
struct AttentionTensors {
  MatU<S> qkv_w, proj_w;
  VecU<S> qkv_b, proj_b;
};

// fc_w is the MLP's first matrix: GELU's fc [F/t, D], or SwiGLU's gate and up
// [2F/t, D] (this rank's gate rows, then its up rows); proj_w the projection back
// (SwiGLU's down).
template <class S>
struct MlpTensors {
  MatU<S> fc_w, proj_w;
  VecU<S> fc_b, proj_b;
};

// A mixture-of-experts MLP: the router [E, D] and this rank's experts, one tensor per
// kind with the local experts stacked: fc_w [E_loc * F, D], fc_b [E_loc, F] (SwiGLU:
// [E_loc * 2F, D] and [E_loc, 2F], each expert's gate rows then its up rows),
// proj_w [E_loc * D, F], proj_b [E_loc, D] (expert j's rows are the j-th block).
template <class S>
struct MoeTensors {
  MatU<S> router_w, fc_w, fc_b, proj_w, proj_b;
};

template <class S>
struct BlockTensors {
  VecU<S> ln1_w, ln1_b, ln2_w, ln2_b;
  AttentionTensors<S> attn;
  MlpTensors<S> mlp;  // dense blocks
  MoeTensors<S> moe;  // MoE blocks
};

// The embeddings unit (wte, wpe) and the head unit (lnf, lm_head).
template <class S>
struct OuterTensors {
  MatU<S> wte, wpe, lm_head;
  VecU<S> lnf_w, lnf_b;
};

}  // namespace mini5d::model
