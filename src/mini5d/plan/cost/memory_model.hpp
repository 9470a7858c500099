// SPDX-License-Identifier: BSD-3-Clause
// Memory per device: training state under ZeRO, activations per block, in-flight
// micro-batches per pipeline schedule, work and communication buffers.
//
// These are plain functions of numbers so that the runtime can print the prediction
// next to what it measured (docs/planner.md). The derivation is in docs/planner.md; the
// short version:
//
//   state (ZeRO stage s over a group of G ranks, per-parameter bytes w, g, o):
//     s=0: P(w+g+o)   s=1: P(w+g) + P*o/G   s=2: P*w + P(g+o)/G   s=3: P(w+g+o)/G
//
//   activations of one block for one micro-batch of B sequences, N = B*T/c local
//   tokens, r = 1/t with sequence parallelism (else 1), element size a:
//     none:      a*[ 4*N*d*r + 4*N*r            (ln1, res2, ln2, res3; LN mean/rstd;
//                                                 RMSNorm: 2*N*r, rstd only)
//                  + (3+1)*N*d/t + 2*N*f/t       (qkv, att_merged; fc, gelu(fc);
//                                                 SwiGLU: 3*N*f/t, gate|up and its output)
//                  + (3+1)*N*d/t                 (q, k, v, y head-major copies)
//                  + B*(h/t)*T*T ]               (softmax probabilities; full attention)
//                 blockwise attention (c = 1, model.attention) and ring attention
//                 (c > 1) keep B*(h/t)*(T/c) log-sum-exps instead: no T*T term
//                 with experts the MLP terms are moe_kept_bytes + moe_routed_bytes
//     selective: none minus the attention core (q, k, v, y, probabilities or lse),
//                rebuilt in the backward: with full attention this drops the T*T term;
//                blockwise and ring attention have none to drop, so it saves 4*N*d/t
//                plus the lse for one more core forward
//     dropout:   + 2*N*d*r one-byte masks (hidden), + B*(h/t)*T*T*(1 + a) (attention,
//                full attention only): hidden_dropout_bytes, attention_dropout_bytes
//     full:      a*N*d*r                          (the block's output = next input)
#pragma once
#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/model_desc.hpp"

