// SPDX-License-Identifier: BSD-3-Clause
// Step-time prediction (see time_model.hpp). FLOP counts per block:
//   forward matmuls 2*N*(4d^2 + 2df)/t (MoE: 2*N*4d^2/t + 2*N*d*E + 2*N*k*imb*2df/t),
//   attention core 4*N*T*d/t (QK^T and PV over all T keys for the N local queries),
//   backward twice the forward; recomputation adds the attention core (selective) or
//   the whole block forward (full).
#include "mini5d/plan/cost/time_model.hpp"

#include <algorithm>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/cost/compute_model.hpp"
#include "mini5d/plan/cost/precision.hpp"
#include "mini5d/rules/pipeline_replay.hpp"

namespace mini5d::plan {

double exposed_time(double comm, double window, double eff) {
  const double hidden = std::min(comm, std::max(window, 0.0));
  return (comm - hidden) + (1.0 - eff) * hidden;
}

MemoryBoundBytes block_memory_bytes(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                                    const Layout& l, const TimeOptions& o) {
  const double a = activation_elem_bytes(tr.precision);
  const double B = l.micro_batch, T = double(m.seq), t = l.t;
  const double imb = m.moe() ? o.moe_imbalance : 1.0;
  const ActShape as = act_shape(m, l, tr.precision, imb);
  // Memory-bound kernels (LayerNorm, GELU, residual adds, permutes) stream the stored
  // activations elementwise_passes times per forward+backward (a third forward). The
  // softmax is counted apart, over every score the rank's T/c queries meet (stored as
  // probabilities by full attention at c = 1, made tile by tile by blockwise attention
  // and block by block by ring attention; the stored part is attention_prob_elems): forward
  // reads the scores and writes the probabilities (2 passes), backward reads dP and P
  // and writes dS (3). Attention dropout (software.attention_dropout, or the model's
  // model.attention_dropout) adds reading P, writing the dropped P and a 1-byte mask
  // forward, and the masked gradient backward; so the stored mask and dropped P
  // (attention_dropout_bytes) are taken out of the elementwise streams, not counted twice.
  // Hidden dropout's masks stay in them (written forward, read backward, like the rest).
  const double bh = B * double(m.heads) / t;
  // Causal blocks (software.attention_block, c = 1) compute each block's scores up to
  // its diagonal only.
  double score_area = (T / l.c) * T;
  if (l.c == 1 && cl.software.attention_block > 0) {
    score_area = 0;
    for (long long r0 = 0; r0 < m.seq; r0 += cl.software.attention_block) {
      const double n = double(std::min<long long>(cl.software.attention_block, m.seq - r0));
      score_area += n * (double(r0) + n);
    }
  }
  const double scores = a * bh * score_area;
  const double stored_scores = a * attention_prob_elems(as);
  const double other = block_activation_bytes(as, Recompute::none) - stored_scores - attention_dropout_bytes(as);
  const double drop = cl.software.attention_dropout || m.attention_dropout > 0 ? 2 + 1 / a : 0.0;
  MemoryBoundBytes b;
  b.elementwise_fwd = o.elementwise_passes / 3 * other;
  b.elementwise_bwd = o.elementwise_passes * 2 / 3 * other;
  // A fused attention kernel keeps the scores on chip: no softmax or dropout passes.
  const double passes = cl.software.fused_attention ? 0.0 : 1.0;
  b.softmax_fwd = passes * (2 + drop) * scores;
  b.softmax_bwd = passes * (3 + drop) * scores;
  // Rotary positions turn q and k in place after the QKV product, and dq, dk back in the
  // backward (kernels/rope.hpp): a read and a write of the rank's [N, (D + D_kv)/t] each
  // way. They are not in the stored activations (q, k are kept turned), so they are
  // added here; the cos/sin table, (T/c) x hd, stays in cache. Like the norms, RoPE's
  // arithmetic is not in the model FLOPs, which count matrix products only.
  if (m.positions == Positions::rope) {
    const double turned = 2 * a * B * (T / l.c) * (1 + as.kv_ratio) * double(m.d_model) / t;
    b.elementwise_fwd += turned;
    b.elementwise_bwd += turned;
  }
  return b;
}

double head_memory_bytes(const ModelDesc& m, const TrainDesc& tr, const Layout& l, const TimeOptions& o) {
  const double N = l.micro_batch * double(m.seq) / l.c;
  return o.elementwise_passes * activation_elem_bytes(tr.precision) * N * double(m.padded_vocab(l.t)) / l.t;
}

double optimizer_bytes(const ModelDesc& m, const TrainDesc& tr, const Layout& l, int stage) {
  const StateBytesPerParam pb = state_bytes_per_param(tr.precision, tr.fp32_grad_accum);
  const ShardParams sp = stage_params(m, l, stage);
  const int G = l.dense_group(), GX = l.expert_group();
  const double shard = l.zero >= 1 ? sp.dense / std::max(G, 1) + sp.expert / std::max(GX, 1) : sp.total();
  return shard * (2 * pb.weight + pb.grad + 2 * pb.optimizer());
}

namespace {

struct StageCost {
  double fwd = 0, bwd = 0, recompute = 0;  // compute seconds per micro-batch
  double attn_fwd = 0;                     // attention-core part of fwd (CP overlap window)
  // fwd + bwd by kind: dense GEMMs (head included), attention GEMMs, memory-bound
  // kernels, fixed kernel costs.
  double gemm = 0, attention_gemm = 0, memory = 0, launch = 0;
  double tp = 0, cp = 0, ep = 0, pp = 0, zero3 = 0;  // exposed per micro-batch
  double cp_total = 0, zero3_total = 0, tp_total = 0;
  double head = 0;  // of fwd + bwd, the LM head's share (the last stage's last chunk runs it)
  double per_mb() const { return fwd + bwd + recompute + tp + cp + ep + pp + zero3; }
};

const LinkTier* tier_ptr(const ClusterDesc& cl, int i) {
  return i < 0 ? nullptr : &cl.tiers[std::size_t(i)];
}

// The communication of one stage per micro-batch, exposed and in all, by axis; the
// block's GEMM times say how much of it the compute can hide.
void add_communication(StageCost& sc, const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                       const Layout& l, int stage, const TimeOptions& o, const BlockGemms& g) {
  const double a = activation_elem_bytes(tr.precision);
  const double B = l.micro_batch, T = double(m.seq), D = double(m.d_model);
  const double blocks = stage_block_count(m, l, stage);
  const double imb = m.moe() ? o.moe_imbalance : 1.0;
  // Tensor parallelism: 2 all-reduces forward, 2 backward per block (+2 when the
  // forward is recomputed, +1 for an MoE block, whose experts are not rerun); the
  // vocab-parallel embedding/head add one each.
  if (const auto lt = group_link(cl, l, axis_tier(cl, l, Axis::t), {Axis::t})) {
    const double one = allreduce_time(tp_allreduce_bytes(B, T, l.c, D, a), l.t, *lt);
    double calls = blocks * (l.recompute == Recompute::full ? (m.moe() ? 5 : 6) : 4);
    if (stage == 0) calls += 1;
    if (stage == l.p - 1) calls += 1;
    sc.tp_total = calls * one;
    // software.tp_overlap hides that fraction, but never more than the GEMMs last.
    const double gemm = blocks * 3 * g.linear * (l.recompute == Recompute::full ? 4.0 / 3 : 1.0);
    sc.tp = sc.tp_total - std::min(cl.software.tp_overlap * sc.tp_total, gemm);
  }
  // Context parallelism. The blocks are the bytes axis_traffic counts: K/V of the local
  // key heads in the storage type, dK/dV at the accumulation size (fp32 for bf16).
  if (const LinkTier* lc = tier_ptr(cl, axis_tier(cl, l, Axis::c))) {
    const double kv = cp_kv_block_bytes(B, T, l.c, m.local_kv_width(l.t), a);
    const double dkv = kv / a * accumulation_bytes(a);
    const double reruns = l.recompute != Recompute::none ? 1 : 0;  // the forward's K/V moves again
    const bool gather = cl.software.context_parallel == "allgather";
    // allgather: one all-gather of every rank's K/V block before the attention core and
    // one reduce-scatter of dK/dV after its backward; the backward reuses the gathered
    // K/V. The ring (mini5d's runtime): c-1 K/V hops forward, c-1 hops of K/V and dK/dV
    // backward.
    double fwd = 0, bwd = 0;
    if (gather) {
      const LinkTier lg = *group_link(cl, l, axis_tier(cl, l, Axis::c), {Axis::c});
      fwd = allgather_time(l.c * kv, l.c, lg), bwd = reduce_scatter_time(l.c * dkv, l.c, lg);
    } else {
      fwd = (l.c - 1.0) * send_time(kv, *lc), bwd = (l.c - 1.0) * send_time(kv + dkv, *lc);
    }
    sc.cp_total = blocks * (fwd + bwd + reruns * fwd);
    // The gather is on the critical path; the ring hides behind the attention core it feeds.
    const double attn_blk = g.attention;
    sc.cp = gather ? sc.cp_total
                   : blocks * ((1 + reruns) * exposed_time(fwd, attn_blk, o.overlap_efficiency) +
                               exposed_time(bwd, 2 * attn_blk, o.overlap_efficiency));
  }
  // Expert parallelism: dispatch + combine forward and backward (never recomputed).
  if (const LinkTier* le = tier_ptr(cl, axis_tier(cl, l, Axis::e))) {
    const double one = alltoall_time(
        ep_alltoall_bytes(B, T, l.c, l.t, l.sp, D, double(m.top_k), imb, a), l.e, *le);
    sc.ep = blocks * 4 * one;
  }
  // Pipeline: each micro-batch crosses v stage boundaries forward and backward.
  sc.pp = 2.0 * l.virtual_stages * pp_send_time(cl, l, B, T, D, a);
  // ZeRO-3: gather the stage's weights before forward and before backward, and
  // reduce-scatter its gradients, each behind the compute of that pass.
  if (l.zero >= 3) {
    const StateBytesPerParam pb = state_bytes_per_param(tr.precision, tr.fp32_grad_accum);
    const double gw = grad_wire_bytes(tr.precision, tr.fp32_grad_accum, tr.bf16_grad_reduce);
    const ShardParams sp = stage_params(m, l, stage);
    double ag = 0, rs = 0;
    if (const auto ld = gradient_group_link(cl, l, false)) {
      ag += allgather_time(sp.dense * pb.weight, l.dense_group(), *ld);
      rs += reduce_scatter_time(sp.dense * gw, l.dense_group(), *ld);
    }
    if (const auto lx = gradient_group_link(cl, l, true)) {
      ag += allgather_time(sp.expert * pb.weight, l.expert_group(), *lx);
      rs += reduce_scatter_time(sp.expert * gw, l.expert_group(), *lx);
    }
    sc.zero3 = exposed_time(ag, sc.fwd, o.overlap_efficiency) +
               exposed_time(ag + rs, sc.bwd, o.overlap_efficiency);
    sc.zero3_total = 2 * ag + rs;
    if (!cl.software.grad_reduce_overlap) sc.zero3 = sc.zero3_total;  // no data-parallel overlap at all
  }
}

StageCost stage_cost(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                     const Layout& l, int stage, const TimeOptions& o) {
  StageCost sc;
  const double blocks = stage_block_count(m, l, stage);
  const double imb = m.moe() ? o.moe_imbalance : 1.0;

  // GEMMs costed by shape (compute_model.hpp).
  const BlockGemms g = block_forward_gemms(m, l, cl, tr.precision, imb);
  const MemoryBoundBytes mb = block_memory_bytes(m, tr, cl, l, o);
  const DeviceDesc& dev = cl.device;
  const double elem_fwd = mb.elementwise_fwd / dev.elementwise_bw() + mb.softmax_fwd / dev.softmax_bw();
  const double elem_bwd = mb.elementwise_bwd / dev.elementwise_bw() + mb.softmax_bwd / dev.softmax_bw();

  // Besides its GEMM calls (whose cost gemm_time includes), each block runs ~9
  // memory-bound kernels forward and ~18 backward (plus one attention step per ring
  // hop); their fixed cost is what makes cutting a small model finely unprofitable.
  // With measured memory-bound rates (device.memory_bound) it is the fixed part per
  // block `mini5d calibrate` fitted instead (a third of it forward).
  const double k_fwd = dev.memory_bound_measured ? dev.memory_bound_fixed / 3
                                                 : (9 + 3.0 * (l.c - 1)) * dev.kernel_overhead;
  const double k_bwd = 2 * k_fwd;
  const double blk_fwd = g.linear + g.attention + elem_fwd + k_fwd;
  sc.attn_fwd = blocks * g.attention;
  sc.fwd = blocks * blk_fwd;
  // The backward runs two GEMMs per forward one (input and weight gradients), each of
  // its own shape (the same operand sizes, so the roofline charges twice the forward).
  sc.bwd = blocks * (g.linear_bwd + g.attention_bwd + elem_bwd + k_bwd);
  sc.gemm = blocks * (g.linear + g.linear_bwd);
  sc.attention_gemm = blocks * (g.attention + g.attention_bwd);
  sc.memory = blocks * (elem_fwd + elem_bwd);
  sc.launch = blocks * (k_fwd + k_bwd);
  if (l.recompute == Recompute::selective) sc.recompute = sc.attn_fwd;
  // Full recomputation reruns every block's forward but an MoE layer's (model/block.hpp).
  if (l.recompute == Recompute::full) sc.recompute = sc.fwd - blocks * g.experts;
  if (stage == l.p - 1) {
    const double head_mem = head_memory_bytes(m, tr, l, o) / dev.elementwise_bw();
    const double head_fwd = head_gemm_time(m, l, cl.device, tr.precision);
    const double head_bwd = head_gemm_time(m, l, cl.device, tr.precision, true);
    sc.fwd += head_fwd + head_mem / 3;
    sc.bwd += head_bwd + head_mem * 2 / 3;
    sc.head = head_fwd + head_bwd + head_mem;
    sc.gemm += head_fwd + head_bwd;
    sc.memory += head_mem;
  }

  add_communication(sc, m, tr, cl, l, stage, o, g);
  return sc;
}

// Which of distinct_stages' stages pipeline rank r is costed as: stages with the same
// chunks cost the same (an even split: 0, the middle ones, the last).
std::size_t costed_as(const Layout& l, const std::vector<int>& stages, const std::vector<long long>& split, int r) {
  if (r == 0) return 0;
  if (r == l.p - 1) return stages.size() - 1;
  if (split.empty()) return 1;
  const std::vector<long long> mine = chunk_blocks(split, l.p, r);
  std::size_t k = 1;
  while (k + 1 < stages.size() && chunk_blocks(split, l.p, stages[k]) != mine) ++k;
  return k;
}

pp::Spec pipeline_spec(const Layout& l) {
  return {l.schedule, l.p, l.virtual_stages, l.accumulation};
}

// An uneven split's forward and backward time of each virtual stage, for the replay:
// its stage's per-micro-batch time shared among the stage's chunks by blocks, the head
// on the last chunk, forward and backward in the stage's ratio.
void virtual_stage_times(const Layout& l, const std::vector<long long>& split, const std::vector<int>& stages,
                         const std::vector<StageCost>& costs, std::vector<double>& fwd, std::vector<double>& bwd) {
  const pp::Spec s = pipeline_spec(l);
  const int P = l.p * l.virtual_stages;
  fwd.assign(std::size_t(P), 0.0), bwd.assign(std::size_t(P), 0.0);
  for (int r = 0; r < l.p; ++r) {
    const std::vector<long long> mine = chunk_blocks(split, l.p, r);
    const StageCost& c = costs[costed_as(l, stages, split, r)];
    const double total = c.per_mb(), fraction_fwd = c.fwd / std::max(c.fwd + c.bwd + c.recompute, 1e-300);
    const double blocks = double(mini5d::stage_block_count(split, l.p, r));
    for (int j = 0; j < l.virtual_stages; ++j) {
      const int vs = pp::virtual_stage(s, r, j);
      const double cost = (total - c.head) * double(mine[std::size_t(j)]) / blocks + (vs == P - 1 ? c.head : 0.0);
      fwd[std::size_t(vs)] = fraction_fwd * cost, bwd[std::size_t(vs)] = (1 - fraction_fwd) * cost;
    }
  }
}

// The pipelined part of a step: m micro-batches through every stage, fill and drain
// included. An even split (every chunk alike but the head's) has a closed form: with
// C_r the per-micro-batch time of stage r,
//   span = m max C + (sum C - max C) / v,
// the formula (m + (p-1)/v) t_mb when the stages are equal; it equals the schedule's
// replay (rules/pipeline_replay.hpp) whenever only the last virtual stage differs
// (tests/unit/test_pp_replay.cpp). An uneven split has none (1F1B's bounded warm-up
// makes a slow early stage stall the others): it is replayed, unless the replay's lower
// bound already makes the step at least `exact_below` (then `*bounded` is set and the
// bound returned).
double pipelined_span(const Layout& l, const std::vector<long long>& split, const std::vector<int>& stages,
                      const std::vector<StageCost>& costs, double other, double exact_below, bool* bounded) {
  if (split.empty()) {  // even: step_time resolves a split only for an uneven one
    // Stage 0, the p - 2 middle stages (costed once) and the last.
    const double first = costs.front().per_mb(), last = costs.back().per_mb();
    const double middle = l.p > 2 ? costs[1].per_mb() : 0.0;
    const double sum = first + (l.p - 2) * middle + last, most = std::max({first, middle, last});
    return l.accumulation * most + (sum - most) / l.virtual_stages;
  }
  std::vector<double> fwd, bwd;
  virtual_stage_times(l, split, stages, costs, fwd, bwd);
  const pp::Spec s = pipeline_spec(l);
  const double lower = pp::replay_lower_bound(s, fwd, bwd);
  if (lower + other >= exact_below) return *bounded = true, lower;
  return pp::replay(s, fwd, bwd).span;
}

}  // namespace

TimeBreakdown step_time(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                        const Layout& l, const TimeOptions& o, double exact_below) {
  TimeBreakdown tb;
  // The slowest stage sets the pace (any stage, once stages differ in blocks; ties
  // keep the first).
  const std::vector<int> stages = distinct_stages(m, l);
  std::vector<StageCost> costs;
  for (int s : stages) costs.push_back(stage_cost(m, tr, cl, l, s, o));
  StageCost sc = costs[0];
  tb.slowest_stage = 0;
  for (std::size_t i = 1; i < stages.size(); ++i)
    if (costs[i].per_mb() > sc.per_mb()) sc = costs[i], tb.slowest_stage = stages[i];
  const double M = l.accumulation;
  const double t_mb = sc.per_mb();
  tb.compute = M * (sc.fwd + sc.bwd + sc.recompute);
  tb.compute_gemm = M * sc.gemm, tb.compute_attention_gemm = M * sc.attention_gemm;
  tb.compute_memory = M * sc.memory, tb.compute_launch = M * sc.launch;
  tb.recompute = M * sc.recompute;
  tb.tp = M * sc.tp, tb.cp = M * sc.cp, tb.ep = M * sc.ep, tb.pp = M * sc.pp;
  tb.zero3 = M * sc.zero3;
  tb.cp_total = M * sc.cp_total, tb.zero3_total = M * sc.zero3_total;
  tb.tp_total = M * sc.tp_total, tb.ep_total = tb.ep, tb.pp_total = tb.pp;
  // A tied embedding split over the pipeline: its two ends sum their gradients of it
  // once a step, after the data-parallel reduction, exposed (parallel/pp/tied_embedding.hpp).
  double tie = 0;
  if (l.p > 1 && m.tie_embeddings)
    if (const LinkTier* lp = tier_ptr(cl, axis_tier(cl, l, Axis::p)))
      tie = allreduce_time(4 * count_params(m, l.t).token_embedding / double(l.t), 2, *lp);
  tb.pp += tie, tb.pp_total += tie;

  // Gradient reduction over the dense group (and the expert group), once per step.
  const StateBytesPerParam pb = state_bytes_per_param(tr.precision, tr.fp32_grad_accum);
  const ShardParams sp = stage_params(m, l, tb.slowest_stage);
  const auto ld = gradient_group_link(cl, l, false), lx = gradient_group_link(cl, l, true);
  const int G = l.dense_group(), GX = l.expert_group();
  double reduce = 0, gather = 0;  // end-of-step gradient reduction; parameter all-gather
  auto add = [&](double params, int n, const std::optional<LinkTier>& lk) {
    if (!lk || params <= 0) return;
    const double g = dp_reduction_bytes(params, tr.precision, tr.fp32_grad_accum, tr.bf16_grad_reduce);
    // As the runtime does it (parallel/dp/zero_optimizer.hpp): ZeRO 0 and 1 all-reduce the
    // whole gradient once per step (ZeRO-1 keeps the full gradient buffer and only
    // shards the moments); ZeRO-2 reduce-scatters into the gradient shard. ZeRO 1 and
    // 2 then all-gather the updated weights.
    if (l.zero <= 1) reduce += allreduce_time(g, n, *lk);
    if (l.zero == 2) reduce += reduce_scatter_time(g, n, *lk);
    if (l.zero == 1 || l.zero == 2) gather += allgather_time(params * pb.weight, n, *lk);
  };
  add(sp.dense, G, ld);
  add(sp.expert, GX, lx);
  // ZeRO-2 reduce-scatters every micro-batch into the sharded gradient; all but the
  // last hide behind that micro-batch's backward.
  double zero2_early = 0;
  if (l.zero == 2 && M > 1)
    zero2_early = (M - 1) * exposed_time(reduce, sc.bwd, o.overlap_efficiency);
  // The last backward hides the final reduction; the next step's first forward hides
  // the parameter all-gather; a framework that reduces after the schedule hides nothing.
  tb.dp = exposed_time(reduce, sc.bwd, o.overlap_efficiency) +
          exposed_time(gather, sc.fwd, o.overlap_efficiency) + zero2_early;
  tb.dp_total = (l.zero == 2 ? M : 1.0) * reduce + gather;
  if (!cl.software.grad_reduce_overlap) tb.dp = tb.dp_total;

  // AdamW on the local shard streams weight, grad, master and moments once.
  tb.optimizer = optimizer_bytes(m, tr, l, tb.slowest_stage) / cl.device.optimizer_bw();

  // A search need not replay an uneven split whose step is at least the replay's lower
  // bound, when that already makes it slower than every plan it could matter to
  // (search.cpp): the bound stands in.
  const double no_bubble = M * t_mb + tb.dp + tb.optimizer + tie;
  const std::vector<long long> split = l.p > 1 && !even_split(m, l) ? layout_split(m, l) : std::vector<long long>();
  tb.stage_mb.resize(std::size_t(l.p));
  for (int r = 0; r < l.p; ++r) tb.stage_mb[std::size_t(r)] = costs[costed_as(l, stages, split, r)].per_mb();
  if (l.p > 1)
    tb.bubble =
        pipelined_span(l, split, stages, costs, tb.dp + tb.optimizer + tie, exact_below, &tb.bubble_estimated) - M * t_mb;
  tb.step = no_bubble + tb.bubble;
  const double tokens = double(l.micro_batch) * l.accumulation * l.d * l.e * double(m.seq);
  tb.model_flops = model_flops_per_step(m, tokens, l.t);
  tb.model_flops_rate = tb.model_flops / tb.step;
  const double peak = cl.device.peak[precision_index(tr.precision)] * double(l.ranks());
  tb.mfu = peak > 0 ? tb.model_flops_rate / peak : 0;
  tb.tokens_per_s = tokens / tb.step;
  // Recomputed FLOPs per token: the forward of the attention core (4*T*d per layer,
  // one third of the 12*T*d of model_flops_per_step) or of every block (2 per matmul
  // weight outside the LM head, plus that attention term).
  const ParamCounts pc = count_params(m, l.t);
  const double L = double(m.layers), Dm = double(m.d_model), Tq = double(m.seq);
  double re = 0;
  if (l.recompute == Recompute::selective) re = 4 * L * Tq * Dm;
  // An MoE layer is not recomputed: its router and experts are left out.
  const double moe_matmul =
      m.moe() ? L * (double(m.top_k) * (mlp_fc_rows(m) + double(m.ffn)) * Dm + pc.router) : 0.0;
  if (l.recompute == Recompute::full)
    re = 2 * (pc.matmul_active - double(m.padded_vocab(l.t)) * Dm - moe_matmul) + 4 * L * Tq * Dm;
  tb.hardware_flops = tb.model_flops + tokens * re;
  tb.hardware_flops_rate = tb.hardware_flops / tb.step;
  tb.hfu = peak > 0 ? tb.hardware_flops_rate / peak : 0;
  return tb;
}

}  // namespace mini5d::plan
