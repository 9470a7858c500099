// SPDX-License-Identifier: BSD-3-Clause
// Vocab-parallel softmax cross-entropy (Megatron): each rank holds the logits of its
// V/t vocabulary columns for every token row and the logits are never gathered. The
// row maximum is agreed over t (every rank's N row maxima, all-gathered), then the
// sums of exponentials and the target logit (non-zero on the rank that holds the
// target's column only) are summed over t in one all-reduce of 2N values. The logits
// are overwritten in place by dL/dlogits = (p - onehot) * grad_scale, as the fused
// single-rank kernel does; with t = 1 that kernel runs instead. The passes are
// kernels/vocab_cross_entropy.hpp; this file puts the collectives between them.
#pragma once
#include "mini5d/kernels/cross_entropy.hpp"
#include "mini5d/kernels/vocab_cross_entropy.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"

namespace mini5d::tp {

// Work buffers of the vocab-parallel loss: row maxima of every rank [t*N], the agreed
// maxima [N], and the summed exponentials and target logits [2N]; fp32 for bf16 logits.
template <class S>
struct CrossEntropyWork {
  Vec<acc_t<S>> all_max, row_max, sums;
};

// Returns the sum over token rows of the loss (the same on every rank of the group).
// Only the first valid_cols of the rank's columns are the model's: the rest are
// vocabulary padding, left out of the softmax (their gradient is zero).
//                                                             collective over the group
template <class S>
double vocab_cross_entropy(TpComm& tp, MatU<S> logits, CTokU targets, int vocab_begin, int valid_cols,
                           acc_t<S> grad_scale, CrossEntropyWork<S>& w) {
  using A = acc_t<S>;
  if (tp.size() == 1) return kernels::cross_entropy_forward_backward<S>(logits, targets, grad_scale, valid_cols);
  kernels::vocab_ce_local_max<S>(w.row_max, logits, valid_cols);
  tp.allgather<A>(w.all_max, w.row_max);
  kernels::vocab_ce_local_sums<S>(w.sums, w.row_max, logits, w.all_max, tp.size(), targets, vocab_begin, valid_cols);
  tp.allreduce<A>(w.sums);
  return kernels::vocab_ce_grad<S>(logits, w.sums, w.row_max, targets, vocab_begin, valid_cols, grad_scale);
}

}  // namespace mini5d::tp