namespace mini5d::plan {

// ---- training state -------------------------------------------------------------
struct StateBytes {
  double weights = 0, grads = 0, optimizer = 0;
  double total() const { return weights + grads + optimizer; }
};

// Bytes one rank holds for `params` parameters under ZeRO `stage` over `group` ranks.
StateBytes zero_state_bytes(double params, int stage, int group, Precision prec,
                            bool fp32_grad_accum = false);

// Host bytes an asynchronous checkpoint (checkpoint.async) stages on one rank: a copy
// of the buffers the save writes from, the fp32 weights (the master copy in a bf16
// run, sharded from stage 1; fp32 weights from stage 3) and both AdamW moments
// (sharded from stage 1). Allocated at the first save and kept.
double checkpoint_staging_bytes(double params, int stage, int group, Precision prec);

// Parameters one rank holds on pipeline stage `stage` (dense: ZeRO over d*c*e,
// expert: ZeRO over d*c).
struct ShardParams {
  double dense = 0, expert = 0;
  double total() const { return dense + expert; }
};
ShardParams stage_params(const ModelDesc& m, const Layout& l, int stage);
// One block's parameters on one rank (sharded by t and e).
ShardParams block_params(const ModelDesc& m, const Layout& l);

// ---- activations ----------------------------------------------------------------
struct ActShape {
  double micro_batch = 1, seq = 1, d_model = 1, heads = 1, ffn = 1, vocab = 1;
  double kv_ratio = 1;  // kv_heads / heads: the keys' and values' width over d_model
  int t = 1, c = 1;
  bool sp = false;
  double elem_bytes = 4;
  // Statistics (norm means and rstds, log-sum-exps, softmax sums, the loss's row maxima)
  // and the ones and rotary tables: fp32 in a bf16 run, the element size otherwise.
  double stat_bytes = 4;
  // mini5d's own bf16 attention core (c = 1, blockwise) computes on fp32 copies of its
  // tensors, in the workspace: the runtime sets this for its own prediction. A cluster's
  // framework with a bf16 attention kernel (every GPU framework) has no such copies.
  bool widened_core = false;
  double experts = 0, top_k = 1, imbalance = 1;  // experts > 1: MoE MLP
  bool blockwise = true;  // c = 1 attention core: blockwise (model.attention), else full
  bool rmsnorm = false;   // model.norm: a norm keeps 1 statistic per row (rstd), not 2
  bool swiglu = false;    // model.mlp: the MLP keeps gate|up [N, 2F/t] and its activation
  bool rope = false;      // model.positions: rotary, with a cos and sin table [T/c, hd/2]
  // Dropout (model.hidden_dropout, model.attention_dropout > 0): the masks the backward
  // needs, one byte per element (dropout_bytes below). Off in mini5d's own runtime.
  bool hidden_dropout = false, attention_dropout = false;
};
ActShape act_shape(const ModelDesc& m, const Layout& l, Precision prec, double imbalance = 1);

// Stored by one block for one micro-batch until its backward.
double block_activation_bytes(const ActShape& s, Recompute r);
// A mixture-of-experts block's MLP part (experts > 1), per micro-batch, as
// model/moe_layer.cpp keeps it: the router's outputs, fixed in size (kept), and the
// buffers of the rows the rank routes and receives, which follow the router: with
// imbalance 1 a rank receives as many rows as it sends (routed; the runtime grows them
// with 25% headroom when a step needs more).
double moe_kept_bytes(const ActShape& s);
double moe_routed_bytes(const ActShape& s);
// The part of block_activation_bytes(none) that selective recomputation drops.
double attention_core_bytes(const ActShape& s);
// Dropout's stored tensors (Korthikanti et al. 2022, section 4.1), per block and
// micro-batch, masks one byte per element:
//   hidden:    two masks [N, d]*r (after the attention projection and after the MLP);
//   attention: with stored probabilities (full attention, c = 1) the mask and the dropped
//              probabilities, B*(h/t)*T*T*(1 + a), which the PV product reads; blockwise
//              and ring attention keep no probabilities and rebuild the mask from the
//              generator's state in the backward (as FlashAttention does): 0.
// The attention part belongs to the core (attention_core_bytes counts it: selective
// recomputation drops and rebuilds it); full recomputation keeps neither.
double hidden_dropout_bytes(const ActShape& s);
double attention_dropout_bytes(const ActShape& s);
// What the core keeps per block besides q, k, v, y, in elements: the probabilities
// B*(h/t)*(T/c)*T of full attention, else one log-sum-exp per query row.
double attention_prob_elems(const ActShape& s);
// Embedding output (first stage) and final LayerNorm + logits (last stage).
double embedding_activation_bytes(const ActShape& s);
double head_activation_bytes(const ActShape& s);
// Backward buffers reused by every block, plus the block being recomputed.
double workspace_bytes(const ActShape& s, Recompute r);

// Micro-batches whose activations a stage holds at its peak, in units of "all the
// stage's layers for one micro-batch": GPipe m; 1F1B min(m, p - stage); interleaved
// 1F1B with v chunks (2(p-stage-1) + (v-1)p + 1) chunks of 1/v of the stage.
double in_flight_microbatches(Schedule s, int p, int m, int v, int stage);
// The activation sets a stage holds at its peak, as the runtime sizes them
// (train/pipeline.cpp) from the same schedule (rules/pipeline_schedule.hpp):
//   blocks     the peak of blocks in flight (each (micro-batch, chunk) pair counted with
//              its chunk's blocks) over the stage's blocks: in_flight_microbatches above
//              when the stage's chunks are equal;
//   embedding  the first chunk's own peak of micro-batches (stage 0 keeps the
//              embeddings' output for each), head the last chunk's (stage p - 1).
// All 1 without a pipeline; with one chunk per rank, all three are the count above.
struct InFlight {
  double blocks = 1, embedding = 1, head = 1;
};
InFlight in_flight(const ModelDesc& m, const Layout& l, int stage, int moe_every = 1);

// ---- buffers and totals ---------------------------------------------------------
struct MemoryOptions {
  double moe_imbalance = 1.0;
};

// Of pipeline stage `stage` (the tensor-parallel replicated gradients' packed buffer
// depends on which ends of the model the stage holds).
double comm_buffer_bytes(const ModelDesc& m, const Layout& l, Precision prec,
                         const MemoryOptions& o, int stage = 0);

struct MemoryBreakdown {
  int stage = 0;  // the pipeline stage this is for (the fullest one)
  double weights = 0, grads = 0, optimizer = 0, activations = 0, workspace = 0,
         comm_buffers = 0, reserved = 0;
  // Host memory, outside total() (device memory): an asynchronous checkpoint's staging
  // copy (checkpoint_staging_bytes). On a host backend it is the same memory as the rest.
  double checkpoint_staging = 0;
  double total() const {
    return weights + grads + optimizer + activations + workspace + comm_buffers + reserved;
  }
};

MemoryBreakdown stage_memory(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                             const Layout& l, int stage, const MemoryOptions& o);
// The fullest stage (the first or the last; middle stages hold no more than the first).
MemoryBreakdown device_memory(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                              const Layout& l, const MemoryOptions& o);

}  // namespace mini5d::plan
