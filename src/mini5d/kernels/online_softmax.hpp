// SPDX-License-Identifier: BSD-3-Clause
// Attention one block at a time (the flash-attention recurrence), for ring attention
// (parallel/cp/ring_attention.*): the queries of one chunk against the keys and values
// of one chunk, with a running row maximum m and a running sum of exponentials l per
// query row, the output y accumulated unnormalised and rescaled whenever m grows:
//
//   s = q k^T * scale (masked),  m' = max(m, rowmax s),  p = exp(s - m'),
//   l' = l * exp(m - m') + rowsum p,  y' = y * exp(m - m') + p v
//
// and, after the last block, y /= l and lse = m + log l. The backward keeps only lse
// (not the probabilities): p = exp(s - lse) is rebuilt block by block, and with
// delta = rowsum(dy * y),
//
//   dv += p^T dy,  ds = p * (dy v^T - delta) * scale,  dq += ds k,  dk += ds^T q.
//
// Tensors are [B*H, rows, hd] (one (batch, head) matrix per index, as in attention.hpp);
// a block is rows [q0, q0 + n) of q against rows [k0, k0 + n) of k and v. A block is
// either full (every key precedes every query) or diagonal (the same chunk: causal
// within it, key j visible to query i iff j <= i). Blocks wholly in the future are
// never passed here.
#pragma once
#include <KokkosBlas3_gemm.hpp>
#include <utility>

#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// The start of the recurrence: m far below any score (exp(m - m') is then 0), l = 0.
template <class S>
KOKKOS_INLINE_FUNCTION S online_softmax_floor() {
  return S(-1e30);
}

// Rows [r0, r0 + n) of one (batch, head) matrix of a [B*H, rows, hd] tensor.
template <class V>
auto row_block(const V& v, int bh, int r0, int n) {
  return Kokkos::subview(v, bh, std::make_pair(r0, r0 + n), Kokkos::ALL());
}

struct BlockRows {
  int q0 = 0, k0 = 0, n = 0;  // query rows, key rows, rows per chunk
  bool diagonal = false;      // causal within the block
};

// m = floor, l = 0, y = 0.
template <class S>
void online_softmax_init(Ten3U<S> y, MatU<S> m, MatU<S> l) {
  Kokkos::deep_copy(y, S(0));
  Kokkos::deep_copy(m, online_softmax_floor<S>());
  Kokkos::deep_copy(l, S(0));
}

// One block of the forward recurrence; s is a [B*H, n, n] work buffer.
template <class S>
void online_softmax_block(Ten3U<S> y, MatU<S> m, MatU<S> l, Ten3U<S> s, CTen3U<S> q, CTen3U<S> k,
                          CTen3U<S> v, BlockRows b) {
  const int BH = int(q.extent(0)), n = b.n, hd = int(q.extent(2)), q0 = b.q0;
  const bool diag = b.diagonal;
  const S scale = S(1) / kmath::sqrt(S(hd));
  for (int bh = 0; bh < BH; ++bh)
    KokkosBlas::gemm("N", "T", S(1), row_block(q, bh, b.q0, n), row_block(k, bh, b.k0, n), S(0),
                     Kokkos::subview(s, bh, Kokkos::ALL(), Kokkos::ALL()));
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_block", Range2({0, 0}, {BH, n}), KOKKOS_LAMBDA(const int bh, const int i) {
        const int row = q0 + i, cols = diag ? i + 1 : n;
        const S m_old = m(bh, row);
        S mx = m_old;
        for (int j = 0; j < cols; ++j) mx = s(bh, i, j) * scale > mx ? s(bh, i, j) * scale : mx;
        const S alpha = kmath::exp_fast(m_old - mx);
        S sum = 0;
        for (int j = 0; j < cols; ++j) {
          const S e = kmath::exp_fast(s(bh, i, j) * scale - mx);
          s(bh, i, j) = e;
          sum += e;
        }
        for (int j = cols; j < n; ++j) s(bh, i, j) = S(0);
        l(bh, row) = l(bh, row) * alpha + sum;
        m(bh, row) = mx;
        for (int d = 0; d < hd; ++d) y(bh, row, d) *= alpha;
      });
  for (int bh = 0; bh < BH; ++bh)
    KokkosBlas::gemm("N", "N", S(1), Kokkos::subview(s, bh, Kokkos::ALL(), Kokkos::ALL()), row_block(v, bh, b.k0, n),
                     S(1), row_block(y, bh, b.q0, n));
}

