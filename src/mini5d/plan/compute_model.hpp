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
// A batched GEMM (attention over B*h heads) is one call of `batch` products.
#pragma once
#include "mini5d/plan/cluster_desc.hpp"
#include "mini5d/plan/layout.hpp"
#include "mini5d/plan/model_desc.hpp"

namespace mini5d::plan {

double gemm_time(const DeviceDesc& dev, Precision prec, double m, double n, double k,
                 double batch = 1);

// Forward-pass compute of one block for one micro-batch on one rank, in seconds:
// the dense (or expert) GEMMs and the attention core (QK^T and PV).
struct BlockGemms {
  double linear = 0;  // QKV, projection, MLP (or router + experts)
  double experts = 0; // of linear, the router and experts' share (MoE blocks)
  double attention = 0;
  double flops = 0;   // the FLOPs they carry (for the achieved-rate report)
};
BlockGemms block_forward_gemms(const ModelDesc& m, const Layout& l, const DeviceDesc& dev,
                               Precision prec, double moe_imbalance);
// The LM head's forward GEMM (N x d times d x V/t) on the last stage.
double head_forward_gemm(const ModelDesc& m, const Layout& l, const DeviceDesc& dev,
                         Precision prec);

}  // namespace mini5d::plan
