// SPDX-License-Identifier: BSD-3-Clause
// The mixture-of-experts MLP that replaces a block's dense MLP (model.experts > 0):
//   router   logits = x Wr^T [rows, E], softmax, top-k, the chosen probabilities
//            renormalised to sum to 1 (at top-1 the weight is 1: the router then learns
//            from the load-balancing loss alone);
//   dispatch every (token, slot) assignment is copied to the send buffer, sorted by
//            expert; the per-expert counts are exchanged and the rows all-to-all-v'd
//            over the expert-parallel group (parallel/ep), then permuted so each local
//            expert's rows are one contiguous slab;
//   experts  per local expert one KokkosBlas::gemm per linear over its slab (a grouped
//            GEMM): y = gelu(x W1^T + b1) W2^T + b2, width model.ffn; with
//            model.mlp=swiglu W1 is the gate and up rows [2 ffn, D] and
//            y = (silu(gate) * up) W2^T + b2 (model.bias=false: no b1, b2);
//   combine  the reverse permutation and all-to-all-v, then out = sum_j w_j y_j;
//   aux loss GShard's load-balancing loss with one sequence as the group:
//            coef * E * sum_e f_e P_e, f_e the fraction of the sequence's assignments
//            routed to e, P_e its mean router probability, averaged over the sequences
//            of the global batch and summed over MoE layers. Per sequence, so it does
//            not depend on how sequences are split over ranks (layout invariance);
//            under sequence parallelism the t ranks sum their rows' statistics.
// The backward mirrors every step (the two all-to-alls in reverse order). Capacity mode
// (model.capacity_factor > 0) drops the assignments over an expert's capacity
// (parallel/ep/routing.hpp) and counts them; it is not layout-invariant (the capacity
// depends on the tokens per rank).
#pragma once
#include <vector>

#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/model/layer_context.hpp"
#include "mini5d/model/tensors.hpp"
#include "mini5d/parallel/ep/routing.hpp"

namespace mini5d::model {

// The MoE layers' shared buffers, grown to the largest routing seen (dropless routing
// sends a data-dependent number of rows), charged to the workspace.
template <class S>
struct MoeWork {
  Mat<S> send, recv, y, dh;
  Mat<acc_t<S>> dw, dlogits;  // the router's gradients, in the accumulation type
  Mat<S> da;                  // SwiGLU experts: dL/d(silu(gate) * up), [received, F]
  Mat<acc_t<S>> router_x, router_w;  // bf16 only: the router's input and weight in fp32
  Vec<acc_t<S>> ones;
  mem::Charge charge{mem::Category::workspace, 0};
};

template <class S>
class MoeLayer {
 public:
  // Allocates what the layer keeps whatever the routing (router probabilities, top-k
  // choices); the routed activations grow on demand (charged to activations).
  MoeLayer(Context<S>& ctx, Alloc& kept);
  // out_rows = moe(x_rows) on this rank's token rows.      collective over the e x t group
  void forward(Context<S>& ctx, const MoeTensors<S>& w, MatU<S> out_rows, CMatU<S> x_rows);
  // dx_rows = dL/d(x_rows) (overwritten); gradients accumulate into g.
  //                                                        collective over the e x t group
  void backward(Context<S>& ctx, const MoeTensors<S>& w, MoeTensors<acc_t<S>>& g, MatU<S> dx_rows, CMatU<S> dout_rows,
                CMatU<S> x_rows);
  // The last forward's routing (tests).
  const ep::SendPlan& send_plan() const { return send_; }
  // Bytes of the buffers for the rows routed and received, as allocated so far (they
  // follow the router and grow with headroom when a step needs more rows).
  std::int64_t routed_bytes() const { return routed_.bytes(); }
  const ep::ReceivePlan& receive_plan() const { return recv_; }
  const std::vector<int>& chosen() const { return chosen_; }  // [rows * k] experts picked
  void forget_routing() { chosen_.clear(); }  // a dense block ran in this activation set

 private:
  // [rows, E], [rows, k], [batch, E] (dL/dp from the aux loss): the router's statistics,
  // in the accumulation type (fp32 in a bf16 model).
  Mat<acc_t<S>> probs_, w_, aux_;
  Vec<int> idx_, row_, order_;
  // Their host copies, made once: the routing is planned on the host each forward, and a
  // mirror made per call would be an allocation (and a free) per layer on a GPU.
  typename Mat<acc_t<S>>::HostMirror probs_h_, aux_h_;
  typename Vec<int>::HostMirror idx_h_;
  Mat<S> xin_, h_, a_, ysent_;  // expert inputs, fc (SwiGLU: gate|up), its activation [received, *];
                                // outputs [sent, D]
  mem::Charge routed_;
  ep::SendPlan send_;
  ep::ReceivePlan recv_;
  std::vector<int> chosen_;
};

}  // namespace mini5d::model
