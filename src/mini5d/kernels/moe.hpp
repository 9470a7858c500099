// SPDX-License-Identifier: BSD-3-Clause
// The element-wise kernels of the mixture-of-experts layer (the matrix products go
// through kernels/linear.hpp in the layer): the router's softmax and top-k, moving token
// rows between the token order, the send buffer (by expert) and the expert slabs, the
// router-weighted combine, and their backwards. A routing row of -1 is a dropped
// assignment (capacity mode): it contributes nothing and receives no gradient.
// Token rows are in the storage type S; the router's probabilities, the combine
// weights and their gradients are in acc_t<S> (fp32 in a bf16 model), and every sum is
// formed in acc_t<S> and rounded once as it is stored.
#pragma once
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

using IVecU = Kokkos::View<int*, Kokkos::LayoutRight, MemSpace, Unmanaged>;
using CIVecU = Kokkos::View<const int*, Kokkos::LayoutRight, MemSpace, Unmanaged>;

// probs [R, E] <- softmax of the logits held in probs; idx [R, k] the k largest
// (ties to the lower expert), w [R, k] their probabilities renormalised to sum to 1.
// The router runs in acc_t of the model's storage type (fp32 in a bf16 model:
// model/moe_layer.cpp), so S here is float or double.
template <class S>
void router_softmax_topk(MatU<S> probs, IVecU idx, MatU<S> w) {
  prof::Scope ps(prof::Family::routing, 6.0 * double(probs.size()), 2.0 * double(sizeof(S)) * double(probs.size()));
  const int E = int(probs.extent(1)), k = int(w.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_router_softmax_topk", Range(0, probs.extent(0)), KOKKOS_LAMBDA(const int r) {
        S mx = probs(r, 0);
        for (int e = 1; e < E; ++e) mx = probs(r, e) > mx ? probs(r, e) : mx;
        S sum = 0;
        for (int e = 0; e < E; ++e) {
          probs(r, e) = kmath::exp(probs(r, e) - mx);
          sum += probs(r, e);
        }
        for (int e = 0; e < E; ++e) probs(r, e) /= sum;
        S chosen = 0;
        for (int j = 0; j < k; ++j) {
          int best = -1;
          for (int e = 0; e < E; ++e) {
            bool taken = false;
            for (int m = 0; m < j; ++m) taken = taken || idx(r * k + m) == e;
            if (!taken && (best < 0 || probs(r, e) > probs(r, best))) best = e;
          }
          idx(r * k + j) = best;
          w(r, j) = probs(r, best);
          chosen += probs(r, best);
        }
        for (int j = 0; j < k; ++j) w(r, j) /= chosen;
      });
}

// send[row(a)] = x[a / k] for every kept assignment a.
template <class S>
void dispatch_rows(MatU<S> send, CMatU<S> x, CIVecU row, int k) {
  prof::Scope ps(prof::Family::routing, 0.0, 2.0 * double(sizeof(S)) * double(send.size()));
  const int D = int(x.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_dispatch_rows", Range(0, row.extent(0)), KOKKOS_LAMBDA(const int a) {
        const int to = row(a);
        if (to < 0) return;
        for (int c = 0; c < D; ++c) send(to, c) = x(a / k, c);
      });
}

// dst[i] = src[order[i]] (gather), or with `scatter` dst[order[i]] = src[i].
template <class S>
void permute_rows(MatU<S> dst, CMatU<S> src, CIVecU order, bool scatter) {
  prof::Scope ps(prof::Family::routing, 0.0, 2.0 * double(sizeof(S)) * double(dst.size()));
  const int D = int(src.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_permute_rows", Range(0, order.extent(0)), KOKKOS_LAMBDA(const int i) {
        const int to = scatter ? order(i) : i, from = scatter ? i : order(i);
        for (int c = 0; c < D; ++c) dst(to, c) = src(from, c);
      });
}