// After the last block: y /= l, lse = m + log l (lse may alias m).
template <class S>
void online_softmax_finish(Ten3U<S> y, MatU<S> lse, CMatU<S> m, CMatU<S> l) {
  const int hd = int(y.extent(2));
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_finish", Range2({0, 0}, {int(y.extent(0)), int(y.extent(1))}),
      KOKKOS_LAMBDA(const int bh, const int r) {
        const S inv = S(1) / l(bh, r);
        for (int d = 0; d < hd; ++d) y(bh, r, d) *= inv;
        lse(bh, r) = m(bh, r) + kmath::log(l(bh, r));
      });
}

// delta[bh, r] = sum_d dy[bh, r, d] * y[bh, r, d].
template <class S>
void online_softmax_delta(MatU<S> delta, CTen3U<S> dy, CTen3U<S> y) {
  const int hd = int(y.extent(2));
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_delta", Range2({0, 0}, {int(y.extent(0)), int(y.extent(1))}),
      KOKKOS_LAMBDA(const int bh, const int r) {
        S acc = 0;
        for (int d = 0; d < hd; ++d) acc += dy(bh, r, d) * y(bh, r, d);
        delta(bh, r) = acc;
      });
}

// One block of the backward: accumulates into dq (query rows), dk and dv (key rows).
// s and dp are [B*H, n, n] work buffers.
template <class S>
void online_softmax_block_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, Ten3U<S> s, Ten3U<S> dp, CTen3U<S> dy,
                                   CMatU<S> lse, CMatU<S> delta, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
                                   BlockRows b) {
  const int BH = int(q.extent(0)), n = b.n, q0 = b.q0;
  const bool diag = b.diagonal;
  const S scale = S(1) / kmath::sqrt(S(q.extent(2)));
  auto mat = [](Ten3U<S> t, int bh) { return Kokkos::subview(t, bh, Kokkos::ALL(), Kokkos::ALL()); };
  for (int bh = 0; bh < BH; ++bh) {
    KokkosBlas::gemm("N", "T", S(1), row_block(q, bh, b.q0, n), row_block(k, bh, b.k0, n), S(0), mat(s, bh));
    KokkosBlas::gemm("N", "T", S(1), row_block(dy, bh, b.q0, n), row_block(v, bh, b.k0, n), S(0), mat(dp, bh));
  }
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_block_backward", Range2({0, 0}, {BH, n}),
      KOKKOS_LAMBDA(const int bh, const int i) {
        const int row = q0 + i, cols = diag ? i + 1 : n;
        const S lse_r = lse(bh, row), delta_r = delta(bh, row);
        for (int j = 0; j < cols; ++j) {
          const S p = kmath::exp_fast(s(bh, i, j) * scale - lse_r);
          s(bh, i, j) = p;
          dp(bh, i, j) = p * (dp(bh, i, j) - delta_r) * scale;
        }
        for (int j = cols; j < n; ++j) {
          s(bh, i, j) = S(0);
          dp(bh, i, j) = S(0);
        }
      });
  for (int bh = 0; bh < BH; ++bh) {
    KokkosBlas::gemm("T", "N", S(1), mat(s, bh), row_block(dy, bh, b.q0, n), S(1), row_block(dv, bh, b.k0, n));
    KokkosBlas::gemm("N", "N", S(1), mat(dp, bh), row_block(k, bh, b.k0, n), S(1), row_block(dq, bh, b.q0, n));
    KokkosBlas::gemm("T", "N", S(1), mat(dp, bh), row_block(q, bh, b.q0, n), S(1), row_block(dk, bh, b.k0, n));
  }
}

}  // namespace mini5d::kernels
