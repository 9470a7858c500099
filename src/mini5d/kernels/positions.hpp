// SPDX-License-Identifier: BSD-3-Clause
// Where a rank's token lies in its sequence. Without context parallelism a rank holds
// whole sequences and local position tl is the global one. With it (parallel/cp/) the
// sequence is cut into 2c chunks of equal length and a rank holds two of them back to
// back, `first` then `second` (zig-zag: chunks i and 2c-1-i): local position tl is
// global position first*chunk + tl in the first, second*chunk + (tl - chunk) in the
// second. Learned position embeddings and the causal mask use the global position.
#pragma once
#include <Kokkos_Core.hpp>

namespace mini5d::kernels {

struct Positions {
  int local_seq = 1;  // tokens of one sequence on this rank
  int chunk = 1;      // tokens per chunk (= local_seq when the sequence is not split)
  int first = 0, second = 0;
  Positions() = default;
  // Whole sequences of `seq` tokens (implicit: a sequence length reads as this map).
  Positions(int seq) : local_seq(seq), chunk(seq) {}  // NOLINT(google-explicit-constructor)
  Positions(int local, int chunk_len, int a, int b) : local_seq(local), chunk(chunk_len), first(a), second(b) {}
  KOKKOS_INLINE_FUNCTION int global(int tl) const {
    return tl < chunk ? first * chunk + tl : second * chunk + (tl - chunk);
  }
};

}  // namespace mini5d::kernels
