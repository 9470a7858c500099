// SPDX-License-Identifier: BSD-3-Clause
// How context parallelism splits a sequence (pure functions, no MPI). The sequence of
// T tokens is cut into 2c chunks of T/(2c); rank i of the c ring holds two of them, back
// to back in its local rows:
//   zig-zag (the default): chunks i and 2c-1-i, so every rank holds one early and one
//     late chunk and the causal attention work is the same on every rank;
//   contiguous (a test and benchmark switch only): chunks 2i and 2i+1, the plain split,
//     whose last rank does about twice the average work.
// A query chunk qc against a key chunk kc is a full block (kc < qc), a diagonal block
// (kc = qc, causal inside) or skipped (kc > qc: wholly in the future).
#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "mini5d/kernels/positions.hpp"

namespace mini5d::cp {

enum class BlockKind { skip, full, diagonal };
inline BlockKind block_kind(int q_chunk, int k_chunk) {
  return k_chunk < q_chunk ? BlockKind::full : k_chunk == q_chunk ? BlockKind::diagonal : BlockKind::skip;
}

struct Split {
  int c = 1;
  bool zigzag = true;
  // The two chunks rank `rank` holds, in local order.
  std::array<int, 2> chunks(int rank) const {
    if (zigzag) return {rank, 2 * c - 1 - rank};
    return {2 * rank, 2 * rank + 1};
  }
  // The global position of each local position of a sequence of `seq` tokens.
  kernels::Positions positions(int rank, int seq) const {
    if (c == 1) return kernels::Positions(seq);
    const auto ch = chunks(rank);
    return kernels::Positions(seq / c, seq / (2 * c), ch[0], ch[1]);
  }
  // Blocks (chunk pairs) rank `rank` computes over a whole ring: its two query chunks
  // against the two chunks of every rank, skipped blocks not counted.
  int blocks(int rank) const {
    int n = 0;
    for (int src = 0; src < c; ++src)
      for (int qc : chunks(rank))
        for (int kc : chunks(src)) n += block_kind(qc, kc) != BlockKind::skip ? 1 : 0;
    return n;
  }
  // The most blocks any rank computes over the mean, minus one (0: balanced).
  double imbalance() const {
    double total = 0, most = 0;
    for (int r = 0; r < c; ++r) {
      total += blocks(r);
      most = std::max(most, double(blocks(r)));
    }
    return most / (total / c) - 1.0;
  }
  const char* name() const { return zigzag ? "zigzag" : "contiguous"; }
};

// This rank's tokens of every sequence of a [batch, seq] batch (row-major), in local
// order: out[b * seq/c + tl] = full[b * seq + global(tl)].
template <class T>
void take_local(const std::vector<T>& full, int batch, int seq, const kernels::Positions& pos, std::vector<T>& out) {
  const int local = pos.local_seq;
  out.resize(std::size_t(batch) * std::size_t(local));
  for (int b = 0; b < batch; ++b)
    for (int tl = 0; tl < local; ++tl)
      out[std::size_t(b) * local + tl] = full[std::size_t(b) * seq + std::size_t(pos.global(tl))];
}

// The split the run uses: zig-zag, or contiguous when MINI5D_CP_SPLIT=contiguous (a
// test and benchmark switch, not a deck field: it only makes the imbalance visible).
Split split_from_env(int c);

}  // namespace mini5d::cp
