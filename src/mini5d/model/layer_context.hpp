// SPDX-License-Identifier: BSD-3-Clause
// What every layer module shares: the shapes of this rank's part of the model, the
// tensor-parallel region (communicator, sequence parallelism, gather buffer), the
// backward's work buffers (one set for the whole model, reused layer after layer), the
// recomputation mode, and the hooks that let communication progress between kernels.
//
// Token rows: a micro-batch has N = B*T rows. Inside tensor-parallel regions every rank
// sees all N; outside them (LayerNorms, residuals, embedding output) a rank holds
// rows [row_begin, row_begin + rows) — all N, or N/t with sequence parallelism.
// With context parallelism a sequence's T tokens are split over c: each rank holds
// T/c of them (two chunks, parallel/cp/zigzag.hpp) and N = B*T/c; `pos` gives each
// local token's global position, and the attention core is ring attention.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/kernels/blockwise_attention.hpp"
#include "mini5d/kernels/positions.hpp"
#include "mini5d/kernels/rope.hpp"
#include "mini5d/kernels/widened_attention.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/params/unit_hooks.hpp"
#include "mini5d/parallel/ep/ep_comm.hpp"
#include "mini5d/parallel/tp/region.hpp"

namespace mini5d::cp {
template <class S>
class RingAttention;
class CpComm;
}

namespace mini5d::model {

// Recompute is the deck's train.recompute (rules/deck_choices.hpp).

struct Dims {
  int batch = 1, seq = 1;         // seq: tokens of a sequence on this rank (T/c)
  int tokens = 1;                 // N = batch * seq
  int cp = 1;                     // context-parallel degree c
  bool blockwise = true;          // c = 1 core: blockwise (model.attention), else full
  bool rmsnorm = false;           // model.norm: RMSNorm (keeps rstd only), else LayerNorm
  bool swiglu = false;            // model.mlp: SwiGLU (gate and up fused), else GELU
  kernels::Positions pos;         // global position of each of the seq local tokens
  bool rope = false;              // model.positions: rotary q and k (kernels/rope.hpp), no table
  double rope_theta = 10000;      // model.rope_theta
  int rows = 1, row_begin = 0;    // token rows held outside tensor-parallel regions
  int d_model = 1, head_dim = 1;
  int heads = 1;                  // this rank's heads (H / t)
  int kv_heads = 1;               // this rank's key/value heads (Hkv / t; heads without GQA)
  int ffn = 1;                    // this rank's MLP width (F / t)
  int vocab = 1, vocab_begin = 0; // this rank's vocabulary rows (of the padded vocabulary)
  int vocab_valid = 1;            // how many of them are the model's, not padding
  int att_rows() const { return batch * heads; }  // (batch, head) matrices
  int att_kv_rows() const { return batch * kv_heads; }  // (batch, key/value head) matrices
  int qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }  // columns of the fused QKV
  int fc_width() const { return swiglu ? 2 * ffn : ffn; }  // columns of the MLP's first GEMM
  // The core keeps the T x T probabilities: full attention on whole sequences. Blockwise
  // (c = 1) and ring attention (c > 1) keep a log-sum-exp per query row instead.
  bool keeps_probs() const { return cp == 1 && !blockwise; }
};

// Allocates uninitialised views and adds up their bytes (for the memory ledger).
struct Alloc {
  std::int64_t bytes = 0;
  template <class S>
  Mat<S> mat(const char* name, std::int64_t r, std::int64_t c) {
    bytes += r * c * std::int64_t(sizeof(S));
    return Mat<S>(Kokkos::ViewAllocateWithoutInitializing(name), r, c);
  }
  template <class S>
  Vec<S> vec(const char* name, std::int64_t n) {
    bytes += n * std::int64_t(sizeof(S));
    return Vec<S>(Kokkos::ViewAllocateWithoutInitializing(name), n);
  }
  template <class S>
  Ten3<S> ten(const char* name, std::int64_t a, std::int64_t b, std::int64_t c) {
    bytes += a * b * c * std::int64_t(sizeof(S));
    return Ten3<S>(Kokkos::ViewAllocateWithoutInitializing(name), a, b, c);
  }
};

