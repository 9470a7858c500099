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
// Tensors are [B*H, rows, hd] (one (batch, head) matrix per index, as in attention.hpp;
// k, v, dk and dv [B*Hkv, rows, hd] with grouped queries: query matrix bh reads key/value
// matrix bh / (H/Hkv), and dk, dv sum over the group, one batched product per member);
// a block is rows [q0, q0 + n) of q against rows [k0, k0 + nk) of k and v. A block is
// either full (every key precedes every query) or diagonal (causal: key j visible to
// query i iff j <= i + shift; ring attention's diagonal blocks are the same rows,
// shift 0, n = nk). Blocks wholly in the future are never passed here. Users: ring
// attention (parallel/cp/ring_attention.*, one block per pair of chunks) and blockwise
// attention at c = 1 (blockwise_attention.hpp, one block per query tile and key panel:
// the panel that reaches the tile's diagonal has shift = q0 - k0).
//
// The row kernels are team kernels, a team per (batch, head, row): threads over the
// row's consecutive columns (of s, or of y's hd elements), the row maximum and sums as
// team reductions (team_reduce.hpp: a fixed order for a given team size). The products
// are batched over the B*H matrices (batched_gemm.hpp: a BLAS call each on the host,
// one launch on a device).
#pragma once
#include "mini5d/kernels/batched_gemm.hpp"
#include "mini5d/kernels/fill.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/head_views.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// The start of the recurrence: m far below any score (exp(m - m') is then 0), l = 0.
template <class S>
KOKKOS_INLINE_FUNCTION S online_softmax_floor() {
  return S(-1e30);
}

// The leading [n, nk] of one (batch, head) matrix of a block's [B*H, rows, cols] work
// buffer (row stride cols: the BLAS's leading dimension).
template <class S>
KOKKOS_INLINE_FUNCTION MatU<S> block_matrix(Ten3U<S> s, int bh, int n, int nk) {
  return Kokkos::subview(s, bh, Kokkos::make_pair(0, n), Kokkos::make_pair(0, nk));
}
template <class S>
KOKKOS_INLINE_FUNCTION CMatU<S> block_matrix(CTen3U<S> s, int bh, int n, int nk) {
  return Kokkos::subview(s, bh, Kokkos::make_pair(0, n), Kokkos::make_pair(0, nk));
}

struct BlockRows {
  int q0 = 0, k0 = 0;       // first query row, first key row
  int n = 0, nk = 0;        // query rows, key rows
  bool diagonal = false;    // masked: key column j visible to query row i iff j <= i + shift
  int shift = 0;            // 0 for a square diagonal block (the same rows); q0 - k0 for a
                            // blockwise key panel that ends on the query tile's diagonal
  // The key columns query row i sees.
  KOKKOS_INLINE_FUNCTION int visible(int i) const {
    return diagonal ? (i + shift + 1 < nk ? i + shift + 1 : nk) : nk;
  }
};

// The profile's work for one block (kernels/profile.hpp): one [n, hd] x [hd, nk]-sized
// product per (batch, head), reading two row blocks and the n x nk scores; and the
// element-wise row pass over the scores.
template <class S>
prof::Scope block_gemm_scope(int BH, const BlockRows& b, int hd) {
  const double bh = BH, nn = double(b.n) * b.nk;
  return prof::Scope(prof::Family::attention_gemm, 2.0 * bh * nn * hd,
                     double(sizeof(S)) * bh * (double(b.n + b.nk) * hd + nn));
}
template <class S>
prof::Scope block_rows_scope(int BH, const BlockRows& b, double flops_per_score) {
  const double scores = double(BH) * b.n * b.nk;
  return prof::Scope(prof::Family::attention, flops_per_score * scores, 2.0 * double(sizeof(S)) * scores);
}
// The per-row passes (start, finish, delta): `per_row` elements read or written per
// query row of y [B*H, rows, hd].
template <class S>
prof::Scope row_pass_scope(CTen3U<S> y, double per_row) {
  const double rows = double(y.extent(0)) * y.extent(1);
  return prof::Scope(prof::Family::attention, rows * per_row, double(sizeof(S)) * rows * per_row);
}

// m = floor, l = 0, y = 0.
template <class S>
void online_softmax_init(Ten3U<S> y, MatU<S> m, MatU<S> l) {
  const auto ps = row_pass_scope<S>(y, double(y.extent(2)) + 2);
  fill("mini5d::kernels::online_softmax_init_y", y, S(0));
  fill("mini5d::kernels::online_softmax_init_m", m, online_softmax_floor<S>());
  fill("mini5d::kernels::online_softmax_init_l", l, S(0));
}