// out[r] = sum_j w[r, j] * y[row(r*k + j)] (overwritten).
template <class S>
void combine_rows(MatU<S> out, CMatU<S> y, CIVecU row, CMatU<acc_t<S>> w) {
  using A = acc_t<S>;
  prof::Scope ps(prof::Family::routing, 2.0 * double(y.size()), double(sizeof(S)) * double(y.size() + out.size()));
  const int D = int(out.extent(1)), k = int(w.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_combine_rows", Range(0, out.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int c = 0; c < D; ++c) {
          A sum = 0;  // the assignments in slot order, as fp32 sums them
          for (int j = 0; j < k; ++j) {
            const int at = row(r * k + j);
            if (at >= 0) sum += w(r, j) * ld(y(at, c));
          }
          out(r, c) = st<S>(sum);
        }
      });
}

// Backward of combine_rows: dw[r, j] = dout[r] . y[row], dy[row] = w[r, j] * dout[r].
template <class S>
void combine_rows_backward(MatU<acc_t<S>> dw, MatU<S> dy, CMatU<S> dout, CMatU<S> y, CIVecU row,
                           CMatU<acc_t<S>> w) {
  using A = acc_t<S>;
  prof::Scope ps(prof::Family::routing, 4.0 * double(y.size()), 3.0 * double(sizeof(S)) * double(y.size()));
  const int D = int(dout.extent(1)), k = int(w.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_combine_rows_backward", Range(0, dout.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int j = 0; j < k; ++j) {
          const int at = row(r * k + j);
          A dot = 0;
          if (at >= 0) {
            const A wj = w(r, j);
            for (int c = 0; c < D; ++c) {
              dot += ld(dout(r, c)) * ld(y(at, c));
              dy(at, c) = st<S>(wj * ld(dout(r, c)));
            }
          }
          dw(r, j) = dot;
        }
      });
}

// dx[r] = sum_j dsend[row(r*k + j)] (overwritten): backward of dispatch_rows.
template <class S>
void dispatch_rows_backward(MatU<S> dx, CMatU<S> dsend, CIVecU row, int k) {
  prof::Scope ps(prof::Family::routing, double(dsend.size()), double(sizeof(S)) * double(dsend.size() + dx.size()));
  const int D = int(dx.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_dispatch_rows_backward", Range(0, dx.extent(0)), KOKKOS_LAMBDA(const int r) {
        for (int c = 0; c < D; ++c) {
          acc_t<S> sum = 0;
          for (int j = 0; j < k; ++j) {
            const int at = row(r * k + j);
            if (at >= 0) sum += ld(dsend(at, c));
          }
          dx(r, c) = st<S>(sum);
        }
      });
}

// dlogits [R, E] from dL/dw (the renormalised top-k weights) and the load-balancing
// loss: with w_j = p_j / s (s the sum of the chosen p), dL/dp_e = (dw_e - sum_m dw_m w_m) / s
// for a chosen e; the aux loss adds aux(seq(r), e) = coef * E * f(seq, e) * grad_scale to
// every e; then the softmax: dlogit_e = p_e (dp_e - sum_m p_m dp_m).
// seq(r) = (row_begin + r) / seq_len.
template <class S>
void router_backward(MatU<S> dlogits, CMatU<S> probs, CIVecU idx, CMatU<S> w, CMatU<S> dw, CMatU<S> aux,
                     int row_begin, int seq_len) {
  prof::Scope ps(prof::Family::routing, 6.0 * double(probs.size()), 3.0 * double(sizeof(S)) * double(probs.size()));
  const int E = int(probs.extent(1)), k = int(w.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::moe_router_backward", Range(0, probs.extent(0)), KOKKOS_LAMBDA(const int r) {
        const int s = (row_begin + r) / seq_len;
        S chosen = 0, dww = 0;
        for (int j = 0; j < k; ++j) {
          chosen += probs(r, idx(r * k + j));
          dww += dw(r, j) * w(r, j);
        }
        // dlogits holds dL/dp first, then is transformed in place.
        for (int e = 0; e < E; ++e) dlogits(r, e) = aux(s, e);
        for (int j = 0; j < k; ++j) dlogits(r, idx(r * k + j)) += (dw(r, j) - dww) / chosen;
        S pdp = 0;
        for (int e = 0; e < E; ++e) pdp += probs(r, e) * dlogits(r, e);
        for (int e = 0; e < E; ++e) dlogits(r, e) = probs(r, e) * (dlogits(r, e) - pdp);
      });
}

}  // namespace mini5d::kernels