// What the attention core keeps: q and y as [B*H, T, hd], k and v as [B*Hkv, T, hd]
// (Hkv: key/value heads, H without grouped queries), and probabilities
// [B*H, T, T] (full attention) or, for blockwise (c = 1) and ring attention (c > 1),
// the log-sum-exp of each query row [B*H, T] (T: local tokens; fp32 for a bf16 model).
template <class S>
struct CoreActs {
  Ten3<S> q, k, v, p, y;
  Mat<acc_t<S>> lse;
  void allocate(Alloc& a, const Dims& d);
};

template <class S>
struct AttentionActs {
  Mat<S> qkv, att_merged;  // [N, (H + 2*Hkv)*hd/t], [N, D/t]
  CoreActs<S> core;
};

// fc: the first GEMM's output [N, F/t] (SwiGLU: gate and up, [N, 2F/t]); fc_gelu: the
// activation's output [N, F/t] (GELU or SwiGLU).
template <class S>
struct MlpActs {
  Mat<S> fc, fc_gelu;
};

template <class S>
struct BlockActs {
  Mat<S> ln1, res2, ln2, res3;  // [rows, D]; res3 is the block's output
  Vec<acc_t<S>> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;  // norm statistics: fp32 for bf16
  AttentionActs<S> attn;
  MlpActs<S> mlp;
  // All but res3 (and, without core, the attention core; without dense_mlp, the MLP's).
  void allocate(Alloc& a, const Dims& d, bool with_core, bool dense_mlp = true);
};

// The backward's buffers, shared by every layer.
template <class S>
struct Workspace {
  Mat<S> dres, dln;                  // [rows, D]: dL/d(residual stream), dL/d(LayerNorm output)
  Mat<S> dqkv, datt_merged;          // [N, (H + 2*Hkv)*hd/t], [N, D/t]
  Mat<S> dfc, dfc_gelu;              // [N, F/t] (dfc: [N, 2F/t] with SwiGLU)
  Ten3<S> dq, dk, dv, dy, dp;        // attention core gradients (dp: full attention only)
  kernels::BlockwiseWork<acc_t<S>> tiles;  // blockwise attention's tile buffers (c = 1 only)
  kernels::WideCore wide;            // bf16 only: the core's fp32 copies (kernels/widened_attention.hpp)
  Mat<S> gathered;                   // [N, D]: sequence-parallel gathers (SP only)
  Vec<acc_t<S>> ones;                // [N] ones (bias gradients, into fp32 main gradients for bf16)
  kernels::RopeTable<acc_t<S>> rope; // [T, hd/2] cos and sin of the local positions (rope only)
  CoreActs<S> core;                  // selective recompute: the recomputed core
  BlockActs<S> block;                // full recompute: the recomputed block (but res3)
};

// Mixture of experts (model.experts > 0). The experts of an MoE layer are split over
// the expert-parallel group (e x t): this rank computes experts first_expert ..
// first_expert + local_experts.
struct MoeSettings {
  int experts = 0, top_k = 1, local_experts = 0, first_expert = 0;
  int ffn = 0;                 // each expert's width (model.ffn, not split over t)
  bool swiglu = false;         // SwiGLU experts (model.mlp): their first GEMM is 2 * ffn wide
  double capacity_factor = 0;  // 0: dropless
  double aux_coef = 0;         // train.aux_loss_coef
};

// What the MoE layers counted since the last reset, on this rank's token rows.
struct MoeStats {
  std::vector<double> load;  // [E] rows each expert was sent (after drops), all layers
  double dropped = 0;        // assignments dropped (capacity mode)
  double aux = 0;            // load-balancing loss, in the units of the summed token loss
                             // (divide by the global tokens for the step's value)
};

template <class S>
struct MoeWork;  // the MoE layers' shared buffers (model/moe_layer.hpp)

template <class S>
struct Context {
  Dims dims;
  tp::Region<S> region;
  Workspace<S> ws;
  Recompute recompute = Recompute::none;
  UnitHooks* hooks = nullptr;
  cp::RingAttention<S>* ring = nullptr;  // the attention core when c > 1
  cp::CpComm* cp = nullptr;               // the c ring when c > 1 (per-sequence statistics)
  ep::EpComm* ep = nullptr;
  MoeSettings moe;
  MoeStats moe_stats;
  std::shared_ptr<MoeWork<S>> moe_work;
  double grad_scale = 0;  // the loss gradient per token of the current micro-batch
};

}  // namespace mini5d::model
