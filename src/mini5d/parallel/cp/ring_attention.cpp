// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/cp/ring_attention.hpp"

#include <array>

#include "mini5d/kernels/accumulate.hpp"
#include "mini5d/kernels/convert.hpp"
#include "mini5d/kernels/fill.hpp"
#include "mini5d/kernels/online_softmax.hpp"

namespace mini5d::cp {

namespace {
// Message tags of the three kinds of shift (each kind's shifts go in order).
constexpr int kTagKv = 71, kTagKvBackward = 72, kTagDkv = 73;

// The blocks of one ring step: this rank's two query chunks against the visiting
// rank's two key chunks, skipping the causally empty ones. `run` gets each block's
// rows (BlockRows) and runs it; `after` follows every block (it tests the hop in flight).
template <class Run, class After>
void for_each_block(const std::array<int, 2>& mine, const std::array<int, 2>& theirs, int chunk, Run&& run,
                    After&& after) {
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const BlockKind kind = block_kind(mine[a], theirs[b]);
      if (kind == BlockKind::skip) continue;
      run(kernels::BlockRows{a * chunk, b * chunk, chunk, chunk, kind == BlockKind::diagonal});
      after();
    }
}
}  // namespace

template <class S>
RingAttention<S>::RingAttention(CpComm& ring, Split split, int bh, int local_seq, int head_dim, int kv_bh)
    : ring_(&ring),
      split_(split),
      kv_bh_(kv_bh > 0 ? kv_bh : bh),
      local_(local_seq),
      hd_(head_dim),
      chunk_(local_seq / 2) {
  // Only the key/value heads travel: with grouped queries, 1/group of the query heads.
  const std::int64_t block = 2 * std::int64_t(kv_bh_) * local_seq * head_dim;
  const char* names[2][2] = {{"mini5d::cp::kv_a", "mini5d::cp::kv_b"}, {"mini5d::cp::dkv_a", "mini5d::cp::dkv_b"}};
  for (int i = 0; i < 2; ++i) {
    kv_[i] = Vec<S>(Kokkos::ViewAllocateWithoutInitializing(names[0][i]), block);
    dkv_[i] = Vec<A>(Kokkos::ViewAllocateWithoutInitializing(names[1][i]), block);
  }
  comm_bytes_ = 2 * block * std::int64_t(sizeof(S) + sizeof(A));
  s_ = Ten3<A>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::block_scores"), bh, chunk_, chunk_);
  dp_ = Ten3<A>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::block_dscores"), bh, chunk_, chunk_);
  m_ = Mat<A>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::row_max"), bh, local_seq);
  l_ = Mat<A>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::row_sum"), bh, local_seq);
  work_bytes_ = (2 * std::int64_t(bh) * chunk_ * chunk_ + 2 * std::int64_t(bh) * local_seq) * std::int64_t(sizeof(A));
}

template <class S>
void RingAttention<S>::pack(Vec<S>& block, CTen3U<S> k, CTen3U<S> v) const {
  // Two copies on the rank's instance and one instance fence (MPI sends the block
  // next), instead of the global fences a deep_copy without an execution space makes.
  Kokkos::deep_copy(ExecSpace(), part(block, 0), k);
  Kokkos::deep_copy(ExecSpace(), part(block, 1), v);
  fence("mini5d::cp::kv_packed");
}

template <class S>
void RingAttention<S>::add_block(Ten3U<A> dk, Ten3U<A> dv, Vec<A>& block) const {
  const std::int64_t n = std::int64_t(kv_bh_) * local_ * hd_;
  kernels::add_into<A>(VecU<A>(dk.data(), n), CVecU<A>(block.data(), n));
  kernels::add_into<A>(VecU<A>(dv.data(), n), CVecU<A>(block.data() + n, n));
}

template <class S>
void RingAttention<S>::block_in_hand(Vec<S>& block, const kernels::WideCore& wide, CTen3U<A>& kb,
                                     CTen3U<A>& vb) const {
  if constexpr (std::is_same_v<S, A>) {
    kb = part(block, 0), vb = part(block, 1);
  } else {
    // MPI may still be reading the block (the hop to the next rank): widening only reads it.
    kernels::convert("mini5d::cp::widen_k_block", wide.k, CTen3U<S>(part(block, 0)));
    kernels::convert("mini5d::cp::widen_v_block", wide.v, CTen3U<S>(part(block, 1)));
    kb = wide.k, vb = wide.v;
  }
}

