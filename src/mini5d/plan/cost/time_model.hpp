// SPDX-License-Identifier: BSD-3-Clause
// Predicted time of one optimizer step for a layout.
//
// One micro-batch on the slowest pipeline stage costs
//   t_mb = compute (FLOPs / sustained rate + memory-bound traffic / HBM bandwidth)
//        + TP all-reduces (critical path, fully exposed)
//        + EP all-to-alls (router-dependent, fully exposed)
//        + CP ring passes beyond what the attention core hides
//        + PP boundary sends + ZeRO-3 gathers beyond what compute hides,
// and a step is m * t_mb + bubble + exposed gradient reduction + optimizer, with the
// bubble the pipelined part's idle time: ((p-1)/v) * t_mb, a fraction (p-1)/(v*m + p-1),
// when the stages are equal, less when only the last (the head) is slower, and the
// schedule replayed with each stage's cost for an uneven split (time_model.cpp).
// Overlapped communication is not free: a fraction (1 - overlap_efficiency) of the
// hidden part still shows (it competes with compute for memory and SMs/cores).
#pragma once
#include <limits>
#include <vector>

#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/cost/model_desc.hpp"

namespace mini5d::plan {

struct TimeOptions {
  double overlap_efficiency = 0.9;
  double moe_imbalance = 1.0;  // busiest expert's load / mean load
  double elementwise_passes = 3;  // memory-bound passes over the stored activations
};

struct TimeBreakdown {
  // Per step, on the slowest stage; exposed unless said otherwise.
  double compute = 0, recompute = 0;  // recompute is included in compute
  // compute without recompute, by kind: dense GEMMs (LM head included), attention
  // GEMMs, memory-bound kernels (bytes / bandwidth), fixed per-kernel costs.
  double compute_gemm = 0, compute_attention_gemm = 0, compute_memory = 0, compute_launch = 0;
  double tp = 0, cp = 0, ep = 0, pp = 0, zero3 = 0;
  double dp = 0;      // exposed gradient reduction (and ZeRO parameter all-gather)
  double bubble = 0;
  bool bubble_estimated = false;  // a lower bound: pruned by a search (step_time's exact_below)
  double optimizer = 0;
  double step = 0;
  // Whole bills, hidden or not, per step.
  double dp_total = 0, cp_total = 0, zero3_total = 0, tp_total = 0, ep_total = 0, pp_total = 0;
  // Figures of merit.
  double model_flops = 0;      // per step, whole cluster
  double model_flops_rate = 0; // FLOP/s
  double mfu = 0;             // PaLM's definition: model FLOPs only, over peak
  // Megatron-LM's way of reporting TFLOP/s: the FLOPs actually run, recomputed
  // forward passes included (selective: the attention core; full: the whole block).
  double hardware_flops = 0, hardware_flops_rate = 0, hfu = 0;
  double tokens_per_s = 0;
  int slowest_stage = 0;
  std::vector<double> stage_mb;  // each pipeline rank's time per micro-batch (the slowest's is t_mb)
  double exposed_comm() const { return tp + cp + ep + pp + zero3 + dp; }
};

// The memory-bound kernels' traffic as the planner counts it (time_model.cpp), per
// block and micro-batch on one rank: LayerNorm, GELU, bias, residual, permutes and RoPE
// (elementwise), and the softmax over the scores. Divided by the device's rates
// (DeviceDesc::elementwise_bw, softmax_bw), which `mini5d calibrate` measures against
// these very counts.
struct MemoryBoundBytes {
  double elementwise_fwd = 0, elementwise_bwd = 0, softmax_fwd = 0, softmax_bwd = 0;
};
MemoryBoundBytes block_memory_bytes(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                                    const Layout& l, const TimeOptions& o);
// The logits' passes on the last stage (forward and backward), per micro-batch.
double head_memory_bytes(const ModelDesc& m, const TrainDesc& tr, const Layout& l, const TimeOptions& o);
// What AdamW streams over a stage's local shard in one step.
double optimizer_bytes(const ModelDesc& m, const TrainDesc& tr, const Layout& l, int stage);

// Exposed part of `comm` seconds running beside `window` seconds of compute.
double exposed_time(double comm, double window, double overlap_efficiency);

// `exact_below`: a search's pruning bound. An uneven split whose step with the replay's
// lower bound for its pipelined part is at least this long gets that bound's bubble
// (bubble_estimated, never more than the replay's) instead of the replay: it cannot rank
// before the plans the search's bound comes from.
TimeBreakdown step_time(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                        const Layout& l, const TimeOptions& o,
                        double exact_below = std::numeric_limits<double>::infinity());

}  // namespace mini5d::plan
