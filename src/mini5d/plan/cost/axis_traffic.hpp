// SPDX-License-Identifier: BSD-3-Clause
// Bytes per axis per optimizer step, as one rank of a pipeline stage accounts them:
// the payload of each call (the [rows, d_model] block a collective moves, the message a
// send carries), summed over the step. This is the runtime's convention
// (comm/accounts.hpp), so `mini5d train` can print these predictions beside what it
// measured and the five-axis test can ask for equality; the time model turns payloads
// into wire time with each algorithm's volume factor (comm_model.hpp). Scalars (loss,
// norms, flags, MoE counts) are left out: a few hundred bytes a step.
//
// With N = micro_batch * seq / c token rows per micro-batch on a rank, D = d_model,
// element size a (4: fp32), m micro-batches per step and a stage holding Ld dense and
// Le MoE blocks (and the embedding on virtual stage 0, the head on the last):
//   t, activations (t > 1), per micro-batch, in units of N*D*a:
//       without SP: embedding 1, dense block 4, head 1
//       with SP:    embedding 2, dense block 10, MoE block 5 (attention only), head 3
//       (a column-parallel backward gathers its input again); full recompute reruns a
//       block's forward: + 4 (SP) or + 2 per dense block, + 2 per MoE block;
//     plus the vocab-parallel loss: the t*N row maxima gathered and 2N sums, * 4
//     (fp32 statistics in every precision).
//   t, gradients (SP, t > 1): the tensors replicated over t, once a step (4 bytes each):
//       wpe, per block LN1, LN2, the projection biases (dense) or the router (MoE), LNf.
//   c, activations (c > 1): a K/V block 2 * micro_batch * (T/c) * (D/t) * a per hop;
//       per block and micro-batch c-1 hops forward, c-1 K/V and c-1 dK/dV backward,
//       and c-1 again where the forward is recomputed (selective or full).
//   e, activations (e*t > 1, MoE blocks): a rank routes R = N/t rows (SP) to top_k
//       experts each and receives as many on average: dispatch + combine forward and
//       backward, 4 * R * top_k * D * a per MoE block per micro-batch, dropless. The
//       rows a given rank receives depend on the router; their mean over the expert
//       group is exact.
//   p, activations (p > 1): every chunk edge of the stage (a receive from the virtual
//       stage before, a send to the one after) carries N/t (SP) or N rows of D, once
//       forward and once backward, for each micro-batch.
//       From ZeRO 2 on a rank holds only its part of each unit's gradients and sums
//       the replicated elements in that part: with G ranks in the dense group, rank r
//       sums |[0, R_u) ∩ even_part(U_u, G, r)| of a unit with U_u dense elements whose
//       first R_u are the replicated ones (params/param_layout.cpp orders them so).
//   p, gradients (model.tie_embeddings, p > 1): the first and the last stage sum their
//       copies of the token embedding's gradient once a step, V/t * D * 4 bytes each
//       (V padded for t; parallel/pp/tied_embedding.hpp).
//   d, gradients and weights over the dense group d*c*e (and, for the experts, over d*c)
//       with P parameters of the stage's shard (before ZeRO): gradients P*4 per step
//       (ZeRO 0-1) or per micro-batch (ZeRO 2-3), fp32 in every precision; weights
//       none (ZeRO 0), the updated shard gathered, P*a per step (ZeRO 1-2: the working
//       copy, bf16 in a bf16 run), or, for ZeRO 3, each unit's a-byte elements
//       times the number of times its two gather buffers fetch it in the stage's
//       schedule (rules/zero3_buffers.hpp, the runtime's own rule, replayed here).
#pragma once
#include <vector>

#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/model_desc.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"

namespace mini5d::plan {

struct AxisTraffic {
  double tp_activations = 0, tp_grads = 0;
  double cp_activations = 0;
  double ep_activations = 0;
  double pp_activations = 0, pp_grads = 0;
  double dp_grads = 0, dp_weights = 0;                // dense group d*c*e
  double dp_expert_grads = 0, dp_expert_weights = 0;  // expert group d*c
  double tp() const { return tp_activations + tp_grads; }
  double pp() const { return pp_activations + pp_grads; }
  double dp() const { return dp_grads + dp_weights; }
  double dp_expert() const { return dp_expert_grads + dp_expert_weights; }
};

// What the blocks of pipeline stage `stage` are: blocks of virtual stage vs = j*p +
// stage for j < v, as layout_split cuts them; block b is MoE when the model has experts and
// (b + 1) % moe_every == 0.
struct StageBlocks {
  int dense = 0, moe = 0;
  bool embedding = false, head = false;
  int edges = 0;  // chunk boundaries the stage receives or sends across
};
StageBlocks stage_blocks(const ModelDesc& m, const Layout& l, int stage, int moe_every);

// A unit of a stage as ZeRO sees it (params/param_layout.hpp): its chunk, its elements on
// one rank before ZeRO, dense and expert, and how many of the dense ones lead the unit
// as the tensors replicated over t (counted whatever t).
struct StageUnit {
  int chunk = 0;
  double dense = 0, expert = 0, replicated = 0;
  // Grouped-query attention with t > kv_heads: where the key/value rows the rank shares
  // start in the unit, of the QKV weight and of its bias (after the replicated run and
  // the query rows: params/param_layout.cpp); -1 where there are none.
  double kv_weight_at = -1, kv_bias_at = -1;
};
// Times each of pipeline rank `stage`'s local units is gathered in one optimizer step
// with ZeRO 3: its schedule replayed through the runtime's two-buffer rule
// (rules/zero3_buffers.hpp), dropping the buffers where the runtime does: before every
// micro-batch with one stage; at the step's start and before every backward with more.
std::vector<long long> zero3_gathers_per_step(const pp::Spec& s, int stage, const std::vector<int>& chunk_of,
                                              bool first_is_embedding);

// The stage's units in model order: the embeddings (virtual stage 0), the blocks, the
// head (the last virtual stage), chunk after chunk.
std::vector<StageUnit> stage_units(const ModelDesc& m, const Layout& l, int stage, int moe_every);

// Payload bytes one rank of `stage` accounts per step, by axis. `dense_params` and
// `expert_params` are the stage's parameters on one rank before ZeRO (stage_params, or
// the runtime's layout); elem: activation element size in bytes (and the working copy's
// weights'); grad_elem: the gradient reduction's element size (4, or 2 with
// parallel.grad_reduce_dtype=bf16); dense_rank: the rank's
// index in its dense group (ZeRO 2-3 with t > 1: rank 0 sums the most over t).
AxisTraffic step_traffic(const ModelDesc& m, const Layout& l, int stage, int moe_every, double dense_params,
                         double expert_params, double elem = 4, int dense_rank = 0, double grad_elem = 4);

}  // namespace mini5d::plan
