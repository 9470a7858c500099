// SPDX-License-Identifier: BSD-3-Clause
// The three element-wise passes of the vocab-parallel softmax cross-entropy (Megatron),
// on a rank's logits [N, V/t] for every token row; parallel/tp/vocab_cross_entropy.hpp
// puts the tensor group's collectives between them. The logits are read by the first two
// and overwritten in place by the last, with dL/dlogits = (p - onehot) * grad_scale; the
// last recomputes each exponential rather than keeping it in the logits between passes,
// so that bf16 logits are rounded once (the gradient), not twice. Row maxima and sums
// are in acc_t<S> (fp32 for bf16 logits).
//
// Vocabulary padding (rules/vocab_padding.hpp): only a rank's first `valid` columns are
// the model's. The others never enter the maximum or the sums, and are set to zero, so
// they change no loss and get no gradient; a rank that holds padding only contributes
// the lowest number as its maximum and nothing to the sums.
#pragma once
#include <limits>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// row_max[r] = the largest of row r's first `valid` local logits.
template <class S>
void vocab_ce_local_max(VecU<acc_t<S>> row_max, CMatU<S> logits, int valid) {
  using A = acc_t<S>;
  const int N = int(logits.extent(0)), cols = int(logits.extent(1));
  const A lowest = std::numeric_limits<A>::lowest();
  prof::Scope ps(prof::Family::cross_entropy, double(N) * cols, double(sizeof(S)) * N * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::vocab_ce_local_max", Range(0, N), KOKKOS_LAMBDA(const int r) {
        A mx = lowest;
        for (int c = 0; c < valid; ++c) mx = ld(logits(r, c)) > mx ? ld(logits(r, c)) : mx;
        row_max(r) = mx;
      });
}

// From every rank's row maxima all_max [parts * N]: row_max[r] = the agreed maximum of
// row r (row_max may be all_max itself when parts is 1), sums[r] = the local sum of
// exp(logit - max), sums[N + r] = the target's logit - max where this rank holds the
// target's column (0 elsewhere).
template <class S>
void vocab_ce_local_sums(VecU<acc_t<S>> sums, VecU<acc_t<S>> row_max, CMatU<S> logits, CVecU<acc_t<S>> all_max,
                         int parts, CTokU targets, int vocab_begin, int valid) {
  using A = acc_t<S>;
  const int N = int(logits.extent(0)), cols = int(logits.extent(1));
  prof::Scope ps(prof::Family::cross_entropy, 3.0 * N * cols, double(sizeof(S)) * N * cols);
  Kokkos::parallel_for(
      "mini5d::kernels::vocab_ce_local_sums", Range(0, N), KOKKOS_LAMBDA(const int r) {
        A mx = all_max(r);
        for (int k = 1; k < parts; ++k) mx = all_max(k * N + r) > mx ? all_max(k * N + r) : mx;
        const int tgt = targets(r) - vocab_begin;  // never a padding column
        sums(N + r) = tgt >= 0 && tgt < valid ? ld(logits(r, tgt)) - mx : A(0);  // z_target
        A sum = 0;
        for (int c = 0; c < valid; ++c) sum += kmath::exp_fast(ld(logits(r, c)) - mx);
        sums(r) = sum;
        row_max(r) = mx;
      });
}

// From the sums over the group and the agreed maxima: logits <- (p - onehot) *
// grad_scale, 0 on the padding columns (from `valid` on); returns the summed token
// loss, sum over rows of log(sum) - z_target.
template <class S>
double vocab_ce_grad(MatU<S> logits, CVecU<acc_t<S>> sums, CVecU<acc_t<S>> row_max, CTokU targets, int vocab_begin,
                     int valid, acc_t<S> grad_scale) {
  using A = acc_t<S>;
  const int N = int(logits.extent(0)), cols = int(logits.extent(1));
  prof::Scope ps(prof::Family::cross_entropy, 3.0 * N * cols, 2.0 * double(sizeof(S)) * N * cols);
  double total = 0;
  Kokkos::parallel_reduce(
      "mini5d::kernels::vocab_ce_grad", Range(0, N),
      KOKKOS_LAMBDA(const int r, double& acc) {
        const A inv = A(1) / sums(r), mx = row_max(r);
        // log p[target] = z_target - log(sum), with z_target = logit - max.
        acc += double(kmath::log(sums(r))) - double(sums(N + r));
        const int tgt = targets(r) - vocab_begin;
        for (int c = 0; c < cols; ++c) {
          const A p = c < valid ? kmath::exp_fast(ld(logits(r, c)) - mx) * inv * grad_scale : A(0);
          logits(r, c) = st<S>(c == tgt ? p - grad_scale : p);
        }
      },
      total);
  return total;
}

}  // namespace mini5d::kernels
