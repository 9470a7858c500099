// SPDX-License-Identifier: BSD-3-Clause
// The causal attention core of a bf16 model (c = 1, model.attention=blockwise). What the
// backward reads is kept in bf16: q, k, v and y [B*H, T, hd] (half of fp32's bytes),
// with one fp32 log-sum-exp per query row. The core itself runs the fp32 blockwise
// kernels (blockwise_attention.hpp) on fp32 copies widened into a workspace shared by
// every layer:
//   * the host BLAS has no bf16 product (docs/precision.md), and the online-softmax
//     recurrence's running maximum, running sum and rescaled output must be fp32 in any
//     case (a fused GPU kernel keeps them in fp32 registers);
//   * converting whole head tensors costs a pass over 4 (forward) or 8 (backward)
//     [B*H, T, hd] tensors per layer, small beside the products' T/hd-times larger work.
// Results are rounded to bf16 once, as they are stored (y; dq, dk, dv).
#pragma once
#include "mini5d/kernels/blockwise_attention.hpp"
#include "mini5d/kernels/convert.hpp"

namespace mini5d::kernels {

// fp32 copies of one layer's core tensors (workspace: used inside one call, never kept).
struct WideCore {
  Ten3<float> q, k, v, y, dy, dq, dk, dv;
};

// y, lse <- causal attention of q against k, v; tiles are fp32 blockwise work buffers.
template <class S>
void widened_attention_forward(Ten3U<S> y, MatU<float> lse, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
                               const WideCore& w, const BlockwiseWork<float>& tiles) {
  convert("mini5d::kernels::widen_q", w.q, q);
  convert("mini5d::kernels::widen_k", w.k, k);
  convert("mini5d::kernels::widen_v", w.v, v);
  blockwise_attention_forward<float>(w.y, lse, w.q, w.k, w.v, tiles);
  convert("mini5d::kernels::narrow_y", y, w.y);
}

// dq, dk, dv (overwritten) from dy and the forward's y and lse.
template <class S>
void widened_attention_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, CTen3U<S> dy, CTen3U<S> y, CMatU<float> lse,
                                CTen3U<S> q, CTen3U<S> k, CTen3U<S> v, const WideCore& w,
                                const BlockwiseWork<float>& tiles) {
  convert("mini5d::kernels::widen_q", w.q, q);
  convert("mini5d::kernels::widen_k", w.k, k);
  convert("mini5d::kernels::widen_v", w.v, v);
  convert("mini5d::kernels::widen_y", w.y, y);
  convert("mini5d::kernels::widen_dy", w.dy, dy);
  blockwise_attention_backward<float>(w.dq, w.dk, w.dv, w.dy, w.y, lse, w.q, w.k, w.v, tiles);
  convert("mini5d::kernels::narrow_dq", dq, w.dq);
  convert("mini5d::kernels::narrow_dk", dk, w.dk);
  convert("mini5d::kernels::narrow_dv", dv, w.dv);
}

}  // namespace mini5d::kernels
