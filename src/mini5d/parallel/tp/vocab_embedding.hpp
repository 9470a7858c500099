// SPDX-License-Identifier: BSD-3-Clause
// Vocab-parallel token embedding (Megatron): each rank holds V/t rows of wte, looks up
// the tokens whose row it holds (zeros for the others) and the partial embeddings are
// summed over t (an all-reduce; with sequence parallelism a reduce-scatter to the
// rank's token rows). The position embedding, replicated, is added after the sum (an
// empty wpe: none, the positions are rotary and act in attention). The
// backward needs no reduction without sequence parallelism (every rank has the whole
// dx); with it, dx's rows are all-gathered first.
#pragma once
#include "mini5d/kernels/embedding.hpp"
#include "mini5d/parallel/tp/region.hpp"

namespace mini5d::tp {

// x_rows: this rank's token rows of the embedding output (row_begin the first).
template <class S>
void vocab_embedding_forward(Region<S>& reg, MatU<S> x_rows, CTokU tokens, CMatU<S> wte, int vocab_begin,
                             CMatU<S> wpe, kernels::Positions pos, int row_begin) {
  if (!reg.sequence_split()) {
    kernels::embedding_lookup<S>(x_rows, tokens, wte, vocab_begin);
    reg.comm->template allreduce<S>(x_rows);
  } else {
    kernels::embedding_lookup<S>(reg.gathered, tokens, wte, vocab_begin);
    reg.comm->template reduce_scatter_rows<S>(x_rows, reg.gathered);
  }
  if (wpe.data()) kernels::add_positions<S>(x_rows, wpe, pos, row_begin);
}

// dwpe gets this rank's rows only: with SP the caller sums it over t.
template <class S>
void vocab_embedding_backward(Region<S>& reg, MatU<acc_t<S>> dwte, MatU<acc_t<S>> dwpe, CMatU<S> dx_rows, CTokU tokens,
                              int vocab_begin, kernels::Positions pos, int row_begin) {
  CMatU<S> dx = dx_rows;
  if (reg.sequence_split()) {
    reg.comm->template allgather_rows<S>(reg.gathered, dx_rows);
    dx = reg.gathered;
  }
  kernels::embedding_lookup_backward<S>(dwte, dx, tokens, vocab_begin);
  if (dwpe.data()) kernels::add_positions_backward<S>(dwpe, dx_rows, pos, row_begin);
}

}  // namespace mini5d::tp
