// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/cp/ring_attention.hpp"

#include <array>

#include "mini5d/kernels/accumulate.hpp"
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
    dkv_[i] = Vec<S>(Kokkos::ViewAllocateWithoutInitializing(names[1][i]), block);
  }
  comm_bytes_ = 4 * block * std::int64_t(sizeof(S));
  s_ = Ten3<S>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::block_scores"), bh, chunk_, chunk_);
  dp_ = Ten3<S>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::block_dscores"), bh, chunk_, chunk_);
  m_ = Mat<S>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::row_max"), bh, local_seq);
  l_ = Mat<S>(Kokkos::ViewAllocateWithoutInitializing("mini5d::cp::row_sum"), bh, local_seq);
  work_bytes_ = (2 * std::int64_t(bh) * chunk_ * chunk_ + 2 * std::int64_t(bh) * local_seq) * std::int64_t(sizeof(S));
}

template <class S>
Ten3U<S> RingAttention<S>::part(Vec<S>& block, int which) const {
  return Ten3U<S>(block.data() + std::int64_t(which) * kv_bh_ * local_ * hd_, kv_bh_, local_, hd_);
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
void RingAttention<S>::add_block(Ten3U<S> dk, Ten3U<S> dv, Vec<S>& block) const {
  const std::int64_t n = std::int64_t(kv_bh_) * local_ * hd_;
  kernels::add_into<S>(VecU<S>(dk.data(), n), CVecU<S>(block.data(), n));
  kernels::add_into<S>(VecU<S>(dv.data(), n), CVecU<S>(block.data() + n, n));
}

template <class S>
void RingAttention<S>::forward(Ten3U<S> y, MatU<S> lse, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v) {
  const int c = ring_->size(), me = ring_->rank();
  const auto mine = split_.chunks(me);
  pack(kv_[0], k, v);
  kernels::online_softmax_init<S>(y, m_, l_);
  int cur = 0;
  for (int s = 0; s < c; ++s) {
    const auto theirs = split_.chunks((me - s + c) % c);
    comm::Request hop;  // the next block arrives while this one is computed
    if (s + 1 < c) hop = ring_->shift<S>(kv_[cur], kv_[1 - cur], kTagKv);
    const CTen3U<S> kb = part(kv_[cur], 0), vb = part(kv_[cur], 1);
    Kokkos::Timer timer;
    for_each_block(
        mine, theirs, chunk_,
        [&](const kernels::BlockRows& rows) { kernels::online_softmax_block<S>(y, m_, l_, s_, q, kb, vb, rows); },
        [&] {
          ++stats_.forward_blocks;
          hop.test();
        });
    fence("mini5d::cp::blocks_done");
    stats_.compute_seconds += timer.seconds();
    hop.wait();
    cur = 1 - cur;
  }
  kernels::online_softmax_finish<S>(y, lse, m_, l_);
  ++stats_.forward_calls;
}

template <class S>
void RingAttention<S>::backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, CTen3U<S> dy, CTen3U<S> y, CMatU<S> lse,
                                CTen3U<S> q, CTen3U<S> k, CTen3U<S> v) {
  const int c = ring_->size(), me = ring_->rank();
  const auto mine = split_.chunks(me);
  MatU<S> delta = m_;
  kernels::online_softmax_delta<S>(delta, dy, y);
  kernels::fill("mini5d::cp::zero_dq", dq, S(0));
  kernels::fill("mini5d::cp::zero_dk", dk, S(0));
  kernels::fill("mini5d::cp::zero_dv", dv, S(0));
  pack(kv_[0], k, v);
  int cur = 0, dcur = 0;
  for (int s = 0; s < c; ++s) {
    const auto theirs = split_.chunks((me - s + c) % c);
    comm::Request hop;
    if (s + 1 < c) hop = ring_->shift<S>(kv_[cur], kv_[1 - cur], kTagKvBackward);
    // The own block's dK/dV land in dk/dv; another rank's in the travelling buffer,
    // which starts empty here at step 1 and arrives with the block from step 2 on.
    Ten3U<S> tk = dk, tv = dv;
    if (s >= 1) {
      if (s == 1) kernels::fill("mini5d::cp::zero_travelling_dkv", dkv_[dcur], S(0));
      tk = part(dkv_[dcur], 0);
      tv = part(dkv_[dcur], 1);
    }
    const CTen3U<S> kb = part(kv_[cur], 0), vb = part(kv_[cur], 1);
    Kokkos::Timer timer;
    for_each_block(
        mine, theirs, chunk_,
        [&](const kernels::BlockRows& rows) {
          kernels::online_softmax_block_backward<S>(dq, tk, tv, s_, dp_, dy, lse, delta, q, kb, vb, rows);
        },
        [&] {
          ++stats_.backward_blocks;
          hop.test();
        });
    fence("mini5d::cp::blocks_done");
    stats_.compute_seconds += timer.seconds();
    comm::Request back;  // this block's dK/dV move on towards its owner
    if (s >= 1) back = ring_->shift<S>(dkv_[dcur], dkv_[1 - dcur], kTagDkv);
    hop.wait();
    back.wait();
    cur = 1 - cur;
    if (s >= 1) dcur = 1 - dcur;
  }
  if (c > 1) add_block(dk, dv, dkv_[dcur]);  // the own block's dK/dV, home from the ring
}

template class RingAttention<float>;
template class RingAttention<double>;

}  // namespace mini5d::cp