template <class S>
void RingAttention<S>::forward(Ten3U<S> y, MatU<A> lse, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v,
                               const kernels::WideCore& wide) {
  const int c = ring_->size(), me = ring_->rank();
  const auto mine = split_.chunks(me);
  // What the blocks read and accumulate into: q and y themselves, or their fp32 copies.
  Ten3U<A> yw;
  CTen3U<A> qw;
  if constexpr (std::is_same_v<S, A>) {
    yw = y, qw = q;
  } else {
    kernels::convert("mini5d::cp::widen_q", wide.q, q);
    yw = wide.y, qw = wide.q;
  }
  pack(kv_[0], k, v);
  kernels::online_softmax_init<A>(yw, m_, l_);
  int cur = 0;
  for (int s = 0; s < c; ++s) {
    const auto theirs = split_.chunks((me - s + c) % c);
    comm::Request hop;  // the next block arrives while this one is computed
    if (s + 1 < c) hop = ring_->shift<S>(kv_[cur], kv_[1 - cur], kTagKv);
    CTen3U<A> kb, vb;
    block_in_hand(kv_[cur], wide, kb, vb);
    Kokkos::Timer timer;
    for_each_block(
        mine, theirs, chunk_,
        [&](const kernels::BlockRows& rows) { kernels::online_softmax_block<A>(yw, m_, l_, s_, qw, kb, vb, rows); },
        [&] {
          ++stats_.forward_blocks;
          hop.test();
        });
    fence("mini5d::cp::blocks_done");
    stats_.compute_seconds += timer.seconds();
    hop.wait();
    cur = 1 - cur;
  }
  kernels::online_softmax_finish<A>(yw, lse, m_, l_);
  if constexpr (!std::is_same_v<S, A>) kernels::convert("mini5d::cp::narrow_y", y, wide.y);
  ++stats_.forward_calls;
}

template <class S>
void RingAttention<S>::backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, CTen3U<S> dy, CTen3U<S> y, CMatU<A> lse,
                                CTen3U<S> q, CTen3U<S> k, CTen3U<S> v, const kernels::WideCore& wide) {
  const int c = ring_->size(), me = ring_->rank();
  const auto mine = split_.chunks(me);
  Ten3U<A> dqw, dkw, dvw;
  CTen3U<A> dyw, yw, qw;
  if constexpr (std::is_same_v<S, A>) {
    dqw = dq, dkw = dk, dvw = dv, dyw = dy, yw = y, qw = q;
  } else {
    kernels::convert("mini5d::cp::widen_q", wide.q, q);
    kernels::convert("mini5d::cp::widen_y", wide.y, y);
    kernels::convert("mini5d::cp::widen_dy", wide.dy, dy);
    dqw = wide.dq, dkw = wide.dk, dvw = wide.dv, dyw = wide.dy, yw = wide.y, qw = wide.q;
  }
  MatU<A> delta = m_;
  kernels::online_softmax_delta<A>(delta, dyw, yw);
  kernels::fill("mini5d::cp::zero_dq", dqw, A(0));
  kernels::fill("mini5d::cp::zero_dk", dkw, A(0));
  kernels::fill("mini5d::cp::zero_dv", dvw, A(0));
  pack(kv_[0], k, v);
  int cur = 0, dcur = 0;
  for (int s = 0; s < c; ++s) {
    const auto theirs = split_.chunks((me - s + c) % c);
    comm::Request hop;
    if (s + 1 < c) hop = ring_->shift<S>(kv_[cur], kv_[1 - cur], kTagKvBackward);
    // The own block's dK/dV land in dk/dv; another rank's in the travelling buffer,
    // which starts empty here at step 1 and arrives with the block from step 2 on.
    Ten3U<A> tk = dkw, tv = dvw;
    if (s >= 1) {
      if (s == 1) kernels::fill("mini5d::cp::zero_travelling_dkv", dkv_[dcur], A(0));
      tk = part(dkv_[dcur], 0);
      tv = part(dkv_[dcur], 1);
    }
    CTen3U<A> kb, vb;
    block_in_hand(kv_[cur], wide, kb, vb);
    Kokkos::Timer timer;
    for_each_block(
        mine, theirs, chunk_,
        [&](const kernels::BlockRows& rows) {
          kernels::online_softmax_block_backward<A>(dqw, tk, tv, s_, dp_, dyw, lse, delta, qw, kb, vb, rows);
        },
        [&] {
          ++stats_.backward_blocks;
          hop.test();
        });
    fence("mini5d::cp::blocks_done");
    stats_.compute_seconds += timer.seconds();
    comm::Request back;  // this block's dK/dV move on towards its owner
    if (s >= 1) back = ring_->shift<A>(dkv_[dcur], dkv_[1 - dcur], kTagDkv);
    hop.wait();
    back.wait();
    cur = 1 - cur;
    if (s >= 1) dcur = 1 - dcur;
  }
  if (c > 1) add_block(dkw, dvw, dkv_[dcur]);  // the own block's dK/dV, home from the ring
  if constexpr (!std::is_same_v<S, A>) {
    kernels::convert("mini5d::cp::narrow_dq", dq, wide.dq);
    kernels::convert("mini5d::cp::narrow_dk", dk, wide.dk);
    kernels::convert("mini5d::cp::narrow_dv", dv, wide.dv);
  }
}

template class RingAttention<float>;
template class RingAttention<double>;
template class RingAttention<bf16>;

}  // namespace mini5d::cp
