// SPDX-License-Identifier: BSD-3-Clause
// Shape-aware compute time: each matrix product of a block is costed from its shape
// (m x k times k x n) instead of one rate for every FLOP, so that small widths, narrow
// attention heads and finely sliced tensors pay what they cost.
//
// Roofline without overlap (the cluster file's device.gemm, model: roofline):
//   t(m, n, k) = 2mnk / R  +  a (mk + kn + mn) / B_hbm  +  c
// R the sustained rate of a large GEMM in the precision (device.sustained_tflops),
// a the element size, B_hbm the memory bandwidth and c the cost of one call
// (device.gemm.call_overhead_us). The two terms add because a GEMM of low arithmetic
// intensity I = 2mnk / (a(mk+kn+mn)) cannot stream faster than HBM, and one of high
// intensity still reads its operands once: the efficiency is 1 / (1 + R/(I B_hbm)),
// e.g. 91% at I = 10x the ridge point R/B_hbm and 50% at the ridge.
// model: flat keeps the old one-rate charge (2mnk / R), for comparison.
// model: measured takes the seconds of each call from a table measured on the machine
// (`mini5d calibrate`, device.gemm.table): exact at a measured (op, m, n, k); between
// points the roofline's time scaled by the measured/roofline ratio of the nearest
// points (inverse-distance weights in log m, log n, log k), so an unmeasured shape
// moves with the roofline from its measured neighbours. The table is fp32 (what the
// runtime trains); other precisions keep the roofline.
//
// The calls are the runtime's own (model/*.cpp, kernels/linear.hpp, attention.hpp):
// a linear layer y = x W^T runs y (op NT), dx = dy W (NN) and dW += dy^T x (TN);
// attention runs per (batch, head) and, for causal blocks of b queries
// (software.attention_block), per block: its scores against keys [0, end) only.
#pragma once
#include <vector>

#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/model_desc.hpp"

namespace mini5d::plan {

// `count` identical products C(m x n) = op_a(A) op_b(B), inner dimension k.
struct GemmCall {
  char ta = 'N', tb = 'T';
  double m = 0, n = 0, k = 0, count = 1;
  double flops() const { return 2 * m * n * k * count; }
};

double gemm_time(const DeviceDesc& dev, Precision prec, const GemmCall& c);
// The roofline's time whatever the device's model (the measured table's baseline).
double roofline_gemm_time(const DeviceDesc& dev, Precision prec, const GemmCall& c);

// Every product of one block for one micro-batch on one rank, by pass and kind.
struct BlockGemmCalls {
  std::vector<GemmCall> linear_fwd, linear_bwd;  // QKV, projection, MLP (or router)
  std::vector<GemmCall> expert_fwd, expert_bwd;  // the experts a rank holds (MoE)
  std::vector<GemmCall> attention_fwd, attention_bwd;
};
BlockGemmCalls block_gemm_calls(const ModelDesc& m, const Layout& l, const SoftwareDesc& sw,
                                double moe_imbalance);
// The LM head (N x d times d x V/t) on the last stage: forward, then its two backward.
std::vector<GemmCall> head_gemm_calls(const ModelDesc& m, const Layout& l, bool backward);

// software.fused_attention: the attention core as one fused kernel. `square` are the
// whole-square products the unfused core would run (attention_fwd or attention_bwd of
// block_gemm_calls: forward QK^T and PV; backward dP, dV, dQ, dK and QK^T again), and
//   t = causal * FLOPs(square) / R,   causal = (n+1)/(2n),  n = ceil(T / kFusedTile),
// R the fused kernel's rate (software.fused_attention_tflops; default the sustained GEMM
// rate): the tiles above the diagonal are skipped, nothing is read from or written to
// memory but Q, K, V, O and their gradients (no score-matrix traffic).
constexpr double kFusedTile = 128;  // FlashAttention-2's query/key tile on Hopper and Ampere
// triangular: the calls are causal blocks already (no factor).
double fused_attention_time(const ModelDesc& m, const ClusterDesc& cl, Precision prec,
                            const std::vector<GemmCall>& square, bool triangular);

// Seconds of one block's products for one micro-batch on one rank.
struct BlockGemms {
  double linear = 0, linear_bwd = 0;        // QKV, projection, MLP (or router + experts)
  double experts = 0, experts_bwd = 0;      // of linear(_bwd), the experts' share (MoE)
  double attention = 0, attention_bwd = 0;  // the attention core
  double flops = 0;   // the forward FLOPs they carry (for the achieved-rate report)
};
BlockGemms block_forward_gemms(const ModelDesc& m, const Layout& l, const ClusterDesc& cl,
                               Precision prec, double moe_imbalance);
// The LM head's forward (or its two backward) GEMMs on the last stage.
double head_gemm_time(const ModelDesc& m, const Layout& l, const DeviceDesc& dev, Precision prec,
                      bool backward = false);

}  // namespace mini5d::plan
