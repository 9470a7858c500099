// SPDX-License-Identifier: BSD-3-Clause
// Causal attention at c = 1 without the T x T probabilities (model.attention=blockwise):
// the T queries are cut into tiles of `block` rows, and query tile [q0, q0 + n) meets
// the keys [0, q0 + n) in panels of up to `panel` columns through the online-softmax
// recurrence (online_softmax.hpp, the block update ring attention runs). The panel that
// reaches the tile's diagonal is masked (key k visible to query r iff k <= r); keys
// after the tile are never computed. What the forward keeps for the backward is the
// output y and one log-sum-exp per query row; the backward rebuilds each panel's
// probabilities from them (p = exp(s - lse)).
//
// Why panels wider than the tile: the products are per (batch, head) BLAS calls, and
// 64 x 64 tiles made them too small to run near the machine's rate (at seq 1024 the
// blockwise core was 10% slower than full attention, whose products are a tile of
// queries against every key up to its diagonal). A panel of 512 keys gives the same
// product shapes up to seq 512 and at most ceil(T / 512) calls per tile beyond it,
// while the work buffers stay a constant [B*H, tile, panel].
//
// Memory: the probabilities [B*H, T, T] (and their gradient) of attention.hpp become two
// [B*H, tile, panel] work buffers and a running sum per query row, tile = min(block, T),
// panel = min(kAttKeyPanel, T).
// Work: the same products as attention.hpp's skipped-causal-block path forward, plus
// the scores again in the backward (the price of not keeping P).
#pragma once
#include <stdexcept>

#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/fill.hpp"
#include "mini5d/kernels/online_softmax.hpp"
#include "mini5d/rules/attention_tiles.hpp"

namespace mini5d::kernels {

constexpr int kAttKeyPanel = rules::kAttentionKeyPanel;  // keys per panel (columns of the work buffers)

// Rows of a query tile: the causal block, or T when the sequence is shorter.
inline int blockwise_tile(int T, int block = kAttBlock) { return T < block ? T : block; }
// Columns of a key panel: `panel`, or T when the sequence is shorter.
inline int blockwise_panel(int T, int panel = kAttKeyPanel) { return T < panel ? T : panel; }

// The work buffers, shared by every layer (the backward's workspace).
template <class S>
struct BlockwiseWork {
  Ten3<S> s, dp;  // [B*H, tile, panel]: one panel's scores (probabilities) and their gradient
  Mat<S> l;       // [B*H, T]: running sum of exponentials; delta = rowsum(dy * y) in the backward
};

// Calls run(BlockRows) for each computed (query tile, key panel), query tile by query
// tile, panels in key order (the recurrence's order for each query row). The panels
// are cut back from the tile's end, so the last one, which holds the diagonal, starts
// at or before the tile's first query (panel >= tile rows): every row sees at least one
// of its keys; the first panel takes the remainder.
template <class Run>
void for_each_causal_tile(int T, int block, int panel, Run&& run) {
  if (panel < block) throw std::invalid_argument("blockwise attention: key panel narrower than the query tile");
  for (int i = 0; i < causal_blocks(T, block); ++i) {
    const CausalBlock qt = causal_block(i, block, T);
    const int end = qt.r0 + qt.n;  // keys [0, end) are visible to some query of the tile
    const int panels = (end + panel - 1) / panel;
    for (int k0 = 0, j = 0; j < panels; ++j) {
      const int nk = j == 0 ? end - (panels - 1) * panel : panel;
      run(BlockRows{qt.r0, k0, qt.n, nk, k0 + nk - 1 > qt.r0, qt.r0 - k0});
      k0 += nk;
    }
  }
}

// y, lse <- causal attention of q against k, v [B*H, T, hd]. lse holds the running row
// maximum until the finish turns it into the log-sum-exp.
template <class S>
void blockwise_attention_forward(Ten3U<S> y, MatU<S> lse, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
                                 const BlockwiseWork<S>& w, int block = kAttBlock, int panel = kAttKeyPanel) {
  const int T = int(q.extent(1));
  const MatU<S> l = w.l;
  const Ten3U<S> s = w.s;
  online_softmax_init<S>(y, lse, l);
  for_each_causal_tile(T, block, panel,
                       [&](const BlockRows& b) { online_softmax_block<S>(y, lse, l, s, q, k, v, b); });
  online_softmax_finish<S>(y, lse, lse, l);
}

// dq, dk, dv (overwritten) from dy and the forward's y and lse.
template <class S>
void blockwise_attention_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, CTen3U<S> dy, CTen3U<S> y, CMatU<S> lse,
                                  CTen3U<S> q, CTen3U<S> k, CTen3U<S> v, const BlockwiseWork<S>& w,
                                  int block = kAttBlock, int panel = kAttKeyPanel) {
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
  for_each_causal_tile(T, block, panel, [&](const BlockRows& b) {
    online_softmax_block_backward<S>(dq, dk, dv, s, dp, dy, lse, delta, q, k, v, b);
  });
}

}  // namespace mini5d::kernels