// In place on the block's scores s [B*H, n, n] (unscaled q k^T): the recurrence's row
// update. A team per (bh, row i): the new maximum (team max over the visible columns),
// s = exp(s * scale - m') (each thread rewrites only the entries it reads), then its row
// sum (team sum: a separate pass over the row, still in cache, so that both loops
// vectorise), zeros on the masked columns, y's row rescaled, then m and l.
template <class S>
void online_softmax_rows(Ten3U<S> s, Ten3U<S> y, MatU<S> m, MatU<S> l, BlockRows b, S scale) {
  const int BH = int(s.extent(0)), n = b.n, nk = b.nk, hd = int(y.extent(2)), q0 = b.q0;
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_block", teams(std::int64_t(BH) * n), KOKKOS_LAMBDA(const TeamMember& tm) {
        const int bh = tm.league_rank() / n, i = tm.league_rank() % n;
        const int row = q0 + i, cols = b.visible(i);
        S* const sr = &s(bh, i, 0);
        S* const yr = &y(bh, row, 0);
        const S m_old = m(bh, row);
        const S smax = team_max<S>(tm, cols, [&](const int j) { return sr[j] * scale; });
        const S mx = smax > m_old ? smax : m_old;
        const S alpha = kmath::exp_fast(m_old - mx);
        team_for(tm, 0, cols, [&](const int j) { sr[j] = kmath::exp_fast(sr[j] * scale - mx); });
        tm.team_barrier();  // the sum reads entries other threads wrote
        const S sum = team_sum<S>(tm, cols, [&](const int j) { return sr[j]; });
        team_for(tm, cols, nk, [&](const int j) { sr[j] = S(0); });
        team_for(tm, 0, hd, [&](const int d) { yr[d] *= alpha; });
        // Every thread read m_old before the reductions, which end with the team in step.
        Kokkos::single(Kokkos::PerTeam(tm), [&]() {
          l(bh, row) = l(bh, row) * alpha + sum;
          m(bh, row) = mx;
        });
      });
}

// One block of the forward recurrence; s is a [B*H, >= n, >= nk] work buffer.
template <class S>
void online_softmax_block(Ten3U<S> y, MatU<S> m, MatU<S> l, Ten3U<S> s, CTen3U<S> q, CTen3U<S> k,
                          CTen3U<S> v, BlockRows b) {
  const int BH = int(q.extent(0)), n = b.n, nk = b.nk, q0 = b.q0, k0 = b.k0, hd = int(q.extent(2));
  const int g = kv_group(q, k);
  const S scale = S(1) / kmath::sqrt(S(q.extent(2)));
  {
    const auto ps = block_gemm_scope<S>(BH, b, hd);
    batched_gemm<S>("mini5d::kernels::online_softmax_scores", Op::N, Op::T, S(1), S(0), BH, KOKKOS_LAMBDA(const int bh) {
      return GemmOperands<S>{head_rows<S>(q, bh, q0, n), head_rows<S>(k, bh / g, k0, nk), block_matrix<S>(s, bh, n, nk)};
    });
  }
  {
    const auto ps = block_rows_scope<S>(BH, b, 4.0);  // scale, max, exp, sum
    online_softmax_rows<S>(s, y, m, l, b, scale);
  }
  const CTen3U<S> sc = s;
  const auto ps = block_gemm_scope<S>(BH, b, hd);
  batched_gemm<S>("mini5d::kernels::online_softmax_values", Op::N, Op::N, S(1), S(1), BH, KOKKOS_LAMBDA(const int bh) {
    return GemmOperands<S>{block_matrix<S>(sc, bh, n, nk), head_rows<S>(v, bh / g, k0, nk),
                           head_rows<S>(y, bh, q0, n)};
  });
}

// After the last block: y /= l, lse = m + log l (lse may alias m). A team per row,
// threads over its hd elements.
template <class S>
void online_softmax_finish(Ten3U<S> y, MatU<S> lse, CMatU<S> m, CMatU<S> l) {
  const int rows = int(y.extent(1)), hd = int(y.extent(2));
  const auto ps = row_pass_scope<S>(y, 2.0 * hd + 3);  // y read and written; m, l, lse
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_finish", teams(std::int64_t(y.extent(0)) * rows),
      KOKKOS_LAMBDA(const TeamMember& tm) {
        const int bh = tm.league_rank() / rows, r = tm.league_rank() % rows;
        const S inv = S(1) / l(bh, r);
        team_for(tm, 0, hd, [&](const int d) { y(bh, r, d) *= inv; });
        // m is read here only, so an aliased lse is written after its one read.
        Kokkos::single(Kokkos::PerTeam(tm), [&]() { lse(bh, r) = m(bh, r) + kmath::log(l(bh, r)); });
      });
}

// delta[bh, r] = sum_d dy[bh, r, d] * y[bh, r, d]: a team per row, a team sum.
template <class S>
void online_softmax_delta(MatU<S> delta, CTen3U<S> dy, CTen3U<S> y) {
  const int rows = int(y.extent(1)), hd = int(y.extent(2));
  const auto ps = row_pass_scope<S>(y, 2.0 * hd + 1);  // dy and y read; delta
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_delta", teams(std::int64_t(y.extent(0)) * rows),
      KOKKOS_LAMBDA(const TeamMember& tm) {
        const int bh = tm.league_rank() / rows, r = tm.league_rank() % rows;
        const S acc = team_sum<S>(tm, hd, [&](const int d) { return dy(bh, r, d) * y(bh, r, d); });
        Kokkos::single(Kokkos::PerTeam(tm), [&]() { delta(bh, r) = acc; });
      });
}

