// SPDX-License-Identifier: BSD-3-Clause
// Ring attention (Liu et al. 2023) over the c ring: the causal attention core of this
// rank's heads when the sequence is split over c (zigzag.hpp). Each rank keeps its
// queries; the key/value blocks travel around the ring, and each arriving block is
// folded into the output with the online-softmax recurrence (kernels/online_softmax.hpp,
// the same block update a ring of one runs).
//
// Forward, c steps: at step s the rank holds the K/V block of rank (i - s) mod c. The
// shift of that block to the next rank (and the arrival of the following one) is
// posted before the block is computed and completed after it, so the transfer hides
// behind the compute. Each of the rank's two query chunks meets each of the block's two
// key chunks as a full, diagonal or skipped block (by global chunk index); the output
// and the log-sum-exp (lse) per query row are kept for the backward, not the
// probabilities: O((T/c) * hd) per head instead of O((T/c) * T).
//
// Backward: dq stays local. The K/V blocks travel around the ring again; the rank's
// own block's dK/dV go straight into dk/dv, and from step 1 on the dK/dV of the block in
// hand accumulate in a buffer that travels with it: it starts at rank i+1 (step 1),
// passes each rank, and after the last step arrives home at its owner, which adds it
// to dk/dv. c-1 K/V shifts forward; c-1 K/V shifts and c-1 dK/dV shifts backward.
//
// Precision: the K/V blocks travel in the storage type S (bf16 halves their bytes);
// everything computed runs in acc_t<S>. In a bf16 model q, y, dy and each K/V block in
// hand are widened to fp32 into the layer's WideCore (kernels/widened_attention.hpp),
// dq, dk, dv accumulate there in fp32 and are rounded once at the end, and the travelling
// dK/dV is fp32: a sum over up to c blocks' contributions, rounded once, at home, not at
// every hop.
#pragma once
#include <cstdint>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/kernels/widened_attention.hpp"
#include "mini5d/parallel/cp/cp_comm.hpp"
#include "mini5d/parallel/cp/zigzag.hpp"

namespace mini5d::cp {

// Blocks computed (forward and backward) and the time spent computing them, for the
// balance checks and the report.
struct RingStats {
  long forward_calls = 0, forward_blocks = 0, backward_blocks = 0;
  double compute_seconds = 0;  // in the blocks' kernels (fenced), forward and backward
};

template <class S>
class RingAttention {
 public:
  using A = acc_t<S>;  // what the blocks compute in, and the travelling dK/dV's type
  // bh: (batch, head) matrices on this rank (B * H/t); local_seq: tokens of a sequence
  // on this rank (T/c, two chunks); kv_bh: (batch, key/value head) matrices (grouped
  // queries: B * Hkv/t; 0: bh), the K/V and dK/dV blocks that travel.
  RingAttention(CpComm& ring, Split split, int bh, int local_seq, int head_dim, int kv_bh = 0);
  // K/V and dK/dV blocks in hand and arriving (the comm_buffers category), and the
  // per-block work buffers (workspace).
  std::int64_t comm_buffer_bytes() const { return comm_bytes_; }
  std::int64_t workspace_bytes() const { return work_bytes_; }

  // y, lse <- causal attention of q against every rank's k, v. `wide`: the fp32 copies
  // (bf16 only; unused when S is its own accumulation type).     pairwise over the ring
  void forward(Ten3U<S> y, MatU<A> lse, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
               const kernels::WideCore& wide = kernels::WideCore());
  // dq, dk, dv <- (overwritten) from dy, the forward's y and lse.  pairwise over the ring
  void backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, CTen3U<S> dy, CTen3U<S> y, CMatU<A> lse, CTen3U<S> q,
                CTen3U<S> k, CTen3U<S> v, const kernels::WideCore& wide = kernels::WideCore());
  const RingStats& stats() const { return stats_; }

  // Public for the CUDA compiler (device lambdas): K/V of a block buffer and the pack.
  template <class T>
  Ten3U<T> part(Vec<T>& block, int which) const {
    return Ten3U<T>(block.data() + std::int64_t(which) * kv_bh_ * local_ * hd_, kv_bh_, local_, hd_);
  }
  void pack(Vec<S>& block, CTen3U<S> k, CTen3U<S> v) const;
  void add_block(Ten3U<A> dk, Ten3U<A> dv, Vec<A>& block) const;
  // The K/V block in hand as the blocks read it: itself, or widened into wide.k, wide.v.
  void block_in_hand(Vec<S>& block, const kernels::WideCore& wide, CTen3U<A>& kb, CTen3U<A>& vb) const;

 private:
  CpComm* ring_;
  Split split_;
  int kv_bh_, local_, hd_, chunk_;
  Vec<S> kv_[2];           // [2 * kv_bh * local * hd]: K then V
  Vec<A> dkv_[2];          // the same for dK, dV
  Ten3<A> s_, dp_;         // [bh, chunk, chunk]
  Mat<A> m_, l_;           // [bh, local]: running max and sum; delta in the backward
  std::int64_t comm_bytes_ = 0, work_bytes_ = 0;
  RingStats stats_;
};

}  // namespace mini5d::cp
