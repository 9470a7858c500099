// SPDX-License-Identifier: BSD-3-Clause
// Token + learned position embedding, x[b*T + t] = wte[tok[b*T + t]] + wpe[t], as two
// kernels: the lookup, and the positions added after it (under tensor parallelism the
// lookups of the ranks' vocabulary rows are summed in between).
#pragma once
#include "mini5d/kernels/positions.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// A rank holds the vocabulary rows [vocab_begin, vocab_begin + wte.extent(0)) (all of
// them without tensor parallelism) and some token rows.
// x[r] = wte[tok[r] - vocab_begin], or zeros when another rank holds the token's row.
template <class S>
void embedding_lookup(MatU<S> x, CTokU tokens, CMatU<S> wte, int vocab_begin) {
  const int cols = int(x.extent(1)), rows = int(wte.extent(0));
  Kokkos::parallel_for(
      "mini5d::kernels::embedding_lookup", Range(0, x.extent(0)), KOKKOS_LAMBDA(const int r) {
        const int tok = tokens(r) - vocab_begin;
        const bool mine = tok >= 0 && tok < rows;
        for (int c = 0; c < cols; ++c) x(r, c) = mine ? wte(tok, c) : S(0);
      });
}

// x[r] += wpe[global position of (row_begin + r) % local_seq]: rows of x are token rows
// row_begin, ... (a plain sequence length for whole sequences).
template <class S>
void add_positions(MatU<S> x, CMatU<S> wpe, Positions pos, int row_begin) {
  const int cols = int(x.extent(1)), seq = pos.local_seq;
  Kokkos::parallel_for(
      "mini5d::kernels::add_positions", Range(0, x.extent(0)), KOKKOS_LAMBDA(const int r) {
        const int t = pos.global((row_begin + r) % seq);
        for (int c = 0; c < cols; ++c) x(r, c) += wpe(t, c);
      });
}

// dwte[tok - vocab_begin] += dx for the tokens whose row this rank holds. One thread
// per column, rows in order: no atomics, bit-reproducible.
template <class S>
void embedding_lookup_backward(MatU<S> dwte, CMatU<S> dx, CTokU tokens, int vocab_begin) {
  const int rows = int(dx.extent(0)), vrows = int(dwte.extent(0));
  Kokkos::parallel_for(
      "mini5d::kernels::embedding_lookup_backward", Range(0, dx.extent(1)), KOKKOS_LAMBDA(const int c) {
        for (int r = 0; r < rows; ++r) {
          const int tok = tokens(r) - vocab_begin;
          if (tok >= 0 && tok < vrows) dwte(tok, c) += dx(r, c);
        }
      });
}

// dwpe[global position of (row_begin + r) % local_seq] += dx[r].
template <class S>
void add_positions_backward(MatU<S> dwpe, CMatU<S> dx, Positions pos, int row_begin) {
  const int rows = int(dx.extent(0)), seq = pos.local_seq;
  Kokkos::parallel_for(
      "mini5d::kernels::add_positions_backward", Range(0, dx.extent(1)), KOKKOS_LAMBDA(const int c) {
        for (int r = 0; r < rows; ++r) dwpe(pos.global((row_begin + r) % seq), c) += dx(r, c);
      });
}

}  // namespace mini5d::kernels
