// SPDX-License-Identifier: BSD-3-Clause
// Token + learned position embedding, x[b*T + t] = wte[tok[b*T + t]] + wpe[t], as two
// kernels: the lookup, and the positions added after it (under tensor parallelism the
// lookups of the ranks' vocabulary rows are summed in between).
//
// The forward kernels take a team per token row, its threads over consecutive columns.
// The backward kernels scatter rows into the tables; to stay reproducible without
// atomics each team owns a block of kEmbCols columns and walks the token rows in order,
// its threads over the block's consecutive columns (each row's segment is contiguous).
#pragma once
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/positions.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

constexpr int kEmbCols = 128;  // columns per team in the backward scatters

// A rank holds the vocabulary rows [vocab_begin, vocab_begin + wte.extent(0)) (all of
// them without tensor parallelism) and some token rows.
// x[r] = wte[tok[r] - vocab_begin], or zeros when another rank holds the token's row.
template <class S>
void embedding_lookup(MatU<S> x, CTokU tokens, CMatU<S> wte, int vocab_begin) {
  const int n = int(x.extent(0)), cols = int(x.extent(1)), rows = int(wte.extent(0));
  prof::Scope ps(prof::Family::embedding, 0.0, 2.0 * double(sizeof(S)) * n * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::embedding_lookup", teams(n), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        const int tok = tokens(r) - vocab_begin;
        const bool mine = tok >= 0 && tok < rows;
        const S zero = st<S>(acc_t<S>(0));
        team_for(t, 0, cols, [&](const int c) { x(r, c) = mine ? wte(tok, c) : zero; });
      });
}

// x[r] += wpe[global position of (row_begin + r) % local_seq]: rows of x are token rows
// row_begin, ... (a plain sequence length for whole sequences).
template <class S>
void add_positions(MatU<S> x, CMatU<S> wpe, Positions pos, int row_begin) {
  const int n = int(x.extent(0)), cols = int(x.extent(1)), seq = pos.local_seq;
  prof::Scope ps(prof::Family::embedding, double(n) * cols, 3.0 * double(sizeof(S)) * n * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::add_positions", teams(n), KOKKOS_LAMBDA(const TeamMember& t) {
        const int r = t.league_rank();
        const int p = pos.global((row_begin + r) % seq);
        team_for(t, 0, cols, [&](const int c) { x(r, c) = st<S>(ld(x(r, c)) + ld(wpe(p, c))); });
      });
}

namespace detail {

// The backward scatters into either table: team b owns the columns [b*kEmbCols,
// (b+1)*kEmbCols) and walks the token rows in order, adding row r of dx into table row
// row_of(r) (nowhere when that is negative), so every column sums in one fixed order.
// The table is a gradient: fp32 for a bf16 dx (acc_t), which is widened as it is added.
template <class S, class RowOf>
void scatter_rows_in_order(const char* label, MatU<acc_t<S>> table, CMatU<S> dx, RowOf row_of) {
  const int rows = int(dx.extent(0)), cols = int(dx.extent(1));
  prof::Scope ps(prof::Family::embedding, double(rows) * cols, 3.0 * double(sizeof(S)) * rows * cols);
  Kokkos::parallel_for(
      label, teams((cols + kEmbCols - 1) / kEmbCols), KOKKOS_LAMBDA(const TeamMember& t) {
        const int c0 = t.league_rank() * kEmbCols;
        const int c1 = c0 + kEmbCols < cols ? c0 + kEmbCols : cols;
        for (int r = 0; r < rows; ++r) {
          const int row = row_of(r);
          if (row < 0) continue;
          team_for(t, c0, c1, [&](const int c) { table(row, c) += ld(dx(r, c)); });
        }
      });
}

// Functors rather than lambdas, so that device builds can pass them into the kernel.
struct TokenRow {
  CTokU tokens;
  int vocab_begin, vrows;
  KOKKOS_INLINE_FUNCTION int operator()(int r) const {
    const int tok = tokens(r) - vocab_begin;
    return tok < 0 || tok >= vrows ? -1 : tok;
  }
};

struct PositionRow {
  Positions pos;
  int row_begin, seq;
  KOKKOS_INLINE_FUNCTION int operator()(int r) const { return pos.global((row_begin + r) % seq); }
};

}  // namespace detail

// dwte[tok - vocab_begin] += dx for the tokens whose row this rank holds; rows in order
// for every column, so the sums are bit-reproducible.
template <class S>
void embedding_lookup_backward(MatU<acc_t<S>> dwte, CMatU<S> dx, CTokU tokens, int vocab_begin) {
  detail::scatter_rows_in_order<S>("mini5d::kernels::embedding_lookup_backward", dwte, dx,
                                   detail::TokenRow{tokens, vocab_begin, int(dwte.extent(0))});
}

// dwpe[global position of (row_begin + r) % local_seq] += dx[r], rows in order.
template <class S>
void add_positions_backward(MatU<acc_t<S>> dwpe, CMatU<S> dx, Positions pos, int row_begin) {
  detail::scatter_rows_in_order<S>("mini5d::kernels::add_positions_backward", dwpe, dx,
                                   detail::PositionRow{pos, row_begin, pos.local_seq});
}

}  // namespace mini5d::kernels
