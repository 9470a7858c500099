// SPDX-License-Identifier: BSD-3-Clause
// Causal attention at c = 1 without the T x T probabilities (model.attention=blockwise):
// the T queries and keys are cut into tiles of `block` rows, and query tile i meets key
// tiles 0 .. i through the online-softmax recurrence (online_softmax.hpp, the block
// update ring attention runs): tiles before the diagonal are full blocks, the diagonal
// tile is causal within itself, tiles after it are never computed. What the forward
// keeps for the backward is the output y and one log-sum-exp per query row; the
// backward rebuilds each tile's probabilities from them (p = exp(s - lse)).
//
// Memory: the probabilities [B*H, T, T] (and their gradient) of attention.hpp become two
// [B*H, tile, tile] work buffers and a running sum per query row, tile = min(block, T).
// Work: the same products as attention.hpp's skipped-causal-block path forward, plus
// the scores again in the backward (the price of not keeping P).
#pragma once
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/fill.hpp"
#include "mini5d/kernels/online_softmax.hpp"

namespace mini5d::kernels {

// Rows of the square tiles: the causal block, or T when the sequence is shorter.
inline int blockwise_tile(int T, int block = kAttBlock) { return T < block ? T : block; }

// The work buffers, shared by every layer (the backward's workspace).
template <class S>
struct BlockwiseWork {
  Ten3<S> s, dp;  // [B*H, tile, tile]: one tile's scores (probabilities) and their gradient
  Mat<S> l;       // [B*H, T]: running sum of exponentials; delta = rowsum(dy * y) in the backward
};

// Calls run(BlockRows) for each computed tile, query tile by query tile, keys in order
// (the recurrence's order for each query row).
template <class Run>
void for_each_causal_tile(int T, int block, Run&& run) {
  for (int i = 0; i < causal_blocks(T, block); ++i) {
    const CausalBlock qt = causal_block(i, block, T);
    for (int j = 0; j <= i; ++j) {
      const CausalBlock kt = causal_block(j, block, T);
      run(BlockRows{qt.r0, kt.r0, qt.n, kt.n, i == j});
    }
  }
}

// y, lse <- causal attention of q against k, v [B*H, T, hd]. lse holds the running row
// maximum until the finish turns it into the log-sum-exp.
template <class S>
void blockwise_attention_forward(Ten3U<S> y, MatU<S> lse, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
                                 const BlockwiseWork<S>& w, int block = kAttBlock) {
  const int T = int(q.extent(1));
  const MatU<S> l = w.l;
  const Ten3U<S> s = w.s;
  online_softmax_init<S>(y, lse, l);
  for_each_causal_tile(T, block, [&](const BlockRows& b) { online_softmax_block<S>(y, lse, l, s, q, k, v, b); });
  online_softmax_finish<S>(y, lse, lse, l);
}

// dq, dk, dv (overwritten) from dy and the forward's y and lse.
template <class S>
void blockwise_attention_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, CTen3U<S> dy, CTen3U<S> y, CMatU<S> lse,
                                  CTen3U<S> q, CTen3U<S> k, CTen3U<S> v, const BlockwiseWork<S>& w,
                                  int block = kAttBlock) {
  const int T = int(q.extent(1));
  const MatU<S> delta = w.l;
  const Ten3U<S> s = w.s, dp = w.dp;
  online_softmax_delta<S>(delta, dy, y);
  {
    const auto ps = row_pass_scope<S>(dy, 3.0 * double(dy.extent(2)));
    fill("mini5d::kernels::blockwise_zero_dq", dq, S(0));
    fill("mini5d::kernels::blockwise_zero_dk", dk, S(0));
    fill("mini5d::kernels::blockwise_zero_dv", dv, S(0));
  }
  for_each_causal_tile(T, block, [&](const BlockRows& b) {
    online_softmax_block_backward<S>(dq, dk, dv, s, dp, dy, lse, delta, q, k, v, b);
  });
}

}  // namespace mini5d::kernels
