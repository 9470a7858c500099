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
//     plus the vocab-parallel loss: the t*N row maxima gathered and 2N sums, * a.
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
//   d, gradients and weights over the dense group d*c*e (and, for the experts, over d*c)
//       with P parameters of the stage's shard (before ZeRO): gradients P*4 per step
//       (ZeRO 0-1) or per micro-batch (ZeRO 2-3); weights none (ZeRO 0), the updated
//       shard gathered, P*4 per step (ZeRO 1-2), or ZeRO 3's per-micro-batch gathers
//       (forward, and again for the backward of the units not kept: not modelled
//       exactly here, counted as 2P*4 per micro-batch, an upper bound).
#pragma once
#include "mini5d/plan/layout.hpp"
#include "mini5d/plan/model_desc.hpp"

namespace mini5d::plan {

struct AxisTraffic {
  double tp_activations = 0, tp_grads = 0;
  double cp_activations = 0;
  double ep_activations = 0;
  double pp_activations = 0;
  double dp_grads = 0, dp_weights = 0;                // dense group d*c*e
  double dp_expert_grads = 0, dp_expert_weights = 0;  // expert group d*c
  bool zero3_bound = false;  // the weight figures are ZeRO 3's upper bound
  double tp() const { return tp_activations + tp_grads; }
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

// Payload bytes one rank of `stage` accounts per step, by axis. `dense_params` and
// `expert_params` are the stage's parameters on one rank before ZeRO (stage_params, or
// the runtime's layout); elem: activation element size in bytes.
AxisTraffic step_traffic(const ModelDesc& m, const Layout& l, int stage, int moe_every, double dense_params,
                         double expert_params, double elem = 4);

}  // namespace mini5d::plan