// In place on the block's scores s and dp = dy v^T [B*H, n, nk]: s = p = exp(s * scale -
// lse), dp = p * (dp - delta) * scale, zeros on the masked columns. Element-wise along
// the row: a team per (bh, row i), threads over its consecutive columns.
template <class S>
void online_softmax_rows_backward(Ten3U<S> s, Ten3U<S> dp, CMatU<S> lse, CMatU<S> delta, BlockRows b, S scale) {
  const int BH = int(s.extent(0)), n = b.n, nk = b.nk, q0 = b.q0;
  Kokkos::parallel_for(
      "mini5d::kernels::online_softmax_block_backward", teams(std::int64_t(BH) * n),
      KOKKOS_LAMBDA(const TeamMember& tm) {
        const int bh = tm.league_rank() / n, i = tm.league_rank() % n;
        const int row = q0 + i, cols = b.visible(i);
        S* const sr = &s(bh, i, 0);
        S* const dr = &dp(bh, i, 0);
        const S lse_r = lse(bh, row), delta_r = delta(bh, row);
        team_for(tm, 0, cols, [&](const int j) {
          const S p = kmath::exp_fast(sr[j] * scale - lse_r);
          sr[j] = p;
          dr[j] = p * (dr[j] - delta_r) * scale;
        });
        team_for(tm, cols, nk, [&](const int j) { sr[j] = dr[j] = S(0); });
      });
}

// One block of the backward: accumulates into dq (query rows), dk and dv (key rows).
// s and dp are [B*H, >= n, >= nk] work buffers.
template <class S>
void online_softmax_block_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, Ten3U<S> s, Ten3U<S> dp, CTen3U<S> dy,
                                   CMatU<S> lse, CMatU<S> delta, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
                                   BlockRows b) {
  const int BH = int(q.extent(0)), n = b.n, nk = b.nk, q0 = b.q0, k0 = b.k0, hd = int(q.extent(2));
  const int g = kv_group(q, k);
  const S scale = S(1) / kmath::sqrt(S(q.extent(2)));
  {
    const auto ps = block_gemm_scope<S>(BH, b, hd);
    batched_gemm<S>("mini5d::kernels::online_softmax_scores", Op::N, Op::T, S(1), S(0), BH, KOKKOS_LAMBDA(const int bh) {
      return GemmOperands<S>{head_rows<S>(q, bh, q0, n), head_rows<S>(k, bh / g, k0, nk), block_matrix<S>(s, bh, n, nk)};
    });
  }
  {
    const auto ps = block_gemm_scope<S>(BH, b, hd);
    batched_gemm<S>("mini5d::kernels::online_softmax_dprobs", Op::N, Op::T, S(1), S(0), BH, KOKKOS_LAMBDA(const int bh) {
      return GemmOperands<S>{head_rows<S>(dy, bh, q0, n), head_rows<S>(v, bh / g, k0, nk), block_matrix<S>(dp, bh, n, nk)};
    });
  }
  {
    const auto ps = block_rows_scope<S>(BH, b, 5.0);  // exp, two multiplies, a subtract, the mask
    online_softmax_rows_backward<S>(s, dp, lse, delta, b, scale);
  }
  const CTen3U<S> sc = s, dpc = dp;
  const auto ps = block_gemm_scope<S>(BH, b, 3 * hd);  // dV, dQ and dK: three products
  const int KBH = BH / g;  // key/value matrices: one product per group member over them
  for (int j = 0; j < g; ++j)
    batched_gemm<S>("mini5d::kernels::online_softmax_dvalues", Op::T, Op::N, S(1), S(1), KBH,
                    KOKKOS_LAMBDA(const int kbh) {
                      return GemmOperands<S>{block_matrix<S>(sc, kbh * g + j, n, nk),
                                             head_rows<S>(dy, kbh * g + j, q0, n), head_rows<S>(dv, kbh, k0, nk)};
                    });
  batched_gemm<S>("mini5d::kernels::online_softmax_dqueries", Op::N, Op::N, S(1), S(1), BH, KOKKOS_LAMBDA(const int bh) {
    return GemmOperands<S>{block_matrix<S>(dpc, bh, n, nk), head_rows<S>(k, bh / g, k0, nk),
                           head_rows<S>(dq, bh, q0, n)};
  });
  for (int j = 0; j < g; ++j)
    batched_gemm<S>("mini5d::kernels::online_softmax_dkeys", Op::T, Op::N, S(1), S(1), KBH,
                    KOKKOS_LAMBDA(const int kbh) {
                      return GemmOperands<S>{block_matrix<S>(dpc, kbh * g + j, n, nk),
                                             head_rows<S>(q, kbh * g + j, q0, n), head_rows<S>(dk, kbh, k0, nk)};
                    });
}

}  // namespace mini5d::kernels
