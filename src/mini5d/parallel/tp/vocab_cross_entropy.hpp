// SPDX-License-Identifier: BSD-3-Clause
// Vocab-parallel softmax cross-entropy (Megatron): each rank holds the logits of its
// V/t vocabulary columns for every token row and the logits are never gathered. The
// row maximum is agreed over t (every rank's N row maxima, all-gathered), then the
// sums of exponentials and the target logit (non-zero on the rank that holds the
// target's column only) are summed over t in one all-reduce of 2N values. The logits
// are overwritten in place by dL/dlogits = (p - onehot) * grad_scale, as the fused
// single-rank kernel does; with t = 1 that kernel runs instead.
#pragma once
#include "mini5d/kernels/cross_entropy.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"

namespace mini5d::tp {

// Work buffers of the vocab-parallel loss: row maxima of every rank [t*N], the agreed
// maxima [N], and the summed exponentials and target logits [2N].
template <class S>
struct CrossEntropyWork {
  Vec<S> all_max, row_max, sums;
};

// Returns the sum over token rows of the loss (the same on every rank of the group).
//                                                             collective over the group
template <class S>
double vocab_cross_entropy(TpComm& tp, MatU<S> logits, CTokU targets, int vocab_begin, S grad_scale,
                           CrossEntropyWork<S>& w) {
  if (tp.size() == 1) return kernels::cross_entropy_forward_backward<S>(logits, targets, grad_scale);
  const int N = int(logits.extent(0)), cols = int(logits.extent(1)), parts = tp.size();
  auto row_max = w.row_max;
  Kokkos::parallel_for(
      "mini5d::tp::vocab_ce_local_max", Range(0, N), KOKKOS_LAMBDA(const int r) {
        S mx = logits(r, 0);
        for (int c = 1; c < cols; ++c) mx = logits(r, c) > mx ? logits(r, c) : mx;
        row_max(r) = mx;
      });
  tp.allgather<S>(w.all_max, w.row_max);
  auto all_max = w.all_max;
  auto sums = w.sums;
  Kokkos::parallel_for(
      "mini5d::tp::vocab_ce_local_sums", Range(0, N), KOKKOS_LAMBDA(const int r) {
        S mx = all_max(r);
        for (int k = 1; k < parts; ++k) mx = all_max(k * N + r) > mx ? all_max(k * N + r) : mx;
        const int tgt = targets(r) - vocab_begin;
        sums(N + r) = tgt >= 0 && tgt < cols ? logits(r, tgt) - mx : S(0);  // z_target
        S sum = 0;
        for (int c = 0; c < cols; ++c) {
          const S e = kmath::exp_fast(logits(r, c) - mx);
          logits(r, c) = e;
          sum += e;
        }
        sums(r) = sum;
      });
  tp.allreduce<S>(w.sums);
  double total = 0;
  Kokkos::parallel_reduce(
      "mini5d::tp::vocab_ce_grad", Range(0, N),
      KOKKOS_LAMBDA(const int r, double& acc) {
        const S inv = S(1) / sums(r);
        // log p[target] = z_target - log(sum), with z_target = logit - max.
        acc += double(kmath::log(sums(r))) - double(sums(N + r));
        for (int c = 0; c < cols; ++c) logits(r, c) = logits(r, c) * inv * grad_scale;
        const int tgt = targets(r) - vocab_begin;
        if (tgt >= 0 && tgt < cols) logits(r, tgt) -= grad_scale;
      },
      total);
  return total;
}

}  // namespace mini5d::tp
